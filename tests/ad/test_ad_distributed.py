"""The primitives that connect MPI ranks (fesens.ad.rank_primitives) and the operator they apply
(fesens.solvers.petsc_operator), on one rank; their 2-rank run is in
tests/opt/test_distributed_filter.py."""

import numpy as np
import pytest
import scipy.sparse as sp
from ad_helpers import assert_gradient, normal, scalarise, uniform

from fesens.ad import grad, hvp, jvp, vjp
from fesens.ad.api import _forward_jvp
from fesens.ad.rank_primitives import apply_operator, apply_operator_transpose, total
from fesens.errors import SolverError
from fesens.mpi import SERIAL, Collective
from fesens.solvers.petsc_operator import DistributedOperator


def operator(n: int = 7) -> tuple[sp.csr_matrix, DistributedOperator]:
    """A non-symmetric ``(n, n)`` matrix and its one-rank operator."""
    A = sp.random(n, n, density=0.4, random_state=3, format="csr") + sp.eye(n)
    return A.tocsr(), DistributedOperator(A.tocsr(), [n])


class ThreeCopies(Collective):
    """Reductions as if three ranks held this rank's value (their sum: three times it)."""

    size = 3

    def sum(self, value):
        return 3 * value


def test_a_one_rank_operator_is_the_matrix_and_its_transpose():
    A, op = operator()
    x = normal(7, 1)
    np.testing.assert_allclose(op.apply(x), A @ x, rtol=1e-14)
    np.testing.assert_allclose(op.apply_transpose(x), A.T @ x, rtol=1e-14)


def test_an_operator_refuses_columns_that_do_not_fit_the_layout():
    with pytest.raises(SolverError, match="adds up to 5"):
        DistributedOperator(sp.eye(4, format="csr"), [2, 3])
    with pytest.raises(SolverError, match="square"):
        DistributedOperator(sp.csr_matrix((3, 4)), [4])


@pytest.mark.parametrize("fun", [apply_operator, apply_operator_transpose])
def test_operator_products_pass_the_taylor_test_in_both_modes(fun):
    A, op = operator()
    matrix = A if fun is apply_operator else A.T
    x, t = uniform(7, 0.2, 1.0, 2), normal(7, 3)
    assert_gradient(lambda x: scalarise(fun(op, x)), x)
    forward = _forward_jvp(lambda x: fun(op, x), (x,), (t,))
    assert forward is not None  # forward mode, not the VJP of the pullback
    np.testing.assert_allclose(forward[1], matrix @ t, rtol=1e-13)
    _, pull = vjp(lambda x: fun(op, x), x)
    np.testing.assert_allclose(pull(t), matrix.T @ t, rtol=1e-13)


def test_operator_products_nest():
    """Second derivatives of ``Σ (A x)³``: reverse over reverse, forward over reverse."""
    A, op = operator()
    x, v = uniform(7, 0.2, 1.0, 4), normal(7, 5)

    def f(x):
        return np.sum(apply_operator(op, x) ** 3)

    hessian = 6 * A.T @ sp.diags(A @ x) @ A
    np.testing.assert_allclose(hvp(f)(x, v), hessian @ v, rtol=1e-12)
    np.testing.assert_allclose(grad(lambda x: grad(f)(x) @ v)(x), hessian @ v, rtol=1e-12)


def test_total_passes_the_taylor_test_in_both_modes():
    A, op = operator()
    x, t = uniform(7, 0.2, 1.0, 6), normal(7, 7)

    def f(x):
        return total(np.sum(apply_operator(op, x) ** 2), SERIAL) * total(x[0], SERIAL)

    assert_gradient(f, x)
    forward = _forward_jvp(f, (x,), (t,))
    assert forward is not None
    np.testing.assert_allclose(forward[1], grad(f)(x) @ t, rtol=1e-13)
    np.testing.assert_allclose(
        hvp(f)(x, t), grad(lambda x: grad(f)(x) @ t)(x), rtol=1e-12)


def test_total_keeps_the_cotangent_on_each_rank_and_sums_the_tangents():
    """With three ranks holding this rank's ``x``: ``s = 3 Σ x²``. Each rank seeds its copy
    of ``s``, so its gradient is that of its own term, ``2 x`` (summing the cotangent too
    would give ``6 x``); a tangent of ``x`` on every rank moves ``s`` three times as much."""
    x, t = uniform(4, 0.2, 1.0, 8), normal(4, 9)

    def f(x):
        return total(np.sum(x**2), ThreeCopies())

    np.testing.assert_allclose(grad(f)(x), 2 * x, rtol=1e-15)
    value, slope = jvp(f, (x,), (t,))
    assert value == pytest.approx(3 * np.sum(x**2), rel=1e-15)
    assert slope == pytest.approx(3 * 2 * x @ t, rel=1e-14)
    array = total(x, ThreeCopies())
    np.testing.assert_allclose(array, 3 * x)

"""Preconditioner builders: AMG, Jacobi, none."""

import numpy as np
import pytest
import scipy.sparse as sp
from solver_helpers import laplacian_2d, random_rhs

import fesens.solvers.preconditioners as preconditioners
from fesens.errors import SolverError
from fesens.solvers.preconditioners import (
    amg_available,
    check_preconditioner,
    default_preconditioner,
    make_preconditioner,
)

needs_pyamg = pytest.mark.skipif(not amg_available(), reason="pyamg not installed")


def test_jacobi_is_the_inverse_absolute_diagonal():
    A = sp.diags([2.0, -4.0, 0.5], format="csr")
    M = make_preconditioner("jacobi", A, symmetric=False)
    np.testing.assert_allclose(M @ np.ones(3), [0.5, 0.25, 2.0])


def test_jacobi_rejects_a_zero_diagonal():
    A = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
    with pytest.raises(SolverError, match="2 zero diagonal entries"):
        make_preconditioner("jacobi", A, symmetric=True)


def test_none_is_none():
    assert make_preconditioner("none", laplacian_2d(3), symmetric=True) is None


@needs_pyamg
@pytest.mark.parametrize("symmetric", [True, False])
def test_amg_v_cycle_approximates_the_inverse(symmetric):
    A = laplacian_2d(12).tocsc()  # converted to CSR for pyamg without a warning
    M = make_preconditioner("amg", A, symmetric=symmetric)
    x = random_rhs(144)
    error = x - M @ (A @ x)
    assert np.linalg.norm(error) < 0.5 * np.linalg.norm(x)


@needs_pyamg
def test_amg_is_symmetric_for_symmetric_matrices():
    M = make_preconditioner("amg", laplacian_2d(8), symmetric=True)
    u, v = random_rhs(64, seed=1), random_rhs(64, seed=2)
    assert u @ (M @ v) == pytest.approx(v @ (M @ u), rel=1e-10)


def test_default_and_validation(monkeypatch):
    assert default_preconditioner() == ("amg" if amg_available() else "jacobi")
    with pytest.raises(ValueError, match="unknown preconditioner 'ilu'"):
        check_preconditioner("ilu")
    monkeypatch.setattr(preconditioners, "pyamg", None)
    assert default_preconditioner() == "jacobi"
    with pytest.raises(SolverError, match="pyamg.*jacobi"):
        check_preconditioner("amg")

"""Hessian-vector products: ``fesens.ad.hvp`` and ``value_grad_hvp`` against closed forms
and central differences of the gradient, and the solves they cost (one factorization)."""

import numpy as np
import pytest
from ad_helpers import laplacian_2d, normal, uniform

from fesens.ad import SparsePattern, grad, hvp, solve, sparse_matrix, value_grad_hvp
from fesens.solvers import available_solvers, make_solver

A = laplacian_2d(5, shift=2.0)
PATTERN = SparsePattern.of(A)
BASE = A.tocsr().data.copy()
ON_DIAGONAL = (PATTERN.rows == PATTERN.cols).astype(float)
N = A.shape[0]
B, C = normal(N, seed=11), normal(N, seed=12)
S, V = uniform(N, 0.0, 1.0, seed=13), normal(N, seed=14)
needs_cholmod = pytest.mark.skipif("cholmod" not in available_solvers(),
                                   reason="scikit-sparse missing")


def _output(s, backend):
    """``½ Σ c ⊙ u²``, ``u = (A + diag s³)⁻¹ b``: the adjoint's right-hand side ``c ⊙ u``
    depends on ``s``, so the second sweep differentiates both arguments of the adjoint
    solve."""
    K = sparse_matrix(PATTERN, BASE + (s**3)[PATTERN.rows] * ON_DIAGONAL)
    u = solve(K, B, solver=backend)
    return 0.5 * np.sum(C * u * u)


@needs_cholmod
def test_nested_hessian_vector_product_costs_four_solves_and_one_factorization():
    """Forward, adjoint, and one solve per adjoint rule in the second sweep: the VJP of the
    adjoint solve gives ``K̄`` and ``ḡ`` from one solve, not one each."""
    backend = make_solver("cholmod")
    grad(lambda s: grad(_output)(s, backend) @ V)(S)
    assert backend.stats["n_numeric"] == 1
    assert backend.stats["n_solves"] == 4


# ------------------------------------------------------------------ hvp and value_grad_hvp
def _rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _rosenbrock_hessian(x):
    """The closed form: tridiagonal."""
    n = x.size
    H = np.zeros((n, n))
    i = np.arange(n - 1)
    H[i, i] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    H[i + 1, i + 1] += 200.0
    H[i, i + 1] = H[i + 1, i] = -400.0 * x[:-1]
    return H


def test_hvp_of_a_numpy_function_closed_form_and_central_differences():
    x, v = uniform(6, -1.0, 1.5, seed=21), normal(6, seed=22)
    hv = hvp(_rosenbrock)(x, v)
    assert np.allclose(hv, _rosenbrock_hessian(x) @ v, rtol=1e-13)
    h = 1e-5
    fd = (grad(_rosenbrock)(x + h * v) - grad(_rosenbrock)(x - h * v)) / (2 * h)
    assert np.allclose(hv, fd, rtol=1e-7, atol=1e-7 * np.abs(fd).max())


def test_value_grad_hvp_gives_value_gradient_and_many_products():
    x = uniform(5, -1.0, 1.5, seed=23)
    value, gradient, hessp = value_grad_hvp(_rosenbrock)(x)
    assert value == pytest.approx(_rosenbrock(x), rel=1e-15)
    assert np.allclose(gradient, grad(_rosenbrock)(x), rtol=1e-15)
    H = _rosenbrock_hessian(x)
    for seed in (24, 25, 26):  # the kept trace serves every direction
        v = normal(5, seed=seed)
        assert np.allclose(hessp(v), H @ v, rtol=1e-13)
    assert np.allclose(np.column_stack([hessp(e) for e in np.eye(5)]), H, rtol=1e-13)


def test_hvp_over_several_arguments():
    """``f = Σ x² y``: ``H = [[2y I, 2x], [2xᵀ, 0]]``."""
    x, y = np.array([1.0, 2.0]), 3.0
    vx, vy = np.array([0.5, -1.0]), 2.0
    hx, hy = hvp(lambda x, y: np.sum(x**2 * y), argnums=(0, 1))(x, y, (vx, vy))
    assert np.allclose(hx, 2 * y * vx + 2 * x * vy, rtol=1e-15)
    assert hy == pytest.approx(2 * x @ vx, rel=1e-15)


def test_hvp_of_a_direction_of_the_wrong_shape_names_both_shapes():
    with pytest.raises(ValueError, match=r"shaped like the gradient, \[\(3,\)\]; got \[\(2,\)\]"):
        hvp(_rosenbrock)(np.ones(3), np.ones(2))


# ------------------------------------------------------------------ through model.solve
@pytest.fixture(scope="module")
def plate():
    """A clamped 8 x 4 quad4 plate pulled down on its right edge."""
    from fesens.mesh import rectangle
    from fesens.physics import Elasticity

    model = Elasticity(rectangle(8, 4, 2.0, 1.0, cell_type="quad4"), plane="stress")
    model.fix("left").traction("right", (0.0, -1.0))
    return model


def _objective(model, name):
    from fesens.objectives import compliance, displacement_norm

    response = {"compliance": compliance, "displacement_norm": displacement_norm}[name]
    return lambda x: response(model.solve(scale=x**3, solver="cholmod"))


@needs_cholmod
@pytest.mark.parametrize("name", ["compliance", "displacement_norm"])
def test_hvp_through_solve_against_differences_of_the_gradient(plate, name):
    """Central differences of ``∇J`` agree; the first-order remainder
    ``‖∇J(x + h v) − ∇J(x) − h H v‖`` falls as ``h²`` (it would fall as ``h`` with a wrong
    ``H v``)."""
    J = _objective(plate, name)
    x = uniform(plate.mesh.n_cells, 0.4, 1.0, seed=31)
    v = normal(x.size, seed=32) * 0.5
    hv = hvp(J)(x, v)
    gradient = grad(J)
    h = 1e-4
    fd = (gradient(x + h * v) - gradient(x - h * v)) / (2 * h)
    assert np.linalg.norm(hv - fd) <= 1e-6 * np.linalg.norm(hv)
    g0 = gradient(x)
    steps = 1e-2 / 2.0 ** np.arange(4)
    remainders = [np.linalg.norm(gradient(x + s * v) - g0 - s * hv) for s in steps]
    rates = np.log2(np.array(remainders[:-1]) / remainders[1:])
    assert np.all(np.abs(rates - 2.0) < 0.1), rates


@needs_cholmod
@pytest.mark.parametrize(("name", "solves_per_product"),
                         [("compliance", 1), ("displacement_norm", 2)])
def test_value_gradient_and_hvp_cost_one_factorization(plate, name, solves_per_product):
    J = _objective(plate, name)
    solver = plate.solver("cholmod")
    # values never factorized before (the model and its solver are the module's)
    x = uniform(plate.mesh.n_cells, 0.4, 1.0, seed=33 + solves_per_product)
    before = solver.stats
    value, gradient, hessp = value_grad_hvp(J)(x)
    traced = solver.stats
    products = [hessp(normal(x.size, seed=seed)) for seed in (34, 35, 36)]
    after = solver.stats
    assert after["n_numeric"] - before["n_numeric"] == 1
    assert traced["n_solves"] - before["n_solves"] == solves_per_product  # u (and λ)
    assert after["n_solves"] - traced["n_solves"] == 3 * solves_per_product
    assert np.allclose(products[0], hvp(J)(x, normal(x.size, seed=34)), rtol=1e-12)
    assert solver.stats["n_numeric"] == after["n_numeric"]  # same point: no new factorization

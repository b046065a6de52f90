"""Higher derivatives: ``grad(grad(f))`` and ``grad(grad(grad(f)))`` against closed forms,
nested traces that mix arguments, and Hessian-vector products through a sparse solve."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from ad_helpers import assert_gradient, laplacian_2d, normal, scalarise, uniform

from fesens.ad import SparsePattern, grad, solve, sparse_matrix
from fesens.solvers import available_solvers

X = 2.0
FUNCTIONS = {
    "f": lambda x: 5 * x**10,
    "g": lambda x: 3 * x**3 * (np.cos(x) - 10 * x),
    "h": lambda x: np.exp((5 * x / 2) * np.sin(x) ** np.exp(x)),
}
# f', f'', f''' at x = 2 in 30-digit arithmetic: sympy.N(diff(expr, x, k).subs(x, 2), 30).
DERIVATIVES = {
    "f": (25600.0, 115200.0, 460800.0),
    "g": (-996.804424359513486621416933044, -1510.46317677001479071248424910,
          -1478.92776856411444758348452808),
    "h": (-105.631011490369439523119029696, 825.471329688556095260927102253,
          -2759.50500053003186699986422643),
}
TOLERANCES = (1e-12, 1e-10, 1e-9)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_first_second_and_third_derivatives_at_2(name):
    f = FUNCTIONS[name]
    derivatives = (grad(f), grad(grad(f)), grad(grad(grad(f))))
    for order, (d, exact, rtol) in enumerate(zip(derivatives, DERIVATIVES[name], TOLERANCES,
                                                 strict=True), start=1):
        assert d(X) == pytest.approx(exact, rel=rtol), f"order {order}"


def test_closed_forms_of_g_agree_with_the_stated_constants():
    """The hand-derived derivatives of g = 3x³cos x − 30x⁴ (an independent check)."""
    x = X
    g1 = 9 * x**2 * math.cos(x) - 3 * x**3 * math.sin(x) - 120 * x**3
    g2 = 18 * x * math.cos(x) - 18 * x**2 * math.sin(x) - 3 * x**3 * math.cos(x) - 360 * x**2
    g3 = (18 * math.cos(x) - 54 * x * math.sin(x) - 27 * x**2 * math.cos(x)
          + 3 * x**3 * math.sin(x) - 720 * x)
    assert (g1, g2, g3) == pytest.approx(DERIVATIVES["g"], rel=1e-14)
    assert (grad(FUNCTIONS["g"])(x), grad(grad(FUNCTIONS["g"]))(x),
            grad(grad(grad(FUNCTIONS["g"])))(x)) == pytest.approx((g1, g2, g3), rel=1e-12)


def test_elementwise_second_and_third_derivatives_on_arrays():
    x = uniform(6, 0.5, 1.5, seed=1)

    def d(f):
        return lambda x: grad(lambda x: np.sum(f(x)))(x)

    f = FUNCTIONS["f"]
    assert np.allclose(d(d(f))(x), 450 * x**8, rtol=1e-13)
    assert np.allclose(d(d(d(f)))(x), 3600 * x**7, rtol=1e-13)
    assert np.allclose(d(d(np.tanh))(x), -2 * np.tanh(x) / np.cosh(x) ** 2, rtol=1e-13)


def test_hessian_vector_product_closed_form():
    """``f(x) = exp(a·x)``: ``H v = f(x) (a·v) a``."""
    a, x, v = normal(5, seed=2), uniform(5, -0.5, 0.5, seed=3), normal(5, seed=4)

    def f(x):
        return np.exp(a @ x)

    hv = grad(lambda x: grad(f)(x) @ v)(x)
    assert np.allclose(hv, np.exp(a @ x) * (a @ v) * a, rtol=1e-13)


def test_mixed_partial_derivative_across_traces():
    """``∂²(x y²)/∂x∂y = 2y``: the inner trace sees the outer one's box as a constant."""
    def f(x, y):
        return x * y**2

    def df_dx(x, y):
        return grad(f, argnums=0)(x, y)

    assert grad(df_dx, argnums=1)(3.0, 5.0) == pytest.approx(10.0, rel=1e-15)
    assert grad(df_dx, argnums=0)(3.0, 5.0) == 0.0


def test_no_perturbation_confusion():
    """``d/dx [x · d/dy (x + y)] = 1``: the inner derivative must not see x's tangent."""
    def outer(x):
        return x * grad(lambda y: x + y)(1.0)

    assert grad(outer)(2.0) == pytest.approx(1.0, rel=1e-15)


# ------------------------------------------------------------------ through a sparse solve
A = laplacian_2d(4, shift=2.0)
PATTERN = SparsePattern.of(A)
BASE = A.tocsr().data.copy()
ON_DIAGONAL = (PATTERN.rows == PATTERN.cols).astype(float)
B = normal(A.shape[0], seed=5)
S = uniform(A.shape[0], 0.0, 1.0, seed=6)
V = normal(A.shape[0], seed=7)
SOLVERS = [s for s in ("cholmod", "superlu") if s in available_solvers()]


def _matrix(s):
    """``A + diag(s)`` on A's pattern."""
    return sparse_matrix(PATTERN, BASE + s[PATTERN.rows] * ON_DIAGONAL)


@pytest.mark.parametrize("solver", SOLVERS)
def test_hessian_vector_product_through_solve_closed_form(solver):
    """``J(s) = bᵀ(A + diag s)⁻¹b``: ``∂J/∂s = −u²``, ``H v = 2 u ⊙ K⁻¹(u ⊙ v)``."""
    def J(s):
        return B @ solve(_matrix(s), B, solver=solver)

    K = (A + sp.diags(S)).tocsc()
    u = spla.spsolve(K, B)
    assert np.allclose(grad(J)(S), -(u**2), rtol=1e-10)
    hv = grad(lambda s: grad(J)(s) @ V)(S)
    assert np.allclose(hv, 2 * u * spla.spsolve(K, u * V), rtol=1e-9)


@pytest.mark.parametrize("solver", SOLVERS)
def test_hessian_vector_product_through_solve_taylor(solver):
    """Matrix and right-hand side both traced; ``⟨∇J, v⟩`` passes the gradient checks."""
    def J(p):
        s, b = p
        return scalarise(solve(_matrix(s), b * (1.0 + s), solver=solver))

    direction = (V, normal(A.shape[0], seed=8))

    def slope(p):
        gs, gb = grad(J)(p)
        return gs @ direction[0] + gb @ direction[1]

    assert_gradient(slope, (S, B), step=1e-4)

"""Sparse operators: constant scipy matrices, traced pattern matrices, the differentiable
solve on every backend, and the reuse of one factorization by the adjoint solve."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from ad_helpers import (
    assert_gradient,
    convection_diffusion_2d,
    laplacian_2d,
    normal,
    scalarise,
    uniform,
)

from fesens.ad import (
    PatternMatrix,
    SparsePattern,
    grad,
    matvec,
    solve,
    sparse_matrix,
    value_and_grad,
)
from fesens.solvers import available_solvers, make_solver

# ------------------------------------------------------------------ constant scipy matrices
S = (sp.random(4, 6, density=0.5, random_state=3, format="csr") + sp.eye(4, 6)).tocsr()
S_ARRAY = sp.csr_array(S)
X6, X4 = normal(6, seed=1), normal(4, seed=2)
X63, X34 = normal((6, 3), seed=3), normal((3, 4), seed=4)

CONSTANT_SPARSE = {
    "csr_matrix @ x": (lambda x: S @ x, X6),
    "csr_matrix @ X (n, k)": (lambda x: S @ x, X63),
    "csr_matrix.T @ x": (lambda x: S.T @ x, X4),
    "csr_array @ x": (lambda x: S_ARRAY @ x, X6),
    "csr_array @ X (n, k)": (lambda x: S_ARRAY @ x, X63),
    "x @ csr_matrix": (lambda x: x @ S, X4),
    "X @ csr_matrix": (lambda x: x @ S, X34),
    "x @ csr_array": (lambda x: x @ S_ARRAY, X4),
    "csr_matrix.dot(x)": (lambda x: S.dot(x), X6),
}


@pytest.mark.parametrize(("fun", "x"), [pytest.param(f, x, id=k)
                                        for k, (f, x) in CONSTANT_SPARSE.items()])
def test_constant_sparse_matvec(fun, x):
    assert_gradient(lambda x: scalarise(fun(x)), x)


def test_constant_sparse_matvec_closed_form():
    w = normal(4, seed=5)
    assert np.allclose(grad(lambda x: w @ (S @ x))(X6), S.T @ w, rtol=1e-14)


def test_vector_times_constant_sparse_closed_form():
    v = normal(6, seed=6)
    assert np.allclose(grad(lambda x: (x @ S) @ v)(X4), S @ v, rtol=1e-14)


# ------------------------------------------------------------------ traced pattern matrices
A_SPD = laplacian_2d(5, shift=2.0)  # n = 25, strictly diagonally dominant
A_NONSYM = convection_diffusion_2d(5)
P_SPD, P_NONSYM = SparsePattern.of(A_SPD), SparsePattern.of(A_NONSYM)
BASE_SPD, BASE_NONSYM = A_SPD.tocsr().data.copy(), A_NONSYM.tocsr().data.copy()
N = A_SPD.shape[0]
XN, XN3 = normal(N, seed=7), normal((N, 3), seed=8)
DATA = BASE_NONSYM * uniform(P_NONSYM.nnz, 0.8, 1.2, seed=9)


def test_pattern_of_a_matrix():
    pattern = SparsePattern.of(A_NONSYM.tocoo())
    dense = np.zeros(A_NONSYM.shape)
    dense[pattern.rows, pattern.cols] = BASE_NONSYM
    assert np.array_equal(dense, A_NONSYM.toarray())
    assert pattern.nnz == A_NONSYM.nnz
    K = sparse_matrix(pattern, BASE_NONSYM)
    assert isinstance(K, PatternMatrix)
    assert np.allclose(K @ XN, A_NONSYM @ XN, rtol=1e-14)


PATTERN_CASES = {
    "K(data) @ x": (lambda d: sparse_matrix(P_NONSYM, d) @ XN, DATA),
    "K(data) @ X (n, k)": (lambda d: sparse_matrix(P_NONSYM, d) @ XN3, DATA),
    "K(data) @ x(traced)": (lambda p: sparse_matrix(P_NONSYM, p[0]) @ p[1], (DATA, XN)),
    "matvec(K(data), X(traced))": (lambda p: matvec(sparse_matrix(P_NONSYM, p[0]), p[1]),
                                   (DATA, XN3)),
    "constant K @ x(traced)": (lambda x: PatternMatrix(P_NONSYM, DATA) @ x, XN),
    "constant K @ X(traced)": (lambda x: matvec(PatternMatrix(P_NONSYM, DATA), x), XN3),
    "K used twice: K @ (K @ x) / 30": (lambda p: (lambda K: K @ (K @ p[1]) / 30.0)(
        sparse_matrix(P_NONSYM, p[0])), (DATA, XN)),
    "K(data) @ x + data elementwise": (
        lambda d: sparse_matrix(P_NONSYM, d) @ XN + np.sum(d**2), DATA),
}


@pytest.mark.parametrize(("fun", "x"), [pytest.param(f, x, id=k)
                                        for k, (f, x) in PATTERN_CASES.items()])
def test_pattern_matrix_matvec(fun, x):
    assert_gradient(lambda x: scalarise(fun(x)), x)


def test_pattern_matrix_matvec_closed_form():
    w = normal(N, seed=10)
    g_data, g_x = grad(lambda d, x: w @ (sparse_matrix(P_NONSYM, d) @ x), argnums=(0, 1))(
        DATA, XN)
    rows, cols = P_NONSYM.rows, P_NONSYM.cols
    assert np.allclose(g_data, w[rows] * XN[cols], rtol=1e-14)  # K̄_ij = w_i x_j
    K = sp.csr_matrix((DATA, P_NONSYM.indices, P_NONSYM.indptr), shape=A_NONSYM.shape)
    assert np.allclose(g_x, K.T @ w, rtol=1e-13)


# ------------------------------------------------------------------ solve
def spd_values(theta):
    """Symmetric values on the SPD pattern (diagonal dominance kept for |θ| small)."""
    rows, cols = P_SPD.rows, P_SPD.cols
    return BASE_SPD * (1.0 + 0.3 * np.sin(theta[rows]) * np.sin(theta[cols]))


def nonsym_values(theta):
    """Non-symmetric values on the convection-diffusion pattern."""
    rows, cols = P_NONSYM.rows, P_NONSYM.cols
    return BASE_NONSYM * (1.0 + 0.3 * np.sin(theta[rows]) * np.cos(theta[cols]))


SPD_SOLVERS = ["cholmod", "superlu", "cg", "minres", "auto"]
NONSYM_SOLVERS = ["superlu", "gmres"]
THETA = uniform(N, -1.0, 1.0, seed=11)
RHS = {"f (n,)": normal(N, seed=12), "F (n, 3)": normal((N, 3), seed=13)}
ITERATIVE = {"cg", "minres", "gmres"}


def _solver_option(name):
    """Iterative backends solve to 1e-13: central differences at step 1e-6 divide the
    solver error by 1e-6, so the default 1e-10 would swamp them."""
    return (name, {"rtol": 1e-13}) if name in ITERATIVE else name


def _require(name):
    if name != "auto" and name not in available_solvers():
        pytest.skip(f"solver {name} not installed")


SOLVE_CASES = (
    [pytest.param(P_SPD, spd_values, s, r, id=f"SPD-{s}-{r}")
     for s in SPD_SOLVERS for r in RHS]
    + [pytest.param(P_NONSYM, nonsym_values, s, r, id=f"nonsym-{s}-{r}")
       for s in NONSYM_SOLVERS for r in RHS]
)


@pytest.mark.parametrize(("pattern", "values", "solver", "rhs"), SOLVE_CASES)
def test_solve(pattern, values, solver, rhs):
    """Traced matrix values (through θ) and traced right-hand side(s) at once."""
    _require(solver)
    option = _solver_option(solver)

    def f(p):
        theta, b = p
        return scalarise(solve(sparse_matrix(pattern, values(theta)), b, solver=option))

    assert_gradient(f, (THETA, RHS[rhs]))


@pytest.mark.parametrize("solver", NONSYM_SOLVERS)
def test_solve_with_arbitrary_traced_values(solver):
    """Any perturbation of the values (no structure imposed) on a non-symmetric matrix."""
    option = _solver_option(solver)
    b = RHS["F (n, 3)"]
    assert_gradient(lambda d: scalarise(solve(sparse_matrix(P_NONSYM, d), b, solver=option)),
                    DATA)


@pytest.mark.parametrize(("pattern", "matrix", "solver"),
                         [pytest.param(P_SPD, A_SPD, s, id=f"SPD-{s}") for s in SPD_SOLVERS]
                         + [pytest.param(P_NONSYM, A_NONSYM, s, id=f"nonsym-{s}")
                            for s in NONSYM_SOLVERS])
@pytest.mark.parametrize("rhs", sorted(RHS))
def test_solve_gradient_closed_form(pattern, matrix, solver, rhs):
    """``J = Σ c ⊙ u``, ``u = K⁻¹ b``: ``b̄ = K⁻ᵀ c``, ``K̄_ij = −λ_i u_j`` (summed over cases)."""
    _require(solver)
    b = RHS[rhs]
    c = normal(b.shape, seed=14)
    data = matrix.tocsr().data.copy()
    g_data, g_b = grad(
        lambda d, b: np.sum(c * solve(sparse_matrix(pattern, d), b, solver=_solver_option(
            solver))), argnums=(0, 1))(data, b)
    A = matrix.tocsc()
    u = spla.spsolve(A, b)
    lam = spla.spsolve(A.T.tocsc(), c)
    u, lam = u.reshape(b.shape), lam.reshape(b.shape)
    expected_data = -(lam[pattern.rows] * u[pattern.cols])
    if expected_data.ndim == 2:
        expected_data = expected_data.sum(axis=1)
    tol = 1e-9 if solver in ITERATIVE else 1e-11
    assert np.allclose(g_b, lam, rtol=tol, atol=tol * np.abs(lam).max())
    assert np.allclose(g_data, expected_data, rtol=tol, atol=tol * np.abs(expected_data).max())


@pytest.mark.parametrize("solver", ["superlu", "gmres"])
def test_solve_differentiated_in_one_argument_only(solver):
    """Constant right-hand side with traced values, and constant matrix with traced rhs."""
    b, c = RHS["f (n,)"], normal(N, seed=16)
    option = _solver_option(solver)
    A = A_NONSYM.tocsc()
    u, lam = spla.spsolve(A, b), spla.spsolve(A.T.tocsc(), c)
    K = PatternMatrix(P_NONSYM, BASE_NONSYM)
    g_b = grad(lambda b: c @ solve(K, b, solver=option))(b)
    assert np.allclose(g_b, lam, rtol=1e-9)
    g_data = grad(lambda d: c @ solve(sparse_matrix(P_NONSYM, d), b, solver=option))(
        BASE_NONSYM)
    assert np.allclose(g_data, -lam[P_NONSYM.rows] * u[P_NONSYM.cols], rtol=1e-9, atol=1e-12)


def test_adjoint_solve_reuses_the_forward_factorization():
    backend = make_solver("superlu")
    b, c = RHS["f (n,)"], normal(N, seed=15)

    def J(theta):
        return c @ solve(sparse_matrix(P_NONSYM, nonsym_values(theta)), b, solver=backend)

    value_and_grad(J)(THETA)
    assert backend.stats["n_numeric"] == 1  # factorized once ...
    assert backend.stats["n_solves"] == 2  # ... for the forward and the adjoint solve


def test_several_right_hand_sides_share_one_factorization():
    backend = make_solver("superlu")
    F = RHS["F (n, 3)"]
    value_and_grad(lambda d: np.sum(solve(sparse_matrix(P_NONSYM, d), F, solver=backend) ** 2))(
        DATA)
    assert backend.stats["n_numeric"] == 1
    assert backend.stats["n_solves"] == 2


@pytest.mark.skipif("cholmod" not in available_solvers(), reason="scikit-sparse missing")
def test_compliance_is_self_adjoint_no_second_solve():
    """``C = fᵀ K⁻¹ f`` with ``K`` symmetric: ``λ = u``, ``K̄_ij = −u_i u_j``."""
    backend = make_solver("cholmod")
    f = RHS["f (n,)"]
    data = BASE_SPD.copy()
    value, g = value_and_grad(lambda d: f @ solve(sparse_matrix(P_SPD, d), f, solver=backend))(
        data)
    u = spla.spsolve(A_SPD.tocsc(), f)
    assert value == pytest.approx(f @ u, rel=1e-12)
    assert np.allclose(g, -u[P_SPD.rows] * u[P_SPD.cols], rtol=1e-10)
    assert backend.stats["n_solves"] == 1


@pytest.mark.parametrize("solver", ["superlu", "cholmod", "cg"])
def test_new_values_on_the_same_pattern_are_refactorized(solver):
    """The cached solver of a pattern must not serve a stale factorization."""
    _require(solver)
    f = RHS["f (n,)"]
    for scale in (1.0, 2.0, 3.0):
        data = BASE_SPD * scale
        u = solve(sparse_matrix(P_SPD, data), f, solver=_solver_option(solver))
        assert np.allclose(u, spla.spsolve(A_SPD.tocsc(), f) / scale, rtol=1e-9)


def test_values_changed_in_place_are_refactorized():
    """A reused value buffer (as in an optimisation loop) gives the current solution."""
    f = RHS["f (n,)"]
    data = BASE_SPD.copy()
    u1 = solve(sparse_matrix(P_SPD, data), f, solver="superlu")
    data *= 2.0  # same array object, new values
    u2 = solve(sparse_matrix(P_SPD, data), f, solver="superlu")
    assert np.allclose(u2, u1 / 2.0, rtol=1e-12)

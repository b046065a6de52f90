"""``cholmod_lu``: Cholesky, then L D L^T, then LU, each only where the one before failed."""

import numpy as np
import pytest
import scipy.sparse as sp
from solver_helpers import laplacian_2d, random_rhs, relative_error

from fesens.errors import NotPositiveDefiniteError
from fesens.solvers import cholmod_available, make_solver

pytestmark = pytest.mark.skipif(not cholmod_available(), reason="scikit-sparse not installed")

N = 36  # laplacian_2d(6)


def quasi_definite() -> sp.csr_matrix:
    """Symmetric indefinite, with a non-zero pivot in every order: diag(A, -A) + 0.1 I off
    the diagonal blocks (A the 2D Laplacian)."""
    A = laplacian_2d(6)
    return sp.bmat([[A, 0.1 * sp.identity(N)], [0.1 * sp.identity(N), -A]], format="csr")


def swaps(epsilon: float) -> sp.csr_matrix:
    """Blocks ``[[epsilon, 1], [1, epsilon]]`` along the diagonal: L D L^T without pivoting
    meets the pivot ``epsilon`` whatever the ordering (zero: it stops; tiny: the solution
    is wrong in every digit)."""
    block = np.array([[epsilon, 1.0], [1.0, epsilon]])
    return sp.csr_matrix(sp.block_diag([block] * 6))


def check(solver, A, method, fallbacks, lu_fallbacks):
    b = random_rhs(A.shape[0], 2)
    dense = A.toarray()
    assert relative_error(solver.solve(b), np.linalg.solve(dense, b)) < 1e-10
    assert relative_error(solver.solve_transpose(b[:, 0]), np.linalg.solve(dense, b[:, 0])) \
        < 1e-10
    stats = solver.stats
    assert (stats["factorized_by"], stats["n_fallbacks"], stats["n_lu_fallbacks"]) == \
        (method, fallbacks, lu_fallbacks)


def test_each_matrix_starts_at_cholesky_and_goes_only_as_far_as_it_must():
    solver = make_solver("cholmod_lu")
    solver.factorize(laplacian_2d(12))
    check(solver, laplacian_2d(12), "cholesky", 0, 0)
    assert solver.stats["fallback_reason"] is None
    solver.factorize(quasi_definite())
    check(solver, quasi_definite(), "ldlt", 1, 0)
    assert "LDL^T" in solver.stats["fallback_reason"]
    for epsilon, why in [(0.0, "zero pivot"), (1e-20, "failed the check")]:
        solver.factorize(swaps(epsilon))
        check(solver, swaps(epsilon), "lu", 2 + (epsilon > 0), 1 + (epsilon > 0))
        assert why in solver.stats["fallback_reason"]
    # the next definite matrix is Cholesky's again; each step's count stays apart
    solver.factorize(laplacian_2d(12))
    check(solver, laplacian_2d(12), "cholesky", 3, 2)
    assert solver.stats["n_numeric"] == 5


def test_ldlt_keeps_its_analysis_for_the_pattern():
    solver = make_solver("cholmod_lu")
    A = quasi_definite()
    solver.factorize(A)
    solver.factorize(2.0 * A)
    assert solver.stats["n_symbolic"] == 2  # Cholesky's and L D L^T's, once each
    b = random_rhs(2 * N)
    assert relative_error(solver.solve(b), np.linalg.solve(2.0 * A.toarray(), b)) < 1e-10


def test_explicit_cholmod_still_refuses_an_indefinite_matrix():
    with pytest.raises(NotPositiveDefiniteError, match="indefinite"):
        make_solver("cholmod").factorize(quasi_definite())

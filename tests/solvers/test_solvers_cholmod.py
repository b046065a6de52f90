"""CHOLMOD backend: symbolic reuse and the diagnosis of matrices that are not SPD."""

import numpy as np
import pytest
import scipy.sparse as sp
from solver_helpers import (
    convection_diffusion_2d,
    laplacian_1d,
    laplacian_2d,
    random_rhs,
    relative_error,
)

from fesens.errors import NotPositiveDefiniteError, SingularMatrixError, SolverError
from fesens.solvers import CholmodSolver, cholmod_available, make_solver

pytestmark = pytest.mark.skipif(not cholmod_available(), reason="scikit-sparse not installed")

DEFINITENESS_HINT = (
    "not symmetric positive definite (singular or indefinite); if this is a stiffness "
    "matrix, Dirichlet conditions are probably missing"
)


def test_symbolic_analysis_is_reused_for_the_same_pattern():
    A = laplacian_2d(12)
    A2 = A.copy()
    A2.data *= np.linspace(1.0, 3.0, A2.nnz)
    A2 = ((A2 + A2.T) / 2).tocsr()  # same pattern, new values, still SPD
    b = random_rhs(A.shape[0])
    solver = make_solver("cholmod")
    solver.factorize(A)
    solver.factorize(A2)
    assert solver.stats["n_symbolic"] == 1
    assert solver.stats["n_numeric"] == 2
    assert relative_error(solver.solve(b), np.linalg.solve(A2.toarray(), b)) < 1e-12


def test_new_pattern_triggers_new_analysis():
    solver = make_solver("cholmod")
    solver.factorize(laplacian_2d(6))
    wider = laplacian_2d(6) + 0.1 * sp.diags([np.ones(34), np.ones(34)], [-2, 2])
    solver.factorize(wider.tocsr())  # SPD, with entries at two more offsets
    assert solver.stats["n_symbolic"] == 2
    solver.factorize(laplacian_2d(7))  # new shape
    assert solver.stats["n_symbolic"] == 3
    b = random_rhs(49)
    assert relative_error(solver.solve(b), np.linalg.solve(laplacian_2d(7).toarray(), b)) < 1e-12


def test_csr_and_csc_input_share_the_analysis():
    A = laplacian_2d(5)
    solver = make_solver("cholmod")
    solver.factorize(A)  # CSR: factorized through its transpose, a free CSC view
    solver.factorize(A.tocsc())
    assert solver.stats["n_symbolic"] == 1


def test_int64_indices_are_reanalysed_without_warnings():
    A = laplacian_2d(5).tocsc()
    A64 = A.copy()
    A64.indices, A64.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
    solver = make_solver("cholmod")
    solver.factorize(A)
    solver.factorize(A64)
    solver.factorize(A)
    assert solver.stats["n_symbolic"] == 3
    b = random_rhs(25)
    assert relative_error(solver.solve(b), np.linalg.solve(A.toarray(), b)) < 1e-12


def test_pure_neumann_laplacian_with_a_zero_pivot_is_singular():
    with pytest.raises(SingularMatrixError, match="Dirichlet conditions are probably missing"):
        make_solver("cholmod").factorize(laplacian_1d(8, dirichlet=False))


def test_pure_neumann_laplacian_2d_is_singular_whichever_way_its_last_pivot_rounds():
    # The last pivot of the 2D case is zero rounded: +1.8e-15, +4e-16 or not positive,
    # depending on the BLAS kernel; the factorization or the first solve diagnoses it.
    solver = make_solver("cholmod")
    with pytest.raises(SingularMatrixError, match="Dirichlet conditions are probably missing"):
        solver.factorize(laplacian_2d(6, dirichlet=False))
        solver.solve(random_rhs(36))


def test_a_tiny_positive_pivot_factors_and_the_residual_check_diagnoses_the_matrix():
    # Shifted by 1e-13 I, the last pivot is about 36 x 1e-13 (the shift times the size, by
    # the constant null vector), far above the ~1e-15 the kernels' rounding moves it by: the
    # factorization succeeds everywhere. The first solve's relative residual (6e-4 to 7e-4
    # under the OpenBLAS kernels tried) is far above the check's 1e-6.
    solver = make_solver("cholmod")
    solver.factorize((laplacian_2d(6, dirichlet=False) + 1e-13 * sp.eye(36)).tocsr())
    with pytest.raises(SingularMatrixError, match="Dirichlet conditions are probably missing"):
        solver.solve(random_rhs(36))


def test_indefinite_matrix_is_not_positive_definite():
    A = (laplacian_2d(6) - 1.5 * sp.eye(36)).tocsr()
    with pytest.raises(NotPositiveDefiniteError, match=r"minres") as error:
        make_solver("cholmod").factorize(A)
    assert DEFINITENESS_HINT in str(error.value)
    assert not isinstance(error.value, SingularMatrixError)


def test_negative_definite_matrix_is_not_positive_definite():
    with pytest.raises(NotPositiveDefiniteError, match="not symmetric positive definite"):
        make_solver("cholmod").factorize(-laplacian_2d(4))


def test_recovers_after_a_failed_factorization():
    A = laplacian_2d(6)
    solver = make_solver("cholmod")
    with pytest.raises(NotPositiveDefiniteError):
        solver.factorize((A - 1.5 * sp.eye(36)).tocsr())
    solver.factorize(A)  # same pattern: the analysis is reused
    assert solver.stats["n_symbolic"] == 1
    b = random_rhs(36)
    assert relative_error(solver.solve(b), np.linalg.solve(A.toarray(), b)) < 1e-12


def test_non_symmetric_matrix_is_caught_by_the_residual_check():
    A = convection_diffusion_2d(5)
    solver = make_solver("cholmod")
    solver.factorize(A)  # CHOLMOD reads one triangle and factors a different matrix
    with pytest.raises(SolverError, match="not symmetric.*superlu"):
        solver.solve(random_rhs(25))


def test_solve_transpose_reuses_the_factor():
    A = laplacian_2d(5)
    solver = CholmodSolver()
    solver.factorize(A)
    b = random_rhs(25, 2)
    np.testing.assert_array_equal(solver.solve_transpose(b), solver.solve(b))
    assert solver.stats["n_numeric"] == 1

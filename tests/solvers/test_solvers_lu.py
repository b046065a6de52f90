"""LU backends: SuperLU always, UMFPACK when scikit-umfpack is installed."""

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

from fesens.errors import SingularMatrixError
from fesens.solvers import UmfpackSolver, make_solver

LU_BACKENDS = [
    "superlu",
    pytest.param(
        "umfpack",
        marks=pytest.mark.skipif(
            not UmfpackSolver.available(), reason="scikit-umfpack not installed"
        ),
    ),
]


@pytest.mark.parametrize("name", LU_BACKENDS)
@pytest.mark.parametrize("n_rhs", [None, 2])
def test_solve_and_solve_transpose_of_a_non_symmetric_matrix(name, n_rhs):
    A = convection_diffusion_2d(8)
    b = random_rhs(64, n_rhs)
    solver = make_solver(name)
    solver.factorize(A)
    dense = A.toarray()
    assert relative_error(solver.solve(b), np.linalg.solve(dense, b)) < 1e-12
    assert relative_error(solver.solve_transpose(b), np.linalg.solve(dense.T, b)) < 1e-12
    assert solver.stats["n_numeric"] == 1


@pytest.mark.parametrize("name", LU_BACKENDS)
@pytest.mark.parametrize("matrix_format", ["csr", "csc"])
def test_transpose_solve_for_both_formats(name, matrix_format):
    A = convection_diffusion_2d(4).asformat(matrix_format)
    solver = make_solver(name)
    solver.factorize(A)
    b = random_rhs(16)
    assert relative_error(solver.solve_transpose(b), np.linalg.solve(A.toarray().T, b)) < 1e-12


@pytest.mark.parametrize("name", LU_BACKENDS)
def test_exactly_singular_matrix(name):
    with pytest.raises(SingularMatrixError, match="singular.*Dirichlet"):
        make_solver(name).factorize(laplacian_1d(8, dirichlet=False))


@pytest.mark.parametrize("name", LU_BACKENDS)
def test_numerically_singular_matrix_fails_the_residual_check(name):
    # Pure Neumann 2D Laplacian: factors with a rounding-sized pivot, no error.
    A = laplacian_2d(6, dirichlet=False)
    solver = make_solver(name)
    try:
        solver.factorize(A)
    except SingularMatrixError as error:  # UMFPACK may see the zero pivot exactly
        assert "Dirichlet" in str(error)
        return
    with pytest.raises(
        SingularMatrixError, match=r"relative residual .* exceeds 1\.0e-06.*Dirichlet"
    ):
        solver.solve(random_rhs(36))


def test_residual_check_can_be_disabled():
    solver = make_solver("superlu", check_residual=False)
    solver.factorize(laplacian_2d(6, dirichlet=False))
    assert np.all(np.isfinite(solver.solve(random_rhs(36))))  # meaningless, but returned


def test_residual_threshold_is_configurable():
    A = laplacian_2d(6)
    solver = make_solver("superlu", residual_rtol=1e-20)  # below rounding: always fails
    solver.factorize(A)
    with pytest.raises(SingularMatrixError, match="exceeds 1.0e-20"):
        solver.solve(random_rhs(36))


def test_superlu_counts_one_analysis_per_factorization():
    solver = make_solver("superlu")
    solver.factorize(laplacian_2d(4))
    solver.factorize(2.0 * laplacian_2d(4))
    stats = solver.stats
    assert stats["n_symbolic"] == stats["n_numeric"] == 2
    assert stats["symbolic_seconds"] == 0.0 and stats["numeric_seconds"] > 0.0


@pytest.mark.skipif(not UmfpackSolver.available(), reason="scikit-umfpack not installed")
def test_umfpack_reuses_its_symbolic_analysis():
    A = convection_diffusion_2d(6)
    solver = make_solver("umfpack")
    solver.factorize(A)
    solver.factorize(3.0 * A)
    assert solver.stats["n_symbolic"] == 1
    b = random_rhs(36)
    assert relative_error(solver.solve(b), np.linalg.solve(3.0 * A.toarray(), b)) < 1e-12
    wider = A + 0.1 * sp.diags([np.ones(34), np.ones(34)], [-2, 2])
    solver.factorize(wider.tocsr())  # entries at two more offsets
    assert solver.stats["n_symbolic"] == 2

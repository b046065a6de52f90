"""Krylov backends: convergence to the true relative residual, warm starts, failures."""

import numpy as np
import pytest
import scipy.sparse as sp
from solver_helpers import convection_diffusion_2d, laplacian_2d, random_rhs, relative_error

import fesens.solvers.preconditioners as preconditioners
from fesens.errors import ConvergenceError, SolverError
from fesens.solvers import make_solver
from fesens.solvers.base import relative_residual
from fesens.solvers.preconditioners import amg_available

METHODS = ["cg", "minres", "gmres"]
PRECONDITIONERS = [
    pytest.param("amg", marks=pytest.mark.skipif(not amg_available(), reason="no pyamg")),
    "jacobi",
    "none",
]


@pytest.fixture(scope="module")
def laplacian():
    return laplacian_2d(16)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("preconditioner", PRECONDITIONERS)
@pytest.mark.parametrize("rtol", [1e-6, 1e-10])
def test_true_residual_meets_rtol(method, preconditioner, rtol, laplacian):
    # scipy's MINRES stops on a backward error and leaves ||b - A x|| / ||b|| up to
    # ~100x above rtol: the backend resumes until the true residual is below it.
    b = random_rhs(laplacian.shape[0], 2)
    solver = make_solver(method, preconditioner=preconditioner, rtol=rtol)
    solver.factorize(laplacian)
    x = solver.solve(b)
    assert relative_residual(laplacian, x[:, 0], b[:, 0]) <= rtol
    assert relative_residual(laplacian, x[:, 1], b[:, 1]) <= rtol
    assert solver.stats["last_residual"] <= rtol
    assert 0 < solver.stats["last_iterations"] <= 10 * laplacian.shape[0]


@pytest.mark.parametrize("preconditioner", PRECONDITIONERS)
def test_gmres_solve_transpose_of_a_non_symmetric_matrix(preconditioner):
    A = convection_diffusion_2d(10)
    b = random_rhs(100)
    solver = make_solver("gmres", preconditioner=preconditioner, rtol=1e-10)
    solver.factorize(A)
    assert relative_error(solver.solve(b), np.linalg.solve(A.toarray(), b)) < 1e-8
    assert relative_error(solver.solve_transpose(b), np.linalg.solve(A.toarray().T, b)) < 1e-8


def test_gmres_builds_the_transposed_preconditioner_once():
    solver = make_solver("gmres", preconditioner="jacobi")
    solver.factorize(convection_diffusion_2d(6))
    solver.solve_transpose(random_rhs(36))
    solver.solve_transpose(random_rhs(36, seed=1))
    assert solver.stats["n_numeric"] == 2
    solver.factorize(convection_diffusion_2d(6))  # a new matrix drops it
    solver.solve_transpose(random_rhs(36))
    assert solver.stats["n_numeric"] == 4


@pytest.mark.parametrize("method", METHODS)
def test_not_converged_raises_with_details(method, laplacian):
    solver = make_solver(method, preconditioner="jacobi", rtol=1e-10, maxiter=2)
    solver.factorize(laplacian)
    with pytest.raises(ConvergenceError, match=rf"{method} .*did not converge") as error:
        solver.solve(random_rhs(laplacian.shape[0]))
    assert error.value.iterations == 2
    assert error.value.tolerance == 1e-10
    assert error.value.residual > 1e-10
    assert f"{error.value.residual:.3e}" in str(error.value)
    assert "after 2 iterations" in str(error.value)


@pytest.mark.parametrize("method", METHODS)
def test_warm_start(method, laplacian):
    b = random_rhs(laplacian.shape[0])
    solver = make_solver(method, preconditioner="jacobi", rtol=1e-8)
    solver.factorize(laplacian)
    x = solver.solve(b)
    cold = solver.stats["last_iterations"]
    solver.solve(b, x0=x)
    assert solver.stats["last_iterations"] == 0  # already converged
    solver.solve(1.001 * b, x0=x)
    assert 0 < solver.stats["last_iterations"] < cold
    adjoint = solver.solve_transpose(b, x0=x)
    assert relative_residual(laplacian.T, adjoint, b) <= 1e-8


@pytest.mark.parametrize("method", METHODS)
def test_zero_rhs_gives_zero_without_iterations(method, laplacian):
    solver = make_solver(method)
    solver.factorize(laplacian)
    b = np.zeros((laplacian.shape[0], 2))
    b[0, 1] = 1.0
    x = solver.solve(b)
    assert np.all(x[:, 0] == 0.0)
    assert relative_residual(laplacian, x[:, 1], b[:, 1]) <= solver.rtol


def test_options_are_validated(monkeypatch):
    with pytest.raises(ValueError, match="rtol"):
        make_solver("cg", rtol=0.0)
    with pytest.raises(ValueError, match="maxiter"):
        make_solver("gmres", maxiter=0)
    with pytest.raises(ValueError, match="unknown preconditioner 'ilu'"):
        make_solver("cg", preconditioner="ilu")
    monkeypatch.setattr(preconditioners, "pyamg", None)
    assert make_solver("cg").preconditioner == "jacobi"
    with pytest.raises(SolverError, match="pyamg"):
        make_solver("minres", preconditioner="amg")


def test_jacobi_needs_a_non_zero_diagonal():
    A = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
    solver = make_solver("gmres", preconditioner="jacobi")
    with pytest.raises(SolverError, match="zero diagonal"):
        solver.factorize(A)


def test_minres_handles_symmetric_indefinite_matrices():
    A = (laplacian_2d(8) - 1.5 * sp.eye(64)).tocsr()
    b = random_rhs(64)
    solver = make_solver("minres", preconditioner="jacobi", rtol=1e-10)
    solver.factorize(A)
    assert relative_error(solver.solve(b), np.linalg.solve(A.toarray(), b)) < 1e-7

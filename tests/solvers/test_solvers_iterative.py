"""Krylov backends: convergence to the true relative residual, warm starts, failures."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import minres
from solver_helpers import (
    convection_diffusion_2d,
    elasticity_stiffness,
    laplacian_2d,
    random_rhs,
    relative_error,
    simp_cantilever,
)

import fesens.solvers.preconditioners as preconditioners
from fesens.errors import ConvergenceError, NonFiniteError, SolverError
from fesens.solvers import make_solver
from fesens.solvers.base import relative_residual
from fesens.solvers.preconditioners import amg_available

METHODS = ["cg", "minres", "gmres"]
needs_pyamg = pytest.mark.skipif(not amg_available(), reason="no pyamg")
AMG = pytest.param("amg", marks=needs_pyamg)
PRECONDITIONERS = [AMG, "jacobi", "none"]


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


@pytest.mark.skipif(not amg_available(), reason="no pyamg")
def test_gmres_builds_the_transposed_preconditioner_once():
    # AMG of A^T is not AMG of A for a non-symmetric A: built on the first adjoint solve
    solver = make_solver("gmres", preconditioner="amg")
    solver.factorize(convection_diffusion_2d(6))
    solver.solve_transpose(random_rhs(36))
    solver.solve_transpose(random_rhs(36, seed=1))
    assert solver.stats["n_numeric"] == 2
    solver.factorize(convection_diffusion_2d(6))  # a new matrix drops it
    solver.solve_transpose(random_rhs(36))
    assert solver.stats["n_numeric"] == 4


@pytest.mark.parametrize(
    ("preconditioner", "matrix"),
    [("jacobi", convection_diffusion_2d(6)), ("none", convection_diffusion_2d(6))]
    + ([("amg", laplacian_2d(6))] if amg_available() else []),
)
def test_gmres_reuses_the_preconditioner_for_the_transpose(preconditioner, matrix):
    # Jacobi and none are transpose-invariant; AMG of a symmetric A serves A^T
    solver = make_solver("gmres", preconditioner=preconditioner, rtol=1e-10)
    solver.factorize(matrix)
    b = random_rhs(matrix.shape[0])
    x = solver.solve_transpose(b)
    assert solver.stats["n_numeric"] == 1
    assert relative_error(x, np.linalg.solve(matrix.toarray().T, b)) < 1e-8


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
    x = solver.solve(b[:, 0])
    assert np.all(x == 0.0)
    assert (solver.stats["last_iterations"], solver.stats["last_residual"]) == (0, 0.0)


def test_options_are_validated(monkeypatch):
    with pytest.raises(ValueError, match="rtol"):
        make_solver("cg", rtol=0.0)
    with pytest.raises(ValueError, match="maxiter"):
        make_solver("gmres", maxiter=0)
    with pytest.raises(ValueError, match="restart must be at least 1, got 0"):
        make_solver("gmres", restart=0)
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


@pytest.mark.parametrize("method", METHODS)
def test_unattainable_rtol_stops_with_stagnation(method):
    # rtol below eps: the residual stalls near 1e-16, long before maxiter
    A = laplacian_2d(20)
    solver = make_solver(method, preconditioner="jacobi", rtol=1e-18)
    solver.factorize(A)
    with pytest.raises(ConvergenceError, match="stagnation: the residual changed") as error:
        solver.solve(random_rhs(400))
    assert "rounding level eps || |A| |x| || / ||b||" in str(error.value)
    assert error.value.residual < 1e-14
    assert error.value.iterations < 10 * 400 / 4


def test_cg_breakdown_raises_non_finite_error():
    # p^T A p = 0 in the first step: scipy's CG divides by zero
    A = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
    solver = make_solver("cg", preconditioner="none")
    solver.factorize(A)
    with pytest.raises(NonFiniteError, match="non-finite.*symmetric positive definite"):
        solver.solve(np.array([1.0, 0.0]))


@pytest.mark.parametrize("preconditioner", [AMG, "jacobi"])
@pytest.mark.parametrize("rtol", [1e-6, 1e-10])
def test_minres_meets_rtol_on_a_simp_matrix(preconditioner, rtol):
    # Void displacements ~1e6 times the solid ones pass scipy's test ||r|| / (||A|| ||x||)
    # with the true relative residual still above 1e-2
    K, f = simp_cantilever()
    M = sp.diags(1.0 / K.diagonal())
    x_scipy, info = minres(K, f, rtol=rtol, M=M)
    assert info == 0 and relative_residual(K, x_scipy, f) > 1e-2
    solver = make_solver("minres", preconditioner=preconditioner, rtol=rtol)
    solver.factorize(K)
    x = solver.solve(f)
    assert relative_residual(K, x, f) <= rtol
    assert solver.stats["last_residual"] <= rtol


@needs_pyamg
def test_minres_with_an_indefinite_amg_preconditioner_names_the_fix():
    # AMG of a negative definite matrix is negative definite; MINRES needs it positive
    A = (-laplacian_2d(8)).tocsr()
    solver = make_solver("minres", preconditioner="amg")
    solver.factorize(A)
    with pytest.raises(SolverError, match="indefinite preconditioner.*preconditioner='jacobi'"):
        solver.solve(random_rhs(64))


# ------------------------------------------------------------------ near-null space
@needs_pyamg
@pytest.mark.parametrize("dim", [2, 3])
def test_rigid_body_modes_cut_amg_cg_iterations(dim):
    # measured: 38 -> 9 (2D), 33 -> 10 (3D) at rtol 1e-8
    K, modes = elasticity_stiffness(dim)
    b = random_rhs(K.shape[0])
    iterations = {}
    for label, near_nullspace in [("constants", None), ("rigid modes", modes)]:
        solver = make_solver("cg", preconditioner="amg", rtol=1e-8, near_nullspace=near_nullspace)
        solver.factorize(K)
        x = solver.solve(b)
        assert relative_residual(K, x, b) <= 1e-8
        iterations[label] = solver.stats["last_iterations"]
    assert 2.5 * iterations["rigid modes"] <= iterations["constants"], iterations


@needs_pyamg
def test_a_near_nullspace_callable_is_evaluated_at_every_factorize():
    K, modes = elasticity_stiffness(2)
    calls = []

    def near_nullspace():
        calls.append(None)
        return modes

    solver = make_solver("cg", preconditioner="amg", near_nullspace=near_nullspace)
    assert solver.near_nullspace is near_nullspace and not calls
    solver.factorize(K)
    solver.factorize(2.0 * K)
    assert len(calls) == 2
    solver.near_nullspace = lambda: modes[:-1]  # takes effect at the next factorize
    with pytest.raises(ValueError, match=r"879 rows but the matrix has 880"):
        solver.factorize(K)


def test_the_near_nullspace_is_validated_when_set_and_ignored_without_amg():
    with pytest.raises(ValueError, match="shape"):
        make_solver("cg", near_nullspace=np.ones((4, 0)))
    solver = make_solver("minres", preconditioner="jacobi", near_nullspace=[1.0, 2.0])
    np.testing.assert_array_equal(solver.near_nullspace, [[1.0], [2.0]])
    solver.near_nullspace = lambda: pytest.fail("evaluated for a Jacobi preconditioner")
    solver.factorize(laplacian_2d(4))
    assert relative_residual(laplacian_2d(4), solver.solve(np.ones(16)), np.ones(16)) <= 1e-10

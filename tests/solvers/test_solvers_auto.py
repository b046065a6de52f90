"""A bare ``make_solver("auto")``: direct or CG + AMG, chosen from the matrix at factorize."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from solver_helpers import convection_diffusion_2d, laplacian_1d, laplacian_2d, random_rhs

import fesens.solvers.auto as auto
import fesens.solvers.policy as policy
from fesens.solvers import make_solver, solver_class
from fesens.solvers.auto import AutoSolver
from fesens.solvers.base import relative_residual
from fesens.solvers.memory import factor_bytes

DIRECT = solver_class("auto").name


def elasticity_like(m: int) -> sp.csr_matrix:
    """SPD, 54 nonzeros per row inside (3D-like): a 27-point 3D stencil on an ``m³`` grid
    with a 2 x 2 SPD block per point, shape (2 m³, 2 m³)."""
    T = sp.diags([-np.ones(m - 1), np.full(m, 3.0), -np.ones(m - 1)], [-1, 0, 1])
    block = sp.csr_matrix([[2.0, -1.0], [-1.0, 2.0]])
    return sp.kron(sp.kron(sp.kron(T, T), T), block, format="csr")


@pytest.fixture
def memory(monkeypatch):
    """Set the memory ``auto`` sees as available (bytes)."""
    def set_available(n_bytes):
        monkeypatch.setattr(auto, "available_bytes", lambda: n_bytes)
    return set_available


def solved(solver, A, k=None):
    b = random_rhs(A.shape[0], k)
    solver.factorize(A)
    return relative_residual(A, solver.solve(b), b)


def test_small_matrix_goes_direct():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SuperLU fallback warns where CHOLMOD is missing
        solver = make_solver("auto")
    assert isinstance(solver, AutoSolver)
    assert solver.stats["choice"] is None and "factorize" in solver.stats["reason"]
    assert solved(solver, laplacian_2d(10), 2) <= 1e-12
    stats = solver.stats
    assert stats["choice"] == DIRECT and solver.is_direct and stats["n_numeric"] == 1
    assert stats["reason"].startswith("100 unknowns, 5 nonzeros per row (2D-like): factor")
    assert stats["reason"].endswith("available, direct")


def test_matrix_whose_factor_does_not_fit_goes_iterative(memory):
    A = elasticity_like(8)
    n = A.shape[0]
    memory(0.5 * factor_bytes(n, 3))  # auto must see it as 3D to refuse it
    solver = AutoSolver()
    assert solved(solver, A) <= solver.backend.rtol
    assert solver.choice == "cg" and not solver.is_direct and solver.symmetric
    assert solver.stats["last_iterations"] > 0
    assert solver.reason == (
        f"{n} unknowns, {A.nnz / n:.0f} nonzeros per row (3D-like): factor about "
        f"{factor_bytes(n, 3) / 2**20:.0f} MiB of {0.5 * factor_bytes(n, 3) / 2**20:.0f} MiB "
        "available, the factor does not fit: CG with amg")
    # the adjoint solve and a refactorization of new values keep the choice
    b = random_rhs(n, seed=3)
    assert relative_residual(A.T, solver.solve_transpose(b), b) <= 1e-10
    solver.factorize(2.0 * A)
    assert solver.choice == "cg" and solver.stats["n_numeric"] == 2


def test_large_3d_matrix_goes_iterative_even_if_it_fits(monkeypatch, memory):
    memory(1e15)
    monkeypatch.setattr(policy, "DIRECT_MAX_3D_UNKNOWNS", 500)
    A = elasticity_like(7)
    solver = AutoSolver()
    assert solved(solver, A) <= 1e-10
    assert solver.choice == "cg"
    assert "more than 500 unknowns in 3D: CG with" in solver.reason
    # told it is 2D, the same matrix is factorized
    solver = AutoSolver(dim=2)
    assert solved(solver, A) <= 1e-12
    assert solver.choice == DIRECT and "(2D):" in solver.reason


def test_a_matrix_of_another_size_is_decided_again(monkeypatch, memory):
    memory(1e15)
    monkeypatch.setattr(policy, "DIRECT_MAX_3D_UNKNOWNS", 500)
    solver = AutoSolver()
    assert solved(solver, laplacian_2d(10)) <= 1e-12 and solver.choice == DIRECT
    assert solved(solver, elasticity_like(7)) <= 1e-10 and solver.choice == "cg"


def test_non_symmetric_matrix_stays_direct(memory):
    memory(1.0)  # nothing fits: a symmetric matrix would go to CG
    choice, reason = auto.choose(convection_diffusion_2d(12))
    assert choice == DIRECT
    assert reason.endswith("the factor does not fit, but not symmetric (CG needs SPD): direct")
    assert auto.choose(laplacian_2d(12))[0] == "cg"


def test_unknown_memory_goes_direct(memory):
    memory(None)
    solver = AutoSolver()
    assert solved(solver, laplacian_1d(50)) <= 1e-12
    assert solver.choice == DIRECT and "available" not in solver.reason


def test_bad_options():
    with pytest.raises(ValueError, match="dim must be 2 or 3"):
        AutoSolver(dim=4)
    with pytest.raises(TypeError):  # options are the direct backend's, checked at once
        make_solver("auto", rtol=1e-8)

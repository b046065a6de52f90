"""Every solver backend: gradients pass the Taylor test and agree with a direct solver's;
the forward factorization serves the adjoint solve (no second factorization).
"""

import numpy as np
import pytest
from adjoint_helpers import assert_gradient, cantilever, densities, relative_difference

from fesens.ad import grad, value_and_grad
from fesens.objectives import Differentiable, compliance, displacement_norm
from fesens.solvers import IterativeSolver, available_solvers, make_solver

BACKENDS = available_solvers()
REFERENCE = "cholmod" if "cholmod" in BACKENDS else "superlu"
#: Iterative backends solve to a relative residual far below the Taylor remainders.
ITERATIVE_RTOL = 1e-12


def solver_spec(name: str):
    """The ``solver=`` argument for a backend: iterative ones with a tight tolerance."""
    return name if make_solver(name).is_direct else (name, {"rtol": ITERATIVE_RTOL})


OBJECTIVES = {"compliance": compliance, "displacement_norm": displacement_norm}


def density_objective(objective: str, solver, model=None):
    problem = Differentiable(cantilever() if model is None else model, solver=solver)
    J = OBJECTIVES[objective]
    return lambda x: J(problem.solve(scale=x**3))


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_gradient_passes_taylor_test(backend, objective):
    x = densities(cantilever().mesh.n_cells, seed=31)
    assert_gradient(density_objective(objective, solver_spec(backend)), x)


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_gradient_agrees_with_direct_solver(backend, objective):
    x = densities(cantilever().mesh.n_cells, seed=32)
    reference = grad(density_objective(objective, REFERENCE))(x)
    gradient = grad(density_objective(objective, solver_spec(backend)))(x)
    assert relative_difference(gradient, reference) < 1e-6


def test_the_two_direct_backends_agree_to_round_off():
    x = densities(cantilever().mesh.n_cells, seed=33)
    gradients = [grad(density_objective("displacement_norm", name))(x)
                 for name in ("cholmod", "superlu") if name in BACKENDS]
    assert relative_difference(gradients[0], gradients[-1]) < 1e-12


# ------------------------------------------------------------------ factorization reuse
def backend_stats(problem: Differentiable) -> dict:
    """Counters of the solver instance the problem's solves use: the model's instance
    for the pattern, shared by plain and traced solves."""
    assert problem.model.solver(problem.solver) is problem.solver
    return problem.solver.stats


@pytest.mark.skipif("cholmod" not in BACKENDS, reason="CHOLMOD (scikit-sparse) missing")
def test_cholmod_factorizes_once_and_reuses_symbolic_analysis():
    model = cantilever(prescribed=False)
    problem = Differentiable(model, solver="cholmod")

    def fun(x):
        return compliance(problem.solve(scale=x**3))

    value_and_grad(fun)(densities(model.mesh.n_cells, seed=34))
    stats = backend_stats(problem)
    # One numeric factorization for the forward solve, none for the adjoint (compliance is
    # self-adjoint with g = 0: λ = u, not even a second solve).
    assert (stats["n_symbolic"], stats["n_numeric"], stats["n_solves"]) == (1, 1, 1)
    value_and_grad(fun)(densities(model.mesh.n_cells, seed=35))
    stats = backend_stats(problem)
    assert (stats["n_symbolic"], stats["n_numeric"]) == (1, 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_adjoint_solve_reuses_the_forward_factorization(backend):
    """displacement_norm needs a genuine adjoint solve (ū ≠ f): one factorization, two
    solves (forward and adjoint)."""
    spec = solver_spec(backend)
    problem = Differentiable(cantilever(), solver=spec)
    value_and_grad(lambda x: displacement_norm(problem.solve(scale=x**3)))(
        densities(problem.model.mesh.n_cells, seed=36))
    stats = backend_stats(problem)
    # K is symmetric, so GMRES's preconditioner of K serves Kᵀ too
    assert (stats["n_numeric"], stats["n_solves"]) == (1, 2)


def test_a_solver_instance_is_used_as_given():
    solver = make_solver(REFERENCE)
    problem = Differentiable(cantilever(), solver=solver)
    x = densities(problem.model.mesh.n_cells, seed=37)
    gradient = grad(lambda x: displacement_norm(problem.solve(scale=x**3)))(x)
    assert solver.stats["n_numeric"] == 1
    assert np.allclose(gradient, grad(density_objective("displacement_norm", REFERENCE))(x),
                       rtol=1e-12, atol=0)


@pytest.mark.parametrize("backend", [b for b in BACKENDS if isinstance(make_solver(b),
                                                                      IterativeSolver)])
def test_krylov_amg_gets_the_rigid_body_modes_of_the_free_dofs(backend):
    model = cantilever()
    problem = Differentiable(model, solver=(backend, {"rtol": ITERATIVE_RTOL,
                                                      "preconditioner": "amg"}))
    modes = problem.solver.near_nullspace
    assert modes.shape == (len(model.assembler.free), 3)
    gradient = grad(lambda x: displacement_norm(problem.solve(scale=x**3)))(
        densities(model.mesh.n_cells, seed=38))
    assert relative_difference(
        gradient, grad(density_objective("displacement_norm", REFERENCE))(
            densities(model.mesh.n_cells, seed=38))) < 1e-6

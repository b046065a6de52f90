"""Several load cases in one solve: one factorization, and the gradient of a sum over the
cases equals the sum of the gradients of the cases solved one by one."""

import numpy as np
import pytest
from adjoint_helpers import assert_gradient, cantilever, densities, plate, relative_difference

from fesens.ad import grad
from fesens.objectives import Differentiable, compliance, mean_displacement, mean_temperature

#: Magnitudes of every named load per case (unnamed loads would default to 1).
CASES = [
    {"tip": 1.0, "traction": 0.0, "gravity": 0.0},
    {"tip": 0.0, "traction": 1.0, "gravity": 0.5},
    {"tip": -0.5, "traction": 0.3, "gravity": 2.0},
]
OBJECTIVES = {
    "compliance": compliance,
    "mean_displacement": lambda state: mean_displacement(state, "right", component=1),
}


@pytest.mark.parametrize("prescribed", [False, True], ids=["g=0", "g!=0"])
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_multi_case_gradient_is_the_sum_over_cases(objective, prescribed):
    model = cantilever(prescribed=prescribed)
    x = densities(model.mesh.n_cells, seed=41)
    J = OBJECTIVES[objective]
    together = grad(lambda x: J(Differentiable(model).solve(scale=x**3, load_cases=CASES)))(x)
    # Independent computation: one problem (and one factorization) per case.
    separately = sum(grad(lambda x, case=case: J(
        Differentiable(cantilever(prescribed=prescribed)).solve(scale=x**3, loads=case)))(x)
        for case in CASES)
    if objective == "mean_displacement":
        separately = separately / len(CASES)  # the mean runs over the cases too
    assert relative_difference(together, separately) < 1e-12


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_multi_case_taylor_test_density(objective):
    problem = Differentiable(cantilever())
    J = OBJECTIVES[objective]
    x = densities(problem.model.mesh.n_cells, seed=42)
    assert_gradient(lambda x: J(problem.solve(scale=x**3, load_cases=CASES)), x)


def test_multi_case_taylor_test_load_magnitudes_and_dirichlet():
    """Traced magnitudes inside the cases, the density and g at once."""
    problem = Differentiable(cantilever())
    g0 = problem.model.prescribed_values()
    point = {"x": densities(problem.model.mesh.n_cells, seed=43), "a": 1.2, "b": 0.7,
             "g": g0 + 0.05 * np.random.default_rng(43).standard_normal(g0.size)}

    def fun(p):
        cases = [{"tip": p["a"], "traction": 0.0, "gravity": p["b"]},
                 {"tip": p["b"], "traction": p["a"] * p["b"], "gravity": 0.0}]
        return compliance(problem.solve(scale=p["x"] ** 3, load_cases=cases, dirichlet=p["g"]))

    assert_gradient(fun, point)


def test_multi_case_load_magnitude_gradient_is_the_sum_over_cases():
    model = cantilever()
    a = 1.3
    together = grad(lambda a: compliance(Differentiable(model).solve(
        load_cases=[{"tip": a, "traction": 0.0, "gravity": 0.0},
                    {"tip": 2.0 * a, "traction": 1.0, "gravity": 0.0}])))(a)
    separately = sum(grad(lambda a, k=k, t=t: compliance(Differentiable(cantilever()).solve(
        loads={"tip": k * a, "traction": t, "gravity": 0.0})))(a)
        for k, t in ((1.0, 0.0), (2.0, 1.0)))
    assert together == pytest.approx(separately, rel=1e-12)


def test_multi_case_heat_gradient_is_the_sum_over_cases():
    model = plate()
    cases = [{"source": 1.0, "flux": 0.0}, {"source": 0.0, "flux": 1.0}]
    kappa = np.random.default_rng(44).uniform(0.5, 2.0, model.mesh.n_cells)
    together = grad(lambda k: mean_temperature(
        Differentiable(model).solve(conductivity=k, load_cases=cases), "right"))(kappa)
    separately = sum(grad(lambda k, case=case: mean_temperature(
        Differentiable(plate()).solve(conductivity=k, loads=case), "right"))(kappa)
        for case in cases) / len(cases)
    assert relative_difference(together, separately) < 1e-12


def test_multi_case_solve_factorizes_once():
    problem = Differentiable(cantilever(), solver="superlu")
    x = densities(problem.model.mesh.n_cells, seed=45)
    grad(lambda x: compliance(problem.solve(scale=x**3, load_cases=CASES)))(x)
    stats = problem.solver.stats
    assert (stats["n_numeric"], stats["n_solves"]) == (1, 2)  # forward + adjoint, all cases

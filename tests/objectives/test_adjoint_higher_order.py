"""Second-level primitives: forward mode (``jvp``, the VJP of the pullback) and
Hessian-vector products differentiate the adjoint rules themselves (the adjoint solve, the
transposed mat-vec of the Dirichlet lift), so those rules pass the Taylor test too."""

import numpy as np
import pytest
from adjoint_helpers import assert_gradient, cantilever, densities

from fesens.ad import grad, jvp
from fesens.objectives import Differentiable, compliance, displacement_norm, stress_pnorm

OBJECTIVES = {"compliance": compliance, "displacement_norm": displacement_norm,
              "stress_pnorm": stress_pnorm}


def design_point(problem: Differentiable, seed: int) -> dict:
    """Densities and prescribed values, ``{"x": (n_cells,), "g": (n_constrained,)}``."""
    rng = np.random.default_rng(seed)
    g0 = problem.model.prescribed_values()
    return {"x": densities(problem.model.mesh.n_cells, seed=seed),
            "g": g0 + 0.05 * rng.standard_normal(g0.size)}


def dot(a: dict, b: dict):
    return sum(np.sum(a[key] * b[key]) for key in a)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_jvp_is_the_gradient_along_the_tangent(objective):
    problem = Differentiable(cantilever())
    J = OBJECTIVES[objective]
    point, tangent = design_point(problem, 71), design_point(problem, 72)

    def fun(x, g):
        return J(problem.solve(scale=x**3, dirichlet=g))

    value, derivative = jvp(fun, (point["x"], point["g"]), (tangent["x"], tangent["g"]))
    gradient = grad(fun, argnums=(0, 1))(point["x"], point["g"])
    assert value == pytest.approx(float(fun(point["x"], point["g"])), rel=1e-14)
    expected = gradient[0] @ tangent["x"] + gradient[1] @ tangent["g"]
    assert derivative == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_hessian_vector_product_passes_taylor_test(objective):
    """``p ↦ ∇J(p)·v`` is itself differentiated: rate 2 and finite differences."""
    problem = Differentiable(cantilever())
    J = OBJECTIVES[objective]
    point, direction = design_point(problem, 73), design_point(problem, 74)

    def directional_derivative(p):
        gradient = grad(lambda q: J(problem.solve(scale=q["x"] ** 3, dirichlet=q["g"])))(p)
        return dot(gradient, direction)

    assert_gradient(directional_derivative, point)


def test_two_solves_on_one_pattern_in_one_objective():
    """Two designs share the pattern and the solver: each adjoint solve must use its own
    matrix (the solver holds the last factorized one)."""
    problem = Differentiable(cantilever(), solver="cholmod")

    def fun(x):
        return (displacement_norm(problem.solve(scale=x**3))
                + 2.0 * displacement_norm(problem.solve(scale=(0.3 + 0.7 * x) ** 3)))

    assert_gradient(fun, densities(problem.model.mesh.n_cells, seed=75))

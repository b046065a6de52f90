"""Invalid inputs of the traced solve raise specific errors naming the culprit, whether or
not the inputs are being differentiated, and like the untraced ``model.solve``."""

import numpy as np
import pytest
from adjoint_helpers import cantilever, densities, plate

from fesens.ad import grad
from fesens.errors import BoundaryConditionError, NonFiniteError
from fesens.objectives import (
    Differentiable,
    compliance,
    displacement_at,
    stress_ks,
    stress_pnorm,
    thermal_compliance,
)

N_CELLS = cantilever().mesh.n_cells


def elastic_problem() -> Differentiable:
    return Differentiable(cantilever())


def raises_traced_and_untraced(error, match, solve, value):
    """``solve(value)`` raises ``error`` both plainly and under ``grad``."""
    with pytest.raises(error, match=match):
        solve(value)
    with pytest.raises(error, match=match):
        grad(lambda v: compliance(solve(v)))(value)


# ------------------------------------------------------------------ parameter names
@pytest.mark.parametrize("name", ["young", "density", "conductivity"])
def test_unknown_elasticity_parameter_is_a_type_error_naming_it(name):
    problem = elastic_problem()
    raises_traced_and_untraced(TypeError, rf"\['{name}'\]",
                               lambda v: problem.solve(**{name: v}), 1.0)


@pytest.mark.parametrize("name", ["E", "nu", "kappa"])
def test_unknown_heat_parameter_is_a_type_error_naming_it(name):
    problem = Differentiable(plate())
    raises_traced_and_untraced(TypeError, rf"\['{name}'\]",
                               lambda v: problem.solve(**{name: v}), 1.0)


# ------------------------------------------------------------------ shapes
@pytest.mark.parametrize("shape", [(N_CELLS + 1,), (N_CELLS - 1,), (N_CELLS, 2), (1, N_CELLS)])
@pytest.mark.parametrize("name", ["scale", "E", "nu"])
def test_wrong_shape_of_a_cell_field(name, shape):
    problem = elastic_problem()
    value = np.full(shape, 0.3)
    raises_traced_and_untraced(ValueError, f"{name}.*{N_CELLS}",
                               lambda v: problem.solve(**{name: v}), value)


def test_wrong_shape_of_the_conductivity_field():
    problem = Differentiable(plate())
    value = np.ones(problem.model.mesh.n_cells + 2)
    raises_traced_and_untraced(ValueError, "conductivity",
                               lambda v: problem.solve(conductivity=v), value)


@pytest.mark.parametrize("shape", [(0,), (3,), (2, 8)])
def test_wrong_dirichlet_shape(shape):
    problem = elastic_problem()
    n_constrained = problem.model.constrained_dofs.size
    assert shape != (n_constrained,)
    raises_traced_and_untraced(ValueError, f"dirichlet.*{n_constrained}",
                               lambda g: problem.solve(dirichlet=g), np.zeros(shape))


# ------------------------------------------------------------------ non-finite values
@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("name", ["scale", "E", "nu"])
def test_non_finite_cell_field(name, bad):
    problem = elastic_problem()
    value = densities(N_CELLS, seed=61)
    value[3] = bad
    raises_traced_and_untraced(NonFiniteError, name, lambda v: problem.solve(**{name: v}),
                               value)


@pytest.mark.parametrize("name", ["E", "nu"])
def test_non_finite_scalar_parameter(name):
    problem = elastic_problem()
    raises_traced_and_untraced(NonFiniteError, name, lambda v: problem.solve(**{name: v}),
                               np.nan)


def test_non_finite_conductivity():
    problem = Differentiable(plate())
    value = np.ones(problem.model.mesh.n_cells)
    value[0] = np.nan
    with pytest.raises(NonFiniteError, match="conductivity"):
        grad(lambda k: thermal_compliance(problem.solve(conductivity=k)))(value)


def test_non_finite_load_magnitude():
    problem = elastic_problem()
    raises_traced_and_untraced(NonFiniteError, "NaN",
                               lambda m: problem.solve(loads={"tip": m}), np.nan)


def test_non_finite_dirichlet_value():
    problem = elastic_problem()
    g = problem.model.prescribed_values()
    g[1] = np.nan
    raises_traced_and_untraced(NonFiniteError, "NaN", lambda g: problem.solve(dirichlet=g), g)


# ------------------------------------------------------------------ loads
def test_unknown_load_name_is_the_models_error():
    """The traced solve rejects an unknown load like ``model.solve`` does."""
    model = cantilever()
    with pytest.raises(BoundaryConditionError, match="wind"):
        model.solve(loads={"wind": 1.0})
    problem = Differentiable(model)
    raises_traced_and_untraced(BoundaryConditionError, "wind",
                               lambda m: problem.solve(loads={"wind": m}), 1.0)
    raises_traced_and_untraced(BoundaryConditionError, "wind",
                               lambda m: problem.solve(load_cases=[{"tip": m}, {"wind": m}]),
                               1.0)


def test_loads_and_load_cases_together_are_rejected():
    """``loads`` would be silently ignored next to ``load_cases``."""
    problem = elastic_problem()
    with pytest.raises((TypeError, ValueError), match="load_cases"):
        problem.solve(loads={"tip": 2.0}, load_cases=[{"tip": 1.0}, {"tip": 3.0}])


# ------------------------------------------------------------------ objectives
@pytest.mark.parametrize("objective", [stress_pnorm, stress_ks])
def test_stress_objectives_take_one_load_case(objective):
    problem = elastic_problem()
    state = problem.solve(load_cases=[{"tip": 1.0}, {"tip": 2.0}])
    with pytest.raises(ValueError, match="single load case"):
        objective(state)


def test_displacement_at_needs_a_component():
    state = elastic_problem().solve()
    with pytest.raises(ValueError, match="component"):
        displacement_at(state, (2.0, 1.0))
    with pytest.raises(ValueError, match="component 2"):
        displacement_at(state, (2.0, 1.0), component=2)

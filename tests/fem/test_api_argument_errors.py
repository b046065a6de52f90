"""Wrong arguments from Python get a fesens error naming the argument, the value and what
it takes, instead of a numpy error from deep inside, a warning, or silence; and a
transient run through geometric multigrid equals the direct solver's."""

import numpy as np
import pytest

from fesens.errors import (
    ArgumentTypeError,
    BoundaryConditionError,
    FesensError,
    LevelIndexError,
    PointOutsideMeshError,
)
from fesens.fem.transient import TransientProblem
from fesens.fem.transient.dynamics import DynamicProblem
from fesens.mesh.generators import rectangle
from fesens.physics import Elasticity, HeatConduction
from fesens.physics.hyperelasticity import FiniteStrainElasticity


def cantilever() -> Elasticity:
    model = Elasticity(rectangle(4, 2, 2.0, 1.0), E=1.0, nu=0.3)
    model.fix("left")
    model.point_load((2.0, 0.0), (0.0, -1.0), name="F")
    return model


@pytest.mark.parametrize("value", ["1", ["1"] * 8, np.array(["0.5"]), True])
def test_a_parameter_given_as_a_string_is_named(value):
    """numpy reads "1" as 1.0, so the check passed and the solve failed on the string."""
    with pytest.raises(ArgumentTypeError, match="parameter 'scale' must be a number") as err:
        cantilever().solve(scale=value)
    assert isinstance(err.value, TypeError) and isinstance(err.value, FesensError)


def test_a_parameter_string_is_named_for_the_material_too():
    with pytest.raises(ArgumentTypeError, match="parameter 'E' must be a number.*'2'"):
        cantilever().solve(E="2")


def test_a_state_index_beyond_the_load_factors_names_their_number():
    model = FiniteStrainElasticity(rectangle(2, 1, 2.0, 1.0), E=1.0, nu=0.3)
    model.fix("left")
    model.point_load("right", (0.0, -1e-3), name="tip")
    solution = model.solve(at_load_factors=[0.5, 1.0])
    assert np.array_equal(solution.at(-1).u, solution.at(1).u)
    with pytest.raises(LevelIndexError, match=r"at\(5\): this solution holds 2 state") as err:
        solution.at(5)
    assert isinstance(err.value, IndexError)
    with pytest.raises(LevelIndexError, match="0..1"):
        solution.at(-3)
    with pytest.raises(ArgumentTypeError, match="k must be an integer"):
        solution.at(0.5)


def test_a_point_load_outside_the_mesh_is_refused():
    """68 units beyond the right edge: the nearest node would be a guess."""
    model = Elasticity(rectangle(4, 2, 2.0, 1.0), E=1.0, nu=0.3)
    with pytest.raises(PointOutsideMeshError,
                       match=r"point load 'far' at \[70.0, 0.0\] is outside the mesh, whose "
                             r"bounding box spans \[0.0, 0.0\] to \[2.0, 1.0\]"):
        model.point_load((70.0, 0.0), (0.0, -1.0), name="far")
    assert model.loads == {}
    with pytest.raises(PointOutsideMeshError, match="fixed point at"):
        model.fix((1.0, 1.5))


def heat_plate(value: float) -> HeatConduction:
    model = HeatConduction(rectangle(2, 2, 1.0, 1.0))
    model.fix("left", value=value)
    model.heat_source(1.0)
    return model


def total(T, t):
    return np.sum(T)


def test_a_dirichlet_history_without_prescribed_values_is_refused():
    """A ramp of zero is zero: the history has no effect, so it is refused, naming it."""
    problem = TransientProblem(heat_plate(0.0), t_end=1.0, dt=0.5)
    with pytest.raises(BoundaryConditionError,
                       match="dirichlet_history = 'ramp' has no effect"):
        problem.values(total, dirichlet_history="ramp")
    with pytest.raises(BoundaryConditionError, match="dirichlet_history"):
        list(problem.states(dirichlet_history=([0.0, 1.0], [0.0, 1.0])))
    moving = TransientProblem(heat_plate(1.0), t_end=1.0, dt=0.5)
    ramp = moving.values(total, dirichlet_history=([0.0, 1.0], [0.0, 1.0]))
    held = moving.values(total)
    # at t = 0 the three nodes of the left edge hold 0 under the ramp, 1 without it
    assert ramp[0] == 0.0 and held[0] == 3.0 and ramp[-1] < held[-1]


def test_a_dirichlet_history_without_prescribed_motion_is_refused():
    model = Elasticity(rectangle(2, 1, 2.0, 1.0), E=1.0, nu=0.3)
    model.fix("left")
    model.point_load("right", (0.0, -1.0))
    problem = DynamicProblem(model, t_end=0.2, dt=0.1)
    with pytest.raises(BoundaryConditionError, match="dirichlet_history = .* has no effect"):
        problem.values(total, dirichlet_history=lambda t: t)


def test_a_transient_run_through_geometric_multigrid_equals_the_direct_one():
    """The step matrices ``a M + b K`` share the model's lattice, which ``gmg`` needs (it
    failed with "gmg needs the structured grid of the matrix's unknowns")."""
    runs = {}
    for solver in ("gmg", "superlu"):
        model = heat_plate(0.0)
        problem = TransientProblem(model, t_end=0.4, dt=0.1, solver=solver)
        runs[solver] = problem.values(total)
    np.testing.assert_allclose(runs["gmg"], runs["superlu"], rtol=1e-7)
    assert runs["superlu"][-1] > 0.0

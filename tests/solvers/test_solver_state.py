"""A solver's state (:meth:`LinearSolver.state`): what its next solve depends on besides the
matrix; a new instance given it solves as the one it came from, bit for bit."""

import numpy as np
import pytest

from fesens.mesh import rectangle
from fesens.objectives import Differentiable
from fesens.physics import Elasticity
from fesens.solvers import make_solver


def _model():
    mesh = rectangle(16, 8, 2.0, 1.0, cell_type="quad4")
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress").fix("left")
    model.point_load((2.0, 0.5), (0.0, -1.0))
    return model


@pytest.mark.parametrize("options", [{"coarse_size": 20},
                                     {"coarse_size": 20, "matrix_free": True}])
def test_a_gmg_given_another_ones_state_solves_as_it_does(options):
    model = _model()
    # designs a little apart, as an optimization's iterations are
    scales = [np.linspace(0.2, 1.0, model.mesh.n_cells) ** p for p in (3.0, 3.05, 3.1)]
    original = Differentiable(model, ("gmg", options))
    for scale in scales[:2]:
        original.solve(scale=scale)
    state = original.solver.state()
    assert sorted(state) == ["forward"] and state["forward"].shape == (model.free_dofs.size,)
    # models of their own: one model's pattern keeps one instance per solver spec
    restored, fresh = (Differentiable(_model(), ("gmg", options)) for _ in range(2))
    restored.solver.load_state(state)
    expected = original.solve(scale=scales[2]).u
    assert np.array_equal(restored.solve(scale=scales[2]).u, expected)
    # the state matters: from zero the last bits differ
    assert not np.array_equal(fresh.solve(scale=scales[2]).u, expected)


def test_the_state_is_a_copy():
    model = _model()
    problem = Differentiable(model, ("gmg", {"coarse_size": 20}))
    problem.solve(scale=np.ones(model.mesh.n_cells))
    state = problem.solver.state()
    state["forward"][:] = 0.0
    assert np.any(problem.solver.state()["forward"] != 0.0)


@pytest.mark.parametrize("state, message", [
    ({"hierarchy": np.zeros(4)}, "gmg keeps the warm starts"),
    ({"forward": np.zeros((2, 2, 2))}, "'forward' must be finite floats"),
    ({"transpose": np.array([1.0, np.nan])}, "'transpose' must be finite floats"),
])
def test_gmg_refuses_a_state_it_does_not_keep(state, message):
    with pytest.raises(ValueError, match=message):
        make_solver("gmg").load_state(state)


@pytest.mark.parametrize("name", ["cholmod", "superlu", "cg", "gmres"])
def test_a_backend_without_state_has_none_and_refuses_one(name):
    solver = make_solver(name)
    assert solver.state() == {}
    solver.load_state({})
    with pytest.raises(ValueError, match=f"the solver {name!r} keeps no state"):
        solver.load_state({"forward": np.zeros(3)})

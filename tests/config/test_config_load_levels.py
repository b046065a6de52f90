"""An ``[objective]`` of several load levels of a nonlinear physics (``load_factors``,
``weights``): the weighted sum of the objective at the states of one load-stepped solve,
equal to the sum over ``solution.at(k)``; its gradient through the design problem passes
a Taylor test and costs one adjoint per level; and the refusals, each naming its key."""

import copy

import numpy as np
import pytest

from fesens.ad import check_grad, grad, taylor_test
from fesens.config import ConfigError, build_model, build_problem, resolve, response
from fesens.config.evaluation import solve_inputs
from fesens.fem.nonlinear.implicit_solve import ResidualSolve
from fesens.objectives import compliance, value_at

#: A heated strip: k(T) = 2 (1 + 0.5 T), T = 1 on the left and 3 on the right, a source.
STRIP = {
    "mesh": {"type": "rectangle", "size": [1.0, 0.25], "cells": [8, 2]},
    "physics": {"type": "nonlinear_heat"},
    "material": {"conductivity": 2.0, "beta": 0.5},
    "supports": [{"group": "left", "value": 1.0}, {"group": "right", "value": 3.0}],
    "loads": [{"type": "heat_source", "value": 4.0}],
}


def with_objective(optimize: bool = False, **objective):
    raw = copy.deepcopy(STRIP)
    raw["objective"] = objective
    if optimize:
        raw.update(constraints={"volume_fraction": 0.5}, penalization={"type": "simp"},
                   filter={"type": "density", "radius": 0.2})
    return raw


def resolved(raw: dict, tmp_path, optimize: bool = False):
    return resolve(raw, base_dir=tmp_path, source="test", optimize=optimize)


@pytest.mark.parametrize(("objective", "single"), [
    ({"type": "compliance"}, lambda s, mesh: compliance(s)),
    ({"type": "temperature", "point": [0.5, 0.0], "weight": -1.0},
     lambda s, mesh: -value_at(s, mesh.points[mesh.nearest_node([0.5, 0.0])])),
], ids=["compliance", "value"])
def test_the_config_objective_is_the_sum_over_the_states_at_the_factors(
        tmp_path, objective, single):
    """J = Σ_k w_k j(u(t_k)), each level's compliance f(t_k)·u(t_k) with its own loads."""
    config = resolved(with_objective(**objective, load_factors=[0.25, 0.6, 1.0],
                                     weights=[0.5, 2.0, 1.0]), tmp_path)
    model = build_model(config)
    solution = model.solve(**solve_inputs(config))
    assert solution.at_load_factors == (0.25, 0.6, 1.0)
    rho = np.ones(config.mesh.n_cells)
    value = response(config.data["objective"], config)(solution, rho)
    expected = sum(w * single(solution.at(k), config.mesh)
                   for k, w in enumerate([0.5, 2.0, 1.0]))
    assert abs(value - expected) <= 1e-12 * abs(expected)
    # the levels differ: not one value times the weights' sum
    levels = [single(solution.at(k), config.mesh) for k in range(3)]
    assert len({round(float(v), 8) for v in levels}) == 3


def test_weights_default_to_one_each(tmp_path):
    config = resolved(with_objective(type="compliance", load_factors=[0.5, 1.0]), tmp_path)
    assert config.data["objective"]["weights"] == [1.0, 1.0]
    solution = build_model(config).solve(**solve_inputs(config))
    value = response(config.data["objective"], config)(solution, None)
    expected = compliance(solution.at(0)) + compliance(solution.at(1))
    assert abs(value - expected) <= 1e-12 * abs(expected)


def design_objective(problem):
    def J(x):
        rho = problem.evaluated_densities(x)
        return problem.objective(problem.solve(rho), rho)

    return J


def test_the_design_objective_of_two_levels_passes_the_taylor_test(tmp_path):
    """The design problem's objective of the levels 0.4 and 1 (SIMP, density filter):
    Taylor remainder rate 2 and a central difference."""
    config = resolved(with_objective(True, type="compliance", load_factors=[0.4, 1.0],
                                     weights=[3.0, 1.0]), tmp_path, optimize=True)
    problem = build_problem(config)
    assert problem.differentiable.solve_options["at_load_factors"] == [0.4, 1.0]
    J = design_objective(problem)
    x = np.random.default_rng(3).uniform(0.3, 0.9, problem.mesh.n_cells)
    result = taylor_test(J, x, verbose=False)
    assert result.rates.min() > 1.9, result.rates
    # step and tolerance from the round-off measured on the function itself: a fixed
    # step's central difference drifts past a fixed tolerance with the floating-point
    # kernels of the machine
    check_grad(J, x, n_directions=1, rtol=1e-6)


@pytest.mark.parametrize(("factors", "adjoints"), [
    ([0.3, 0.7], 2), ([0.25, 0.5, 1.0], 3), ([1.0], 1)])
def test_one_adjoint_per_load_factor_used(tmp_path, monkeypatch, factors, adjoints):
    """The gradient solves one adjoint per level the objective reads ([0.3, 0.7] also
    solves to the full load, whose state it does not read)."""
    calls = []
    adjoint = ResidualSolve.adjoint

    def spy(self, *args, **kwargs):
        calls.append(1)
        return adjoint(self, *args, **kwargs)

    monkeypatch.setattr(ResidualSolve, "adjoint", spy)
    config = resolved(with_objective(True, type="compliance", load_factors=factors),
                      tmp_path, optimize=True)
    J = design_objective(build_problem(config))
    gradient = grad(J)(np.full(config.mesh.n_cells, 0.6))
    assert len(calls) == adjoints
    assert np.all(np.isfinite(gradient)) and np.any(gradient != 0)


@pytest.mark.parametrize(("objective", "message"), [
    ({"load_factors": [1.0, 0.5]}, r"objective\.load_factors = \[1\.0, 0\.5\] is not "
                                   r"allowed: the load factors must increase"),
    ({"load_factors": [0.5, 0.5]}, r"objective\.load_factors .* must increase"),
    ({"load_factors": [0.0, 1.0]}, r"objective\.load_factors = .* each in \(0, 1\]"),
    ({"load_factors": [0.5, 1.5]}, r"objective\.load_factors = .* each in \(0, 1\]"),
    ({"load_factors": []}, r"objective\.load_factors = \[\] is not allowed"),
    ({"load_factors": "half"}, r"objective\.load_factors"),
    ({"load_factors": [0.5, 1.0], "weights": [1.0]},
     r"objective\.weights = \[1\.0\] has 1 weight\(s\) for 2 objective\.load_factors"),
    ({"weights": [1.0]}, r"objective\.weights needs objective\.load_factors"),
])
def test_refusals_name_the_key(tmp_path, objective, message):
    with pytest.raises(ConfigError, match=message):
        resolved(with_objective(type="compliance", **objective), tmp_path)


@pytest.mark.parametrize("key", ["load_factors", "weights"])
def test_a_linear_physics_refuses_the_load_levels(tmp_path, key):
    raw = with_objective(type="compliance", **{key: [0.5, 1.0]})
    raw.update(physics={"type": "heat"}, material={"conductivity": 2.0})
    with pytest.raises(ConfigError, match=rf"objective\.{key} applies to nonlinear physics "
                                          r"only .*\"heat\" is linear"):
        resolved(raw, tmp_path)


def test_the_volume_has_no_value_per_level(tmp_path):
    raw = with_objective(True, type="volume", load_factors=[0.5, 1.0])
    raw["optimizer"] = {"type": "mma"}
    raw["constraints"] = {"volume_fraction": 1.0,
                          "extra": [{"type": "compliance", "limit": 10.0}]}
    with pytest.raises(ConfigError, match=r"objective\.load_factors: objective\.type = "
                                          r"\"volume\" is not a function of the state"):
        resolved(raw, tmp_path, optimize=True)

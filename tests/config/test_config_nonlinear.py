"""A nonlinear physics from a config file: ``[newton]`` and ``[load_path]`` (checked, with
their defaults), the model they build, and the refusals (each naming its key)."""

import copy

import numpy as np
import pytest

from fesens.config import ConfigError, build_model, resolve
from fesens.config.nonlinear import is_nonlinear, monitored_dof, newton_options
from fesens.fem.nonlinear.newton import NewtonOptions
from fesens.physics import PHYSICS

#: A heated strip: k(T) = 2 (1 + 0.5 T), T = 1 on the left, 3 on the right, a heat source.
STRIP = {
    "mesh": {"type": "rectangle", "size": [1.0, 0.25], "cells": [8, 2]},
    "physics": {"type": "nonlinear_heat"},
    "material": {"conductivity": 2.0, "beta": 0.5},
    "supports": [{"group": "left", "value": 1.0}, {"group": "right", "value": 3.0}],
    "loads": [{"type": "heat_source", "value": 4.0}],
}


def resolved(raw: dict, tmp_path):
    return resolve(raw, base_dir=tmp_path, source="test", optimize=False)


def with_(**sections) -> dict:
    raw = copy.deepcopy(STRIP)
    raw.update(sections)
    return raw


def test_the_physics_class_decides_whether_an_analysis_is_nonlinear():
    assert is_nonlinear(PHYSICS.get("nonlinear_heat"))
    assert not is_nonlinear(PHYSICS.get("heat"))
    assert not is_nonlinear(PHYSICS.get("elasticity"))


def test_newton_defaults_are_the_solver_defaults(tmp_path):
    config = resolved(STRIP, tmp_path)
    defaults = NewtonOptions()
    newton = config.data["newton"]
    assert newton["steps"] == defaults.steps and newton["rtol"] == defaults.rtol
    assert newton["line_search"] == defaults.line_search
    assert "load_path" not in config.data
    assert NewtonOptions(**newton_options(config.data)) == defaults


def test_newton_options_reach_the_solve(tmp_path):
    raw = with_(newton={"steps": 4, "line_search": "none", "adaptive": False,
                        "max_iterations": 12})
    config = resolved(raw, tmp_path)
    options = newton_options(config.data)
    assert options["line_search"] is None
    solution = build_model(config).solve(newton=options)
    assert solution.report.load_factors == pytest.approx([0, 0.25, 0.5, 0.75, 1.0])


def test_load_path_point_is_a_dof(tmp_path):
    config = resolved(with_(load_path={"point": [0.5, 0.0]}), tmp_path)
    assert config.data["load_path"] == {"point": [0.5, 0.0], "component": 0}
    node = config.mesh.nearest_node((0.5, 0.0))
    assert monitored_dof(config.data, config.mesh, 1) == node
    assert monitored_dof(resolved(STRIP, tmp_path).data, config.mesh, 1) is None


@pytest.mark.parametrize(("sections", "message"), [
    ({"newton": {"steps": 0}}, r"newton\.steps = 0 is not allowed"),
    ({"newton": {"rtol": -1e-8}}, r"newton\.rtol = -1e-08 is not allowed"),
    ({"newton": {"max_cutbacks": -1}}, r"newton\.max_cutbacks"),
    ({"newton": {"rtol": 0.0, "atol": 0.0}}, r"newton\.rtol = 0 and newton\.atol = 0"),
    ({"newton": {"line_search": "wolfe"}}, r"newton\.line_search"),
    ({"newton": {"line_search": "energy"}}, r"newton\.line_search = \"energy\" needs a "
                                            r"stored energy"),
    ({"newton": {"step": 3}}, r"unknown key 'newton\.step'.*steps"),
    ({"load_path": {"point": [0.5, 0.0], "component": 1}}, r"load_path\.component = 1"),
    ({"load_path": {"component": 0}}, r"load_path\.component = 0 needs load_path\.point"),
    ({"load_path": {"point": [0.55, 0.1]}}, r"load_path\.point = .* is not on a node"),
    ({"solver": {"backend": "cholmod"}}, r"solver\.backend = \"cholmod\" assumes a "
                                         r"symmetric matrix"),
    ({"solver": {"backend": "gmg", "options": {"matrix_free": True}},
      "supports": [{"group": "left", "value": 0.0}]},
     r"solver\.options\.matrix_free = true: a nonlinear physics"),
    ({"load_cases": [{"name": "a", "loads": ["heat_source0"]}]},
     r"\[\[load_cases\]\]: a nonlinear physics"),
    ({"material": {"conductivity": -2.0, "beta": 0.5}}, r"material\.conductivity"),
])
def test_refusals_name_the_key(tmp_path, sections, message):
    with pytest.raises(ConfigError, match=message):
        resolved(with_(**sections), tmp_path)


@pytest.mark.parametrize("section", ["newton", "load_path"])
def test_a_linear_physics_refuses_the_nonlinear_sections(tmp_path, section):
    raw = with_(physics={"type": "heat"}, material={"conductivity": 2.0},
                **{section: {}})
    with pytest.raises(ConfigError, match=rf"\[{section}\] applies to nonlinear physics "
                                          r"only .*nonlinear_heat.*\"heat\" is linear"):
        resolved(raw, tmp_path)


def test_the_config_builds_the_nonlinear_model(tmp_path):
    """The built model solves to the Kirchhoff-transform closed form without a source
    (Carslaw & Jaeger, Conduction of Heat in Solids, 2nd ed., 1959, §1.15)."""
    raw = with_(loads=[{"type": "heat_source", "value": 0.0}])
    config = resolved(raw, tmp_path)
    model = build_model(config)
    T = model.solve(newton=newton_options(config.data)).temperature
    x = config.mesh.points[:, 0]
    theta = 2.0 * (1.0 + 0.25 * 1.0) + (2.0 * (3.0 + 0.25 * 9.0) - 2.0 * 1.25) * x
    expected = (-1.0 + np.sqrt(1.0 + 2.0 * 0.5 * theta / 2.0)) / 0.5
    assert np.abs(T - expected).max() < 1e-8


def test_design_problem_solves_with_the_newton_options(tmp_path):
    """`fesens optimize` of a nonlinear physics: the loop's solves take [newton]."""
    from fesens.config import build_problem

    raw = with_(newton={"steps": 2, "adaptive": False},
                constraints={"volume_fraction": 0.5}, filter={"type": "density",
                                                               "radius": 0.2})
    config = resolve(raw, base_dir=tmp_path, source="test")
    problem = build_problem(config)
    assert problem.differentiable.solve_options["newton"]["steps"] == 2
    state = problem.solve(np.full(config.mesh.n_cells, 0.5))
    assert state.report.load_factors == pytest.approx([0.0, 0.5, 1.0])


def test_design_objective_through_the_newton_solve_passes_the_taylor_test(tmp_path):
    """The compliance of the config's design problem (SIMP, density filter) through the
    nonlinear solve: Taylor remainder rate 2, and a central difference."""
    from fesens.ad import check_grad, taylor_test
    from fesens.config import build_problem

    raw = with_(constraints={"volume_fraction": 0.5}, penalization={"type": "simp"},
                filter={"type": "density", "radius": 0.2})
    problem = build_problem(resolve(raw, base_dir=tmp_path, source="test"))

    def J(x):
        rho = problem.evaluated_densities(x)
        return problem.objective(problem.solve(rho), rho)

    x = np.random.default_rng(3).uniform(0.3, 0.9, problem.mesh.n_cells)
    result = taylor_test(J, x, verbose=False)
    assert result.rates.min() > 1.9, result.rates
    # step and tolerance from the round-off measured on the function itself: a fixed
    # step's central difference drifts past a fixed tolerance with the floating-point
    # kernels of the machine
    check_grad(J, x, n_directions=1, rtol=1e-6)


def test_resolved_nonlinear_config_round_trips(tmp_path):
    """The resolved config (as `--dump-config` and the results folder's config.toml write
    it) resolves to itself: line_search "none" and the component stay as written."""
    import tomllib

    from fesens.config.toml_writer import dumps

    raw = with_(newton={"line_search": "none", "steps": 2},
                load_path={"point": [0.5, 0.25], "component": "x"})
    data = resolved(raw, tmp_path).data
    assert resolved(tomllib.loads(dumps(data)), tmp_path).data == data


def test_a_material_law_written_in_material_points_to_the_physics_option(tmp_path):
    """``[material] model = "neo-hookean"`` (where some codes put the law) names the
    ``[physics]`` option that takes the value."""
    raw = {"mesh": {"type": "rectangle", "size": [1.0, 0.1], "cells": [4, 1]},
           "physics": {"type": "hyperelasticity"},
           "material": {"model": "neo-hookean", "E": 1e3, "nu": 0.3},
           "supports": [{"group": "left"}],
           "loads": [{"type": "point", "point": [1.0, 0.0], "value": [0.0, -0.1]}]}
    with pytest.raises(ConfigError, match=r"material\.model .*'law'.*write law = "
                                          r"'neo-hookean' in \[physics\]"):
        resolved(raw, tmp_path)

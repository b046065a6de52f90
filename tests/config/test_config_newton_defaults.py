"""``[newton]`` takes a nonlinear physics' own defaults (``newton_defaults`` of its class)
for the keys it does not give; the keys it gives override them."""

import copy

import pytest

from fesens.config import ConfigError, build_model, resolve
from fesens.config.nonlinear import newton_keys, newton_options
from fesens.fem.nonlinear.newton import NewtonOptions
from fesens.physics import PHYSICS

#: A finite-strain strip 1 x 0.25 clamped on the left, bent by a tip load.
STRIP = {
    "mesh": {"type": "rectangle", "size": [1.0, 0.25], "cells": [8, 2]},
    "physics": {"type": "hyperelasticity"},
    "material": {"E": 10.0, "nu": 0.3},
    "supports": [{"group": "left"}],
    "loads": [{"type": "point", "point": [1.0, 0.0], "value": [0.0, -0.05]}],
}


def resolved(raw: dict, tmp_path):
    return resolve(raw, base_dir=tmp_path, source="test", optimize=False)


def test_the_physics_defaults_fill_the_keys_not_given(tmp_path):
    physics = PHYSICS.get("hyperelasticity")
    assert physics.newton_defaults["line_search"] == "auto"
    config = resolved(STRIP, tmp_path)
    newton = config.data["newton"]
    assert newton["line_search"] == "auto"
    assert newton["steps"] == NewtonOptions().steps  # no physics default: the solver's
    options = newton_options(config.data)
    assert options["line_search"] == "auto"
    solution = build_model(config).solve(newton=options)
    assert solution.report.cutbacks == []


def test_keys_given_override_the_physics_defaults(tmp_path):
    raw = copy.deepcopy(STRIP)
    raw["newton"] = {"line_search": "none", "steps": 2}
    newton = resolved(raw, tmp_path).data["newton"]
    assert newton["line_search"] == "none" and newton["steps"] == 2
    assert newton_options({"newton": newton})["line_search"] is None


def test_a_physics_without_defaults_keeps_the_solver_defaults():
    heat = PHYSICS.get("nonlinear_heat")
    assert dict(heat.newton_defaults) == {}
    assert newton_keys(heat)["line_search"].default == NewtonOptions().line_search


@pytest.mark.parametrize("value, shown", [(None, "none"), ("energy", "energy")])
def test_a_default_without_line_search_reads_none_in_toml(value, shown):
    heat = PHYSICS.get("nonlinear_heat")
    stub = type("Stub", (heat,), {"newton_defaults": {"line_search": value, "steps": 3}})
    keys = newton_keys(stub)
    assert keys["line_search"].default == shown and keys["steps"].default == 3


def test_the_energy_interpolation_from_the_physics_table(tmp_path):
    """``[physics] void_treatment``, ``void_beta``, ``void_eta`` reach the model; an unknown
    treatment is refused naming the key."""
    raw = copy.deepcopy(STRIP)
    raw["physics"].update(void_treatment="energy_interpolation", void_eta=0.05)
    model = build_model(resolved(raw, tmp_path))
    assert model.void_treatment == "energy_interpolation"
    assert (model.void_beta, model.void_eta) == (500.0, 0.05)
    raw["physics"]["void_treatment"] = "linear"
    with pytest.raises(ConfigError, match="void_treatment"):
        resolved(raw, tmp_path)

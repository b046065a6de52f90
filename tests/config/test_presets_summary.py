"""Every preset describes itself from its keys: the line ``fesens presets`` prints states
the optimizer, objective, volume fraction and cells its file sets (read here with tomllib),
the same line as its resolved config's, and the defaults the listing assumes for a key a
file leaves out are those of the config checks."""

import inspect
import re
import tomllib

import pytest

from fesens.config import load_preset, preset_names, resolve
from fesens.config.objectives import OBJECTIVES
from fesens.config.presets import (
    ABSENT_CELL_TYPES,
    ABSENT_EVERY,
    ABSENT_PARAMETERS,
    ABSENT_TYPES,
    EIGEN_KINDS,
    PRESET_DIR,
    preset_summaries,
    summary_line,
)
from fesens.config.time_sections import analysis_type
from fesens.opt.interpolation import INTERPOLATIONS
from fesens.opt.optimizers import OPTIMIZERS
from fesens.opt.projection import PROJECTIONS

#: A file with no optional section: the resolved config fills them with their defaults.
BARE = """
[mesh]
type = "rectangle"
size = [4.0, 2.0]
cells = [4, 2]

[material]
E = 1.0
nu = 0.3

[[supports]]
group = "left"

[[loads]]
type = "point"
name = "F"
point = [4.0, 1.0]
value = [0.0, -1.0]

[constraints]
volume_fraction = 0.5

[filter]
radius = 0.5
"""


def _file(name: str) -> dict:
    return tomllib.loads((PRESET_DIR / f"{name}.toml").read_text(encoding="utf-8"))


def _bare(**sections) -> dict:
    raw = tomllib.loads(BARE)
    raw.update(sections)
    return resolve(raw, base_dir=PRESET_DIR, source="bare").data


@pytest.mark.parametrize("name", preset_names())
def test_each_line_states_the_optimizer_objective_volume_fraction_and_cells_of_its_file(name):
    raw, line = _file(name), preset_summaries()[name]
    resolved = load_preset(name).data  # for what the file leaves out
    optimizer = raw.get("optimizer", resolved["optimizer"])["type"]
    assert line.endswith(f"optimizer {optimizer.upper()}")
    others = [other.upper() for other in OPTIMIZERS if other != optimizer]
    assert not any(re.search(rf"\b{other}\b", line) for other in others), line
    objective = raw.get("objective", resolved["objective"])["type"]
    weight = raw.get("objective", resolved["objective"]).get("weight", 1.0)
    sense = "maximize" if objective in EIGEN_KINDS or weight < 0 else "minimize"
    assert f"{sense} {objective}" in line
    assert f"volume fraction ≤ {raw['constraints']['volume_fraction']:g}" in line
    mesh = raw["mesh"]
    expected = (f"packaged mesh {mesh['packaged']}" if "packaged" in mesh else
                f"{len(mesh['cells'])}D {mesh['type']} {'x'.join(map(str, mesh['cells']))}")
    assert line.startswith(expected)


@pytest.mark.parametrize("name", preset_names())
def test_the_line_read_from_the_file_is_the_resolved_configs(name):
    assert summary_line(_file(name)) == summary_line(load_preset(name).data)


def test_the_defaults_the_listing_assumes_are_the_checks():
    data = _bare()
    absent = {section: data[section]["type"] for section in ABSENT_TYPES
              if section != "analysis"}
    assert {**absent, "analysis": analysis_type(data)} == ABSENT_TYPES
    assert data["mesh"]["cell_type"] == ABSENT_CELL_TYPES["rectangle"]
    box = tomllib.loads(BARE)
    box["mesh"] = {"type": "box", "size": [4.0, 2.0, 2.0], "cells": [4, 2, 2]}
    box["loads"][0]["point"], box["loads"][0]["value"] = [4.0, 1.0, 1.0], [0.0, -1.0, 0.0]
    assert resolve(box, base_dir=PRESET_DIR, source="box").data["mesh"]["cell_type"] == \
        ABSENT_CELL_TYPES["box"]
    continuation = _bare(penalization={"penalty": {"start": 1.0, "final": 3.0, "step": 1.0}})
    assert continuation["penalization"]["penalty"]["every"] == ABSENT_EVERY
    assert set(EIGEN_KINDS) == {kind.name for kind in OBJECTIVES.values()
                                if kind.analysis == "eigen"}
    # the config's defaults of these parameters are the constructors' (a missing entry of a
    # newly registered interpolation or projection fails here)
    constructors = {
        name: {key: parameter.default for key, parameter in
               inspect.signature(cls).parameters.items() if key in ("penalty", "beta", "eta")}
        for name, cls in {**INTERPOLATIONS, **PROJECTIONS}.items()}
    assert constructors == ABSENT_PARAMETERS
    assert _bare()["penalization"]["penalty"] == ABSENT_PARAMETERS["simp"]["penalty"]
    projected = _bare(projection={"type": "heaviside"})["projection"]
    assert {key: projected[key] for key in ("beta", "eta")} == ABSENT_PARAMETERS["heaviside"]


def test_a_bare_file_and_its_resolved_config_give_one_line():
    raw, resolved = tomllib.loads(BARE), _bare()
    # the listing imports no physics registry: a file without [physics] says so
    assert summary_line(raw).startswith("2D rectangle 4x2 quad4, the default physics, static;")
    raw["physics"] = {"type": resolved["physics"]["type"]}
    line = summary_line(raw)
    assert line == summary_line(resolved)
    assert line == ("2D rectangle 4x2 quad4, elasticity, static; minimize compliance, volume "
                    "fraction ≤ 0.5; simp p = 3, density filter r = 0.5; optimizer OC")


def test_the_line_shows_continuations_phases_projections_and_the_sense():
    line = summary_line({
        "mesh": {"packaged": "lbracket"}, "physics": {"type": "heat"},
        "objective": {"type": "frequency", "weight": -1.0},
        "constraints": {"cost_fraction": 0.2, "volume_fraction": 0.3, "stress": {"limit": 5},
                        "extra": [{"type": "stress_pnorm", "limit": 2.0,
                                   "normalization": "adaptive"}]},
        "penalization": {"type": "ordered", "penalty": {"start": 1.0, "final": 4.0,
                                                        "factor": 2.0},
                         "densities": [0.5, 1.0]},
        "filter": {"type": "none"},
        "projection": {"type": "heaviside", "beta": 8.0, "robust": True},
        "manufacturing": {"symmetry": ["x"], "overhang": "+y"},
        "optimizer": {"type": "mma"}})
    assert line == ("packaged mesh lbracket, heat, eigen; minimize frequency, volume fraction "
                    "≤ 0.3, cost fraction ≤ 0.2, stress limit 5, stress_pnorm limit 2 "
                    "(adaptive); ordered p = 1→4 (×2 every 20) "
                    "(2 phases: 0.5, 1), no filter, heaviside projection β = 8 η = 0.5 robust; "
                    "symmetry x, overhang +y; optimizer MMA")


@pytest.mark.parametrize("name", preset_names())
def test_a_description_names_no_other_optimizer_than_its_own(name):
    raw = _file(name)
    optimizer = raw.get("optimizer", load_preset(name).data["optimizer"])["type"]
    named = [other for other in OPTIMIZERS if other != optimizer
             and re.search(rf"\b{other}\b", raw.get("description", ""), re.IGNORECASE)]
    assert named == [], f"{name}: description {raw.get('description')!r} names {named}"

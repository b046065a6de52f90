"""``[[springs]]``: spring supports from a config file, the same model as ``model.spring``,
and the refusals (a one-line error, exit code 2, from the command line)."""

import copy

import numpy as np
import pytest
from click.testing import CliRunner

from fesens.cli import cli
from fesens.config import ConfigError, build_model, resolve
from fesens.config.toml_writer import dumps
from fesens.mesh import rectangle
from fesens.physics import Elasticity

#: A small inverter: input force and spring at the left end of the symmetry line (the
#: bottom edge), output spring at its right end, clamped at the top-left corner.
INVERTER = {
    "mesh": {"type": "rectangle", "size": [2.0, 1.0], "cells": [8, 4]},
    "physics": {"type": "elasticity"},
    "supports": [{"group": "bottom", "components": ["y"]}, {"point": [0.0, 1.0]}],
    "loads": [{"type": "point", "name": "input", "point": [0.0, 0.0], "value": [1.0, 0.0]}],
    "springs": [{"point": [0.0, 0.0], "stiffness": 1.0, "components": ["x"]},
                {"region": {"min": [2.0, 0.0], "max": [2.0, 0.0]}, "stiffness": [0.1],
                 "components": ["x"]}],
    "objective": {"type": "displacement", "point": [2.0, 0.0], "component": "x"},
    "constraints": {"volume_fraction": 0.3},
    "filter": {"type": "density", "radius": 0.4},
    "optimizer": {"type": "mma", "move": 0.2},
    "stop": {"max_iter": 2},
}


def resolved(raw: dict, tmp_path, optimize: bool = True):
    return resolve(raw, base_dir=tmp_path, source="test", optimize=optimize)


def test_config_springs_build_the_python_model(tmp_path):
    config = resolved(INVERTER, tmp_path)
    assert config.data["springs"][0] == {"point": [0.0, 0.0], "stiffness": 1.0,
                                         "components": [0]}
    u = build_model(config).solve(solver="superlu").u
    model = Elasticity(rectangle(8, 4, 2.0, 1.0), E=1.0, nu=0.3)
    model.fix("bottom", components="y").fix((0.0, 1.0))
    model.spring((0.0, 0.0), 1.0, components="x").spring((2.0, 0.0), 0.1, components="x")
    model.point_load((0.0, 0.0), (1.0, 0.0))
    expected = model.solve(solver="superlu").u
    assert np.array_equal(u, expected)


def test_springs_without_components_hold_every_component(tmp_path):
    raw = copy.deepcopy(INVERTER)
    raw["springs"] = [{"point": [2.0, 0.5], "stiffness": 0.5}]
    # solved, not optimized: without its output spring the inverter is refused as a design
    model = build_model(resolved(raw, tmp_path, optimize=False))
    node = model.mesh.nearest_node((2.0, 0.5))
    assert model.springs == {2 * node: 0.5, 2 * node + 1: 0.5}


def test_springs_do_not_count_as_loads(tmp_path):
    raw = copy.deepcopy(INVERTER)
    raw["loads"] = []
    with pytest.raises(ConfigError, match="load"):
        resolved(raw, tmp_path)


def run_solve(raw: dict, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(dumps(raw), encoding="utf-8")
    return CliRunner().invoke(cli, ["solve", str(path), "--out", str(tmp_path / "out")])


def heat_with_springs() -> dict:
    return {"mesh": {"type": "rectangle", "size": [1.0, 1.0], "cells": [4, 4]},
            "physics": {"type": "heat"}, "supports": [{"group": "left"}],
            "loads": [{"type": "point", "point": [1.0, 1.0], "value": 1.0}],
            "springs": [{"group": "right", "stiffness": 1.0}]}


def with_spring(**table) -> dict:
    raw = copy.deepcopy(INVERTER)
    raw["springs"] = [table]
    return raw


@pytest.mark.parametrize(("raw", "fragments"), [
    (with_spring(point=[0.0, 0.0], stiffness=0.0), ["springs[0].stiffness", "> 0"]),
    (with_spring(point=[0.0, 0.0], stiffness=[1.0, -1.0]), ["springs[0].stiffness"]),
    (with_spring(point=[0.0, 0.0]), ["springs[0].stiffness"]),
    (with_spring(stiffness=1.0), ["springs[0]", "group, region, point"]),
    (with_spring(group="nowhere", stiffness=1.0), ["nowhere"]),
    (with_spring(point=[0.0, 0.0], stiffness=1.0, components=["w"]),
     ["springs[0].components"]),
    (with_spring(point=[0.0, 0.0], stiffness=1.0, components=["z"]),
     ["springs[0]", "component 2 does not exist"]),
    (with_spring(point=[0.0, 0.0], stiffness=[1.0, 2.0], components=["x"]),
     ["springs[0]", "one number or 1"]),
    (with_spring(point=[0.0, 1.0], stiffness=1.0), ["springs[0]", "Dirichlet"]),
    (with_spring(point=[0.0, 0.0], stiffness=1.0, name="a"), ["springs[0]", "name"]),
    (heat_with_springs(), ["[springs] applies to physics elasticity only"]),
], ids=["zero", "negative", "missing", "no-selection", "unknown-group", "bad-component",
        "z-in-2d", "count", "on-a-support", "name", "heat"])
def test_bad_springs_are_refused_with_exit_code_2(raw, fragments, tmp_path):
    result = run_solve(raw, tmp_path)
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]

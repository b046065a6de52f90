"""Config sections of a physics: ``[[convection]]`` (heat) and ``[thermal]`` (elasticity)."""

import re

import numpy as np
import pytest

from fesens.config.build import build_model
from fesens.config.checks import ConfigError, show
from fesens.config.schema import resolve


def heat_config(**extra):
    return {
        "mesh": {"type": "rectangle", "size": [2.0, 0.2], "cells": [20, 2]},
        "physics": {"type": "heat"},
        "material": {"conductivity": 3.0},
        "supports": [{"group": "left", "value": 100.0}],
        "loads": [],
        **extra,
    }


def elastic_config(**extra):
    return {
        "mesh": {"type": "rectangle", "size": [2.0, 1.0], "cells": [4, 2]},
        "material": {"E": 200.0, "nu": 0.3, "alpha": 1e-3},
        "supports": [{"group": "left", "components": ["x"]},
                     {"point": [0.0, 0.0], "components": ["y"]}],
        "loads": [],
        **extra,
    }


def build(raw, tmp_path):
    return build_model(resolve(raw, base_dir=tmp_path, source="test", optimize=False))


def test_convection_table_gives_the_slab_closed_form(tmp_path):
    """Incropera §3.1: T(x) = T0 + (T∞ − T0) h x / (k + h L)."""
    model = build(heat_config(convection=[{"group": "right", "h": 5.0, "ambient": 20.0}]),
                  tmp_path)
    x = model.mesh.points[:, 0]
    exact = 100.0 + (20.0 - 100.0) * 5.0 * x / (3.0 + 5.0 * 2.0)
    assert np.allclose(model.solve().temperature, exact, rtol=1e-10)
    assert list(model.convections) == ["convection0"]


@pytest.mark.parametrize("item, words", [
    ({"group": "right", "h": -1.0, "ambient": 0.0},
     r"convection\[0\].h = -1.0 is not allowed: expected a number ≥ 0"),
    ({"group": "right", "h": float("nan"), "ambient": 0.0},
     r"convection\[0\].h = nan is not allowed"),
    ({"group": "right", "h": 1.0}, r"missing key 'convection\[0\].ambient'"),
    ({"group": "middle", "h": 1.0, "ambient": 0.0}, r"convection\[0\].group"),
])
def test_bad_convection_tables(tmp_path, item, words):
    with pytest.raises(ConfigError, match=words):
        build(heat_config(convection=[item]), tmp_path)


def test_convection_is_refused_for_elasticity(tmp_path):
    raw = elastic_config(convection=[{"group": "right", "h": 1.0, "ambient": 0.0}])
    with pytest.raises(ConfigError, match=r"\[convection\] applies to physics heat only"):
        build(raw, tmp_path)


def test_thermal_table_with_a_number_and_with_a_file(tmp_path):
    uniform = build(elastic_config(thermal={"temperature": 70.0, "reference": 20.0}), tmp_path)
    solution = uniform.solve()
    assert np.allclose(solution.strain(), 1e-3 * 50.0 * np.eye(2), rtol=1e-10, atol=1e-15)
    assert np.abs(solution.stress()).max() < 1e-9
    field = 20.0 + 10.0 * uniform.mesh.points[:, 0]
    np.save(tmp_path / "T.npy", field)
    np.savetxt(tmp_path / "T.csv", field, delimiter=",")
    for name in ("T.npy", "T.csv"):
        model = build(elastic_config(thermal={"temperature": name, "reference": 20.0}),
                      tmp_path)
        assert np.allclose(model.temperature, field)


@pytest.mark.parametrize("thermal, error, words", [
    ({"temperature": "missing.npy"}, ConfigError, r"thermal.temperature = \"missing.npy\": "
                                                  r"there is no file"),
    ({"temperature": "short.npy"}, ConfigError, r"\[thermal\]: the temperature field must "
                                                r"have one value per node \(15,\)"),
    ({"reference": 1.0}, ConfigError, r"missing key 'thermal.temperature'"),
])
def test_bad_thermal_tables(tmp_path, thermal, error, words):
    np.save(tmp_path / "short.npy", np.ones(3))
    with pytest.raises(error, match=words):
        build(elastic_config(thermal=thermal), tmp_path)


def test_negative_alpha_is_refused(tmp_path):
    raw = elastic_config(thermal={"temperature": 1.0})
    raw["material"]["alpha"] = -1e-5
    with pytest.raises(ConfigError, match=r"material.alpha = -1e-05 is not allowed"):
        build(raw, tmp_path)


def test_registry_refuses_a_section_without_its_method():
    from dataclasses import replace

    from fesens.physics import HeatConduction
    from fesens.physics.registry import check_declarations
    from fesens.physics.spec import Section

    class Broken(HeatConduction):
        name = "broken"
        config = replace(HeatConduction.config,
                         sections=(Section("radiation", "radiation", keys=()),))

    with pytest.raises(ValueError, match=r"Broken.config.sections call \['radiation'\]"):
        check_declarations(Broken)


HEAT_TOML = """
loads = []
[mesh]
type = "rectangle"
size = [2.0, 1.0]
cells = CELLS
[physics]
type = "heat"
[[supports]]
group = "left"
value = 20.0
[[supports]]
group = "right"
value = 120.0
"""


def test_thermal_temperature_from_a_heat_config(tmp_path):
    (tmp_path / "heat.toml").write_text(HEAT_TOML.replace("CELLS", "[4, 2]"))
    model = build(elastic_config(thermal={"temperature": "heat.toml", "reference": 20.0}),
                  tmp_path)
    assert np.allclose(model.temperature, 20.0 + 50.0 * model.mesh.points[:, 0])
    assert np.abs(model.solve().displacement).max() > 0


def test_thermal_heat_config_errors(tmp_path):
    (tmp_path / "coarse.toml").write_text(HEAT_TOML.replace("CELLS", "[2, 1]"))
    # the file's path as messages show values: cut after 80 characters (a long temporary
    # folder, such as a pytest-xdist worker's, reaches that)
    shown = re.escape(show(str(tmp_path / "coarse.toml")))
    with pytest.raises(ConfigError, match=rf"thermal.temperature = {shown}: its mesh "
                                          r"\(6 nodes\) is not this config's mesh \(15 nodes\)"):
        build(elastic_config(thermal={"temperature": "coarse.toml"}), tmp_path)
    (tmp_path / "self.toml").write_text('loads = []\n[mesh]\ntype = "rectangle"\nsize = [2.0, 1.0]'
                                        '\ncells = [4, 2]\n[[supports]]\ngroup = "left"\n'
                                        '[thermal]\ntemperature = "self.toml"\n')
    with pytest.raises(ConfigError, match=r"that config has a \[thermal\] section itself"):
        build(elastic_config(thermal={"temperature": "self.toml"}), tmp_path)

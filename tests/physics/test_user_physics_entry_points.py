"""A user's physics named in a config's ``[physics] type``: from a package installed into a
temporary folder on ``sys.path`` with its ``.dist-info`` (an entry point of the group
``fesens.physics``), with its parameters as ``[material]`` keys; what is refused."""

import sys

import numpy as np
import pytest
from installed_package import install

from fesens.config import ConfigError, build_model, resolve
from fesens.physics import PHYSICS
from fesens.physics.user_physics_entry_points import ENTRY_POINT_GROUP

PACKAGE = "fesens_test_physics"
SOURCE = '''
import numpy as np
from fesens.physics.user_physics import energy_physics
from fesens.physics.user_physics_small_strain import small_strain_physics


def hardening(eps, lam=1.0, mu=1.0, c=0.0):
    """Hooke's energy plus c/4 (eps:eps)^2."""
    ee = np.sum(eps * eps, axis=(-2, -1))
    return lam / 2 * np.trace(eps, axis1=-2, axis2=-1) ** 2 + mu * ee + c / 4 * ee ** 2


def pairs(g, u, k=1.0):
    return k * g


Hardening = small_strain_physics(hardening)
Pairs = energy_physics(pairs, components=3)
'''
NAMES = ("hardening", f"{PACKAGE}:Hardening", f"{PACKAGE}:Pairs", f"{PACKAGE}:hardening")


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The package "installed" in ``tmp_path`` with the entry point ``hardening``; the
    physics registered by the configs are unregistered afterwards."""
    install(tmp_path, PACKAGE, SOURCE, "fesens-test-physics",
            f"[{ENTRY_POINT_GROUP}]\nhardening = {PACKAGE}:Hardening\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop(PACKAGE, None)
    for name in NAMES:
        PHYSICS.unregister(name)


def _config(kind: str, material: dict) -> dict:
    return {"mesh": {"type": "rectangle", "size": [2.0, 1.0], "cells": [4, 2],
                     "cell_type": "quad4"},
            "physics": {"type": kind},
            "material": material,
            "supports": [{"group": "left"}],
            "loads": [{"type": "surface", "group": "right", "value": [1.5, -0.5]}]}


def _resolved(raw: dict, tmp_path):
    return resolve(raw, base_dir=tmp_path, source="test", optimize=False)


def test_a_user_physics_from_an_installed_package_by_entry_point_and_reference(installed):
    material = {"lam": 1.2, "mu": 0.8, "c": 50.0}
    solutions = []
    for name in ("hardening", f"{PACKAGE}:Hardening"):
        model = build_model(_resolved(_config(name, material), installed))
        assert model.name == name
        assert float(model.values["c"][0]) == 50.0
        solutions.append(np.asarray(model.solve().field))
    np.testing.assert_array_equal(*solutions)
    module = sys.modules[PACKAGE]
    direct = module.Hardening(build_model(_resolved(_config("hardening", material),
                                                    installed)).mesh, **material)
    direct.fix("left")
    direct.surface_load("right", value=(1.5, -0.5))
    np.testing.assert_allclose(direct.solve().field, solutions[0], rtol=1e-12, atol=1e-14)
    with pytest.raises(ConfigError, match=r"material\.E is not used here.*keys allowed "
                                          r"here: lam, mu, c"):
        _resolved(_config("hardening", {**material, "E": 1.0}), installed)


@pytest.mark.parametrize(("kind", "message"), [
    ("not_installed_pkg:Physics", "no installed distribution provides the package "
                                  "'not_installed_pkg'"),
    ("physics/mine.py", "looks like a file path"),
    ("mine.py:Physics", "looks like a file path"),
    (f"{PACKAGE}:hardening", "not a physics made by energy_physics"),
    (f"{PACKAGE}:Pairs", "has 3 components; a config takes a scalar field or one component "
                         "per space dimension"),
])
def test_a_config_never_runs_a_file_an_uninstalled_package_or_a_bare_function(
        installed, kind, message):
    with pytest.raises(ConfigError, match=rf"physics\.type is not allowed: .*{message}"):
        _resolved(_config(kind, {}), installed)
    assert "not_installed_pkg" not in sys.modules
    assert kind not in PHYSICS


def test_an_unknown_physics_name_is_left_to_the_config_check(tmp_path):
    with pytest.raises(ConfigError, match="elasticity"):
        _resolved(_config("elastic", {}), tmp_path)

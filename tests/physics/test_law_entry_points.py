"""Laws by name in configs: a registered rubber law with its constants as ``[material]``
keys, and a user's law from an installed package through an entry point (a package
installed into a temporary folder on ``sys.path`` with its ``.dist-info``), and what is
refused."""

import sys

import numpy as np
import pytest
from installed_package import install

from fesens.config import ConfigError, build_model, resolve
from fesens.physics.law_entry_points import ENTRY_POINT_GROUP, installed_laws, resolve_law
from fesens.workflow.targets import parameter_target

PACKAGE = "fesens_test_laws"
SOURCE = '''
import numpy as np
from fesens.physics.rubber_laws import isochoric_first, volume_change


def demiray(H, a, b, kappa):
    """Demiray's exponential law, W = a/(2b) (exp(b (Ī₁ − 3)) − 1) + κ/2 (J − 1)²."""
    change = volume_change(H)
    return 0.5 * a / b * np.expm1(b * isochoric_first(H)) + 0.5 * kappa * change * change


def rotated(H, mu):
    """A frame-dependent energy: W = μ H₀₁²."""
    return mu * H[..., 0, 1] ** 2
'''


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The package ``fesens_test_laws`` "installed" in ``tmp_path``: its module and a
    ``.dist-info`` declaring the entry point ``demiray`` of the group ``fesens.laws``."""
    install(tmp_path, PACKAGE, SOURCE, "fesens-test-laws",
            f"[{ENTRY_POINT_GROUP}]\ndemiray = {PACKAGE}:demiray\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop(PACKAGE, None)


def _config(law: str, material: dict) -> dict:
    return {"mesh": {"type": "rectangle", "size": [1.0, 0.25], "cells": [4, 1],
                     "cell_type": "quad4"},
            "physics": {"type": "hyperelasticity", "law": law},
            "material": material,
            "supports": [{"group": "left"}],
            "loads": [{"type": "traction", "group": "right", "value": [0.05, 0.0]}]}


def _resolved(raw: dict, tmp_path):
    return resolve(raw, base_dir=tmp_path, source="test", optimize=False)


def test_a_rubber_law_by_name_with_its_constants(tmp_path):
    config = _resolved(_config("mooney-rivlin", {"c10": 0.3, "c01": 0.05, "kappa": 10.0}),
                       tmp_path)
    model = build_model(config)
    assert model.law.name == "mooney-rivlin"
    assert model.constants["c01"] == pytest.approx(0.05)
    assert model.solve().displacement[:, 0].max() > 0.0
    with pytest.raises(ConfigError, match=r"--wrt E: this model has no parameter 'E' \(its "
                                          r"parameters: c10, c01, kappa, scale\)"):
        parameter_target("E").start(config, model, None)


@pytest.mark.parametrize(("material", "message"), [
    ({"c10": 0.3, "c01": 0.05}, r"missing key 'material\.kappa'.*law 'mooney-rivlin' "
                                r"\(c10, c01, kappa\)"),
    ({"c10": 0.3, "c01": 0.05, "kappa": 1.0, "E": 1.0}, r"unknown key 'material\.E'.*"
                                                       r"allowed here: c10, c01, kappa"),
    ({"c10": 0.3, "c01": 0.05, "kappa": -1.0}, r"material\.kappa = -1\.0 is not allowed"),
])
def test_missing_and_unknown_constants_are_refused_at_check_time(tmp_path, material,
                                                                 message):
    with pytest.raises(ConfigError, match=message):
        _resolved(_config("mooney-rivlin", material), tmp_path)


def test_a_user_law_from_an_installed_package(installed):
    """By its entry point's name and by ``module:function``: the same law, solved."""
    assert "demiray" in installed_laws()
    material = {"a": 0.5, "b": 2.0, "kappa": 10.0}
    solutions = []
    for name in ("demiray", f"{PACKAGE}:demiray"):
        model = build_model(_resolved(_config(name, material), installed))
        assert model.law.constants == ("a", "b", "kappa")
        solutions.append(model.solve().displacement)
    np.testing.assert_array_equal(*solutions)
    with pytest.raises(ConfigError, match=r"missing key 'material\.b'.*demiray"):
        _resolved(_config("demiray", {"a": 0.5, "kappa": 10.0}), installed)


@pytest.mark.parametrize(("law", "message"), [
    ("not_installed_pkg:energy", "no installed distribution provides the package "
                                 "'not_installed_pkg'"),
    ("laws/my_law.py", "looks like a file path"),
    ("my_law.py:energy", "looks like a file path"),
    ("mooney", "unknown hyperelastic law 'mooney'.*mooney-rivlin"),
])
def test_a_config_never_runs_a_file_or_an_uninstalled_package(tmp_path, law, message):
    with pytest.raises(ConfigError, match=rf"physics\.law = .*is not allowed: .*{message}"):
        _resolved(_config(law, {}), tmp_path)
    assert "not_installed_pkg" not in sys.modules


def test_user_laws_are_checked(installed):
    with pytest.raises(ValueError, match=f"{PACKAGE}:nothing.*has no 'nothing'"):
        resolve_law(f"{PACKAGE}:nothing")
    with pytest.raises(ValueError, match="not objective"):
        resolve_law(f"{PACKAGE}:rotated")


def test_a_law_object_or_energy_from_python():
    law = resolve_law("ogden")
    assert resolve_law(law) is law
    with pytest.raises(ValueError, match="neither a HyperelasticLaw nor an energy"):
        resolve_law("numpy:pi")

"""``fesens sensitivity --wrt`` of a finite-strain law's constants (``c10`` of
Mooney–Rivlin): the gradient against central differences of two ``fesens solve`` runs, one
cell's entry against the Python API, and what the model does not have refused, naming its
parameters."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from fesens.cli import cli
from fesens.config import ConfigError, load_config
from fesens.physics.hyperelasticity import FiniteStrainElasticity
from fesens.workflow.analysis import compute_sensitivity
from fesens.workflow.targets import wrt_choices

CONFIG = """
[mesh]
type = "rectangle"
size = [1.0, 0.25]
cells = [4, 1]
cell_type = "quad4"

[physics]
type = "hyperelasticity"
law = "{law}"

[material]
{material}

[[supports]]
group = "left"

[[loads]]
type = "traction"
group = "right"
value = [0.05, 0.02]
"""
MOONEY_RIVLIN = {"c10": 0.3, "c01": 0.05, "kappa": 10.0}


def _write(folder, name: str, law: str = "mooney-rivlin", **material) -> str:
    lines = "\n".join(f"{key} = {value!r}" for key, value in material.items())
    path = folder / f"{name}.toml"
    path.write_text(CONFIG.format(law=law, material=lines), encoding="utf-8")
    return str(path)


def _run(*args: str) -> None:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output


def test_the_law_constants_are_choices():
    assert {"c10", "c01", "kappa", "mu", "Jm", "alpha1", "k1"} <= set(wrt_choices())


def test_wrt_c10_is_the_central_difference_of_two_solves(tmp_path):
    """The scalar ``c10`` moves every cell's: ``dC/dc10`` is the sum of the cell field."""
    _run("sensitivity", _write(tmp_path, "mr", **MOONEY_RIVLIN), "--wrt", "c10", "--out",
         str(tmp_path / "sens"), "--quiet")
    summary = json.loads((tmp_path / "sens" / "sensitivity.json").read_text(encoding="utf-8"))
    assert summary["wrt"] == "c10"
    assert summary["gradient"]["field"] == "d_compliance_d_c10"
    assert (tmp_path / "sens" / "sensitivity.vtu").exists()
    h, values = 1e-4, []
    for sign in (1, -1):
        material = {**MOONEY_RIVLIN, "c10": MOONEY_RIVLIN["c10"] + sign * h}
        out = tmp_path / f"solve{sign}"
        _run("solve", _write(tmp_path, f"mr{sign}", **material), "--out", str(out), "--quiet")
        values.append(json.loads((out / "solution.json").read_text(encoding="utf-8"))
                      ["compliance"])
    central = (values[0] - values[1]) / (2 * h)
    assert summary["gradient"]["sum"] == pytest.approx(central, rel=1e-6)


def test_one_cell_entry_is_the_python_api_difference(tmp_path):
    config = load_config(_write(tmp_path, "mr", **MOONEY_RIVLIN), optimize=False)
    result = compute_sensitivity(config, wrt="kappa", objective=None, design=None)
    assert result.at.shape == (config.mesh.n_cells,)
    model = FiniteStrainElasticity(config.mesh, law="mooney-rivlin", **MOONEY_RIVLIN)
    model.fix("left").traction("right", (0.05, 0.02))
    h, cell = 1e-3, 2
    kappa = np.full(config.mesh.n_cells, MOONEY_RIVLIN["kappa"])
    values = []
    for sign in (1, -1):
        moved = kappa.copy()
        moved[cell] += sign * h
        solution = model.solve(kappa=moved)
        values.append(float(np.dot(model.load_vector(), solution.u)))
    assert result.gradient[cell] == pytest.approx((values[0] - values[1]) / (2 * h), rel=1e-6)


@pytest.mark.parametrize(("law", "material", "wrt", "named"), [
    ("mooney-rivlin", MOONEY_RIVLIN, "E", "c10, c01, kappa, scale"),
    ("mooney-rivlin", MOONEY_RIVLIN, "mu", "c10, c01, kappa, scale"),
    ("neo-hookean", {"E": 1.0, "nu": 0.3}, "c10", "E, nu, scale"),
])
def test_what_the_model_does_not_have_is_refused_naming_its_parameters(tmp_path, law,
                                                                      material, wrt, named):
    config = load_config(_write(tmp_path, "c", law=law, **material), optimize=False)
    with pytest.raises(ConfigError, match=f"--wrt {wrt}: this model has no parameter "
                                          f"'{wrt}' \\(its parameters: {named}\\)"):
        compute_sensitivity(config, wrt=wrt, objective=None, design=None)

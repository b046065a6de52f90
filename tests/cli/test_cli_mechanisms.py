"""The compliant-mechanism presets, checked independently of the optimization: their final
design, solved again from the config (its springs included), gives the reported output
displacement, and the design thresholded at its volume fraction (as Sigmund's mechanism
version of the 99-line code, Struct. Multidisc. Optim. 21 (2001) 120-127, checks its
result) is still a mechanism that moves the output port the intended way, by a similar
amount (the gray hinges of the optimized design are what differs)."""

import json

import meshio
import numpy as np
import pytest
from cli_helpers import run

from fesens.config import build_model, load_preset

#: Preset -> (output point, component, thresholded output displacement as measured).
OUTPUTS = {"inverter": ((40.0, 0.0), 0, -1.1208), "gripper": ((40.0, 4.0), 1, -0.94645)}


def volume_threshold(density: np.ndarray, fraction: float) -> np.ndarray:
    """The 0/1 design with the cells of the largest densities, ``fraction`` of them."""
    solid = np.zeros(density.size)
    solid[np.argsort(-density)[:round(fraction * density.size)]] = 1.0
    return solid


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_a_mechanism_preset_resolved_and_thresholded(name, tmp_path):
    result = run("optimize", "--preset", name, "--out", tmp_path / name, "--quiet")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / name / "summary.json").read_text())
    density = np.concatenate(meshio.read(tmp_path / name / "design.vtu").cell_data["density"])

    config = load_preset(name)
    model = build_model(config)
    minimum = config.data["penalization"]["minimum"]
    point, component, measured = OUTPUTS[name]
    dof = model.dofmap.n_components * model.mesh.nearest_node(point) + component

    def output(x):
        return model.solve(scale=minimum + (1 - minimum) * x**3).u[dof]

    reported = summary["objective"]["value"]
    assert output(density) == pytest.approx(reported, rel=1e-8)
    solid = volume_threshold(density, config.data["constraints"]["volume_fraction"])
    thresholded = output(solid)
    assert thresholded < 0 and reported < 0
    assert 0.7 < thresholded / reported < 1.5
    assert thresholded == pytest.approx(measured, rel=0.02)

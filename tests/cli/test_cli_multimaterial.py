"""``fesens optimize --preset multimaterial``: the phases in design.vtu and design.png, and
the converged design against single-material designs of the same mass."""

import json
import re

import meshio
import numpy as np
import pytest
from cli_helpers import edit, history, run, write_config
from PIL import Image

from fesens.config import preset_text
from fesens.opt.interpolation import OrderedSIMP
from fesens.plotting.design import PHASE_COLORS

PRESET = preset_text("multimaterial")


def test_the_design_files_carry_the_phases(tmp_path):
    out = tmp_path / "mm"
    result = run("optimize", "--preset", "multimaterial", "--out", out, "--max-iter", 3)
    assert result.exit_code == 0, result.output
    design = meshio.read(out / "design.vtu")
    density = design.cell_data["density"][0]
    phase = design.cell_data["phase"][0]
    interpolation = OrderedSIMP(3.0, moduli=[0.6, 1.0], densities=[0.5, 1.0])
    np.testing.assert_array_equal(phase, interpolation.phases(density))
    assert set(np.unique(phase)) <= {0, 1, 2}
    np.testing.assert_allclose(design.cell_data["mass_density"][0], density)  # densest: 1
    with Image.open(out / "design.png") as image:
        pixels = np.asarray(image.convert("RGB")).reshape(-1, 3)
    # the light phase (the most cells of the start at 0.4) in its colour, in the cells and
    # the legend; the densities' grey scale is not drawn
    light = np.array([31, 119, 180])  # matplotlib's tab:blue
    assert PHASE_COLORS[-2] == "tab:blue"
    assert np.count_nonzero(np.all(pixels == light, axis=1)) > 1000


def single_material(text: str, fraction: float, modulus: float) -> str:
    """The preset with one phase of modulus ``modulus`` at ``fraction`` of the volume."""
    text = re.sub(r'type = "ordered"\n(.*\n)*?names = .*\n',
                  'type = "simp"\npenalty = 3.0\nminimum = 1e-9\n', text)
    text = edit(text, "volume_fraction = 0.4", f"volume_fraction = {fraction}")
    return edit(text, "E = 1.0", f"E = {modulus}")


@pytest.mark.slow
def test_two_phases_are_stiffer_than_either_alone_at_the_same_mass(tmp_path):
    """An independent check (the preset is no example of Zuo & Saitou's paper): each
    single-material design of the mass is a design the two-phase problem may choose too,
    and the converged two-phase design is stiffer than both (the preset's comment)."""
    compliance = {}
    for name, text in (("two", PRESET), ("heavy", single_material(PRESET, 0.4, 1.0)),
                       ("light", single_material(PRESET, 0.8, 0.6))):
        config = write_config(tmp_path, text, f"{name}.toml")
        result = run("optimize", config, "--out", tmp_path / name, "--quiet")
        assert result.exit_code == 0, result.output
        summary = json.loads((tmp_path / name / "summary.json").read_text())
        assert summary["status"] == "converged"
        compliance[name] = summary["objective"]["value"]
    assert compliance["two"] == pytest.approx(214.35, rel=0.01)
    assert compliance["heavy"] == pytest.approx(314.07, rel=0.01)
    assert compliance["light"] == pytest.approx(235.97, rel=0.01)
    assert compliance["two"] < compliance["light"] < compliance["heavy"]


def test_a_resumed_run_writes_the_uninterrupted_design(tmp_path):
    """Bit-identical: the history (its timings aside) and the final densities and phases."""
    whole, part = tmp_path / "whole", tmp_path / "part"
    assert run("optimize", "--preset", "multimaterial", "--out", whole, "--max-iter", 6,
               "-q").exit_code == 0
    assert run("optimize", "--preset", "multimaterial", "--out", part, "--max-iter", 3,
               "-q").exit_code == 0
    result = run("optimize", part / "config.toml", "--out", part, "--resume", "--max-iter", 6,
                 "-q")
    assert result.exit_code == 0, result.output

    def untimed(folder):
        return [{k: v for k, v in row.items() if k != "seconds"} for row in history(folder)]

    assert untimed(part) == untimed(whole) and len(untimed(whole)) == 6
    for name in ("density", "phase", "d_compliance_d_design"):
        np.testing.assert_array_equal(meshio.read(part / "design.vtu").cell_data[name][0],
                                      meshio.read(whole / "design.vtu").cell_data[name][0])

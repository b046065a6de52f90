"""examples/multimaterial_beam.py in fast mode: the three designs solved again on the MBB
half-beam built here (60 x 20 unit quads, nu = 0.3, symmetry on the left edge, roller at the
bottom-right corner, unit load down at the top-left corner). The two-phase design's stiffness
scale is Zuo & Saitou's ordered SIMP (Struct. Multidisc. Optim. 55, 2017, 477-491, eq. 6),
written out here: on ``(x_i, x_{i+1}]`` ``s = A x^p + B`` through ``(x_i, E_i)`` and
``(x_{i+1}, E_{i+1})`` with breakpoints 0, 0.5, 1 and moduli 1e-9, 0.6, 1. The compliances
are as printed, the three designs have the same mass (0.4 of the beam full of the heavy
phase) and the two-phase beam is the stiffest."""

import re

import numpy as np
import pytest
from example_helpers import load_example
from matplotlib.image import imread

from fesens.mesh import rectangle
from fesens.physics import Elasticity

P, E_MIN = 3.0, 1e-9
BREAKPOINTS, MODULI = np.array([0.0, 0.5, 1.0]), np.array([E_MIN, 0.6, 1.0])


def ordered_simp(x: np.ndarray) -> np.ndarray:
    """The ordered SIMP stiffness scale of the preset's two phases."""
    i = np.clip(np.searchsorted(BREAKPOINTS, x, side="left") - 1, 0, 1)
    x0, x1, e0, e1 = BREAKPOINTS[i], BREAKPOINTS[i + 1], MODULI[i], MODULI[i + 1]
    a = (e0 - e1) / (x0**P - x1**P)
    return a * x**P + e0 - a * x0**P


def compliance(scale: np.ndarray, E: float = 1.0) -> float:
    model = Elasticity(rectangle(60, 20, 60.0, 20.0, cell_type="quad4"), E=E, nu=0.3,
                       plane="stress", thickness=1.0)
    model.fix(lambda p: np.isclose(p[:, 0], 0.0), components=[0])
    model.fix((60.0, 0.0), components=[1])
    model.point_load((0.0, 20.0), (0.0, -1.0), name="F")
    return float(model.solve(scale=scale).compliance())


def test_two_phases_beat_either_material_alone(tmp_path, capsys):
    numbers = load_example("multimaterial_beam").main(["--fast", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    two = re.search(r"two phases: compliance ([\d.]+), mass fraction ([\d.]+)", printed)
    heavy = re.search(r"heavy alone: compliance ([\d.]+), volume fraction ([\d.]+)", printed)
    light = re.search(r"light alone: compliance ([\d.]+), volume fraction ([\d.]+)", printed)
    x = numbers["two phases"]["density"]
    assert ordered_simp(np.array([0.0, 0.25, 0.5, 0.75, 1.0])) == pytest.approx(
        [E_MIN, E_MIN + (0.6 - E_MIN) * 0.5**3, 0.6, 0.6 + 0.4 * (0.75**3 - 0.125) / 0.875,
         1.0], rel=1e-6)
    recomputed = {
        "two": compliance(ordered_simp(x)),
        "heavy": compliance(E_MIN + (1 - E_MIN) * numbers["heavy alone"]["density"] ** 3),
        "light": compliance(E_MIN + (1 - E_MIN) * numbers["light alone"]["density"] ** 3,
                            E=0.6)}
    for key, match in (("two", two), ("heavy", heavy), ("light", light)):
        assert recomputed[key] == pytest.approx(float(match.group(1)), abs=0.006)
    # equal masses: x is the mass relative to the heavy phase; the light phase weighs 0.5
    assert float(np.mean(x)) == pytest.approx(0.4, abs=1e-3)
    assert float(np.mean(numbers["heavy alone"]["density"])) == pytest.approx(0.4, abs=1e-3)
    assert 0.5 * float(np.mean(numbers["light alone"]["density"])) == pytest.approx(0.4,
                                                                                    abs=1e-3)
    assert recomputed["two"] < recomputed["light"] < recomputed["heavy"]
    # the grayness (equal cells: a plain mean): each cell's distance d to the admissible
    # value below it, 4 d (g − d) / g² with g the gap, of 0, 0.5, 1 for the two phases and
    # 0, 1 (Sigmund's 4 ρ (1 − ρ)) for one material
    below = np.where(x > 0.5, 0.5, 0.0)
    expected = {"two phases": 100 * np.mean(16.0 * (x - below) * (below + 0.5 - x)),
                **{key: 100 * np.mean(4.0 * rho * (1.0 - rho)) for key, rho in (
                    (key, numbers[key]["density"]) for key in ("heavy alone", "light alone"))}}
    for key, value in expected.items():
        printed_gray = re.search(rf"{key}: .*grayness ([\d.]+) %", printed).group(1)
        assert value == pytest.approx(float(printed_gray), abs=0.051)
        assert numbers[key]["grayness"] == pytest.approx(value, rel=1e-12)
    phases = numbers["two phases"]["phases"]
    assert np.count_nonzero(phases == 1) > 0 and np.count_nonzero(phases == 2) > 0
    pixels = imread(numbers["picture"])
    assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100

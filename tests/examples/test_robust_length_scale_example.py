"""examples/robust_length_scale.py in fast mode: the printed compliances are those of the
MBB half-beam built here and solved at the example's blueprints, the robust design's eroded
design is its worst, and the prescribed minimum size is that of Qian & Sigmund (2013)'s
argument computed here by plain quadrature: the thinnest straight solid member whose
cone-filtered peak reaches the eroded threshold 0.65 (filter radius 3) is, at the blueprint
threshold 0.5, as wide as printed."""

import re

import numpy as np
import pytest
from example_helpers import load_example
from matplotlib.image import imread

from fesens.mesh import rectangle
from fesens.physics import Elasticity

RADIUS = 3.0


H = 0.004                               # the quadrature's step
T = np.arange(-RADIUS, RADIUS + H, H)


def across(half_width: float, x: np.ndarray, along: np.ndarray) -> np.ndarray:
    """The cone-filtered density at ``x`` across a straight solid member ``|s| < half_width``
    of the plane: the kernel integrated along the member (``along``), then across it."""
    return np.array([along[np.abs(xi - T) < half_width].sum() for xi in x]) / along.sum()


def prescribed_solid_size() -> float:
    along = np.array([np.maximum(0.0, RADIUS - np.hypot(s, T)).sum() * H for s in T])
    low, high = 0.0, RADIUS                 # bisection on the member's half width
    for _ in range(30):
        middle = 0.5 * (low + high)
        if across(middle, np.zeros(1), along)[0] < 0.65:
            low = middle
        else:
            high = middle
    grid = np.linspace(0.0, 2 * RADIUS, 3001)
    profile = across(high, grid, along)
    return 2.0 * grid[np.flatnonzero(profile >= 0.5)[-1]]


def test_robust_and_plain_designs(tmp_path, capsys):
    numbers = load_example("robust_length_scale").main(["--fast", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    model = Elasticity(rectangle(60, 20, 60.0, 20.0, cell_type="quad4"), E=1.0, nu=0.3,
                       plane="stress", thickness=1.0)
    model.fix(lambda p: np.isclose(p[:, 0], 0.0), components=[0])
    model.fix((60.0, 0.0), components=[1])
    model.point_load((0.0, 20.0), (0.0, -1.0), name="F")
    for key in ("plain", "robust"):
        line = re.search(rf"{key}: blueprint compliance ([\d.]+).*volume ([\d.]+),.*smallest "
                         rf"solid ([\d.]+), void ([\d.]+)", printed)
        compliance, volume = float(line.group(1)), float(line.group(2))
        rho = numbers[key]["density"]
        solution = model.solve(scale=1e-9 + (1 - 1e-9) * rho**3)
        assert solution.compliance() == pytest.approx(compliance, abs=0.006)
        assert volume == pytest.approx(float(rho.mean()), abs=1e-4)
        assert volume <= 0.5 + 2e-3
    robust = numbers["robust"]
    # The eroded design is the weakest of the three, the dilated the stiffest.
    assert robust["eroded"] > robust["compliance"] > robust["dilated"]
    match = re.search(r"prescribed by the radius and thresholds: solid ([\d.]+), void ([\d.]+)",
                      printed)
    solid, void = float(match.group(1)), float(match.group(2))
    assert solid == pytest.approx(prescribed_solid_size(), abs=0.02)
    assert void == pytest.approx(solid, abs=0.01)    # thresholds symmetric about 0.5
    pixels = imread(numbers["picture"])
    assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100

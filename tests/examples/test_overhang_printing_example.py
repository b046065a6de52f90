"""examples/overhang_printing.py in fast mode: the design printed with the overhang filter
has no unsupported solid cell where the plain one has some, counted here cell by cell from
the cell centres (a solid cell above the base layer needs a solid cell among the three under
it: Langelaar 2017's 45-degree rule), and the printed compliances are those of a model of
the MBB half-beam built here and solved at the example's densities."""

import re

import numpy as np
import pytest
from example_helpers import load_example
from matplotlib.image import imread

from fesens.mesh import rectangle
from fesens.physics import Elasticity


def unsupported_count(mesh, density: np.ndarray) -> int:
    """Solid cells above the first layer with no solid cell below, below-left or
    below-right, by the cells' centres (cell size 1)."""
    centres = mesh.cell_centroids()
    solid = density > 0.5
    count = 0
    for cell in np.flatnonzero(solid & (centres[:, 1] > 1.0)):
        below = (np.abs(centres[:, 1] - (centres[cell, 1] - 1.0)) < 1e-9) \
            & (np.abs(centres[:, 0] - centres[cell, 0]) < 1.0 + 1e-9)
        count += not np.any(solid & below)
    return count


def test_overhang_filter_leaves_no_unsupported_cell(tmp_path, capsys):
    numbers = load_example("overhang_printing").main(["--fast", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    mesh = rectangle(60, 20, 60.0, 20.0, cell_type="quad4")
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress", thickness=1.0)
    model.fix(lambda p: np.isclose(p[:, 0], 0.0), components=[0])
    model.fix((60.0, 0.0), components=[1])
    model.point_load((0.0, 20.0), (0.0, -1.0), name="F")
    counts = {}
    for key, words in (("plain", "without"), ("overhang", "with")):
        line = re.search(rf"\n?{words} the overhang filter: compliance ([\d.]+), volume "
                         rf"([\d.]+),.*; (\d+) of (\d+) solid cells unsupported", printed)
        compliance, volume = float(line.group(1)), float(line.group(2))
        unsupported, solid = int(line.group(3)), int(line.group(4))
        rho = numbers[key]["density"]
        counts[key] = unsupported_count(mesh, rho)
        assert unsupported == counts[key]
        assert solid == np.count_nonzero(rho > 0.5)
        assert volume <= 0.5 + 1e-3
        u = model.solve(scale=1e-9 + (1 - 1e-9) * rho**3)
        assert u.compliance() == pytest.approx(compliance, abs=0.006)
    assert counts["overhang"] == 0 < counts["plain"]
    pixels = imread(numbers["picture"])
    assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100

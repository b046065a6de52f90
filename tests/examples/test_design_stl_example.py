"""examples/design_stl.py in fast mode: the STL file the run wrote, read here as raw binary
STL, is a closed surface (every edge shared by exactly two triangles, consistently
oriented) inside the design domain, and the volume it encloses (divergence theorem) is the
printed one and, within a few percent, the volume where the trilinear interpolation of the
cell densities (samples at the cell centres, void outside the box) exceeds 0.5, counted on
a fine grid of points."""

import re
from collections import Counter

import numpy as np
import pytest
from example_helpers import load_example
from matplotlib.image import imread
from scipy.interpolate import RegularGridInterpolator

from fesens.mesh import box

CELLS = (16, 6, 6)                      # the fast mode's box of unit cells


def read_binary_stl(path) -> np.ndarray:
    """The triangles ``(n, 3, 3)`` of a binary STL file (80-byte header, count, records)."""
    data = path.read_bytes()
    count = int(np.frombuffer(data, dtype="<u4", count=1, offset=80)[0])
    record = np.dtype([("normal", "<f4", 3), ("vertices", "<f4", (3, 3)), ("attr", "<u2")])
    assert len(data) == 84 + count * record.itemsize
    return np.frombuffer(data, dtype=record, count=count, offset=84)["vertices"].astype(float)


def test_stl_is_closed_and_encloses_the_design(tmp_path, capsys):
    numbers = load_example("design_stl").main(["--fast", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    triangles = read_binary_stl(tmp_path / "design.stl")
    match = re.search(r"design.stl: (\d+) triangles, closed, enclosing ([\d.]+); solid cells "
                      r"\(density > 0.5\) ([\d.]+)", printed)
    assert int(match.group(1)) == len(triangles)
    # Closed and oriented: each directed edge once, and its reverse once.
    keys = np.round(triangles, 4)
    edges = Counter((tuple(t[i]), tuple(t[(i + 1) % 3])) for t in keys for i in range(3))
    assert all(count == 1 and edges.get((b, a)) == 1 for (a, b), count in edges.items())
    # Inside the box (the level lies at most half a cell beyond the outermost centres).
    assert triangles.min() >= -1e-6 and np.all(triangles.max(axis=(0, 1)) <= np.array(CELLS) + 1e-6)
    volume = np.einsum("ij,ij->i", triangles[:, 0],
                       np.cross(triangles[:, 1], triangles[:, 2])).sum() / 6.0
    assert volume == pytest.approx(float(match.group(2)), abs=0.006)
    # The volume where the trilinear interpolant of the padded centre samples exceeds 0.5.
    mesh = box(*CELLS, *map(float, CELLS))
    centres = mesh.cell_centroids()
    order = np.lexsort((centres[:, 2], centres[:, 1], centres[:, 0]))
    padded = np.pad(numbers["density"][order].reshape(CELLS), 1)
    axes = [np.arange(n + 2) - 0.5 for n in CELLS]
    step = 0.125
    fine = np.meshgrid(*[np.arange(step / 2, n, step) for n in CELLS], indexing="ij")
    inside = RegularGridInterpolator(axes, padded)(np.stack(fine, axis=-1)) > 0.5
    assert volume == pytest.approx(inside.sum() * step**3, rel=0.05)
    solid = float(match.group(3))
    assert solid == pytest.approx(np.count_nonzero(numbers["density"] > 0.5), abs=1e-9)
    pixels = imread(numbers["pictures"][0])
    assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100

"""Density fields of one 2D mesh side by side (``plot_density_panels``)."""

import numpy as np
import pytest
from PIL import Image

from fesens.mesh import box, rectangle
from fesens.physics import Elasticity
from fesens.plotting import boundary_markers, plot_density, plot_density_panels


def test_two_designs_side_by_side(tmp_path):
    """Two panels make a picture about twice as wide as one design's, with the markers
    of the model; the single-design picture is unchanged by the shared drawing."""
    mesh = rectangle(20, 10, 2.0, 1.0, "quad4")
    model = Elasticity(mesh).fix("left")
    model.point_load(lambda p: np.isclose(p[:, 0], 2.0) & np.isclose(p[:, 1], 0.0),
                     (0.0, -1.0))
    centres = mesh.cell_centroids()
    first, second = centres[:, 1] > 0.5, centres[:, 0] < 1.0
    pair = plot_density_panels(mesh, {"upper": first * 1.0, "left": second * 1.0},
                               tmp_path / "pair.png", **boundary_markers(model))
    one = plot_density(mesh, first * 1.0, tmp_path / "one.png", title="upper",
                       **boundary_markers(model))
    with Image.open(pair) as image_pair, Image.open(one) as image_one:
        assert image_pair.width > 1.3 * image_one.width
        pixels = np.asarray(image_pair.convert("L"))
    assert pixels.min() < 50 and pixels.max() > 200  # black solid and white void drawn


def test_a_3d_mesh_is_refused(tmp_path):
    mesh = box(2, 2, 2)
    with pytest.raises(ValueError, match="2D meshes only"):
        plot_density_panels(mesh, {"a": np.ones(mesh.n_cells)}, tmp_path / "x.png")

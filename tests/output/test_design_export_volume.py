"""The enclosed volume that ``summary.json`` reports for a design's STL surface: the
divergence theorem's sum over the triangles, exact for a closed surface, and 0 without a
warning for a surface that encloses nothing (trimesh's ``volume`` divided by it for the
centre of mass, a RuntimeWarning that ended a run under ``-W error``)."""

import numpy as np
import pytest

from fesens.output.design_export import enclosed_volume

trimesh = pytest.importorskip("trimesh")


def test_a_closed_box_encloses_its_volume():
    surface = trimesh.creation.box(extents=(2.0, 3.0, 4.0))
    assert enclosed_volume(surface) == pytest.approx(24.0, rel=1e-12)


def test_a_flat_surface_encloses_nothing_and_warns_nothing():
    vertices = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    flat = trimesh.Trimesh(vertices, np.array([[0, 1, 2], [0, 2, 1]]), process=False)
    assert enclosed_volume(flat) == 0.0


def test_no_triangles_enclose_nothing():
    empty = trimesh.Trimesh(np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64))
    assert enclosed_volume(empty) == 0.0

"""The 0.5 level of a design: closed STL surfaces and SVG outlines with their closed forms.

On the padded lattice of cell centres a block of a × b × c solid cells (size h, density 1 in
void 0) gives marching cubes' surface through the block's faces with every edge cut by a
right triangle of legs h/2 (h²/8 of cross-section) and every corner by a further tetrahedron
term: V = (abc − (a + b + c)/2 + 2/3) h³, the octahedron of volume h³/6 for one cell. In 2D
the block's corners are cut by triangles of area h²/8: A = (ab − 1/2) h².
"""

import numpy as np
import pytest

from fesens.errors import MeshError
from fesens.mesh import box, rectangle
from fesens.output.design_export import (
    enclosed_area,
    isosurface,
    outline,
    outline_length,
    write_outline_svg,
    write_stl,
)

trimesh = pytest.importorskip("trimesh")
pytest.importorskip("skimage")


@pytest.mark.parametrize("a, b, c", [(1, 1, 1), (4, 3, 2), (6, 2, 5)])
def test_a_block_of_cells_gives_a_closed_surface_of_the_closed_form_volume(a, b, c, tmp_path):
    h = 0.5
    mesh = box(10, 8, 6, 10 * h, 8 * h, 6 * h)
    centres = mesh.cell_centroids() / h
    solid = (centres[:, 0] < a) & (centres[:, 1] < b) & (centres[:, 2] < c)  # at a corner
    surface = isosurface(mesh, solid.astype(float))
    assert surface.is_watertight and surface.is_winding_consistent
    assert surface.volume == pytest.approx((a * b * c - (a + b + c) / 2 + 2 / 3) * h**3,
                                           rel=1e-12)
    read = trimesh.load(write_stl(surface, tmp_path / "block.stl"))
    assert read.is_watertight and read.volume == pytest.approx(surface.volume, rel=1e-6)


def test_a_design_with_a_hole_through_it_is_watertight_with_volume_near_its_cells():
    mesh = box(12, 8, 4, 12.0, 8.0, 4.0)
    x, y, _ = mesh.cell_centroids().T
    rho = np.where((np.abs(x - 6) < 3) & (np.abs(y - 4) < 2), 0.0, 1.0)  # a hole through z
    surface = isosurface(mesh, rho)
    assert surface.is_watertight and surface.euler_number == 0  # a torus: genus 1
    solid = rho.sum()  # unit cells
    # the surface lies within half a cell of the solid cells' faces
    assert abs(surface.volume - solid) <= 0.5 * surface.area
    assert surface.volume == pytest.approx(solid, rel=0.05)


def test_an_empty_design_gives_an_empty_surface():
    mesh = box(3, 3, 3)
    assert len(isosurface(mesh, np.zeros(27)).faces) == 0


def test_an_unstructured_or_2d_mesh_is_refused_with_the_reason():
    with pytest.raises(MeshError, match="structured mesh"):
        isosurface(box(2, 2, 2, cell_type="tet4"), np.ones(48))
    with pytest.raises(MeshError, match="3D design"):
        isosurface(rectangle(2, 2), np.ones(4))
    with pytest.raises(MeshError, match="2D design"):
        outline(box(2, 2, 2), np.ones(8))


def test_the_outline_of_a_block_with_a_hole_has_the_closed_form_area_and_length(tmp_path):
    mesh = rectangle(20, 10, 20.0, 10.0)
    x, y = mesh.cell_centroids().T
    rho = ((x < 8) & (y < 6)).astype(float)
    rho[(np.abs(x - 4) < 2) & (np.abs(y - 3) < 1)] = 0.0  # a 4 x 2 hole
    polygons = outline(mesh, rho)
    assert len(polygons) == 2
    assert all(np.allclose(p[0], p[-1]) for p in polygons)
    assert enclosed_area(polygons) == pytest.approx((8 * 6 - 0.5) - (4 * 2 - 0.5))
    corner = np.sqrt(0.5)  # each cut corner: two half-cell legs replaced by a diagonal
    assert outline_length(polygons) == pytest.approx(
        2 * (8 + 6) - 4 + 4 * corner + 2 * (4 + 2) - 4 + 4 * corner)
    text = write_outline_svg(polygons, mesh, tmp_path / "o.svg").read_text()
    assert text.startswith("<svg") and text.count(" Z") == 2 and 'fill-rule="evenodd"' in text

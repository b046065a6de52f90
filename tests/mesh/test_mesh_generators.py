"""Structured and mapped generators: counts, orientation, sides, numbering, measures."""

from __future__ import annotations

import numpy as np
import pytest

from fesens.errors import MeshError
from fesens.mesh import Mesh, box, cell_type, plate_with_hole, quarter_annulus, rectangle
from fesens.mesh.cell_types import MIDSIDE_EDGES
from fesens.mesh.validation import corner_jacobian_ratios


def _area_vectors(points: np.ndarray, facets: np.ndarray) -> np.ndarray:
    """Outward area vectors of straight facets given by their corners, shape (n, dim)."""
    p = points[facets]
    if points.shape[1] == 2:
        edge = p[:, 1] - p[:, 0]
        return np.column_stack([edge[:, 1], -edge[:, 0]])
    if facets.shape[1] == 3:
        return 0.5 * np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    return 0.5 * np.cross(p[:, 2] - p[:, 0], p[:, 3] - p[:, 1])


def _facet_flux(mesh: Mesh, facets: np.ndarray) -> np.ndarray:
    """``x . A / dim`` per facet: sums to the enclosed measure (divergence theorem)."""
    corners = facets[:, : cell_type(mesh.type_info.facet_type).n_corners]
    normals = _area_vectors(mesh.points, corners)
    return np.einsum("ij,ij->i", mesh.points[corners[:, 0]], normals) / mesh.dim


def cell_measures(mesh: Mesh) -> np.ndarray:
    """Signed area/volume of each straight-sided cell from its local facets, (n_cells,)."""
    facets, owners = mesh.all_facets()
    return np.bincount(owners, _facet_flux(mesh, facets), minlength=mesh.n_cells)


def boundary_measure(mesh: Mesh) -> float:
    return float(_facet_flux(mesh, mesh.boundary_facets().facets).sum())


ALL_MESHES = {
    "rectangle-quad4": lambda: rectangle(3, 2, 1.5, 0.5, "quad4", origin=(1.0, -2.0)),
    "rectangle-tri3": lambda: rectangle(3, 2, 1.5, 0.5, "tri3", origin=(1.0, -2.0)),
    "rectangle-tri6": lambda: rectangle(3, 2, 1.5, 0.5, "tri6", origin=(1.0, -2.0)),
    "box-hex8": lambda: box(2, 3, 2, 1.0, 2.0, 0.5, "hex8", origin=(0.5, 0.0, -1.0)),
    "box-tet4": lambda: box(2, 3, 2, 1.0, 2.0, 0.5, "tet4", origin=(0.5, 0.0, -1.0)),
    "box-tet10": lambda: box(2, 3, 2, 1.0, 2.0, 0.5, "tet10", origin=(0.5, 0.0, -1.0)),
    "annulus-quad4": lambda: quarter_annulus(3, 6, 1.0, 2.0, "quad4"),
    "annulus-tri3": lambda: quarter_annulus(3, 6, 1.0, 2.0, "tri3"),
    "annulus-tri6": lambda: quarter_annulus(3, 6, 1.0, 2.0, "tri6"),
    "plate-quad4": lambda: plate_with_hole(4, 6, 0.5, 2.0, "quad4", grading=1.3),
    "plate-tri3": lambda: plate_with_hole(4, 6, 0.5, 2.0, "tri3"),
    "plate-tri6": lambda: plate_with_hole(4, 6, 0.5, 2.0, "tri6", grading=1.5),
}


@pytest.fixture(params=sorted(ALL_MESHES))
def any_mesh(request) -> Mesh:
    return ALL_MESHES[request.param]()


@pytest.mark.parametrize(
    ("make", "n_cells", "n_points"),
    [
        (lambda: rectangle(3, 2, cell_type="quad4"), 6, 12),
        (lambda: rectangle(3, 2, cell_type="tri3"), 12, 12),
        (lambda: rectangle(3, 2, cell_type="tri6"), 12, 7 * 5),
        (lambda: box(2, 3, 4, cell_type="hex8"), 24, 3 * 4 * 5),
        (lambda: box(2, 3, 4, cell_type="tet4"), 144, 3 * 4 * 5),
        (lambda: box(2, 3, 4, cell_type="tet10"), 144, 5 * 7 * 9),
        (lambda: quarter_annulus(2, 5, 1, 2, "quad4"), 10, 3 * 6),
        (lambda: plate_with_hole(2, 4, 1, 3, "tri6"), 16, 5 * 9),
    ],
)
def test_counts(make, n_cells, n_points):
    mesh = make()
    assert (mesh.n_cells, mesh.n_points) == (n_cells, n_points)
    assert np.array_equal(np.unique(mesh.cells), np.arange(n_points))  # no orphan points


def test_cells_positively_oriented(any_mesh):
    ratios = corner_jacobian_ratios(any_mesh.points, any_mesh.cells, any_mesh.cell_type)
    assert ratios.min() > 0.1
    assert (cell_measures(any_mesh) > 0).all()


def test_conforming_every_interior_facet_shared_by_two_cells(any_mesh):
    facets, _ = any_mesh.all_facets()
    n_corners = cell_type(any_mesh.type_info.facet_type).n_corners
    _, corner_counts = np.unique(np.sort(facets[:, :n_corners], axis=1), axis=0, return_counts=True)
    _, node_counts = np.unique(np.sort(facets, axis=1), axis=0, return_counts=True)
    assert set(corner_counts) == {1, 2}
    # midside nodes agree too: keys with all nodes match the corner keys one to one
    assert sorted(node_counts) == sorted(corner_counts)
    assert (corner_counts == 1).sum() == len(any_mesh.boundary_facets())


def test_cell_measures_sum_to_enclosed_measure(any_mesh):
    assert cell_measures(any_mesh).sum() == pytest.approx(boundary_measure(any_mesh))


def test_facet_sets_are_outward_boundary_facets_with_owners(any_mesh):
    boundary = {tuple(sorted(f)) for f in any_mesh.boundary_facets().facets}
    centroids = any_mesh.cell_centroids()
    n_corners = cell_type(any_mesh.type_info.facet_type).n_corners
    for name, facet_set in any_mesh.facet_sets.items():
        assert len(facet_set) > 0, name
        assert {tuple(sorted(f)) for f in facet_set.facets} <= boundary
        owner_nodes = any_mesh.cells[facet_set.cells]
        assert all(np.isin(f, c).all() for f, c in zip(facet_set.facets, owner_nodes, strict=True))
        normals = _area_vectors(any_mesh.points, facet_set.facets[:, :n_corners])
        to_owner = centroids[facet_set.cells] - any_mesh.points[facet_set.facets[:, 0]]
        assert (np.einsum("ij,ij->i", normals, to_owner) < 0).all(), name
        assert np.array_equal(facet_set.nodes, any_mesh.node_sets[name])


def _expected_sides(points: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> dict:
    names = [("left", "right"), ("bottom", "top"), ("back", "front")]
    sides = {}
    for axis in range(points.shape[1]):
        sides[names[axis][0]] = np.flatnonzero(np.isclose(points[:, axis], lower[axis]))
        sides[names[axis][1]] = np.flatnonzero(np.isclose(points[:, axis], upper[axis]))
    return sides


@pytest.mark.parametrize(
    "mesh_name", [name for name in ALL_MESHES if name.startswith(("rectangle", "box"))]
)
def test_rectangle_and_box_sides_contain_exactly_the_side_nodes(mesh_name):
    mesh = ALL_MESHES[mesh_name]()
    lower, upper = mesh.bounding_box()
    expected = _expected_sides(mesh.points, lower, upper)
    assert sorted(mesh.node_sets) == sorted(expected)
    for name, nodes in expected.items():
        assert np.array_equal(mesh.nodes(name), nodes), name


def test_box_side_facet_counts():
    assert {name: len(f) for name, f in box(2, 3, 4, cell_type="hex8").facet_sets.items()} == {
        "left": 12, "right": 12, "bottom": 8, "top": 8, "back": 6, "front": 6,
    }  # fmt: skip
    assert len(box(2, 3, 4, cell_type="tet4").facets("front")) == 2 * 6


@pytest.mark.parametrize("name", ["quad4", "tri3", "tri6"])
def test_rectangle_cells_numbered_x_fastest(name):
    nx, ny, hx, hy = 4, 3, 0.5, 2.0
    mesh = rectangle(nx, ny, nx * hx, ny * hy, name)
    per_lattice_cell = 1 if name == "quad4" else 2
    lattice_cell = np.arange(mesh.n_cells) // per_lattice_cell
    i, j = lattice_cell % nx, lattice_cell // nx
    lattice_corner = mesh.points[mesh.cells[:, 0]]  # node 0 of every cell is the lower left
    assert np.allclose(lattice_corner, np.column_stack([i * hx, j * hy]))


@pytest.mark.parametrize("name", ["hex8", "tet4"])
def test_box_cells_numbered_x_fastest(name):
    nx, ny, nz = 2, 3, 4
    mesh = box(nx, ny, nz, nx, ny, nz, name)
    per_lattice_cell = 1 if name == "hex8" else 6
    e = np.arange(mesh.n_cells) // per_lattice_cell
    lattice_index = np.column_stack([e % nx, (e // nx) % ny, e // (nx * ny)])
    assert np.array_equal(np.floor(mesh.cell_centroids()), lattice_index)


@pytest.mark.parametrize("mesh_name", ["rectangle-tri6", "box-tet10"])
def test_midside_nodes_at_edge_midpoints_of_affine_meshes(mesh_name):
    mesh = ALL_MESHES[mesh_name]()
    edges = np.array(MIDSIDE_EDGES[mesh.cell_type])
    midsides = mesh.points[mesh.cells[:, mesh.type_info.n_corners :]]
    assert np.allclose(midsides, mesh.points[mesh.cells[:, edges]].mean(axis=2))


def test_quadratic_nodes_on_arcs_lie_on_the_circles():
    mesh = quarter_annulus(2, 3, 1.0, 2.0, "tri6")
    radii = np.linalg.norm(mesh.points, axis=1)
    assert np.allclose(radii[mesh.nodes("inner")], 1.0)
    assert np.allclose(radii[mesh.nodes("outer")], 2.0)
    assert len(mesh.nodes("inner")) == 2 * 3 + 1


def test_quarter_annulus_sides():
    mesh = quarter_annulus(3, 8, 1.0, 2.0, "quad4")
    x, y = mesh.points.T
    radius = np.hypot(x, y)
    assert np.array_equal(mesh.nodes("inner"), np.flatnonzero(np.isclose(radius, 1.0)))
    assert np.array_equal(mesh.nodes("outer"), np.flatnonzero(np.isclose(radius, 2.0)))
    assert np.array_equal(mesh.nodes("x_axis"), np.flatnonzero(y == 0.0))
    assert np.array_equal(mesh.nodes("y_axis"), np.flatnonzero(x == 0.0))


@pytest.mark.parametrize("name", ["quad4", "tri3", "tri6"])
def test_quarter_annulus_area_converges(name):
    exact = np.pi * (2.0**2 - 1.0**2) / 4
    errors = [
        abs(cell_measures(quarter_annulus(2, n, 1.0, 2.0, name)).sum() - exact) / exact
        for n in (4, 8, 16)
    ]
    assert errors[-1] < 2e-3
    assert errors[0] / errors[1] == pytest.approx(4, rel=0.05)  # chords: O(h^2)
    assert errors[1] / errors[2] == pytest.approx(4, rel=0.05)


def test_plate_with_hole_sides():
    radius, width = 0.5, 2.0
    mesh = plate_with_hole(3, 8, radius, width, "tri6", grading=1.2)
    x, y = mesh.points.T
    assert np.array_equal(mesh.nodes("hole"), np.flatnonzero(np.isclose(np.hypot(x, y), radius)))
    assert np.array_equal(mesh.nodes("right"), np.flatnonzero(x == width))
    assert np.array_equal(mesh.nodes("top"), np.flatnonzero(y == width))
    assert np.array_equal(mesh.nodes("x_axis"), np.flatnonzero(y == 0.0))
    assert np.array_equal(mesh.nodes("y_axis"), np.flatnonzero(x == 0.0))
    assert set(mesh.nodes("right")) & set(mesh.nodes("top")) == {mesh.nearest_node([width] * 2)}


@pytest.mark.parametrize("name", ["quad4", "tri3"])
def test_plate_with_hole_area_converges(name):
    radius, width = 0.5, 2.0
    exact = width**2 - np.pi * radius**2 / 4
    errors = [
        abs(cell_measures(plate_with_hole(2, n, radius, width, name)).sum() - exact)
        for n in (4, 8, 16)
    ]
    assert errors[-1] / exact < 1e-3
    assert errors[0] > 3.5 * errors[1] > 3.5**2 * errors[2]


def test_plate_with_hole_grading_refines_towards_hole():
    grading = 1.5
    mesh = plate_with_hole(4, 2, 1.0, 3.0, "quad4", grading=grading)
    along_x_axis = np.sort(mesh.points[mesh.nodes("x_axis"), 0])
    sizes = np.diff(along_x_axis)
    assert along_x_axis[[0, -1]] == pytest.approx([1.0, 3.0])
    assert sizes[1:] / sizes[:-1] == pytest.approx([grading] * 3)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: rectangle(2, 2, cell_type="hex8"),
            "rectangle supports cell types tri3, tri6, quad4",
        ),
        (lambda: box(2, 2, 2, cell_type="quad4"), "box supports cell types hex8, tet4, tet10"),
        (lambda: rectangle(2, 2, cell_type="quad16"), "unknown cell type 'quad16'"),
        (lambda: rectangle(0, 2), "nx must be a positive integer"),
        (lambda: rectangle(2.5, 2), "nx must be a positive integer"),
        (lambda: rectangle(2, 2, lx=-1.0), "lx must be a positive finite number"),
        (lambda: rectangle(2, 2, origin=(0, 0, 0)), "origin must have 2 coordinates"),
        (lambda: quarter_annulus(2, 2, 2.0, 1.0), "need r_inner < r_outer"),
        (lambda: plate_with_hole(2, 3, 0.5, 1.0), "n_angular must be even"),
        (lambda: plate_with_hole(2, 2, 1.0, 1.0), "need radius < half_width"),
        (lambda: plate_with_hole(2, 2, 0.5, 1.0, grading=0.0), "grading must be a positive"),
    ],
)
def test_generator_argument_errors(make, message):
    with pytest.raises(MeshError, match=message.replace("(", r"\(")):
        make()

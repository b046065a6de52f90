"""quad8, quad9, hex20 and hex27 meshes: Gmsh reading in VTK node order, VTU round trip,
generators, and boundary loads on their line3/quad8/quad9 facets."""

import numpy as np
import pytest
from gmsh_meshes import hexahedra, quadrilaterals

from fesens.mesh import box, quarter_annulus, read_mesh, rectangle, write_mesh
from fesens.mesh.cell_types import CELL_TYPES, CENTRE_NODES, MIDSIDE_EDGES
from fesens.physics import Elasticity

GMSH = {
    "quad8": (quadrilaterals, True),
    "quad9": (quadrilaterals, False),
    "hex20": (hexahedra, True),
    "hex27": (hexahedra, False),
}


def assert_higher_nodes_at_edge_midpoints_and_centres(mesh):
    """Straight-sided cells: node order is VTK's iff every mid-edge node is the midpoint of
    its edge and every centre node the centroid of its corners."""
    points, cells = mesh.points, mesh.cells
    groups = list(MIDSIDE_EDGES[mesh.cell_type]) + list(CENTRE_NODES.get(mesh.cell_type, ()))
    n_corners = mesh.type_info.n_corners
    for k, group in enumerate(groups):
        expected = points[cells[:, list(group)]].mean(axis=1)
        np.testing.assert_allclose(points[cells[:, n_corners + k]], expected, atol=1e-12)


def uniaxial_stress(mesh, traction: float = 5.0):
    """Pulled on ``right`` and held on ``left`` against rigid motion only: σxx = traction."""
    plane = "stress" if mesh.dim == 2 else None
    model = Elasticity(mesh, E=100.0, nu=0.3, plane=plane)
    model.fix("left", components=0)
    origin = mesh.nearest_node(np.zeros(mesh.dim))
    model.fix(lambda p: np.arange(len(p)) == origin)
    if mesh.dim == 3:
        model.fix(lambda p: np.arange(len(p)) == mesh.nearest_node((0.0, 1.0, 0.0)),
                  components=(0, 2))
        model.fix(lambda p: np.arange(len(p)) == mesh.nearest_node((0.0, 0.0, 1.0)),
                  components=0)
    model.traction("right", np.eye(mesh.dim)[0] * traction)
    return model.solve()


@pytest.mark.parametrize("name", GMSH)
def test_gmsh_quadratic_cells_are_read_in_vtk_order_and_carry_loads(name, tmp_path):
    make, incomplete = GMSH[name]
    mesh = read_mesh(make(tmp_path / f"{name}.msh", order=2, incomplete=incomplete))
    assert mesh.cell_type == name
    assert_higher_nodes_at_edge_midpoints_and_centres(mesh)
    facets = mesh.facet_sets["right"]
    assert facets.facet_type == CELL_TYPES[name].facet_type
    solution = uniaxial_stress(mesh)
    expected = np.zeros((mesh.dim, mesh.dim))
    expected[0, 0] = 5.0
    assert np.abs(solution.stress() - expected).max() < 1e-9
    area = 1.0  # the right side: 1 long in 2D, 1 x 1 in 3D
    np.testing.assert_allclose(solution.reaction_force("left")[0], -5.0 * area, rtol=1e-10)


@pytest.mark.parametrize("name", GMSH)
def test_vtu_round_trip(name, tmp_path):
    make = rectangle if CELL_TYPES[name].dim == 2 else box
    mesh = make(*([2] * CELL_TYPES[name].dim), cell_type=name)
    write_mesh(tmp_path / "mesh.vtu", mesh)
    again = read_mesh(tmp_path / "mesh.vtu")
    assert again.cell_type == name
    np.testing.assert_array_equal(again.cells, mesh.cells)
    np.testing.assert_allclose(again.points, mesh.points)


@pytest.mark.parametrize(("name", "n_points"), [("quad8", 21), ("quad9", 25)])
def test_rectangle_generates_quadratic_quadrilaterals(name, n_points):
    mesh = rectangle(2, 2, 2.0, 1.0, cell_type=name)
    assert (mesh.n_cells, mesh.n_points) == (4, n_points)
    assert np.array_equal(np.unique(mesh.cells), np.arange(n_points))  # no orphan points
    assert_higher_nodes_at_edge_midpoints_and_centres(mesh)
    assert mesh.facet_sets["right"].facet_type == "line3"
    assert len(mesh.facet_sets["right"].facets) == 2


@pytest.mark.parametrize(("name", "n_points"), [("hex20", 12 + 20), ("hex27", 45)])
def test_box_generates_quadratic_hexahedra(name, n_points):
    mesh = box(2, 1, 1, 2.0, 1.0, 1.0, cell_type=name)
    assert (mesh.n_cells, mesh.n_points) == (2, n_points)
    assert np.array_equal(np.unique(mesh.cells), np.arange(n_points))
    assert_higher_nodes_at_edge_midpoints_and_centres(mesh)
    assert mesh.facet_sets["front"].facet_type == CELL_TYPES[name].facet_type
    solution = uniaxial_stress(mesh)
    assert abs(solution.stress()[:, 0, 0] - 5.0).max() < 1e-9


@pytest.mark.parametrize("name", ["quad8", "quad9"])
def test_pressure_on_curved_quadratic_edges_of_an_annulus(name):
    """Inner pressure on a thick quarter cylinder: the reaction on each symmetry plane
    balances the pressure resultant ``p r_i``, exactly for any discretisation of the arc
    (the pressure integrates to ``p`` times the chord's projection)."""
    mesh = quarter_annulus(4, 8, 1.0, 2.0, cell_type=name)
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="strain")
    model.fix("x_axis", components=1).fix("y_axis", components=0)
    model.pressure("inner", 1.0)
    solution = model.solve()
    np.testing.assert_allclose(solution.reaction_force("x_axis")[1], -1.0, rtol=1e-10)

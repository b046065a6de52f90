"""Meshes as they come: clockwise 2D cells reoriented on reading (with one note), the
element check by the rule that fits each cell type, Abaqus node and element sets."""

import meshio
import numpy as np
import pytest
from gmsh_meshes import quadrilaterals

from fesens.errors import DegenerateElementError
from fesens.mesh import Mesh, ReorientedCellsWarning, box, read_mesh, rectangle
from fesens.mesh.validation import corner_jacobian_ratios
from fesens.physics import Elasticity


@pytest.mark.parametrize(("order", "incomplete", "name"),
                         [(1, False, "quad4"), (2, True, "quad8"), (2, False, "quad9")])
def test_clockwise_gmsh_quadrilaterals_are_reoriented_with_one_note(tmp_path, order,
                                                                    incomplete, name):
    path = quadrilaterals(tmp_path / "cw.msh", order, incomplete, clockwise=True)
    assert (corner_jacobian_ratios(*_raw_cells(path), "quad4") < 0).all()  # as Gmsh wrote it
    with pytest.warns(ReorientedCellsWarning) as notes:
        mesh = read_mesh(path)
    assert len(notes) == 1
    assert str(notes[0].message) == (f"{path}: 6 of 6 {name} cells were numbered clockwise "
                                     "and have been reoriented")
    assert (corner_jacobian_ratios(mesh.points, mesh.cells, name) > 0).all()
    same = read_mesh(quadrilaterals(tmp_path / "ccw.msh", order, incomplete))  # no note
    assert np.allclose(np.sort(mesh.points, axis=0), np.sort(same.points, axis=0))
    # The groups survive, and a model on the mesh gives the exact uniaxial stress.
    origin = mesh.nearest_node((0.0, 0.0))
    model = Elasticity(mesh, E=10.0, nu=0.3, plane="stress").fix("left", components=0)
    model.fix(lambda p: np.arange(len(p)) == origin)
    model.traction("right", (2.0, 0.0))
    stress = model.solve().stress()
    assert mesh.facet_sets["right"].facet_type == ("line2" if order == 1 else "line3")
    np.testing.assert_allclose(stress, np.broadcast_to([[2.0, 0.0], [0.0, 0.0]], stress.shape),
                               atol=1e-9)


def _raw_cells(path):
    raw = meshio.read(path)
    block = next(b for b in raw.cells if b.dim == 2)
    return raw.points[:, :2], block.data[:, :4]


def test_only_the_clockwise_cells_are_reoriented(tmp_path):
    mesh = rectangle(3, 2, cell_type="tri6")
    cells = mesh.cells.copy()
    flipped = [0, 3, 4]
    cells[flipped] = cells[flipped][:, [0, 2, 1, 5, 4, 3]]
    path = tmp_path / "mixed.vtu"
    meshio.write(path, meshio.Mesh(np.column_stack([mesh.points, np.zeros(mesh.n_points)]),
                                   [("triangle6", cells)]))
    with pytest.warns(ReorientedCellsWarning, match="3 of 12 tri6 cells were numbered"):
        again = read_mesh(path)
    np.testing.assert_array_equal(again.cells, mesh.cells)


def test_abaqus_node_and_element_sets_become_named_groups(tmp_path):
    path = tmp_path / "plate.inp"
    path.write_text(
        "*Heading\n*Node\n1, 0.0, 0.0\n2, 1.0, 0.0\n3, 2.0, 0.0\n4, 0.0, 1.0\n"
        "5, 1.0, 1.0\n6, 2.0, 1.0\n*Element, type=CPS4\n1, 1, 2, 5, 4\n2, 2, 3, 6, 5\n"
        "*Nset, nset=LEFT\n1, 4\n*Nset, nset=RIGHT\n3, 6\n*Elset, elset=FIRST\n1\n"
    )
    mesh = read_mesh(path)
    np.testing.assert_array_equal(mesh.node_sets["LEFT"], [0, 3])
    np.testing.assert_array_equal(mesh.node_sets["RIGHT"], [2, 5])
    np.testing.assert_array_equal(mesh.cell_sets["FIRST"], [0])
    model = Elasticity(mesh, E=1.0, nu=0.0, plane="stress").fix("LEFT")
    model.fix("RIGHT", components=0, value=0.2)
    np.testing.assert_allclose(model.solve().stress()[:, 0, 0], 0.1)


def test_mirrored_hexahedron_is_refused_at_the_integration_points():
    mesh = box(2, 1, 1)
    cells = mesh.cells.copy()
    cells[1] = cells[1][[4, 5, 6, 7, 0, 1, 2, 3]]
    with pytest.raises(DegenerateElementError,
                       match=r"1 of 2 hex8 cells are invalid: 1 inverted \(negative Jacobian "
                             r"determinant at an integration point;.*ids \[1\]"):
        Mesh(mesh.points, cells, "hex8")


def _one_tri6(midside: tuple[float, float]) -> Mesh:
    points = np.array([[0, 0], [1, 0], [0, 1], midside, [0.5, 0.5], [0, 0.5]], dtype=float)
    return Mesh(points, [[0, 1, 2, 3, 4, 5]], "tri6")


def test_midside_node_past_the_quarter_point_is_refused_at_a_node():
    """The corner map is fine; the quadratic map folds over near corner 0."""
    with pytest.raises(DegenerateElementError,
                       match=r"1 inverted \(negative Jacobian determinant at a node;"):
        _one_tri6((0.15, 0.0))
    assert _one_tri6((0.25, 0.0)).n_cells == 1  # the quarter-point (crack-tip) element


def test_quadratic_quadrilateral_checked_at_corners_integration_points_and_nodes():
    mesh = rectangle(1, 1, cell_type="quad8")
    bottom_mid = int(mesh.cells[0, 4])
    for x, rule in ((0.2, "at a node"), (0.05, "at an integration point")):
        points = mesh.points.copy()
        points[bottom_mid] = (x, 0.0)
        with pytest.raises(DegenerateElementError, match=f"Jacobian determinant {rule};"):
            Mesh(points, mesh.cells, "quad8")
    with pytest.raises(DegenerateElementError, match="determinant at a corner;"):
        Mesh(mesh.points, mesh.cells[:, [0, 3, 2, 1, 7, 6, 5, 4]], "quad8")


def test_every_volume_cell_type_has_a_check_rule():
    from fesens.mesh.cell_types import VOLUME_CELL_TYPES
    from fesens.mesh.validation import _RULES

    assert set(_RULES) == set(VOLUME_CELL_TYPES)

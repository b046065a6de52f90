"""Mesh validation: every malformed input raises a specific, informative error."""

from __future__ import annotations

import numpy as np
import pytest

from fesens.errors import DegenerateElementError, MeshError, UnknownGroupError
from fesens.mesh import FacetSet, Mesh, box, rectangle

SQUARE = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])


def test_unknown_cell_type_names_supported_types():
    with pytest.raises(MeshError, match="unknown cell type 'pentagon'; supported: tri3, tri6"):
        Mesh(SQUARE, [[0, 1, 2, 3]], "pentagon")


def test_facet_type_cannot_be_a_mesh_cell_type():
    """line3 is a facet only (line2 cells are bars: fesens.physics.truss)."""
    with pytest.raises(MeshError, match="'line3' cannot carry a discretisation; use one of"):
        Mesh(SQUARE, [[0, 1, 2]], "line3")
    assert Mesh(SQUARE, [[0, 1], [1, 2]], "line2").dim == 2


@pytest.mark.parametrize(
    ("points", "cells", "message"),
    [
        (np.zeros((0, 2)), np.zeros((0, 3), dtype=int), "empty mesh: no points"),
        (SQUARE, np.zeros((0, 3), dtype=int), "empty mesh: no cells"),
    ],
)
def test_empty_mesh(points, cells, message):
    with pytest.raises(MeshError, match=message):
        Mesh(points, cells, "tri3")


def test_mixed_dimensions():
    with pytest.raises(MeshError, match=r"mixed dimensions: 3D cells \(tet4\) on 2D points"):
        Mesh(SQUARE, [[0, 1, 2, 3]], "tet4")
    bent = np.column_stack([SQUARE, [0.0, 0.0, 1.0, 0.0]])
    with pytest.raises(MeshError, match="on 3D points that are not planar"):
        Mesh(bent, [[0, 1, 2]], "tri3")
    flat = np.column_stack([SQUARE, np.full(4, 2.0)])
    assert Mesh(flat, [[0, 1, 2]], "tri3").dim == 2


def test_wrong_node_count_and_out_of_range_nodes():
    with pytest.raises(MeshError, match="quad4 cells need 4 nodes each, got 3"):
        Mesh(SQUARE, [[0, 1, 2]], "quad4")
    with pytest.raises(MeshError, match=r"node ids outside 0..3; offending cells: \[1\]"):
        Mesh(SQUARE, [[0, 1, 2], [0, 2, 4]], "tri3")


def test_node_ids_must_be_whole_numbers_in_range():
    """Float ids were truncated (3.5 became node 3) and -1 meant the last node."""
    with pytest.raises(MeshError, match=r"cells must hold integer node ids: cell 1 has 2.5"):
        Mesh(SQUARE, [[0, 1, 2], [0, 2.5, 3]], "tri3")
    with pytest.raises(MeshError, match=r"offending cells: \[1\] \(cell 1 refers to node -1; "
                       r"the mesh has 4 nodes\)"):
        Mesh(SQUARE, [[0, 1, 2], [0, 2, -1]], "tri3")
    assert Mesh(SQUARE, np.array([[0.0, 1.0, 2.0]]), "tri3").cells.dtype == np.int64


def test_degenerate_triangle_listed():
    points = np.vstack([SQUARE, [[2.0, 0.0]]])
    with pytest.raises(
        DegenerateElementError, match=r"1 degenerate \(zero Jacobian.*ids \[1\]"
    ) as info:
        Mesh(points, [[0, 1, 2], [0, 1, 4]], "tri3")  # cell 1 is collinear
    assert info.value.cell_ids.tolist() == [1]


def test_inverted_cells_listed_first_twenty_in_message_all_in_attribute():
    mesh = rectangle(5, 5, cell_type="tri3")
    cells = mesh.cells.copy()
    flipped = np.arange(0, 50, 2)  # 25 cells
    cells[flipped] = cells[flipped][:, [0, 2, 1]]
    with pytest.raises(DegenerateElementError) as info:
        Mesh(mesh.points, cells, "tri3")
    message = str(info.value)
    assert "25 of 50 tri3 cells are invalid: 25 inverted (negative Jacobian" in message
    assert f"ids {flipped[:20].tolist()} (+5 more)" in message
    assert np.array_equal(info.value.cell_ids, flipped)


def test_non_convex_quad_is_inverted():
    dart = np.array([[0.0, 0.0], [2.0, 0.0], [0.5, 0.5], [0.0, 2.0]])
    with pytest.raises(DegenerateElementError, match=r"1 inverted .*ids \[0\]"):
        Mesh(dart, [[0, 1, 2, 3]], "quad4")


def test_twisted_hex_is_inverted_and_collapsed_hex_degenerate():
    mesh = box(1, 1, 1)
    twisted = mesh.cells[:, [0, 1, 2, 3, 5, 4, 7, 6]]
    with pytest.raises(DegenerateElementError, match="1 inverted"):
        Mesh(mesh.points, twisted, "hex8")
    collapsed = mesh.points.copy()
    collapsed[mesh.nodes("front"), 2] = 0.0
    with pytest.raises(DegenerateElementError, match="1 degenerate"):
        Mesh(collapsed, mesh.cells, "hex8")


def test_validate_after_in_place_change():
    mesh = rectangle(2, 2)
    assert len(mesh.boundary_facets()) == 8
    mesh.cells = mesh.cells[:1]
    with pytest.raises(MeshError, match="owner cells of facet set 'left' refers to ids outside"):
        mesh.validate()  # sets that no longer fit are caught
    mesh.facet_sets.clear()
    mesh.validate()
    assert len(mesh.boundary_facets()) == 4  # cached boundary dropped
    mesh.points[4] = mesh.points[0]
    with pytest.raises(DegenerateElementError):
        mesh.validate()


def test_unknown_group_lists_available_names():
    mesh = rectangle(2, 2)
    with pytest.raises(
        UnknownGroupError,
        match="no node or facet set named 'lft'; available node sets: bottom, left, right, top",
    ):
        mesh.nodes("lft")
    with pytest.raises(
        UnknownGroupError, match="no facet set named 'lft'; available facet sets: bottom"
    ):
        mesh.facets("lft")
    with pytest.raises(
        UnknownGroupError, match="no cell set named 'core'; available cell sets: none"
    ):
        mesh.cell_ids("core")


def test_predicate_selecting_nothing():
    mesh = rectangle(2, 2)
    with pytest.raises(MeshError, match="the selection predicate matched nothing"):
        mesh.nodes(lambda x: x[:, 0] > 5)
    with pytest.raises(MeshError, match="must map coordinates"):
        mesh.cell_ids(lambda x: x[:, 0])


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        ({"node_sets": {"pin": [0, 9]}}, r"node set 'pin' refers to ids outside 0..3: \[9\]"),
        ({"node_sets": {"pin": [0.5]}}, "node set 'pin' must hold integer ids"),
        (
            {"node_sets": {"pin": [[0, 1]]}},
            r"node set 'pin' must be a 1-D array of ids, got shape \(1, 2\)",
        ),
        ({"cell_sets": {"core": [1]}}, r"cell set 'core' refers to ids outside 0..0: \[1\]"),
        (
            {"facet_sets": {"edge": FacetSet("line2", np.array([[0, 7]]), np.array([0]))}},
            r"facet set 'edge' refers to ids outside 0..3: \[7\]",
        ),
        (
            {"facet_sets": {"edge": FacetSet("line2", np.array([[0, 1]]), np.array([3]))}},
            r"owner cells of facet set 'edge' refers to ids outside 0..0: \[3\]",
        ),
        (
            {"facet_sets": {"edge": FacetSet("line2", np.array([[0, 1]]), np.array([0, 0]))}},
            r"facet set 'edge' has 1 facets but owner cells of shape \(2,\)",
        ),
        (
            {"facet_sets": {"edge": FacetSet("tri3", np.array([[0, 1, 2]]))}},
            "facet set 'edge' holds tri3 facets; quad4 cells have line2 facets",
        ),
        (
            {"facet_sets": {"edge": FacetSet("line2", np.array([[0, 1, 2]]))}},
            r"facet set 'edge' must have shape \(n_facets, 2\)",
        ),
    ],
)
def test_group_ids_validated(sets, message):
    with pytest.raises(MeshError, match=message):
        Mesh(SQUARE, [[0, 1, 2, 3]], "quad4", **sets)


def test_groups_normalised_to_int64_arrays():
    mesh = Mesh(
        SQUARE,
        [[0, 1, 2, 3]],
        "quad",
        node_sets={"pin": [0], "none": []},
        facet_sets={"edge": FacetSet("line", [[0, 1]])},
        cell_sets={"all": (0,)},
    )
    assert mesh.cell_type == "quad4"
    assert mesh.node_sets["none"].dtype == mesh.cell_sets["all"].dtype == np.int64
    assert mesh.facets("edge").facet_type == "line2"
    assert mesh.facets("edge").cells is None

"""Reading Gmsh/meshio files into Mesh, writing VTU and XDMF time series."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import meshio
import numpy as np
import pytest
from split_beam import split_beam

from fesens.errors import MeshError
from fesens.mesh import (
    Mesh,
    XdmfSeriesWriter,
    box,
    read_mesh,
    rectangle,
    write_mesh,
)
from fesens.mesh.cell_types import MIDSIDE_EDGES
from fesens.mesh.connectivity import coincident_nodes, node_parts
from fesens.mesh.io import CoincidentNodesWarning
from fesens.mesh.validation import corner_jacobian_ratios

DATA = Path(__file__).resolve().parents[1] / "data"
LBRACKET = Path(__file__).resolve().parents[2] / "fesens" / "data" / "meshes" / "lbracket.msh"
GMSH_MESHES = {"square_tri3": "tri3", "box_tet4": "tet4", "box_tet10": "tet10"}


def _coordinate_rows(mesh: Mesh, node_ids: np.ndarray) -> np.ndarray:
    """Node coordinates sorted lexicographically: compares sets across numberings."""
    rows = np.round(mesh.points[node_ids], 12)
    return rows[np.lexsort(rows.T[::-1])]


# ------------------------------------------------------------------------- Gmsh files
@pytest.mark.parametrize("name", sorted(GMSH_MESHES))
def test_gmsh_22_and_41_give_the_same_mesh_and_sets(name):
    old, new = (read_mesh(DATA / f"{name}_{version}.msh") for version in ("v22", "v41"))
    assert old.cell_type == new.cell_type == GMSH_MESHES[name]
    assert (old.n_points, old.n_cells) == (new.n_points, new.n_cells)
    assert sorted(old.node_sets) == sorted(new.node_sets) == ["domain", "left", "origin", "right"]
    assert sorted(old.facet_sets) == sorted(new.facet_sets) == ["left", "right"]
    assert list(old.cell_sets) == list(new.cell_sets) == ["domain"]
    for group in old.node_sets:
        assert np.array_equal(
            _coordinate_rows(old, old.nodes(group)), _coordinate_rows(new, new.nodes(group))
        )
    assert np.array_equal(old.cell_ids("domain"), np.arange(old.n_cells))


@pytest.mark.parametrize("name", sorted(GMSH_MESHES))
@pytest.mark.parametrize("version", ["v22", "v41"])
def test_gmsh_groups_land_on_the_right_entities(name, version):
    mesh = read_mesh(DATA / f"{name}_{version}.msh")
    x = mesh.points[:, 0]
    assert np.array_equal(mesh.nodes("left"), np.flatnonzero(x == 0.0))
    assert np.array_equal(mesh.nodes("right"), np.flatnonzero(x == 1.0))
    assert np.array_equal(mesh.points[mesh.nodes("origin")], np.zeros((1, mesh.dim)))
    assert len(mesh.nodes("domain")) == mesh.n_points
    for side, outward in (("left", -1.0), ("right", 1.0)):
        facets = mesh.facets(side)
        assert np.array_equal(facets.nodes, mesh.nodes(side))
        assert all(
            np.isin(f, mesh.cells[c]).all()
            for f, c in zip(facets.facets, facets.cells, strict=True)
        )
        owner_centres = mesh.cell_centroids()[facets.cells, 0]
        assert (np.sign(x[facets.facets[:, 0]] - owner_centres) == outward).all()


@pytest.mark.parametrize("version", ["v22", "v41"])
def test_gmsh_tet10_node_order_is_vtk(version):
    mesh = read_mesh(DATA / f"box_tet10_{version}.msh")
    assert (corner_jacobian_ratios(mesh.points, mesh.cells, "tet10") > 0).all()
    edges = np.array(MIDSIDE_EDGES["tet10"])
    midsides = mesh.points[mesh.cells[:, 4:]]
    assert np.allclose(midsides, mesh.points[mesh.cells[:, edges]].mean(axis=2))
    facet_midsides = mesh.points[mesh.facets("left").facets[:, 3:]]
    assert np.allclose(facet_midsides[..., 0], 0.0)


def test_lbracket_mesh():
    mesh = read_mesh(LBRACKET)
    assert mesh.cell_type == "tri3"
    assert 1800 < mesh.n_cells < 2200
    x, y = mesh.points.T
    assert np.array_equal(mesh.nodes("top"), np.flatnonzero((y == 100.0) & (x <= 40.0)))
    assert np.array_equal(mesh.nodes("load"), np.flatnonzero((x == 100.0) & (y >= 28.0)))
    assert mesh.points[mesh.nodes("corner")].tolist() == [[40.0, 40.0]]


# ----------------------------------------------------------------- crafted meshio files
def _write_raw(path: Path, points, cells, **kwargs) -> Path:
    file_format = "gmsh22" if path.suffix == ".msh" else None
    raw = meshio.Mesh(np.asarray(points, dtype=float), cells, **kwargs)
    meshio.write(path, raw, file_format=file_format, binary=False)
    return path


UNIT_SQUARE = [[0, 0], [1, 0], [1, 1], [0, 1]]


def test_orphan_points_removed_and_cells_renumbered(tmp_path):
    points = [[9, 9], *UNIT_SQUARE[:2], [7, 7], *UNIT_SQUARE[2:]]
    path = _write_raw(
        tmp_path / "orphans.vtu",
        np.pad(points, ((0, 0), (0, 1))),
        [("triangle", [[1, 2, 4], [1, 4, 5]])],
    )
    mesh = read_mesh(path)
    assert mesh.n_points == 4
    assert np.array_equal(mesh.points[mesh.cells], np.array(points, float)[[[1, 2, 4], [1, 4, 5]]])


def test_cells_in_two_gmsh22_groups_are_kept_once(tmp_path):
    # Gmsh 2.2 writes a cell once per physical group it belongs to.
    triangles = np.array([[0, 1, 2], [0, 2, 3]])
    path = _write_raw(
        tmp_path / "twice.msh",
        np.pad(UNIT_SQUARE, ((0, 0), (0, 1))),
        [("line", [[0, 1]]), ("triangle", np.vstack([triangles, triangles[:1]]))],
        cell_data={"gmsh:physical": [[3], [1, 1, 2]], "gmsh:geometrical": [[1], [1, 1, 1]]},
        field_data={"bottom": [3, 1], "all": [1, 2], "first": [2, 2]},
    )
    mesh = read_mesh(path)
    assert np.array_equal(mesh.cells, triangles)
    assert mesh.cell_sets["all"].tolist() == [0, 1]
    assert mesh.cell_sets["first"].tolist() == [0]
    assert mesh.facet_sets["bottom"].facets.tolist() == [[0, 1]]
    assert mesh.facet_sets["bottom"].cells.tolist() == [0]


def test_group_on_unused_nodes_is_an_error(tmp_path):
    path = _write_raw(
        tmp_path / "stray.msh",
        np.pad([*UNIT_SQUARE, [5, 5]], ((0, 0), (0, 1))),
        [("vertex", [[4]]), ("triangle", [[0, 1, 2]])],
        cell_data={"gmsh:physical": [[7], [1]], "gmsh:geometrical": [[1], [1]]},
        field_data={"stray": [7, 0], "all": [1, 2]},
    )
    with pytest.raises(MeshError, match=r"stray\.msh: group 'stray' refers to nodes that no tri3"):
        read_mesh(path)


def test_facet_group_that_is_not_a_cell_face_is_an_error(tmp_path):
    path = _write_raw(
        tmp_path / "diagonal.msh",
        np.pad(UNIT_SQUARE, ((0, 0), (0, 1))),
        [("line", [[1, 3]]), ("triangle", [[0, 1, 2], [0, 2, 3]])],
        cell_data={"gmsh:physical": [[5], [1, 1]], "gmsh:geometrical": [[1], [1, 1]]},
        field_data={"cut": [5, 1], "all": [1, 2]},
    )
    with pytest.raises(MeshError, match="facet group 'cut' has 1 facets that are not faces"):
        read_mesh(path)


def test_mixed_cell_types_in_a_file(tmp_path):
    points = np.pad([*UNIT_SQUARE, [2, 0], [2, 1]], ((0, 0), (0, 1)))
    path = _write_raw(
        tmp_path / "mixed.vtu",
        points,
        [("triangle", [[1, 4, 5], [1, 5, 2]]), ("quad", [[0, 1, 2, 3]])],
    )
    message = f"{path}: mixed cell types quad4 and tri3; fesens needs one cell type per mesh"
    with pytest.raises(MeshError, match=message):
        read_mesh(path)
    triangles = read_mesh(path, cell_type="triangle")
    assert (triangles.cell_type, triangles.n_cells, triangles.n_points) == ("tri3", 2, 4)


def test_requested_cell_type_missing(tmp_path):
    path = _write_raw(
        tmp_path / "tri.vtu", np.pad(UNIT_SQUARE, ((0, 0), (0, 1))), [("triangle", [[0, 1, 2]])]
    )
    with pytest.raises(MeshError, match="no quad4 cells; the file has tri3"):
        read_mesh(path, cell_type="quad4")


def test_only_lines_is_unsupported(tmp_path):
    path = _write_raw(tmp_path / "lines.vtu", [[0, 0, 0], [1, 0, 0]], [("line", [[0, 1]])])
    with pytest.raises(MeshError, match="unsupported cell type 'line2'.*supported: tri3"):
        read_mesh(path)


def test_invalid_cells_in_a_file_name_file_and_ids(tmp_path):
    # (Clockwise cells are reoriented on reading: test_mesh_as_they_come.py.)
    path = _write_raw(
        tmp_path / "flat.vtu",
        np.pad(np.vstack([UNIT_SQUARE, [[0.5, 0.5]]]), ((0, 0), (0, 1))),
        [("triangle", [[0, 1, 2], [0, 4, 2]])],
    )
    with pytest.raises(
        MeshError, match=r"flat\.vtu: 1 of 2 tri3 cells are invalid: 1 degenerate"
    ) as info:
        read_mesh(path)
    assert info.value.cell_ids.tolist() == [1]


@pytest.mark.parametrize("node", [5, -1])
def test_cells_pointing_past_the_nodes_name_file_cell_and_id(tmp_path, node):
    """A node id past the last point once raised an IndexError; -1 wrapped around to the
    last point (and read as a degenerate cell, or as a valid one)."""
    points = np.pad(np.vstack([UNIT_SQUARE, [[2.0, 0.0]]]), ((0, 0), (0, 1)))
    path = _write_raw(tmp_path / "bad.vtu", points,
                      [("triangle", [[0, 1, 2], [0, 2, 3], [1, 4, node]])])
    with pytest.raises(MeshError, match=rf"bad\.vtu: cells refer to node ids outside 0\.\.4; "
                       rf"offending cells: \[2\] \(cell 2 refers to node {node}; the mesh has "
                       r"5 nodes\)"):
        read_mesh(path)


def test_missing_file(tmp_path):
    with pytest.raises(MeshError, match=f"mesh file not found: {tmp_path / 'nope.msh'}"):
        read_mesh(tmp_path / "nope.msh")


def test_unreadable_file_names_path_and_reason(tmp_path):
    path = tmp_path / "garbage.msh"
    path.write_text("this is not a mesh\n")
    with pytest.raises(MeshError, match=rf"cannot read {path}: as gmsh: ReadError; as ansys: \w+"):
        read_mesh(path)


def test_unknown_extension(tmp_path):
    path = tmp_path / "mesh.foo"
    path.write_text("")
    with pytest.raises(
        MeshError, match=r"unknown extension '\.foo' of .*mesh\.foo; meshio knows .*\.vtu"
    ):
        read_mesh(path)


# ---------------------------------------------------------------------------- writing
@pytest.mark.parametrize(
    "mesh",
    [rectangle(3, 2, cell_type="quad4"), box(1, 2, 1, cell_type="tet10")],
    ids=["quad4", "tet10"],
)
def test_vtu_round_trip(tmp_path, mesh):
    path = tmp_path / "mesh.vtu"
    write_mesh(path, mesh)
    back = read_mesh(path)
    assert back.cell_type == mesh.cell_type
    assert np.array_equal(back.points, mesh.points)
    assert np.array_equal(back.cells, mesh.cells)


def test_written_fields_read_back_by_meshio(tmp_path):
    mesh = rectangle(2, 1, cell_type="tri3")
    displacement = np.arange(2 * mesh.n_points, dtype=float).reshape(-1, 2)
    temperature = np.linspace(0, 1, mesh.n_points)
    density = np.linspace(0.1, 1, mesh.n_cells)
    path = tmp_path / "fields.vtu"
    write_mesh(
        path, mesh, point_data={"u": displacement, "T": temperature}, cell_data={"rho": density}
    )
    raw = meshio.read(path)
    assert raw.points.shape == (mesh.n_points, 3)
    assert np.array_equal(
        raw.point_data["u"], np.column_stack([displacement, np.zeros(mesh.n_points)])
    )
    assert np.array_equal(raw.point_data["T"], temperature)
    assert np.array_equal(raw.cell_data["rho"][0], density)


def test_write_is_atomic_and_leaves_no_temporaries(tmp_path):
    mesh = rectangle(2, 2)
    path = tmp_path / "out.vtu"
    path.write_text("previous content")
    with pytest.raises(
        MeshError, match=r"point data 'u' must have shape \(9,\) or \(9, k\), got \(4,\)"
    ):
        write_mesh(path, mesh, point_data={"u": np.zeros(4)})
    assert path.read_text() == "previous content"
    write_mesh(path, mesh)
    assert [p.name for p in tmp_path.iterdir()] == ["out.vtu"]


def test_write_errors(tmp_path):
    mesh = rectangle(1, 1)
    with pytest.raises(MeshError, match="unknown extension '.foo'"):
        write_mesh(tmp_path / "mesh.foo", mesh)
    with pytest.raises(MeshError, match="directory .*missing does not exist"):
        write_mesh(tmp_path / "missing" / "mesh.vtu", mesh)
    assert list(tmp_path.iterdir()) == []


def test_single_step_xdmf(tmp_path):
    mesh = rectangle(2, 1, cell_type="tri6")
    path = tmp_path / "mesh.xdmf"
    if importlib.util.find_spec("h5py") is None:  # meshio's XDMF writer imports it
        with pytest.raises(MeshError, match="cannot write .*mesh.xdmf as xdmf: .*h5py"):
            write_mesh(path, mesh)
        assert list(tmp_path.iterdir()) == []
        return
    write_mesh(path, mesh)
    assert [p.name for p in tmp_path.iterdir()] == ["mesh.xdmf"]
    assert np.array_equal(read_mesh(path).cells, mesh.cells)


def test_xdmf_series_written_and_read_by_meshio(tmp_path):
    mesh = rectangle(2, 2, cell_type="quad4")
    path = tmp_path / "series.xdmf"
    times = [0.0, 0.5, 1.0]
    with XdmfSeriesWriter(path, mesh) as series:
        for t in times:
            series.write(
                t,
                point_data={"u": np.full((mesh.n_points, 2), t)},
                cell_data={"s": np.full(mesh.n_cells, 2 * t)},
            )
        assert not path.exists()  # appears atomically on exit
    assert [p.name for p in tmp_path.iterdir()] == ["series.xdmf"]
    reader = meshio.xdmf.TimeSeriesReader(path)
    points, cells = reader.read_points_cells()
    assert np.array_equal(points[:, :2], mesh.points)
    assert np.array_equal(cells[0].data, mesh.cells)
    assert reader.num_steps == len(times)
    for k, t in enumerate(times):
        t_read, point_data, cell_data = reader.read_data(k)
        assert t_read == t
        assert np.array_equal(
            point_data["u"],
            np.column_stack([np.full((mesh.n_points, 2), t), np.zeros(mesh.n_points)]),
        )
        assert np.array_equal(cell_data["s"][0], np.full(mesh.n_cells, 2 * t))


def test_xdmf_write_outside_with_block(tmp_path):
    series = XdmfSeriesWriter(tmp_path / "s.xdmf", rectangle(1, 1))
    with pytest.raises(MeshError, match="inside its with-block"):
        series.write(0.0, point_data={})


def test_coincident_nodes_of_a_file_are_reported_with_the_fix(tmp_path):
    with pytest.warns(CoincidentNodesWarning, match=r"split\.vtu: 10 nodes coincide with "
                      r"another node \(the first at \(50, 0\)\): the cells on either side are "
                      r"not joined there; merge them \(Gmsh's Coherence"):
        mesh = read_mesh(split_beam(tmp_path))
    assert node_parts(mesh.cells, mesh.n_points)[0] == 2
    assert len(coincident_nodes(read_mesh(_write_raw(
        tmp_path / "whole.vtu", np.pad(UNIT_SQUARE, ((0, 0), (0, 1))),
        [("triangle", [[0, 1, 2], [0, 2, 3]])])).points)) == 0

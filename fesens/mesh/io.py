"""Mesh files: reading any format meshio reads (writing: :mod:`fesens.mesh.writing`).

With :mod:`fesens.mesh.writing`, the only modules that import meshio; everything else
sees :class:`Mesh`.

Reading keeps the cells of the highest topological dimension (one cell type per mesh),
drops points no cell uses, turns 2D cells numbered clockwise counter-clockwise (with a
:class:`ReorientedCellsWarning` saying how many) and turns named groups (Gmsh physical
groups in ``.msh`` 2.2 and 4.1, or meshio ``cell_sets`` of other formats, e.g. Abaqus
``*Elset``) into named sets:

======================== ============================================================
group of dimension       becomes
======================== ============================================================
``dim`` (cells)          cell set and node set
``dim - 1`` (facets)     facet set (mesh facets with owner cells) and node set
lower (points, edges)    node set
======================== ============================================================

Named point sets (meshio ``point_sets``: Abaqus ``*Nset``, Exodus node sets) become node
sets, replacing the node set of a group of the same name. Unnamed Gmsh physical groups are
ignored. (meshio's VTK, VTU and XDMF readers carry no sets: meshio writes sets to those
formats as integer data.)
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from pathlib import Path

import meshio
import numpy as np

# meshio.read() prints and calls sys.exit() when a reader fails; the per-format readers
# it dispatches to are only reachable through this (private) registry.
from meshio._helpers import reader_map

from fesens.errors import DegenerateElementError, FesensWarning, MeshError, read_failure
from fesens.mesh.cell_types import (
    MESHIO_TO_FESENS,
    MIDSIDE_EDGES,
    VOLUME_CELL_TYPES,
    cell_type,
)
from fesens.mesh.connectivity import coincident_nodes
from fesens.mesh.mesh import FacetSet, Mesh
from fesens.mesh.validation import checked_connectivity

#: Field values given per point or per cell: name -> array ``(n,)`` or ``(n, k)``.
FieldData = Mapping[str, np.ndarray]


class CoincidentNodesWarning(FesensWarning):
    """Nodes of a mesh file at the same place: parts meshed apart and never merged, which
    are then not joined (the message counts them and gives the first's position)."""


class ReorientedCellsWarning(FesensWarning):
    """A note that :func:`read_mesh` renumbered clockwise 2D cells counter-clockwise."""


# ---------------------------------------------------------------------------- reading
def read_mesh(path: str | os.PathLike, cell_type: str | None = None) -> Mesh:
    """Read a mesh file in any format meshio reads.

    Parameters
    ----------
    path : str or path-like
        The file; its extension selects the format (``.msh``, ``.vtu``, ``.xdmf``, ...).
    cell_type : str, optional
        Use the cells of this type (fesens or meshio name) instead of those of the
        highest topological dimension.

    Returns
    -------
    Mesh
        Points renumbered in file order with unused points dropped; cells in file
        order (cells listed twice, as Gmsh 2.2 does for cells in two physical groups,
        are kept once); named sets as in the module docstring. Facets of a facet set
        are oriented as in the owner cell's local facet table; an interior facet gets the
        lower-numbered of its two cells as owner.

    Warns
    -----
    ReorientedCellsWarning
        Once, with their number, if 2D cells numbered clockwise were renumbered.

    Raises
    ------
    MeshError
        Missing file, unreadable file (with meshio's reason), several cell types of the
        highest dimension, unsupported cell types, a group whose facets are not faces of
        the cells or whose nodes no cell uses. Every message names the file.
    DegenerateElementError
        Inverted or degenerate cells.
    """
    path = Path(path)
    raw = _read_raw(path)
    try:
        mesh, n_reoriented = _to_mesh(raw, cell_type)
    except DegenerateElementError as err:
        raise DegenerateElementError(f"{path}: {err}", err.cell_ids) from None
    except MeshError as err:
        raise MeshError(f"{path}: {err}") from None
    if n_reoriented:
        warnings.warn(f"{path}: {n_reoriented} of {mesh.n_cells} {mesh.cell_type} cells were "
                      "numbered clockwise and have been reoriented", ReorientedCellsWarning,
                      stacklevel=2)
    pairs = coincident_nodes(mesh.points)
    if len(pairs):
        where = ", ".join(f"{c:.4g}" for c in mesh.points[pairs[0, 0]])
        warnings.warn(f"{path}: {len(np.unique(pairs))} nodes coincide with another node (the "
                      f"first at ({where})): the cells on either side are not joined there; "
                      "merge them (Gmsh's Coherence, or a merge tolerance in the mesher or "
                      "meshio)", CoincidentNodesWarning, stacklevel=2)
    return mesh


#: Formats tried first for ambiguous extensions (meshio would pick ANSYS for ``.msh``).
_PREFERRED_FORMATS = {".msh": "gmsh"}


def file_formats(path: Path) -> list[str]:
    """meshio format names for the extension of ``path``, the preferred one first.

    Raises
    ------
    MeshError
        If meshio knows no format with that extension.
    """
    formats = []
    extension = ""
    for suffix in reversed(path.suffixes):  # compound extensions like .vtu.gz too
        extension = suffix.lower() + extension
        formats += meshio.extension_to_filetypes.get(extension, [])
    if not formats:
        raise MeshError(
            f"unknown extension {''.join(path.suffixes)!r} of {path}; "
            f"meshio knows {', '.join(sorted(meshio.extension_to_filetypes))}"
        )
    preferred = _PREFERRED_FORMATS.get(path.suffix.lower())
    return sorted(formats, key=lambda name: name != preferred)


def _read_raw(path: Path) -> meshio.Mesh:
    if not path.is_file():
        raise MeshError(f"mesh file not found: {path}")
    reasons = []
    for file_format in file_formats(path):
        try:
            return reader_map[file_format](str(path))
        except Exception as err:  # readers fail in many ways on malformed files
            # a reader's message may quote the line it failed on: only the kind is shown
            reasons.append(f"as {file_format}: {read_failure(err)}")
    raise MeshError(f"cannot read {path}: {'; '.join(reasons)}") from None


def read_cell_field(path: str | os.PathLike, name: str, mesh: Mesh) -> np.ndarray:
    """The cell field ``name`` of a results file written for ``mesh`` (e.g. the density of
    an optimization's ``design.vtu``).

    Parameters
    ----------
    path : str or path-like
        Any format meshio reads that holds cell data.
    name : str
        The field's name.
    mesh : Mesh
        The mesh the field belongs to; the file's points and cells must match it.

    Returns
    -------
    numpy.ndarray
        ``(n_cells,)`` or ``(n_cells, k)``.

    Raises
    ------
    MeshError
        The file cannot be read, has no field ``name``, or was written for another mesh.
    """
    path = Path(path)
    raw = _read_raw(path)
    if name not in raw.cell_data:
        have = ", ".join(sorted(raw.cell_data)) or "none"
        raise MeshError(f"{path} has no cell field {name!r} (cell fields: {have})")
    values = np.concatenate([np.asarray(block) for block in raw.cell_data[name]])
    points = np.asarray(raw.points)[:, :mesh.dim]
    if values.shape[0] != mesh.n_cells or points.shape != mesh.points.shape or not \
            np.allclose(points, mesh.points, rtol=0.0, atol=1e-9 * (1.0 + np.abs(
                mesh.points).max())):
        raise MeshError(f"{path} belongs to another mesh ({len(points)} points, "
                        f"{values.shape[0]} cells; this model has {mesh.n_points} points, "
                        f"{mesh.n_cells} cells)")
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    return values


def _type_name(block: meshio.CellBlock) -> str:
    return MESHIO_TO_FESENS.get(block.type, block.type)


def _volume_blocks(raw: meshio.Mesh, requested: str | None) -> tuple[str, list[int]]:
    """Choose the cell type of the mesh and the blocks holding its cells."""
    present = sorted({_type_name(block) for block in raw.cells})
    if requested is not None:
        name = cell_type(requested).name
        blocks = [b for b, block in enumerate(raw.cells) if _type_name(block) == name]
        if not blocks:
            raise MeshError(f"no {name} cells; the file has {', '.join(present) or 'none'}")
        return name, blocks
    if not raw.cells:
        raise MeshError("empty mesh: the file has no cells")
    top = max(block.dim for block in raw.cells)
    blocks = [b for b, block in enumerate(raw.cells) if block.dim == top]
    names = sorted({_type_name(raw.cells[b]) for b in blocks})
    if len(names) > 1:
        raise MeshError(
            f"mixed cell types {' and '.join(names)}; fesens needs one cell type per mesh "
            "(pass cell_type= to read one of them)"
        )
    if names[0] not in VOLUME_CELL_TYPES:
        raise MeshError(
            f"unsupported cell type {names[0]!r} (highest dimension in the file: {top}); "
            f"supported: {', '.join(VOLUME_CELL_TYPES)}"
        )
    return names[0], blocks


def _unique_cells(cells: np.ndarray, n_corners: int) -> tuple[np.ndarray, np.ndarray]:
    """Drop repeated cells (same corner nodes), keeping file order.

    Returns the kept cells and, for each input row, the index of its kept copy.
    """
    keys = np.sort(cells[:, :n_corners], axis=1)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return cells[first[order]], rank[inverse.ravel()]


def _named_groups(raw: meshio.Mesh) -> dict[str, list[np.ndarray]]:
    """Named groups as ``name -> [cell indices within each block]``.

    meshio fills ``cell_sets`` for Gmsh 4.1 (and formats like MED or Abaqus); for Gmsh
    2.2 only ``cell_data["gmsh:physical"]`` (tag per cell) and ``field_data``
    (``name -> [tag, dim]``; tags are unique per dimension only) are available.
    """
    empty = np.zeros(0, dtype=np.int64)
    sets = {k: v for k, v in raw.cell_sets.items() if not k.startswith("gmsh:")}
    if sets:
        return {
            name: [
                empty if ids is None else np.asarray(ids, dtype=np.int64) for ids in ids_per_block
            ]
            for name, ids_per_block in sets.items()
        }
    tags_per_block = raw.cell_data.get("gmsh:physical")
    if tags_per_block is None:
        return {}
    return {
        name: [
            np.flatnonzero(tags == tag) if block.dim == dim else empty
            for block, tags in zip(raw.cells, tags_per_block, strict=True)
        ]
        for name, (tag, dim) in raw.field_data.items()
    }


def _locate_facets(mesh: Mesh, corners: np.ndarray) -> np.ndarray:
    """Index into ``mesh.all_facets()`` of each facet given by its corner nodes.

    Parameters
    ----------
    corners : numpy.ndarray
        Corner node ids in any order, shape ``(n, n_facet_corners)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(n,)``; the first matching mesh facet (lowest owner id), -1 if none.
    """
    facets, _ = mesh.all_facets()
    keys = np.sort(np.vstack([facets[:, : corners.shape[1]], corners]), axis=1)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    hit = first[inverse.ravel()[len(facets) :]]
    return np.where(hit < len(facets), hit, -1)


def _counter_clockwise(points: np.ndarray, cells: np.ndarray, name: str
                       ) -> tuple[np.ndarray, int]:
    """2D cells with their node order reversed where their corner polygon is clockwise.

    Reversal keeps node 0, reverses the other corners and the mid-edge nodes (the edge
    from corner k to k + 1 becomes the edge from k + 1 to k) and keeps a centre node.

    Returns
    -------
    cells : numpy.ndarray
        ``(n_cells, n_nodes_per_cell)``.
    n_reoriented : int
    """
    info = cell_type(name)
    if info.dim != 2:
        return cells, 0
    corners = points[cells[:, : info.n_corners], :2]
    following = np.roll(corners, -1, axis=1)
    twice_area = np.sum(corners[..., 0] * following[..., 1] - following[..., 0] * corners[..., 1],
                        axis=1)
    clockwise = twice_area < 0
    if not clockwise.any():
        return cells, 0
    n_edges = len(MIDSIDE_EDGES.get(name, ()))
    reversal = np.r_[0, info.n_corners - 1 : 0 : -1,
                     info.n_corners + n_edges - 1 : info.n_corners - 1 : -1,
                     info.n_corners + n_edges : info.n_nodes]
    cells = cells.copy()
    cells[clockwise] = cells[clockwise][:, reversal]
    return cells, int(clockwise.sum())


def _to_mesh(raw: meshio.Mesh, requested: str | None) -> tuple[Mesh, int]:
    """The mesh and the number of its cells that were reoriented."""
    name, volume_blocks = _volume_blocks(raw, requested)
    volume_data = [raw.cells[b].data for b in volume_blocks]
    starts = np.cumsum([0] + [len(data) for data in volume_data[:-1]])
    # ids checked before they index the points: -1 would wrap around to the last node
    every = checked_connectivity(np.concatenate(volume_data), len(raw.points))
    cells, cell_index = _unique_cells(every, cell_type(name).n_corners)
    cells, n_reoriented = _counter_clockwise(np.asarray(raw.points), cells, name)
    used = np.unique(cells)
    node_index = np.full(len(raw.points), -1, dtype=np.int64)
    node_index[used] = np.arange(len(used))
    mesh = Mesh(raw.points[used], node_index[cells], name)
    block_cells = {
        b: cell_index[start : start + len(data)]
        for b, start, data in zip(volume_blocks, starts, volume_data, strict=True)
    }
    facet_corners = _attach_groups(mesh, raw, block_cells, node_index)
    _attach_facet_sets(mesh, facet_corners)
    _attach_point_sets(mesh, raw, node_index)
    return mesh, n_reoriented


def _attach_point_sets(mesh: Mesh, raw: meshio.Mesh, node_index: np.ndarray) -> None:
    """Add meshio's named point sets (Abaqus ``*Nset``, ...) as node sets.

    Parameters
    ----------
    node_index : numpy.ndarray
        Mesh node id of each file point (-1: unused), shape ``(n_file_points,)``.
    """
    for name, ids in raw.point_sets.items():
        node_ids = node_index[np.asarray(ids, dtype=np.int64)]
        if (node_ids < 0).any():
            raise MeshError(f"point set {name!r} refers to {(node_ids < 0).sum()} nodes that "
                            f"no {mesh.cell_type} cell uses")
        mesh.node_sets[name] = np.unique(node_ids)


def _attach_groups(
    mesh: Mesh,
    raw: meshio.Mesh,
    block_cells: dict[int, np.ndarray],
    node_index: np.ndarray,
) -> dict[str, np.ndarray]:
    """Add the node and cell sets of the named groups to ``mesh``.

    Parameters
    ----------
    block_cells : dict
        Mesh cell id of each cell of the volume blocks, ``block -> (n_block_cells,)``.
    node_index : numpy.ndarray
        Mesh node id of each file point (-1: unused), shape ``(n_file_points,)``.

    Returns
    -------
    dict
        Corner nodes (mesh ids) of the facets of each group that has any,
        ``name -> (n_facets, n_facet_corners)``.
    """
    facet_dim = mesh.type_info.dim - 1
    n_facet_corners = cell_type(mesh.type_info.facet_type).n_corners
    facet_corners = {}
    for group, ids_per_block in _named_groups(raw).items():
        nodes, cells, facets = [], [], []
        for b, ids in enumerate(ids_per_block):
            if len(ids) == 0:
                continue
            members = raw.cells[b].data[ids]
            nodes.append(members.ravel())
            if b in block_cells:
                cells.append(block_cells[b][ids])
            elif raw.cells[b].dim == facet_dim:
                facets.append(members[:, :n_facet_corners])
        if not nodes:
            continue
        node_ids = node_index[np.unique(np.concatenate(nodes))]
        if (node_ids < 0).any():
            raise MeshError(f"group {group!r} refers to nodes that no {mesh.cell_type} cell uses")
        mesh.node_sets[group] = node_ids
        if cells:
            mesh.cell_sets[group] = np.unique(np.concatenate(cells))
        if facets:
            facet_corners[group] = node_index[np.concatenate(facets)]
    return facet_corners


def _attach_facet_sets(mesh: Mesh, facet_corners: dict[str, np.ndarray]) -> None:
    """Add facet sets made of the mesh facets with the given corner nodes.

    Parameters
    ----------
    facet_corners : dict
        ``name -> (n_facets, n_facet_corners)`` corner node ids, in any order.
    """
    if not facet_corners:
        return
    facets, owners = mesh.all_facets()
    found = np.split(
        _locate_facets(mesh, np.concatenate(list(facet_corners.values()))),
        np.cumsum([len(corners) for corners in facet_corners.values()])[:-1],
    )
    for group, hit in zip(facet_corners, found, strict=True):
        if (hit < 0).any():
            raise MeshError(
                f"facet group {group!r} has {(hit < 0).sum()} facets that are not "
                f"faces of the {mesh.cell_type} cells"
            )
        hit = np.unique(hit)
        mesh.facet_sets[group] = FacetSet(mesh.type_info.facet_type, facets[hit], owners[hit])

"""One MPI rank's part of a mesh: its cells, the nodes they touch, and who owns each node.

A distributed run (``mpirun -n N``) splits the cells among the ranks (``cell_ranks``, the
rank of every cell, from :func:`lattice_cell_ranks` on a structured lattice or from a graph
partitioner, :mod:`fesens.fem.partition.cells`); every rank still holds the whole mesh and
:func:`partition_mesh` keeps its part: a :class:`~fesens.mesh.mesh.Mesh` of its cells with
local ids, plus the maps back to the global ids.

Two numberings span the ranks. Cells: rank 0's cells in increasing global id, then rank
1's, ... (a rank's cells are ``cell_start .. cell_start + len(cells) - 1``). Nodes: a node
is *owned* by the lowest rank among the ranks of the cells touching it, and numbered rank 0's
owned nodes first (increasing global id), then rank 1's, ... (``node_order``), so that each
rank's owned nodes form one contiguous range (``owned_node_range``), as PETSc lays out the
rows of a distributed matrix. Nodes touched by no cell are numbered after every rank's
owned nodes and belong to no part.

Everything is computed with whole-array numpy operations on ``O(n_cells + n_points)``
integer arrays (no Python loop over cells or nodes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fesens.errors import MeshError
from fesens.mesh.cell_types import cell_type
from fesens.mesh.mesh import FacetSet, Mesh
from fesens.mesh.structured import Lattice


@dataclass(frozen=True)
class MeshPart:
    """One rank's part of a mesh split among ``size`` ranks.

    Attributes
    ----------
    mesh : Mesh
        The rank's cells (increasing global id) on the nodes they touch (increasing global
        id), every id local; named sets restricted to the part (see :func:`partition_mesh`).
    rank, size : int
        This part's rank and the number of ranks.
    cells : numpy.ndarray
        Global ids of the local cells, ``(n_local_cells,)`` int64, increasing.
    nodes : numpy.ndarray
        Global ids of the local nodes, ``(n_local_nodes,)`` int64, increasing.
    owned : numpy.ndarray
        ``(n_local_nodes,)`` bool: this rank owns the node (the lowest rank among the ranks
        of the cells touching it).
    node_order : numpy.ndarray
        ``(n_local_nodes,)`` int64: each local node's index in the rank-ordered numbering of
        all global nodes (rank 0's owned nodes in increasing global id, then rank 1's, ...).
    cell_start : int
        First index of this rank's cells in the rank-ordered cell numbering.
    n_global_cells, n_global_nodes : int
        Cells and points of the whole mesh.
    cell_counts : numpy.ndarray
        Cells per rank, ``(size,)`` int64.
    owned_node_range : tuple of int
        ``(start, stop)``: this rank's owned nodes are ``start .. stop - 1`` in the
        rank-ordered node numbering.
    center : numpy.ndarray
        Mean of the whole mesh's points, ``(dim,)``.
    """

    mesh: Mesh
    rank: int
    size: int
    cells: np.ndarray
    nodes: np.ndarray
    owned: np.ndarray
    node_order: np.ndarray
    cell_start: int
    n_global_cells: int
    n_global_nodes: int
    cell_counts: np.ndarray
    owned_node_range: tuple[int, int]
    center: np.ndarray

    def local_cells(self, global_ids) -> np.ndarray:
        """Local ids of those of ``global_ids`` (cell ids, any shape) that are local cells,
        ``(k,)`` int64, increasing."""
        return _local_ids(self.cells, global_ids)

    def local_nodes(self, global_ids) -> np.ndarray:
        """Local ids of those of ``global_ids`` (node ids, any shape) that are local nodes,
        ``(k,)`` int64, increasing."""
        return _local_ids(self.nodes, global_ids)


def _local_ids(sorted_globals: np.ndarray, global_ids) -> np.ndarray:
    """Positions in ``sorted_globals`` of the entries of ``global_ids`` found there, unique
    and increasing."""
    ids = np.asarray(global_ids, dtype=np.int64).ravel()
    position = np.searchsorted(sorted_globals, ids)
    inside = position < len(sorted_globals)
    found = position[inside][sorted_globals[position[inside]] == ids[inside]]
    return np.unique(found)


def _checked_ranks(mesh: Mesh, cell_ranks, rank: int, size: int | None
                   ) -> tuple[np.ndarray, int, np.ndarray]:
    """``cell_ranks`` as int64, the number of ranks and the cells per rank; refuse bad
    input and ranks without cells."""
    ranks = np.asarray(cell_ranks)
    if ranks.shape != (mesh.n_cells,) or (ranks.size and not np.issubdtype(ranks.dtype,
                                                                           np.integer)):
        raise MeshError(f"cell_ranks must be an integer array of shape ({mesh.n_cells},) "
                        f"(the rank of every cell), got {ranks.dtype} of shape {ranks.shape}")
    ranks = ranks.astype(np.int64, copy=False)
    size = int(ranks.max()) + 1 if size is None else int(size)
    if ranks.min() < 0 or ranks.max() >= size:
        raise MeshError(f"cell_ranks must lie in 0..{size - 1} (size {size}), got values "
                        f"{int(ranks.min())}..{int(ranks.max())}")
    if not 0 <= rank < size:
        raise MeshError(f"rank {rank} is outside 0..{size - 1} (size {size})")
    counts = np.bincount(ranks, minlength=size).astype(np.int64)
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        raise MeshError(f"rank {int(empty[0])} of {size} gets no cell of this mesh of "
                        f"{mesh.n_cells} cells (ranks without cells: {empty[:10].tolist()}): "
                        "run with fewer ranks")
    return ranks, size, counts


def _node_owners(mesh: Mesh, ranks: np.ndarray, size: int) -> np.ndarray:
    """The owner of every node, ``(n_points,)``: the lowest rank among its cells' ranks
    (``size`` for a node of no cell)."""
    owner = np.full(mesh.n_points, size, dtype=np.int64)
    for column in mesh.cells.T:  # one pass per node of a cell, not per cell
        np.minimum.at(owner, column, ranks)
    return owner


def partition_mesh(mesh: Mesh, cell_ranks, rank: int, size: int | None = None) -> MeshPart:
    """The part of ``mesh`` that rank ``rank`` holds when its cells go to ``cell_ranks``.

    Named sets are restricted to the part and renumbered: node sets to the local nodes in
    the set, cell sets to the local cells in the set, facet sets to the facets whose cell
    (:attr:`FacetSet.cells`) is local. A facet set without cells first finds each facet's
    cell: among the cells with that face, the one of the lowest rank (then lowest id), so
    a facet shared by two ranks goes to one of them; the part's facet set then has cells.
    Facets that are no cell's face are dropped.

    Parameters
    ----------
    mesh : Mesh
        The whole mesh (the same on every rank).
    cell_ranks : array_like
        Rank of every cell, ``(n_cells,)`` int in ``0 .. size - 1``.
    rank : int
        The rank whose part to build.
    size : int, optional
        Number of ranks; default ``cell_ranks.max() + 1``.

    Returns
    -------
    MeshPart

    Raises
    ------
    MeshError
        ``cell_ranks`` of the wrong shape or type or out of range, ``rank`` out of range,
        or a rank that gets no cell (the message says: run with fewer ranks).
    """
    ranks, size, counts = _checked_ranks(mesh, cell_ranks, rank, size)
    cells = np.flatnonzero(ranks == rank)
    owner = _node_owners(mesh, ranks, size)
    touched = np.zeros(mesh.n_points, dtype=bool)
    touched[mesh.cells[cells].ravel()] = True
    nodes = np.flatnonzero(touched)
    node_local = np.full(mesh.n_points, -1, dtype=np.int64)
    node_local[nodes] = np.arange(len(nodes))
    cell_local = np.full(mesh.n_cells, -1, dtype=np.int64)
    cell_local[cells] = np.arange(len(cells))
    order = np.empty(mesh.n_points, dtype=np.int64)
    order[np.argsort(owner, kind="stable")] = np.arange(mesh.n_points)
    owned_per_rank = np.bincount(owner, minlength=size + 1)
    start = int(owned_per_rank[:rank].sum())

    def local_ids(ids: np.ndarray, local: np.ndarray) -> np.ndarray:
        mapped = local[ids]
        return mapped[mapped >= 0]

    facet_sets = {}
    for name, facet_set in mesh.facet_sets.items():
        owners = facet_set.cells
        facets = facet_set.facets
        if owners is None:
            facets, owners = _facet_owners(mesh, facets, ranks)
        keep = cell_local[owners] >= 0
        facet_sets[name] = FacetSet(facet_set.facet_type, node_local[facets[keep]],
                                    cell_local[owners[keep]])
    part = Mesh(mesh.points[nodes], node_local[mesh.cells[cells]], mesh.cell_type,
                node_sets={name: local_ids(ids, node_local)
                           for name, ids in mesh.node_sets.items()},
                facet_sets=facet_sets,
                cell_sets={name: local_ids(ids, cell_local)
                           for name, ids in mesh.cell_sets.items()})
    return MeshPart(
        mesh=part, rank=int(rank), size=size, cells=cells.astype(np.int64), nodes=nodes,
        owned=owner[nodes] == rank, node_order=order[nodes],
        cell_start=int(counts[:rank].sum()), n_global_cells=mesh.n_cells,
        n_global_nodes=mesh.n_points, cell_counts=counts,
        owned_node_range=(start, start + int(owned_per_rank[rank])),
        center=mesh.points.mean(axis=0))


def _facet_owners(mesh: Mesh, facets: np.ndarray, ranks: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The facets of a set without cells that are some cell's face, and for each the cell
    of the lowest rank (then lowest id) having that face."""
    n_corners = cell_type(mesh.type_info.facet_type).n_corners
    if len(facets) == 0:
        return facets, np.zeros(0, dtype=np.int64)
    in_set = np.zeros(mesh.n_points, dtype=bool)
    in_set[facets.ravel()] = True
    near = np.flatnonzero(in_set[mesh.cells].any(axis=1))  # cells touching the set
    local = np.asarray(mesh.type_info.local_facets)
    faces = mesh.cells[near][:, local[:, :n_corners]].reshape(-1, n_corners)
    face_cells = np.repeat(near, local.shape[0])
    keys = np.sort(np.concatenate([facets[:, :n_corners], faces]), axis=1)
    _, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    score = np.full(inverse.max() + 1, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(score, inverse[len(facets):], ranks[face_cells] * mesh.n_cells + face_cells)
    best = score[inverse[: len(facets)]]
    found = best < np.iinfo(np.int64).max
    return facets[found], best[found] % mesh.n_cells


def lattice_cell_ranks(mesh: Mesh, lattice: Lattice, ranges) -> np.ndarray:
    """The rank of every cell of a lattice mesh split into PETSc DMDA blocks.

    Parameters
    ----------
    mesh : Mesh
        Linear quadrilaterals or hexahedra (quad4, hex8) on the lattice.
    lattice : Lattice
        :func:`~fesens.mesh.structured.lattice_of` ``mesh``.
    ranges : sequence of array_like
        Per axis, the number of cells each process owns along it (PETSc's
        ``DMDA.getOwnershipRanges()``), e.g. ``[[30, 30], [20], [20]]``; per axis they sum
        to the lattice's cells along it.

    Returns
    -------
    numpy.ndarray
        ``(n_cells,)`` int64: rank ``px + Px * (py + Py * pz)`` of the block holding the
        cell's lowest corner (x process index fastest, as PETSc numbers the DMDA's ranks).

    Raises
    ------
    MeshError
        Other cells than quad4/hex8, or ``ranges`` that do not fit the lattice.
    """
    if mesh.cell_type not in ("quad4", "hex8"):
        raise MeshError(f"lattice_cell_ranks needs quad4 or hex8 cells, got {mesh.cell_type}; "
                        "partition other meshes by their cell graph")
    if len(ranges) != len(lattice.shape):
        raise MeshError(f"ranges must give {len(lattice.shape)} axes, got {len(ranges)}")
    node_position = np.empty(mesh.n_points, dtype=np.int64)
    node_position[lattice.point_ids] = np.arange(len(lattice.point_ids))
    rank = np.zeros(mesh.n_cells, dtype=np.int64)
    stride, processes = 1, 1
    for axis, (points, counts) in enumerate(zip(lattice.shape, ranges, strict=True)):
        counts = np.asarray(counts, dtype=np.int64)
        if counts.ndim != 1 or counts.min() < 1 or counts.sum() != points - 1:
            raise MeshError(f"ranges[{axis}] = {counts.tolist()} must be positive cell counts "
                            f"summing to the lattice's {points - 1} cells along axis {axis}")
        index = node_position // stride % points  # lattice index of every node on this axis
        lowest = index[mesh.cells[:, 0]]
        for column in mesh.cells.T[1:]:
            np.minimum(lowest, index[column], out=lowest)
        rank += processes * np.searchsorted(np.cumsum(counts), lowest, side="right")
        stride, processes = stride * points, processes * len(counts)
    return rank

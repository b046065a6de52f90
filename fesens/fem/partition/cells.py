"""Which MPI rank holds which cells of a distributed run.

A structured lattice of linear quadrilaterals or hexahedra is split into the blocks of a
PETSc DMDA (:func:`fesens.fem.partition.petsc.dmda_ranges`, the same blocks geometric
solvers on the lattice would use); any other mesh by partitioning the graph of its cells
(neighbours share a facet) with PETSc's ``MatPartitioning`` (PT-Scotch). The result goes to
:func:`fesens.fem.partition.mesh_part.partition_mesh`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fesens.fem.partition.mesh_part import lattice_cell_ranks
from fesens.fem.partition.petsc import dmda_ranges, graph_ranks
from fesens.mesh.cell_types import cell_type
from fesens.mesh.mesh import Mesh
from fesens.mesh.structured import lattice_of
from fesens.mpi import MPIError


def cell_adjacency(mesh: Mesh) -> sp.csr_matrix:
    """The cell graph of ``mesh``: two cells are neighbours when they share a facet.

    Facets are matched by their corner nodes (each cell's facets from the cell type's
    table, sorted and compared), so the memory is ``O(n_cells * n_facets_per_cell)``.

    Returns
    -------
    scipy.sparse.csr_matrix
        ``(n_cells, n_cells)`` symmetric, ones where two cells share a facet, no diagonal.
    """
    n_corners = cell_type(mesh.type_info.facet_type).n_corners
    local = np.asarray(mesh.type_info.local_facets)[:, :n_corners]
    keys = np.sort(mesh.cells[:, local].reshape(-1, n_corners), axis=1)
    owners = np.repeat(np.arange(mesh.n_cells), local.shape[0])
    order = np.lexsort(keys.T[::-1])
    keys, owners = keys[order], owners[order]
    same = np.flatnonzero(np.all(keys[1:] == keys[:-1], axis=1))  # a facet and the next
    first, second = owners[same], owners[same + 1]
    graph = sp.coo_matrix((np.ones(2 * len(same)), (np.concatenate([first, second]),
                                                     np.concatenate([second, first]))),
                          shape=(mesh.n_cells, mesh.n_cells)).tocsr()
    graph.data[:] = 1.0
    return graph


def cell_ranks(mesh: Mesh, size: int) -> np.ndarray:
    """The rank of every cell of ``mesh`` split among ``size`` MPI ranks.

    Parameters
    ----------
    mesh : Mesh
        The whole mesh, the same on every rank.
    size : int
        Number of ranks (of this launch, when more than one).

    Returns
    -------
    numpy.ndarray
        ``(n_cells,)`` int64 in ``0 .. size - 1``, the same on every rank: zeros for one
        rank; DMDA blocks of the lattice for quad4/hex8 cells on a lattice
        (:func:`~fesens.mesh.structured.lattice_of`); else a partition of the cell graph
        (:func:`cell_adjacency`).

    Raises
    ------
    MPIError
        ``size`` below 1 or above the number of cells (a rank would hold none).
    """
    if size < 1 or size > mesh.n_cells:
        raise MPIError(f"cannot split {mesh.n_cells} cells among {size} MPI ranks: every rank "
                       f"needs at least one cell; run with mpirun -n {mesh.n_cells} or fewer")
    if size == 1:
        return np.zeros(mesh.n_cells, dtype=np.int64)
    lattice = lattice_of(mesh) if mesh.cell_type in ("quad4", "hex8") else None
    if lattice is not None:
        ranges = dmda_ranges(tuple(n - 1 for n in lattice.shape))
        blocks = int(np.prod([len(counts) for counts in ranges]))
        if blocks != size:
            raise MPIError(f"cell_ranks(size={size}) splits among the ranks of this launch, "
                           f"which PETSc's DMDA splits into {blocks}: pass size={blocks}")
        ranks = lattice_cell_ranks(mesh, lattice, ranges)
    else:
        ranks = graph_ranks(cell_adjacency(mesh), size)
    if ranks.max() >= size or np.bincount(ranks, minlength=size).min() == 0:
        raise MPIError(f"the partition of {mesh.n_cells} cells left a rank without cells "
                       f"(cells per rank {np.bincount(ranks).tolist()}): run with fewer ranks")
    return ranks

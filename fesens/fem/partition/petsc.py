"""PETSc's ways to split a mesh's cells among the MPI ranks (petsc4py, like
:mod:`fesens.solvers.petsc`, imported only when called on several ranks).

:func:`dmda_ranges` asks a PETSc DMDA how it splits a structured lattice of cells into
blocks (one per rank); :func:`graph_ranks` partitions the graph of an unstructured mesh's
cells with PETSc's ``MatPartitioning`` (PT-Scotch when PETSc was built with it). Both run on
``PETSc.COMM_WORLD`` and give every rank the same answer; on one rank they need no PETSc.
The mesh side (which cells form the lattice, the cell graph) is
:mod:`fesens.fem.partition.cells`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fesens.mpi import MPIError, collective, world
from fesens.solvers.petsc import import_petsc


def dmda_ranges(cells_per_axis) -> list[np.ndarray]:
    """Cells per process along each axis of a PETSc DMDA of ``cells_per_axis`` cells.

    Parameters
    ----------
    cells_per_axis : sequence of int
        Lattice cells along each axis, ``(nx, ny[, nz])``.

    Returns
    -------
    list of numpy.ndarray
        Per axis, the cells each process owns along it (``DMDA.getOwnershipRanges()``; the
        process grid is ``P = prod(len(r) for r in ranges)`` ranks, x fastest); the same on
        every rank. One rank: ``[array([nx]), array([ny]), ...]``.
    """
    sizes = tuple(int(n) for n in cells_per_axis)
    if not world().distributed:
        return [np.array([n], dtype=np.int64) for n in sizes]
    PETSc = import_petsc()
    da = PETSc.DMDA().create(dim=len(sizes), sizes=sizes, dof=1, stencil_width=0,
                             comm=PETSc.COMM_WORLD)
    try:
        return [np.asarray(r, dtype=np.int64) for r in da.getOwnershipRanges()]
    finally:
        da.destroy()


def graph_ranks(adjacency: sp.spmatrix, size: int) -> np.ndarray:
    """A partition of a graph's vertices (a mesh's cells) among the ``size`` ranks.

    Each rank hands PETSc a contiguous block of rows of ``adjacency`` (its diagonal is
    ignored); ``MatPartitioning`` of type PT-Scotch (when PETSc has it, else ``average``,
    which splits by row blocks only) gives each row's new rank, gathered on every rank.

    Parameters
    ----------
    adjacency : scipy.sparse matrix
        Symmetric ``(n, n)``: non-zero where two cells are neighbours; the same on every
        rank.
    size : int
        Number of parts: the number of ranks of this launch.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64, the rank of every vertex; zeros when ``size`` is 1.

    Raises
    ------
    MPIError
        ``size`` other than the number of ranks of this launch.
    """
    n = adjacency.shape[0]
    ranks = world()
    if size == 1 and not ranks.distributed:
        return np.zeros(n, dtype=np.int64)
    if size != ranks.size:
        raise MPIError(f"graph_ranks partitions among the ranks of this launch ({ranks.size}), "
                       f"asked for {size} parts: pass size={ranks.size}")
    PETSc = import_petsc()
    start, stop = n * ranks.rank // size, n * (ranks.rank + 1) // size
    block = sp.coo_matrix(sp.csr_matrix(adjacency)[start:stop])
    off_diagonal = (block.row + start != block.col) & (block.data != 0)
    rows = sp.csr_matrix((np.ones(int(off_diagonal.sum())), (block.row[off_diagonal],
                                                              block.col[off_diagonal])),
                         shape=block.shape)
    rows.sort_indices()
    graph = PETSc.Mat().createAIJ(size=((stop - start, n), (stop - start, n)),
                                  csr=(rows.indptr.astype(PETSc.IntType),
                                       rows.indices.astype(PETSc.IntType),
                                       np.ones(rows.nnz, dtype=PETSc.ScalarType)),
                                  comm=PETSc.COMM_WORLD)
    partitioning = PETSc.MatPartitioning().create(comm=PETSc.COMM_WORLD)
    try:
        partitioning.setAdjacency(graph)
        partitioning.setType("ptscotch" if PETSc.Sys.hasExternalPackage("ptscotch")
                             else "average")
        partitioning.setFromOptions()
        new_ranks = PETSc.IS()
        partitioning.apply(new_ranks)
        local = np.asarray(new_ranks.getIndices(), dtype=np.int64).copy()
        new_ranks.destroy()
    finally:
        partitioning.destroy()
        graph.destroy()
    return np.asarray(collective().allgather(local), dtype=np.int64)

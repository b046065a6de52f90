"""A square linear map whose rows are split over the MPI ranks (a PETSc MPIAIJ matrix).

Each rank gives the rows it owns, as CSR with *global* column ids in the rank-ordered
numbering: rank ``r`` owns the contiguous range ``start_r .. start_r + n_r - 1`` of both
the rows and the columns (``n_r`` = ``column_layout[r]``). :meth:`DistributedOperator.apply`
is ``y_local = (A x)_local`` (PETSc's ``MatMult``, which fetches the other ranks' entries of
``x`` that the local rows need) and :meth:`DistributedOperator.apply_transpose` is
``x_local = (Aᵀ y)_local`` (``MatMultTranspose``, which sends the contributions to other
ranks' columns back to them). Both are collective: every rank calls them in the same order.

With one rank (``column_layout`` of length 1) the map is a scipy matrix and PETSc is never
imported. petsc4py is imported inside functions, through
:func:`fesens.solvers.petsc.import_petsc`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fesens.errors import SolverError


class DistributedOperator:
    """``y = A x`` with this rank's rows of a square matrix split over the ranks.

    Parameters
    ----------
    rows : scipy.sparse.csr_matrix
        ``(n_local, N)``: this rank's rows, global (rank-ordered) column ids.
    column_layout : array_like of int
        ``(size,)`` rows (= columns) owned by each rank, in rank order; ``N`` is its sum and
        this rank's count must be ``n_local``. Length 1: a serial map (scipy, no PETSc).

    Raises
    ------
    SolverError
        If the shapes do not match the layout, or the layout has another number of ranks
        than PETSc's ``COMM_WORLD``.
    """

    def __init__(self, rows: sp.csr_matrix, column_layout) -> None:
        counts = np.asarray(column_layout, dtype=np.int64).ravel()
        rows = sp.csr_matrix(rows, dtype=float)
        n_global = int(counts.sum())
        if rows.shape[1] != n_global:
            raise SolverError(
                f"the operator's rows have {rows.shape[1]} columns but the column layout "
                f"{counts.tolist()} adds up to {n_global}: give global column ids")
        self.n_global = n_global
        self.n_local = rows.shape[0]
        if len(counts) == 1:
            if rows.shape[0] != n_global:
                raise SolverError(f"a serial operator must be square, got {rows.shape}")
            self._matrix, self._transpose = rows, rows.T.tocsr()
            self._mat = None
            return
        self._matrix = None
        self._mat, self._x, self._y = _petsc_matrix(rows, counts)

    def apply(self, x_local: np.ndarray) -> np.ndarray:
        """``(A x)`` on this rank's rows, ``(n_local,)``, for this rank's part of ``x``
        ``(n_local,)`` (collective)."""
        if self._mat is None:
            return self._matrix @ np.asarray(x_local, dtype=float)
        return self._multiply(self._mat.mult, self._x, self._y, x_local)

    def apply_transpose(self, y_local: np.ndarray) -> np.ndarray:
        """``(Aᵀ y)`` on this rank's columns, ``(n_local,)``, for this rank's part of ``y``
        ``(n_local,)`` (collective)."""
        if self._mat is None:
            return self._transpose @ np.asarray(y_local, dtype=float)
        return self._multiply(self._mat.multTranspose, self._y, self._x, y_local)

    def _multiply(self, operation, source, target, values) -> np.ndarray:
        values = np.asarray(values, dtype=float)
        if values.shape != (self.n_local,):
            raise SolverError(f"the operator takes this rank's {self.n_local} values, got an "
                              f"array of shape {values.shape}")
        source.setArray(values)
        operation(source, target)
        return target.getArray().copy()


def _petsc_matrix(rows: sp.csr_matrix, counts: np.ndarray):
    """The MPIAIJ matrix of ``rows`` on ``COMM_WORLD`` and its two work vectors (the
    column-layout one, the row-layout one; equal layouts: the map is square)."""
    from fesens.solvers.petsc import import_petsc

    PETSc = import_petsc()
    comm = PETSc.COMM_WORLD
    rank, size = comm.getRank(), comm.getSize()
    if size != len(counts):
        raise SolverError(f"the column layout has {len(counts)} ranks but PETSc's COMM_WORLD "
                          f"has {size}: build the operator under the same mpirun")
    if rows.shape[0] != counts[rank]:
        raise SolverError(f"rank {rank} gives {rows.shape[0]} rows but the layout says it "
                          f"owns {counts[rank]}")
    rows.sort_indices()
    n_local, n_global = int(counts[rank]), int(counts.sum())
    mat = PETSc.Mat().createAIJ(
        size=((n_local, n_global), (n_local, n_global)),
        csr=(rows.indptr.astype(PETSc.IntType), rows.indices.astype(PETSc.IntType),
             rows.data.astype(PETSc.ScalarType)), comm=comm)
    mat.assemble()
    x, y = mat.createVecs()
    return mat, x, y

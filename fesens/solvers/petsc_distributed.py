"""One linear system whose matrix is the sum of the ranks' local matrices (a distributed
model: each rank assembles its own cells).

Every rank of a distributed model holds the stiffness matrix of its cells only, ``K_r``,
over its local free dofs; the global matrix is ``K = Σ_r P_rᵀ K_r P_r`` (``P_r`` picks the
rank's dofs out of the global ones) and the global load ``f = Σ_r P_rᵀ f_r``. A
:class:`DofLayout` says where each local row sits: a global id of the dof, unique across the
ranks, and whether this rank owns it (each global dof has exactly one owner, which keeps its
row of PETSc's matrix).

:class:`DistributedSystem` builds PETSc's matrix from the local ones (each rank adds its
entries, those of rows other ranks own included; PETSc sends them), and maps vectors both
ways: a local right-hand side is added into the global vector, a global solution is
scattered back to every rank's local dofs (shared dofs get the same value on each rank).
The solve the backends do is therefore ``u_r = P_r K⁻¹ Σ_s P_sᵀ b_s``: a symmetric map of
the local vectors when ``K`` is symmetric, so the sparse solve primitive's adjoint rule
(``λ`` from the same map, ``K̄_r = −λ_r u_rᵀ`` on the local pattern) holds unchanged.

petsc4py is imported when a system is built (under ``mpirun``; ``make petsc``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from fesens.errors import SolverError
from fesens.mpi import collective


@dataclass(frozen=True)
class DofLayout:
    """Where the rows of a rank's local matrix sit among the global dofs.

    Attributes
    ----------
    ids : numpy.ndarray
        ``(n_local,)`` int64: a global id of each local row's dof, the same on every rank
        that holds the dof (e.g. ``node * n_components + component`` in a numbering of all
        nodes).
    owned : numpy.ndarray
        ``(n_local,)`` bool: this rank owns the dof (exactly one rank owns each).
    """

    ids: np.ndarray
    owned: np.ndarray

    def __post_init__(self) -> None:
        if self.ids.shape != self.owned.shape or self.ids.ndim != 1:
            raise ValueError(f"a DofLayout needs ids and owned of one shape (n_local,), got "
                             f"{self.ids.shape} and {self.owned.shape}")


class DistributedSystem:
    """PETSc's distributed matrix and vectors of a :class:`DofLayout` on ``COMM_WORLD``.

    Parameters
    ----------
    PETSc : module
        ``petsc4py.PETSc``.
    layout : DofLayout

    Raises
    ------
    SolverError
        A rank holds a dof that its owner does not count as a free dof (the ranks disagree
        on the Dirichlet conditions).
    """

    def __init__(self, PETSc: Any, layout: DofLayout) -> None:
        self.PETSc = PETSc
        self.comm = PETSc.COMM_WORLD
        self.layout = layout
        n_owned = int(np.count_nonzero(layout.owned))
        counts = collective().allgather(np.array([n_owned], dtype=np.int64))
        #: Where each rank's rows start, and the global size last, ``(size + 1,)``.
        self.starts = np.concatenate([[0], np.cumsum(counts)])
        self.start = int(self.starts[self.comm.getRank()])
        self.n_owned, self.n_global = n_owned, int(self.starts[-1])
        ordering = PETSc.AO().createMapping(
            np.ascontiguousarray(layout.ids[layout.owned], dtype=PETSc.IntType),
            np.arange(self.start, self.start + n_owned, dtype=PETSc.IntType), comm=self.comm)
        rows = ordering.app2petsc(np.ascontiguousarray(layout.ids, dtype=PETSc.IntType))
        ordering.destroy()
        if np.any(rows < 0):
            raise SolverError(
                f"rank {self.comm.getRank()} holds {int(np.count_nonzero(rows < 0))} free dofs "
                "that no rank owns as free: the ranks disagree on the Dirichlet conditions")
        #: The global row of each local dof, ``(n_local,)`` in PETSc's integer type.
        self.rows = rows
        self.matrix = None
        self._scatter = None

    # ------------------------------------------------------------ matrix
    def assemble(self, A: sp.csr_matrix | sp.csc_matrix) -> Any:
        """PETSc's matrix ``Σ_r P_rᵀ A_r P_r`` from this rank's ``A`` ``(n_local, n_local)``;
        the first call preallocates, later ones (the same pattern) refill the values."""
        PETSc = self.PETSc
        A = sp.csr_matrix(A)
        indptr = A.indptr.astype(PETSc.IntType)
        columns = self.rows[A.indices]
        if self.matrix is None:
            self.matrix = self._preallocated(A, columns)
        else:
            self.matrix.zeroEntries()
        self.matrix.setValuesIJV(indptr, columns, A.data, addv=PETSc.InsertMode.ADD_VALUES,
                                 rowmap=self.rows)
        self.matrix.assemble()
        return self.matrix

    def _preallocated(self, A: sp.csr_matrix, columns: np.ndarray) -> Any:
        """An empty matrix preallocated with, per owned row, the summed counts of the ranks'
        entries in its diagonal and off-diagonal blocks (an upper bound of the union)."""
        PETSc = self.PETSc
        row_of = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
        # the diagonal block of a row is its owner's range of columns
        starts = self.starts
        owner = np.searchsorted(starts, self.rows[row_of], side="right") - 1
        inside = (columns >= starts[owner]) & (columns < starts[owner + 1])
        counts = [np.bincount(row_of[mask], minlength=A.shape[0]).astype(float)
                  for mask in (inside, ~inside)]
        diagonal, off = (self._added(count) for count in counts)
        diagonal = np.minimum(diagonal, self.n_owned)
        off = np.minimum(off, self.n_global - self.n_owned)
        matrix = PETSc.Mat().createAIJ(
            size=((self.n_owned, self.n_global), (self.n_owned, self.n_global)),
            nnz=(diagonal.astype(PETSc.IntType), off.astype(PETSc.IntType)), comm=self.comm)
        matrix.setOption(PETSc.Mat.Option.NEW_NONZERO_ALLOCATION_ERR, True)
        return matrix

    def _added(self, values: np.ndarray) -> np.ndarray:
        """``Σ_r P_rᵀ values_r`` on this rank's owned rows, ``(n_owned,)``."""
        vector = self.vector(values)
        result = vector.getArray().copy()
        vector.destroy()
        return result.round()

    # ------------------------------------------------------------ vectors
    def vector(self, values: np.ndarray) -> Any:
        """A new global vector ``Σ_r P_rᵀ values_r`` (the ranks' local ``(n_local,)``
        values added)."""
        PETSc = self.PETSc
        vector = PETSc.Vec().createMPI((self.n_owned, self.n_global), comm=self.comm)
        vector.zeroEntries()
        vector.setValues(self.rows, np.ascontiguousarray(values, dtype=float),
                         addv=PETSc.InsertMode.ADD_VALUES)
        vector.assemble()
        return vector

    def owned_vector(self, values: np.ndarray) -> Any:
        """A new global vector holding ``values`` ``(n_local,)`` at this rank's rows (each
        rank sets the rows it owns; the ranks' values must agree where they share a dof)."""
        PETSc = self.PETSc
        vector = PETSc.Vec().createMPI((self.n_owned, self.n_global), comm=self.comm)
        owned = self.layout.owned
        vector.setValues(self.rows[owned], np.ascontiguousarray(values[owned], dtype=float),
                         addv=PETSc.InsertMode.INSERT_VALUES)
        vector.assemble()
        return vector

    def local(self, vector: Any) -> np.ndarray:
        """``P_r x``: this rank's local values of a global vector, ``(n_local,)``."""
        PETSc = self.PETSc
        if self._scatter is None:
            target = PETSc.Vec().createSeq(len(self.rows), comm=PETSc.COMM_SELF)
            index = PETSc.IS().createGeneral(self.rows, comm=PETSc.COMM_SELF)
            self._scatter = (PETSc.Scatter().create(vector, index, target, None), target)
        scatter, target = self._scatter
        scatter.scatter(vector, target, addv=PETSc.InsertMode.INSERT,
                        mode=PETSc.ScatterMode.FORWARD)
        return target.getArray().copy()

    def mean_abs_diagonal(self) -> float:
        """The mean ``|K_ii|`` over the global matrix."""
        diagonal = self.matrix.getDiagonal()
        value = diagonal.norm(self.PETSc.NormType.NORM_1) / max(self.n_global, 1)
        diagonal.destroy()
        return float(value)

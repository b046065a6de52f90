"""Sparse assembly over a cached pattern (DESIGN.md rule 1).

Every operator fesens assembles is linear in a few per-cell coefficient fields:

    K = Σ_k Σ_e c_(k,e) P_eᵀ K⁽ᵏ⁾_e P_e

(elasticity: ``k ∈ {λ, μ}``; conduction: ``k ∈ {κ}``). The CSR pattern of each block of
``K`` (free–free, and free–constrained for the Dirichlet lift) and, for every component,
a *gather matrix* ``G_k`` with ``data(K) = Σ_k G_k c_k`` are built once per mesh and
set of Dirichlet dofs. Re-assembly for new coefficients is then ``len(components)``
sparse mat-vecs: no COO→CSR conversion, no sorting, no Python loop over cells.

The same gather matrices give the assembler's adjoint: for a cotangent ``K̄`` held on the
pattern (``data`` vector), ``c̄_k = G_kᵀ data(K̄)`` (DESIGN.md adjoint rule for assemble).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from fesens.errors import NonFiniteError


class BlockPattern:
    """CSR pattern of the block ``K[rows, cols]`` and the map from cell-matrix entries.

    Parameters
    ----------
    cell_dofs : numpy.ndarray
        ``(n_cells, n_cell_dofs)`` global dofs of each cell.
    row_index, col_index : numpy.ndarray
        ``(n_dofs,)`` position of each global dof among the block's rows (columns), -1
        where the dof is not part of the block.
    """

    def __init__(self, cell_dofs: np.ndarray, row_index: np.ndarray, col_index: np.ndarray):
        n_cells, nd = cell_dofs.shape
        self.shape = (int(row_index.max()) + 1, int(col_index.max()) + 1)
        rows = np.broadcast_to(row_index[cell_dofs][:, :, None], (n_cells, nd, nd)).ravel()
        cols = np.broadcast_to(col_index[cell_dofs][:, None, :], (n_cells, nd, nd)).ravel()
        kept = np.flatnonzero((rows >= 0) & (cols >= 0))
        key = rows[kept] * np.int64(max(self.shape[1], 1)) + cols[kept]
        order = np.argsort(key, kind="stable")
        key = key[order]
        # Entry i of the sorted list lands in data slot target[i].
        new_slot = np.empty(key.size, dtype=bool)
        new_slot[:1] = True
        np.not_equal(key[1:], key[:-1], out=new_slot[1:])
        slot_keys = key[new_slot]
        target = np.cumsum(new_slot) - 1
        self.nnz = slot_keys.size
        self.indices = (slot_keys % max(self.shape[1], 1)).astype(np.int32)
        slot_rows = slot_keys // max(self.shape[1], 1)
        self.indptr = np.zeros(self.shape[0] + 1, dtype=np.int32)
        np.cumsum(np.bincount(slot_rows, minlength=self.shape[0]), out=self.indptr[1:])
        flat = kept[order]  # position of each sorted entry in the (n_cells, nd, nd) array
        self._entry_cell = flat // (nd * nd)
        self._entry_local = flat % (nd * nd)
        # Gather matrices (nnz x n_cells) in CSR: row = data slot, column = cell.
        index_type = np.int32 if key.size < 2**31 else np.int64
        self._gather_indptr = np.zeros(self.nnz + 1, dtype=index_type)
        np.cumsum(np.bincount(target, minlength=self.nnz), out=self._gather_indptr[1:])
        self._gather_indices = self._entry_cell.astype(index_type)
        self._n_cells = n_cells

    def gather_matrix(self, cell_matrices: np.ndarray) -> sp.csr_matrix:
        """``G`` with ``data(Σ_e c_e P_eᵀ K_e P_e) = G c``.

        Parameters
        ----------
        cell_matrices : numpy.ndarray
            ``(n_cells, nd, nd)``, or ``(1, nd, nd)`` when all cells share one matrix.
        """
        flat = cell_matrices.reshape(cell_matrices.shape[0], -1)
        geom = self._entry_cell if flat.shape[0] > 1 else 0
        values = flat[geom, self._entry_local]
        return sp.csr_matrix(
            (values, self._gather_indices, self._gather_indptr),
            shape=(self.nnz, self._n_cells),
        )

    def matrix(self, data: np.ndarray) -> sp.csr_matrix:
        """A CSR matrix on this pattern with the given ``data`` (shares the index arrays)."""
        return sp.csr_matrix((data, self.indices, self.indptr), shape=self.shape)

    def rows_cols(self) -> tuple[np.ndarray, np.ndarray]:
        """Row and column of every stored entry, each ``(nnz,)``."""
        rows = np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(self.indptr))
        return rows, self.indices.astype(np.int64)


class Assembler:
    """Cached-pattern assembler of ``K = Σ_k Σ_e c_(k,e) P_eᵀ K⁽ᵏ⁾_e P_e``.

    Parameters
    ----------
    cell_dofs : numpy.ndarray
        ``(n_cells, n_cell_dofs)`` global dofs per cell.
    n_dofs : int
    constrained : numpy.ndarray
        Sorted global ids of the Dirichlet dofs (may be empty).
    components : sequence of numpy.ndarray
        Cell matrices ``K⁽ᵏ⁾``, each ``(n_cells, nd, nd)`` or ``(1, nd, nd)`` (shared).

    Attributes
    ----------
    free, constrained : numpy.ndarray
        Global ids of the free and the constrained dofs.
    ff, fc : BlockPattern
        Patterns of the free–free block and of the free–constrained coupling block.
    """

    def __init__(
        self,
        cell_dofs: np.ndarray,
        n_dofs: int,
        constrained: np.ndarray,
        components: Sequence[np.ndarray],
    ):
        self.cell_dofs = cell_dofs
        self.n_dofs = n_dofs
        self.components = list(components)
        is_constrained = np.zeros(n_dofs, dtype=bool)
        is_constrained[constrained] = True
        self.free = np.flatnonzero(~is_constrained)
        self.constrained = np.flatnonzero(is_constrained)
        free_index = np.full(n_dofs, -1, dtype=np.int64)
        free_index[self.free] = np.arange(self.free.size)
        self.ff = BlockPattern(cell_dofs, free_index, free_index)
        self._gather_ff = [self.ff.gather_matrix(Kk) for Kk in self.components]
        self.fc = None
        self._gather_fc = []
        if self.constrained.size:
            constrained_index = np.full(n_dofs, -1, dtype=np.int64)
            constrained_index[self.constrained] = np.arange(self.constrained.size)
            self.fc = BlockPattern(cell_dofs, free_index, constrained_index)
            self._gather_fc = [self.fc.gather_matrix(Kk) for Kk in self.components]

    @property
    def n_cells(self) -> int:
        return self.cell_dofs.shape[0]

    def _check(self, coefficients: Sequence[np.ndarray]) -> list[np.ndarray]:
        if len(coefficients) != len(self.components):
            raise ValueError(
                f"expected {len(self.components)} coefficient fields, got {len(coefficients)}"
            )
        out = []
        for k, c in enumerate(coefficients):
            c = np.broadcast_to(np.asarray(c, dtype=float), (self.n_cells,))
            if not np.all(np.isfinite(c)):
                raise NonFiniteError(f"coefficient field {k} contains NaN or infinity")
            out.append(c)
        return out

    def stiffness_data(self, coefficients: Sequence[np.ndarray]) -> np.ndarray:
        """CSR ``data`` of the free–free block, ``(ff.nnz,)``: ``Σ_k G_k c_k``."""
        coefficients = self._check(coefficients)
        data = self._gather_ff[0] @ coefficients[0]
        for G, c in zip(self._gather_ff[1:], coefficients[1:], strict=True):
            data += G @ c
        return data

    def stiffness(self, coefficients: Sequence[np.ndarray]) -> sp.csr_matrix:
        """The free–free block ``K_ff``, ``(n_free, n_free)`` CSR."""
        return self.ff.matrix(self.stiffness_data(coefficients))

    def coupling(self, coefficients: Sequence[np.ndarray]) -> sp.csr_matrix | None:
        """The free–constrained block ``K_fc``, ``(n_free, n_constrained)``, or None."""
        if self.fc is None:
            return None
        coefficients = self._check(coefficients)
        data = sum(G @ c for G, c in zip(self._gather_fc, coefficients, strict=True))
        return self.fc.matrix(data)

    def gather_matrices(self, block: str = "ff") -> list[sp.csr_matrix]:
        """The gather matrices ``G_k`` of a block (``"ff"`` or ``"fc"``): ``data = Σ_k G_k c_k``.

        Each is ``(nnz, n_cells)`` CSR.
        """
        return self._gather_ff if block == "ff" else self._gather_fc

    def coefficient_cotangent(self, data_bar: np.ndarray, block: str = "ff") -> list[np.ndarray]:
        """Adjoint of assembly: ``c̄_k = G_kᵀ data(K̄)`` for a cotangent on a block's pattern.

        Parameters
        ----------
        data_bar : numpy.ndarray
            ``(nnz,)`` cotangent of the block's CSR data.
        block : {"ff", "fc"}
        """
        gathers = self._gather_ff if block == "ff" else self._gather_fc
        return [G.T @ data_bar for G in gathers]

    def cell_energies(self, u: np.ndarray, v: np.ndarray | None = None) -> np.ndarray:
        """``u_eᵀ K⁽ᵏ⁾_e v_e`` for every component and cell, ``(n_components, n_cells)``.

        ``u`` and ``v`` are global dof vectors ``(n_dofs,)``; ``v`` defaults to ``u``.
        """
        ue = u[self.cell_dofs]
        ve = ue if v is None else v[self.cell_dofs]
        return np.stack([self._bilinear(Kk, ue, ve) for Kk in self.components])

    @staticmethod
    def _bilinear(Kk: np.ndarray, ue: np.ndarray, ve: np.ndarray) -> np.ndarray:
        if Kk.shape[0] == 1:
            return np.einsum("ei,ei->e", ue @ Kk[0].T, ve)
        return np.einsum("ei,eij,ej->e", ue, Kk, ve)

    def apply(self, coefficients: Sequence[np.ndarray], u: np.ndarray) -> np.ndarray:
        """Matrix-free product of the *full* matrix with a global vector: ``K u``, ``(n_dofs,)``.

        Used for residuals and reaction forces (which need the constrained rows too).
        """
        coefficients = self._check(coefficients)
        ue = u[self.cell_dofs]
        cell_forces = np.zeros_like(ue)
        for Kk, c in zip(self.components, coefficients, strict=True):
            local = ue @ Kk[0].T if Kk.shape[0] == 1 else np.einsum("eij,ej->ei", Kk, ue)
            cell_forces += c[:, None] * local
        return np.bincount(
            self.cell_dofs.ravel(), weights=cell_forces.ravel(), minlength=self.n_dofs
        )

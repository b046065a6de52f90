"""Sparse assembly over a cached pattern, built once per mesh and set of Dirichlet dofs.

Every operator fesens assembles is linear in a few per-cell coefficient fields:

    K = Σ_k Σ_e c_(k,e) P_eᵀ K⁽ᵏ⁾_e P_e

(elasticity: ``k ∈ {λ, μ}``; conduction: ``k ∈ {κ}``). The CSR pattern of each block of
``K`` (free–free, and free–constrained for the Dirichlet lift) and its *gather matrix*
``G = [G_0 | G_1 | …]`` with ``data(K) = Σ_k G_k c_k = G c`` are built once per mesh and
set of Dirichlet dofs. Re-assembly for new coefficients is then one sparse mat-vec: no
COO→CSR conversion, no sorting, no Python loop over cells.

The same gather matrix gives the assembler's adjoint: for a cotangent ``K̄`` held on the
pattern (``data`` vector), ``c̄ = Gᵀ data(K̄)``.

The pattern arrays are frozen (:mod:`fesens.readonly`): every matrix assembled on a
pattern shares them, and solvers recognise the pattern without comparing them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from fesens.errors import NonFiniteError
from fesens.readonly import freeze


def stack_fields(fields: Sequence[np.ndarray]) -> np.ndarray:
    """Per-cell fields ``c_k`` (each ``(n_cells,)``) in the column order of a gather matrix.

    Returns ``(n_cells · n_fields,)``: entry ``n_fields · e + k`` is ``c_k[e]``.
    """
    return np.stack(fields, axis=1).ravel()


def split_fields(stacked: np.ndarray, n_fields: int) -> list[np.ndarray]:
    """The inverse of :func:`stack_fields`: ``n_fields`` arrays ``(n_cells,)`` (views)."""
    return [stacked[k::n_fields] for k in range(n_fields)]


def index_type(largest: int) -> type:
    """``np.int32`` if indices up to ``largest`` fit in it, else ``np.int64``."""
    return np.int32 if largest < 2**31 - 1 else np.int64


class BlockGather:
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
        n_cols = max(self.shape[1], 1)
        cell_rows, cell_cols = row_index[cell_dofs], col_index[cell_dofs]  # (n_cells, nd)
        # Key row · n_cols + col of every entry (e, i, j) of the cell matrices, -1 outside
        # the block; the smallest integer type that holds it, to save memory.
        key_type = index_type(self.shape[0] * n_cols)
        key = (cell_rows.astype(key_type)[:, :, None] * key_type(n_cols)
               + cell_cols.astype(key_type)[:, None, :])
        key[(cell_rows < 0)[:, :, None] | (cell_cols < 0)[:, None, :]] = -1
        key = key.ravel()
        order = np.argsort(key, kind="stable")
        order = order[np.count_nonzero(key < 0):]  # the entries outside sort first
        key = key[order]
        # Position of each sorted entry in the (n_cells, nd, nd) array, in the smallest type.
        self._flat = order.astype(index_type(n_cells * nd * nd), copy=False)
        del order
        starts = np.empty(key.size, dtype=bool)
        starts[:1] = True
        np.not_equal(key[1:], key[:-1], out=starts[1:])
        first = np.flatnonzero(starts)
        slot_keys = key[first]
        del key, starts
        self.nnz = slot_keys.size
        self._entries_per_slot = np.diff(first, append=self._flat.size).astype(
            index_type(self._flat.size))
        self.indices = freeze((slot_keys % key_type(n_cols)).astype(np.int32))
        indptr = np.zeros(self.shape[0] + 1, dtype=np.int32)
        np.cumsum(np.bincount(slot_keys // key_type(n_cols), minlength=self.shape[0]),
                  out=indptr[1:])
        self.indptr = freeze(indptr)
        self._n_cells = n_cells
        self._entry_local_size = nd * nd

    def gather_matrix(self, components: Sequence[np.ndarray]) -> sp.csr_matrix:
        """``G`` with ``data(Σ_k Σ_e c_(k,e) P_eᵀ K⁽ᵏ⁾_e P_e) = G c``, ``c = stack_fields(c_k)``.

        ``G`` is ``(nnz, n_components · n_cells)`` CSR: row = data slot, column
        ``n_components · e + k`` = component ``k`` of cell ``e`` (the values a slot gathers
        from one cell are adjacent). Its index arrays are int32 where they fit.

        Parameters
        ----------
        components : sequence of numpy.ndarray
            Cell matrices ``K⁽ᵏ⁾``, each ``(n_cells, nd, nd)``, or ``(1, nd, nd)`` when all
            cells share one matrix.
        """
        n_comp = len(components)
        cells, local = np.divmod(self._flat, self._flat.dtype.type(self._entry_local_size))
        values = np.empty((self._flat.size, n_comp))
        for k, cell_matrices in enumerate(components):
            flat = cell_matrices.reshape(cell_matrices.shape[0], -1)
            values[:, k] = flat[cells if flat.shape[0] > 1 else 0, local]
        del local
        n_columns = n_comp * self._n_cells
        itype = index_type(max(values.size, n_columns))
        indptr = np.zeros(self.nnz + 1, dtype=itype)
        np.cumsum(self._entries_per_slot, out=indptr[1:])
        indptr *= n_comp
        if n_comp == 1:
            indices = cells.astype(itype, copy=False)
        else:
            indices = (cells.astype(itype)[:, None] * n_comp
                       + np.arange(n_comp, dtype=itype)).ravel()
        return sp.csr_matrix((values.ravel(), indices, indptr), shape=(self.nnz, n_columns))

    def entry_matrix(self) -> sp.csr_matrix:
        """``S`` with ``data = S vec(K_e)`` for cell matrices ``K_e`` ``(n_cells, nd, nd)``.

        ``(nnz, n_cells · nd²)`` CSR of ones: row = data slot, column = position of the
        entry in the C-ordered cell-matrix array.
        """
        indptr = np.zeros(self.nnz + 1, dtype=self._flat.dtype)
        np.cumsum(self._entries_per_slot, out=indptr[1:])
        return sp.csr_matrix((np.ones(self._flat.size), self._flat, indptr),
                             shape=(self.nnz, self._n_cells * self._entry_local_size))

    def matrix(self, data: np.ndarray) -> sp.csr_matrix:
        """A CSR matrix on this pattern with the given ``data`` (shares the index arrays)."""
        matrix = sp.csr_matrix((data, self.indices, self.indptr), shape=self.shape)
        matrix.has_canonical_format = True  # sorted, no duplicates: by construction
        return matrix

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
    ff, fc : BlockGather
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
        self.ff = BlockGather(cell_dofs, free_index, free_index)
        # Gather matrices are built on first use: a model whose coefficients are one field
        # times constant weights (SIMP) only ever needs the folded one.
        self._gathers: dict[str, sp.csr_matrix] = {}
        self._folded: dict[str, tuple] = {}  # block -> (weights, folded gather matrix)
        self.fc = None
        if self.constrained.size:
            constrained_index = np.full(n_dofs, -1, dtype=np.int64)
            constrained_index[self.constrained] = np.arange(self.constrained.size)
            self.fc = BlockGather(cell_dofs, free_index, constrained_index)

    @property
    def n_cells(self) -> int:
        return self.cell_dofs.shape[0]

    def _check(self, coefficients: Sequence[np.ndarray], expected: int) -> list[np.ndarray]:
        if len(coefficients) != expected:
            raise ValueError(f"expected {expected} coefficient fields, got {len(coefficients)}")
        out = []
        for k, c in enumerate(coefficients):
            c = np.broadcast_to(np.asarray(c, dtype=float), (self.n_cells,))
            if not np.all(np.isfinite(c)):
                raise NonFiniteError(f"coefficient field {k} contains NaN or infinity")
            out.append(c)
        return out

    def _data(self, block: str, coefficients: Sequence[np.ndarray], weights) -> np.ndarray:
        """A block's CSR ``data``: one gather (see :meth:`stiffness_data`)."""
        expected = len(self.components) if weights is None else 1
        return self.gather_matrix(block, weights) @ stack_fields(
            self._check(coefficients, expected))

    def stiffness_data(self, coefficients: Sequence[np.ndarray],
                       weights: Sequence[float] | None = None) -> np.ndarray:
        """CSR ``data`` of the free–free block, ``(ff.nnz,)``: ``Σ_k G_k c_k``.

        With ``weights``, ``coefficients`` is one field ``[s]`` standing for ``c_k = w_k s``:
        one gather of the folded component ``Σ_k w_k K⁽ᵏ⁾`` (see :meth:`gather_matrix`).
        """
        return self._data("ff", coefficients, weights)

    def stiffness(self, coefficients: Sequence[np.ndarray],
                  weights: Sequence[float] | None = None) -> sp.csr_matrix:
        """The free–free block ``K_ff``, ``(n_free, n_free)`` CSR (see :meth:`stiffness_data`)."""
        return self.ff.matrix(self.stiffness_data(coefficients, weights))

    def coupling(self, coefficients: Sequence[np.ndarray],
                 weights: Sequence[float] | None = None) -> sp.csr_matrix | None:
        """The free–constrained block ``K_fc``, ``(n_free, n_constrained)``, or None.

        ``weights``: see :meth:`stiffness_data`.
        """
        if self.fc is None:
            return None
        return self.fc.matrix(self._data("fc", coefficients, weights))

    def gather_matrix(self, block: str = "ff",
                      weights: Sequence[float] | None = None) -> sp.csr_matrix:
        """The gather matrix ``G`` of a block (``"ff"`` or ``"fc"``).

        ``data = G stack_fields(c)``; ``(nnz, n_components · n_cells)`` CSR (see
        :meth:`BlockGather.gather_matrix`). With ``weights``, the gather matrix of the
        folded component ``Σ_k w_k K⁽ᵏ⁾``, ``(nnz, n_cells)``: the last one is kept.
        """
        pattern = {"ff": self.ff, "fc": self.fc}[block]
        if pattern is None:
            raise ValueError(f"block {block!r} is empty: no constrained dofs")
        if weights is None:
            if block not in self._gathers:
                self._gathers[block] = pattern.gather_matrix(self.components)
            return self._gathers[block]
        weights = tuple(float(w) for w in weights)
        folded = self._folded.get(block)
        if folded is None or folded[0] != weights:
            combined = sum(w * Kk for w, Kk in zip(weights, self.components, strict=True))
            folded = self._folded[block] = (weights, pattern.gather_matrix([combined]))
        return folded[1]

    def coefficient_cotangent(self, data_bar: np.ndarray, block: str = "ff") -> list[np.ndarray]:
        """Adjoint of assembly: ``c̄_k = G_kᵀ data(K̄)`` for a cotangent on a block's pattern.

        Parameters
        ----------
        data_bar : numpy.ndarray
            ``(nnz,)`` cotangent of the block's CSR data.
        block : {"ff", "fc"}

        Returns
        -------
        list of numpy.ndarray
            ``c̄_k`` for every component, each ``(n_cells,)``.
        """
        return split_fields(self.gather_matrix(block).T @ data_bar, len(self.components))

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

    def apply(self, coefficients: Sequence[np.ndarray], u: np.ndarray,
              components: Sequence[np.ndarray] | None = None) -> np.ndarray:
        """Matrix-free product of the *full* matrix with a global vector: ``K u``, ``(n_dofs,)``.

        Used for residuals and reaction forces (which need the constrained rows too).
        ``components`` replaces the assembler's cell matrices (e.g. of moved nodes).
        """
        coefficients = self._check(coefficients, len(self.components))
        ue = u[self.cell_dofs]
        cell_forces = np.zeros_like(ue)
        for Kk, c in zip(components or self.components, coefficients, strict=True):
            local = ue @ Kk[0].T if Kk.shape[0] == 1 else np.einsum("eij,ej->ei", Kk, ue)
            cell_forces += c[:, None] * local
        return np.bincount(
            self.cell_dofs.ravel(), weights=cell_forces.ravel(), minlength=self.n_dofs
        )

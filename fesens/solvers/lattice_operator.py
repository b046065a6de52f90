"""The stiffness of a lattice of identical cells, applied without a global matrix.

On a lattice of congruent first-order cells (quad4 in 2D, hex8 in 3D, as ``rectangle()``
and ``box()`` make them) every cell matrix is one reference matrix ``K_ref`` times a
per-cell coefficient ``s_e`` (SIMP: ``s_e = E(ρ_e)``), so the free–free stiffness

    A = Σ_e s_e P_eᵀ K_ref P_e        (rows and columns of eliminated dofs dropped)

is applied as a batched cell operation: gather the cells' corner values from the
lattice array by slicing (the cell–dof map is implicit; lattice arrays are
component-major, so every slice is contiguous rows), one ``(m, m) @ (m, cells)`` product,
scale, scatter back by slicing. No sparse matrix and no gather map of one entry
per cell-matrix entry exists on the fine level (memory per cell: the coefficient and the
vectors). Work goes in slabs of cells along the slowest axis, so
temporaries stay small, and the slabs run on all cores (:mod:`fesens.solvers.parallel`:
slabs that add into shared lattice points in two colours, so that the result is the same
bit for bit for every thread count).

The first multigrid coarse level is the Galerkin operator ``Pᵀ A P`` of the linear
prolongation of :mod:`fesens.solvers.grid_hierarchy`, formed cell by cell: a fine cell
lies inside one coarse cell (2 per axis, or 1 for the last cell of an odd axis), and
its corner values interpolate from that coarse cell's corners only, ``u_e = R_e u_E``,
so ``Pᵀ A P = Σ_E G_Eᵀ (Σ_(e ⊂ E) s_e R_eᵀ D_e K_ref D_e R_e) G_E`` with ``D_e`` the
free-dof mask of cell ``e``: one ``(m·m, kinds) @ (kinds, coarse cells)`` product for the
coarse cell matrices, summed into the coarse lattice's 27-point stencil, from which the
level is applied by slicing (:class:`~fesens.solvers.lattice_coarse.StencilOperator`: no
column indices). Coarser levels are sparse Galerkin products as before, reading the first
coarse level's rows a band at a time.

Springs to the ground (``k_i`` on the diagonal of free dofs ``i``, design-independent) are
a term beside the cells: ``A x + k ⊙ x`` on the fine level, ``Pᵀ diag(k) P`` added to
the first coarse level (:meth:`Stencil.add_springs`), ``k`` on the diagonal that the
smoothers read.

Local numbering: corner ``c = i + 2 j + 4 k`` (x fastest) with components fastest, dof
``c · n_components + component``; cells and lattice points in lattice order, x fastest.
"""

from __future__ import annotations

import itertools
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from fesens.arrays import namespace
from fesens.errors import NonFiniteError
from fesens.solvers.device_lattice import coarser_level, finest_level
from fesens.solvers.grid_hierarchy import StructuredGrid, coarse_points
from fesens.solvers.lattice_coarse import (
    HALVES,
    LatticeProlongation,
    Stencil,
    StencilOperator,
    assembled,
    children,
    coarse_cell_ids,
)
from fesens.solvers.lattice_springs import checked_springs
from fesens.solvers.parallel import SlabPool

#: Cells per slab of a batched cell operation: temporaries of a few MB, and slabs enough
#: to balance two colours over the threads (96x48x48 cells: 48 slabs of one layer).
_SLAB_CELLS = 8_192
#: Free dofs per piece of a threaded copy between free-dof vectors and lattice arrays.
_PIECE = 65_536
#: Coarse cells per chunk of the first Galerkin level's cell matrices (hex8 elasticity:
#: 576 values per cell, 9 MB per chunk).
_GALERKIN_CELLS = 2_048


class LatticeStructure:
    """What stays fixed while the coefficients change: the lattice, its free dofs and
    the reference cell matrix.

    Parameters
    ----------
    grid : StructuredGrid
        The lattice points and the row of every free dof (-1: eliminated).
    element : numpy.ndarray
        ``(2**dim · n_components, 2**dim · n_components)`` symmetric reference cell
        matrix in the local numbering of the module docstring.
    threads : int, optional
        Threads of the kernels on numpy arrays (default: the usable cores, or
        ``FESENS_THREADS``); settable as :attr:`threads`. The results do not depend on it.
    springs : tuple of numpy.ndarray, optional
        ``(rows, k)``, both ``(n_springs,)``: springs to the ground, stiffness ``k > 0``
        added to the diagonal at the free-dof rows ``rows`` (distinct); None: none.
    """

    def __init__(self, grid: StructuredGrid, element: np.ndarray,
                 threads: int | None = None,
                 springs: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        dim, nc = len(grid.shape), grid.n_components
        m = 2**dim * nc
        element = np.asarray(element, dtype=float)
        if element.shape != (m, m):
            raise ValueError(f"LatticeStructure: the reference cell matrix must be ({m}, {m}) "
                             f"for {dim}D cells with {nc} components, got {element.shape}")
        if not np.all(np.isfinite(element)):
            raise NonFiniteError("LatticeStructure: the reference cell matrix holds NaN or "
                                 "infinity")
        if not np.allclose(element, element.T, rtol=1e-10, atol=1e-12 * np.abs(element).max()):
            raise ValueError("LatticeStructure: the reference cell matrix is not symmetric")
        self.grid, self.element = grid, 0.5 * (element + element.T)
        self.dim, self.n_components = dim, nc
        self.cells = tuple(n - 1 for n in grid.shape)  # per axis, x first
        self.n_cells = int(np.prod(self.cells))
        rows = np.asarray(grid.rows).ravel()
        free = rows >= 0
        self.n = int(np.count_nonzero(free))
        position_type = np.int32 if rows.size < 2**31 - 1 else np.int64
        # the lattice dof of each row, component-major (see expand)
        point, component = np.divmod(np.flatnonzero(free), nc)
        self.positions = np.empty(self.n, dtype=position_type)
        self.positions[rows[free]] = component * (rows.size // nc) + point
        layer_cells = int(np.prod(self.cells[:-1]))  # cells per layer of the slowest axis
        self._slab = max(1, _SLAB_CELLS // layer_cells)  # slow-axis cells per slab
        self._resident: dict[int, tuple] = {}
        self.pool = SlabPool(threads)
        self.springs = None if springs is None else checked_springs(springs, self.n)

    @property
    def threads(self) -> int:
        """Threads of the kernels on numpy arrays."""
        return self.pool.threads

    @threads.setter
    def threads(self, count: int | None) -> None:
        self.pool.threads = count

    def _on(self, xp) -> tuple:
        """The reference matrix and the free dofs' lattice positions as arrays of the
        module ``xp`` (copied there once: the kernels below run in their inputs' library)."""
        if xp is np:
            return self.element, self.positions
        if id(xp) not in self._resident:
            self._resident[id(xp)] = (xp.asarray(self.element), xp.asarray(self.positions))
        return self._resident[id(xp)]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.n)

    def operator(self, coefficients: np.ndarray) -> LatticeOperator:
        """The operator for per-cell coefficients ``(n_cells,)`` in lattice order."""
        return LatticeOperator(self, coefficients)

    # ------------------------------------------------------------ lattice arrays
    def expand(self, x: np.ndarray) -> np.ndarray:
        """A free-dof vector ``(n,)`` as the lattice array ``(nc, *reversed shape)``,
        component-major (zero at eliminated dofs): every corner slice is then a set of
        contiguous rows. In the library of ``x`` (:func:`fesens.arrays.namespace`)."""
        xp = namespace(x)
        full = xp.zeros(self.n_components * int(np.prod(self.grid.shape)), dtype=x.dtype)
        positions = self._on(xp)[1]
        if xp is np:  # disjoint pieces of the free dofs, on the pool's threads

            def piece(span: tuple[int, int]) -> None:
                full[positions[span[0]:span[1]]] = x[span[0]:span[1]]

            self.pool.map(piece, self._pieces)
        else:
            full[positions] = x
        return full.reshape(self.n_components, *self.grid.shape[::-1])

    def restrict(self, lattice: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The free-dof vector ``(n,)`` of a lattice array (written into ``out``, a numpy
        ``(n,)`` array that does not overlap ``lattice``, where given)."""
        xp = namespace(lattice)
        flat, positions = lattice.reshape(-1), self._on(xp)[1]
        if xp is not np:
            return flat[positions]
        out = np.empty(self.n, dtype=lattice.dtype) if out is None else out

        def piece(span: tuple[int, int]) -> None:
            out[span[0]:span[1]] = flat[positions[span[0]:span[1]]]

        self.pool.map(piece, self._pieces)
        return out

    @cached_property
    def _pieces(self) -> list[tuple[int, int]]:
        """Ranges of the free dofs that :meth:`expand` and :meth:`restrict` copy on one
        thread each (fixed by the lattice alone)."""
        return [(start, min(start + _PIECE, self.n)) for start in range(0, self.n, _PIECE)]

    def _run(self, xp, function, coloured: bool) -> None:
        """``function(slab)`` for every slab of :meth:`_slabs`: on the pool's threads for
        numpy arrays (``coloured``: slabs that add into shared lattice points, even ones
        first), else in one loop in the same order."""
        slabs = self._slabs()
        if xp is np:
            (self.pool.coloured if coloured else self.pool.map)(function, slabs)
            return
        for slab in (slabs[0::2] + slabs[1::2]) if coloured else slabs:
            function(slab)

    @cached_property
    def _slab_list(self) -> list:
        return list(self._slab_iter())

    def _slabs(self) -> list:
        """``(start, stop, corner slices)`` per slab: the slices of every corner's lattice
        points (all components) for the cells ``start:stop`` of the slowest axis."""
        return self._slab_list

    def _slab_iter(self):
        slow = self.cells[-1]
        for start in range(0, slow, self._slab):
            stop = min(start + self._slab, slow)
            spans = [(start, stop)] + [(0, n) for n in self.cells[::-1][1:]]
            corners = []
            for corner in range(2**self.dim):
                offset = [(corner >> axis) & 1 for axis in range(self.dim)][::-1]
                corners.append((slice(None),) + tuple(
                    slice(o + lo, o + hi) for o, (lo, hi) in zip(offset, spans, strict=True)))
            yield start, stop, corners

    def _gather(self, lattice: np.ndarray, corners: list) -> np.ndarray:
        """Corner values of a slab's cells, ``(m, slab cells)`` (row ``corner · nc +
        component``)."""
        nc = self.n_components
        size = lattice[corners[0]][0].size
        out = namespace(lattice).empty((len(corners) * nc, size), dtype=lattice.dtype)
        for corner, where in enumerate(corners):
            out[corner * nc:(corner + 1) * nc] = lattice[where].reshape(nc, size)
        return out

    def _scatter(self, lattice: np.ndarray, values: np.ndarray, corners: list) -> None:
        """Add a slab's cell vectors ``(m, slab cells)`` into the lattice array."""
        nc = self.n_components
        for corner, where in enumerate(corners):
            target = lattice[where]
            target += values[corner * nc:(corner + 1) * nc].reshape(target.shape)

    def _cell_slab(self, field: np.ndarray, start: int, stop: int) -> np.ndarray:
        """The per-cell values ``(n_cells,)`` of the slab, flat."""
        per_layer = self.n_cells // self.cells[-1]
        return field[start * per_layer: stop * per_layer]

    # ------------------------------------------------------------ cell operations
    def apply(self, coefficients: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``A x`` for ``x`` ``(n,)`` or ``(n, k)``, in the library of ``x`` and
        ``coefficients`` (:func:`fesens.arrays.namespace`)."""
        xp = namespace(coefficients, x)
        if x.ndim == 2:
            return xp.stack([self.apply(coefficients, x[:, j]) for j in range(x.shape[1])],
                            axis=1)
        element = self._on(xp)[0]
        source = self.expand(x)
        target = xp.zeros_like(source)

        def slab(item) -> None:
            start, stop, corners = item
            local = element @ self._gather(source, corners)
            local *= self._cell_slab(coefficients, start, stop)
            self._scatter(target, local, corners)

        self._run(xp, slab, coloured=True)
        if xp is not np:
            return self._add_springs(self.restrict(target), x, xp)
        # the result in the source's buffer, which nothing reads any more: one lattice
        # vector fewer at a time (25 MB at 160x80x80 cells)
        return self._add_springs(self.restrict(target, out=source.reshape(-1)[:self.n]),
                                 x, xp)

    def _add_springs(self, y: np.ndarray, x: np.ndarray | None, xp) -> np.ndarray:
        """``y + k ⊙ x`` on the spring rows (``k`` itself where ``x`` is None), in
        place; ``y`` unchanged without springs."""
        if self.springs is None:
            return y
        rows, k = self.springs
        if xp is not np:
            rows, k = xp.asarray(rows), xp.asarray(k)
        y[rows] += k if x is None else k * x[rows]
        return y

    def diagonal(self, coefficients: np.ndarray) -> np.ndarray:
        """The diagonal of ``A``, ``(n,)``, in the library of ``coefficients``."""
        xp = namespace(coefficients)
        target = self.expand(xp.zeros(self.n, dtype=coefficients.dtype))
        diagonal = xp.diagonal(self._on(xp)[0])[:, None]

        def slab(item) -> None:
            start, stop, corners = item
            self._scatter(target, diagonal * self._cell_slab(coefficients, start, stop),
                          corners)

        self._run(xp, slab, coloured=True)
        return self._add_springs(self.restrict(target), None, xp)

    def cell_bilinear(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``a_eᵀ K_ref b_e`` per cell ``(n_cells,)``, lattice order; ``a``, ``b`` ``(n,)``
        or ``(n, k)`` (summed over the ``k`` columns)."""
        if a.ndim == 2:
            return sum(self.cell_bilinear(a[:, j], b[:, j]) for j in range(a.shape[1]))
        xp = namespace(a, b)
        element = self._on(xp)[0]
        out = xp.empty(self.n_cells, dtype=a.dtype)
        first = self.expand(a)
        # a compliance's adjoint is its solution, one vector: one lattice array fewer
        # during its gradient (25 MB at 160x80x80 cells)
        second = first if b is a else self.expand(b)

        def slab(item) -> None:  # writes its own cells only
            start, stop, corners = item
            local = element @ self._gather(first, corners)
            self._cell_slab(out, start, stop)[...] = xp.einsum(
                "ie,ie->e", local, self._gather(second, corners))

        self._run(xp, slab, coloured=False)
        return out

    # ------------------------------------------------------------ assembled forms
    def _cell_rows(self, shape: tuple[int, ...], rows: np.ndarray) -> np.ndarray:
        """Rows of every cell's local dofs on the lattice of ``shape`` points, ``(cells,
        m)`` (-1 where eliminated); ``rows`` ``(points, nc)`` as in a StructuredGrid."""
        lattice = rows.reshape(*shape[::-1], self.n_components)
        cells = tuple(n - 1 for n in shape)
        out = np.empty((*cells[::-1], 2**self.dim, self.n_components), dtype=rows.dtype)
        for corner in range(2**self.dim):
            offset = [(corner >> axis) & 1 for axis in range(self.dim)][::-1]
            where = tuple(slice(o, o + n) for o, n in zip(offset, cells[::-1], strict=True))
            out[..., corner, :] = lattice[where]
        return out.reshape(-1, 2**self.dim * self.n_components)

    def matrix(self, coefficients: np.ndarray) -> sp.csr_matrix:
        """``A`` assembled, ``(n, n)`` CSR (for checks and a one-level hierarchy)."""
        rows = self._cell_rows(self.grid.shape, np.asarray(self.grid.rows))
        values = coefficients[:, None, None] * self.element[None]
        matrix = assembled(rows, values, self.n)
        if self.springs is None:
            return matrix
        spring_rows, k = self.springs
        return (matrix + sp.csr_matrix((k, (spring_rows, spring_rows)),
                                       shape=matrix.shape)).tocsr()

    @cached_property
    def _masked_cells(self) -> tuple[np.ndarray, np.ndarray]:
        """The cells with an eliminated dof (lattice order) and their free-dof masks
        ``(cells, m)``."""
        # the cells touching an eliminated dof by slicing the lattice: the rows of every
        # cell's dofs at once were 196 MB at 160x80x80 cells
        eliminated = np.any(np.asarray(self.grid.rows) < 0, axis=1).reshape(
            self.grid.shape[::-1])
        touched = np.zeros(self.cells[::-1], dtype=bool)
        for corner in range(2**self.dim):
            offset = [(corner >> axis) & 1 for axis in range(self.dim)][::-1]
            touched |= eliminated[tuple(slice(o, o + n) for o, n in
                                        zip(offset, self.cells[::-1], strict=True))]
        masked = np.flatnonzero(touched)
        lattice = np.asarray(self.grid.rows).reshape(*self.grid.shape[::-1],
                                                     self.n_components)
        index = np.unravel_index(masked, self.cells[::-1])
        masks = np.stack([lattice[tuple(i + o for i, o in zip(index, [
            (corner >> axis) & 1 for axis in range(self.dim)][::-1], strict=True))] >= 0
            for corner in range(2**self.dim)], axis=1)
        return masked, masks.reshape(masked.size, -1).astype(float)

    def galerkin(self, coefficients: np.ndarray) -> sp.csr_matrix:
        """:meth:`coarse_operator` assembled, ``(n_coarse, n_coarse)`` CSR (checks)."""
        return self.coarse_operator(coefficients).tocsr()

    def coarse_operator(self, coefficients: np.ndarray) -> StencilOperator:
        """``Pᵀ A P`` for the prolongation of the first coarsening (module docstring),
        rows in the order of the coarse level's free dofs (lattice order).

        Every coarse cell matrix is ``Σ_kinds s_child R_kindᵀ K_ref R_kind`` (one child of
        each kind at most): one matrix product over all coarse cells. They are summed
        into the coarse lattice's stencil (:class:`Stencil`), which the operator applies.
        """
        nc, m = self.n_components, self.element.shape[0]
        coarse_shape, coarse_free = self._coarse_lattice
        coarse_cells = tuple(n - 1 for n in coarse_shape)
        s = coefficients.reshape(self.cells[::-1])
        masked, masks = self._masked_cells
        coarse_of = coarse_cell_ids(self.cells)  # coarse cell of each fine cell
        kinds_list = list(itertools.product(*(children(n) for n in self.cells)))
        products = np.empty((m * m, len(kinds_list)))
        weights = np.zeros((len(kinds_list), *coarse_cells[::-1]))
        corrections = []
        for k, kinds in enumerate(kinds_list):
            R = np.ones((1, 1))
            for kind, _, _ in kinds:  # x first: kron(Rz, kron(Ry, Rx))
                R = np.kron(HALVES[kind], R)
            R = np.kron(R, np.eye(nc))
            plain = R.T @ self.element @ R
            products[:, k] = plain.ravel()
            where_fine = tuple(f for _, _, f in kinds)[::-1]
            weights[(k, *(c for _, c, _ in kinds[::-1]))] = s[where_fine]
            # cells with eliminated dofs: the masked product replaces the plain one
            of_kind = np.zeros(self.cells[::-1], dtype=bool)
            of_kind[where_fine] = True
            pick = of_kind.ravel()[masked]
            if np.any(pick):
                RD = masks[pick][:, :, None] * R[None]
                correction = np.matmul(RD.transpose(0, 2, 1), self.element @ RD) - plain
                corrections.append((coarse_of[masked[pick]],
                                    coefficients[masked[pick]][:, None, None] * correction))
        stencil = Stencil(coarse_shape, nc, self.pool)
        # the coarse cell matrices a few layers at a time: all of them at once, (m·m,
        # coarse cells), were 127 MB at 96x48x48 fine cells
        layer = int(np.prod(coarse_cells[:-1]))
        step = max(1, _GALERKIN_CELLS // layer)
        for start in range(0, coarse_cells[-1], step):
            chunk = weights[:, start:start + step]
            blocks = products @ chunk.reshape(len(kinds_list), -1)
            stencil.add_blocks(blocks.reshape(m, m, *chunk.shape[1:]), start)
        del weights, blocks
        for cell_ids, values in corrections:
            stencil.add_cell_blocks(cell_ids, values)
        if self.springs is not None:
            rows, k = self.springs
            # positions are component-major: component · points + point
            component, point = np.divmod(self.positions[rows].astype(np.int64),
                                         int(np.prod(self.grid.shape)))
            stencil.add_springs(self.grid.shape, point, component, k)
        return StencilOperator(stencil, coarse_free)

    @cached_property
    def prolongation(self) -> LatticeProlongation | None:
        """The first coarsening's prolongation applied by slicing (None when every coarse
        dof is eliminated)."""
        fine = finest_level(self.grid.shape, self._free_lattice(), self.element)
        coarse = coarser_level(fine)
        return None if coarse is None else LatticeProlongation(self, fine, coarse)

    def _free_lattice(self) -> np.ndarray:
        """The free dofs as a component-major lattice array of booleans."""
        free = (np.asarray(self.grid.rows) >= 0).reshape(*self.grid.shape[::-1], -1)
        return np.moveaxis(free, -1, 0)

    @cached_property
    def _coarse_lattice(self) -> tuple[tuple[int, ...], np.ndarray]:
        """The first coarse lattice's shape and its free dofs ``(points, nc)``."""
        nc = self.n_components
        coarse = [coarse_points(n) for n in self.grid.shape]
        coarse_free = (np.asarray(self.grid.rows) >= 0).reshape(
            *self.grid.shape[::-1], nc)[np.ix_(*coarse[::-1], np.arange(nc))].reshape(-1, nc)
        return tuple(c.size for c in coarse), coarse_free


class LatticeOperator:
    """``A`` of a :class:`LatticeStructure` for given coefficients: what the ``gmg``
    solver factorizes instead of a sparse matrix.

    Parameters
    ----------
    structure : LatticeStructure
    coefficients : numpy.ndarray
        ``(n_cells,)`` per-cell coefficients in lattice order, finite and positive.
    """

    def __init__(self, structure: LatticeStructure, coefficients: np.ndarray) -> None:
        coefficients = np.asarray(coefficients, dtype=float)
        if coefficients.shape != (structure.n_cells,):
            raise ValueError(f"LatticeOperator: coefficients must have shape "
                             f"({structure.n_cells},), got {coefficients.shape}")
        if not np.all(np.isfinite(coefficients)):
            raise NonFiniteError("LatticeOperator: the coefficients hold NaN or infinity")
        self.structure, self.coefficients = structure, coefficients
        self.grid = structure.grid

    @property
    def shape(self) -> tuple[int, int]:
        return self.structure.shape

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        return self.structure.apply(self.coefficients, np.asarray(x, dtype=float))

    def diagonal(self) -> np.ndarray:
        """The diagonal ``(n,)``."""
        return self.structure.diagonal(self.coefficients)

    def galerkin(self) -> sp.csr_matrix:
        """The first coarse level ``Pᵀ A P`` assembled (:meth:`LatticeStructure.galerkin`)."""
        return self.structure.galerkin(self.coefficients)

    def coarse_operator(self) -> StencilOperator:
        """The first coarse level ``Pᵀ A P`` (:meth:`LatticeStructure.coarse_operator`)."""
        return self.structure.coarse_operator(self.coefficients)

    def prolongation(self) -> LatticeProlongation | None:
        """The first coarsening's prolongation (:attr:`LatticeStructure.prolongation`)."""
        return self.structure.prolongation

    def tocsr(self) -> sp.csr_matrix:
        """``A`` assembled (checks, and a hierarchy of one level)."""
        return self.structure.matrix(self.coefficients)

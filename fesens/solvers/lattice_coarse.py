"""The pieces of a lattice's first multigrid coarse level, formed cell by cell
(:meth:`fesens.solvers.lattice_operator.LatticeStructure.galerkin`): the local interpolation
of a fine cell from its coarse cell (:data:`HALVES`, :func:`children`), the coarse cell of
every fine cell, and the coarse lattice's 27-point stencil (:class:`Stencil`): per
lattice point, one ``(nc, nc)`` block per direction. The level is applied from those
blocks (:class:`StencilOperator`), which are the blocks of a SciPy BSR matrix on the
lattice, a column index per block: its CSR form held 81 values and as many column
indices and stencil positions per row (109 MB against the stencil's 63 MB at 96x48x48
fine cells). The next Galerkin product reads its rows a band at a time
(:meth:`StencilOperator.galerkin`), in the CSR form's order, so the coarser levels are
the same bit for bit; :func:`assembled` sums cell matrices for checks. The first
coarsening's prolongation and restriction themselves are strided slices of the lattice
arrays (:class:`LatticeProlongation`).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Protocol

import numpy as np
import scipy.sparse as sp

from fesens.solvers.device_lattice import LatticeTransfer, LevelGeometry
from fesens.solvers.grid_hierarchy import coarse_points
from fesens.solvers.parallel import SlabPool

#: Lattice points per piece of a stencil product on the pool's threads: 16 MB of a 3D
#: elastic stencil's blocks, some 1 ms of work against a thread hand-off's 20 µs.
_STENCIL_POINTS = 8_192
#: Lattice points whose rows a Galerkin product reads at a time
#: (:meth:`StencilOperator.galerkin`): 47 MB of CSR rows of a 3D elastic stencil, about
#: two coarse layers of the next level at 160x80x80 fine cells (a coarse point's rows of
#: ``Pᵀ`` reach three fine layers, so a thinner band reads the rows more often).
BAND_POINTS = 16_384

#: Local interpolation from a coarse cell's two corners onto a fine cell's two corners,
#: per axis: the left or right half of a coarse interval, or all of it (odd axis end).
HALVES = {"left": np.array([[1.0, 0.0], [0.5, 0.5]]),
           "right": np.array([[0.5, 0.5], [0.0, 1.0]]),
           "whole": np.eye(2)}


def children(n_cells: int) -> list[tuple[str, slice, slice]]:
    """The fine cells of an axis of ``n_cells`` cells per kind of child: ``(kind, coarse
    cells, fine cells)`` (slices), ``kind`` a key of ``HALVES``."""
    pairs = n_cells // 2
    kinds = [("left", slice(0, pairs), slice(0, 2 * pairs, 2)),
             ("right", slice(0, pairs), slice(1, 2 * pairs, 2))]
    if n_cells % 2:
        kinds.append(("whole", slice(pairs, pairs + 1), slice(n_cells - 1, n_cells)))
    return [kind for kind in kinds if kind[1].stop > kind[1].start]


def assembled(rows: np.ndarray, values: np.ndarray, n: int) -> sp.csr_matrix:
    """``Σ_e`` of cell matrices ``values`` ``(cells, m, m)`` on the rows ``(cells, m)``
    (-1: dropped), as an ``(n, n)`` CSR matrix."""
    m = rows.shape[1]
    i = np.broadcast_to(rows[:, :, None], (rows.shape[0], m, m)).ravel()
    j = np.broadcast_to(rows[:, None, :], (rows.shape[0], m, m)).ravel()
    keep = (i >= 0) & (j >= 0)
    index = np.int32 if n < 2**31 - 1 else np.int64
    matrix = sp.coo_matrix((values.ravel()[keep], (i[keep].astype(index),
                                                   j[keep].astype(index))), shape=(n, n))
    return matrix.tocsr()


def coarse_cell_ids(cells: tuple[int, ...]) -> np.ndarray:
    """The coarse cell (lattice order of the coarse cells) of every fine cell."""
    coarse_cells = [(n + 1) // 2 for n in cells]
    strides = np.concatenate([[1], np.cumprod(coarse_cells[:-1])]).astype(np.int64)
    ids = np.zeros(cells[::-1], dtype=np.int64)
    for axis, n in enumerate(cells):
        shape = [1] * len(cells)
        shape[len(cells) - 1 - axis] = n
        ids += (np.arange(n) // 2 * strides[axis]).reshape(shape)  # odd end: its own
    return ids.ravel()


class Stencil:
    """A symmetric matrix on a lattice of points with ``nc`` unknowns each, coupling
    neighbours at most one point apart per axis: per lattice point ``p`` and direction
    ``t = Σ_axis (δ_axis + 1) 3**axis``, the ``(nc, nc)`` block of the rows at ``p`` and
    the columns at ``p + δ`` (:attr:`values` ``(*reversed shape, 3**dim, nc, nc)``)."""

    def __init__(self, shape: tuple[int, ...], nc: int, pool: SlabPool | None = None) -> None:
        self.shape, self.nc, self.dim = shape, nc, len(shape)
        self.pool = SlabPool(1) if pool is None else pool
        self.values = np.zeros((*shape[::-1], 3**self.dim, nc, nc))
        self._offsets = [[(c >> axis) & 1 for axis in range(self.dim)]
                         for c in range(2**self.dim)]
        # the neighbour offset of every direction, reversed axes (slowest first)
        self._deltas = [tuple((t // 3**axis) % 3 - 1 for axis in range(self.dim))[::-1]
                        for t in range(3**self.dim)]

    def _direction(self, a: int, b: int) -> int:
        return sum((self._offsets[b][axis] - self._offsets[a][axis] + 1) * 3**axis
                   for axis in range(self.dim))

    def _points(self, a: int, cells: tuple[int, ...], start: int = 0) -> tuple[slice, ...]:
        """The lattice points at corner ``a`` of the cells ``cells`` (reversed axes), the
        first of them ``start`` cells along the slowest axis."""
        starts = (start,) + (0,) * (len(cells) - 1)
        return tuple(slice(s + o, s + o + n) for s, o, n in zip(
            starts, self._offsets[a][::-1], cells, strict=True))

    def add_blocks(self, blocks: np.ndarray, start: int = 0) -> None:
        """Add the cell matrices ``blocks`` ``(m, m, *reversed cells)`` of the cells from
        ``start`` along the slowest axis (all cells of the other axes)."""
        nc, cells, corners = self.nc, blocks.shape[2:], range(len(self._offsets))
        pairs: dict[int, list[tuple[int, int]]] = {}
        for a in corners:
            for b in corners:
                pairs.setdefault(self._direction(a, b), []).append((a, b))

        def direction(t: int) -> None:  # one direction per thread, its pairs in order
            for a, b in pairs[t]:
                target = self.values[(*self._points(a, cells, start), t)]
                for i in range(nc):  # the lattice axes innermost: long inner loops
                    for j in range(nc):
                        target[..., i, j] += blocks[a * nc + i, b * nc + j]

        self.pool.map(direction, sorted(pairs))

    def add_cell_blocks(self, cell_ids: np.ndarray, blocks: np.ndarray) -> None:
        """Add one ``(m, m)`` block per listed cell (lattice ids of the cells)."""
        cells = [n - 1 for n in self.shape]
        index = np.unravel_index(cell_ids, cells[::-1])  # reversed axes
        flat = self.values.reshape(-1, 3**self.dim, self.nc, self.nc)
        nc = self.nc
        for a, off_a in enumerate(self._offsets):
            point = np.ravel_multi_index(
                tuple(i + o for i, o in zip(index, off_a[::-1], strict=True)),
                self.shape[::-1])
            for b in range(len(self._offsets)):
                t = self._direction(a, b)
                for i in range(nc):
                    for j in range(nc):
                        np.add.at(flat[:, t, i, j], point, blocks[:, a * nc + i, b * nc + j])


    def add_springs(self, fine_shape: tuple[int, ...], points: np.ndarray,
                    components: np.ndarray, k: np.ndarray) -> None:
        """Add ``Pᵀ diag(k) P`` of springs on the finer lattice of ``fine_shape`` points:
        spring ``i`` at fine lattice point ``points[i]`` (lattice order), component
        ``components[i]``, stiffness ``k[i]``, all ``(n_springs,)``; ``P`` the linear
        interpolation from this lattice's points (:func:`~fesens.solvers.grid_hierarchy.
        coarse_points` per axis). A spring couples the coarse points its fine point
        interpolates from (one coarse cell at most), in its own component: weights
        ``w_a w_b k`` (rows and columns of eliminated unknowns are never read)."""
        index = np.unravel_index(points, fine_shape[::-1])[::-1]  # x first
        ends = []  # per axis: the two coarse points and their weights
        for axis, n in enumerate(fine_shape):
            coarse = coarse_points(n)
            fine = index[axis]
            right = np.searchsorted(coarse, fine)
            on = coarse[right] == fine
            left = np.where(on, right, right - 1)
            span = np.maximum(coarse[right] - coarse[left], 1)
            w_left = np.where(on, 1.0, (coarse[right] - fine) / span)
            ends.append(((left, w_left), (right, np.where(on, 0.0, 1.0 - w_left))))
        flat = self.values.reshape(-1, 3**self.dim, self.nc, self.nc)
        corners = list(range(2**self.dim))
        for a in corners:
            side_a = [ends[axis][(a >> axis) & 1] for axis in range(self.dim)]
            point = np.ravel_multi_index(tuple(c for c, _ in side_a)[::-1], self.shape[::-1])
            w_a = np.prod([w for _, w in side_a], axis=0)
            for b in corners:
                side_b = [ends[axis][(b >> axis) & 1] for axis in range(self.dim)]
                t = sum((cb - ca + 1) * 3**axis for axis, ((ca, _), (cb, _)) in enumerate(
                    zip(side_a, side_b, strict=True)))
                w_b = np.prod([w for _, w in side_b], axis=0)
                np.add.at(flat, (point, t, components, components), w_a * w_b * k)


class StencilOperator:
    """A symmetric matrix on the free unknowns of a lattice, held as its
    :class:`Stencil`: the first coarse level of a matrix-free multigrid
    (:meth:`fesens.solvers.lattice_operator.LatticeStructure.coarse_operator`).

    Rows and columns are the free unknowns in lattice order, components fastest (the
    numbering of :meth:`Stencil.pattern`). The stencil's blocks (shared, not copied) are
    those of a SciPy BSR matrix on all the lattice's unknowns and one more point, a sink:
    the column index of a block is its neighbour's point, the sink's outside the lattice
    (where the block is zero). Every entry of the product is then the sum of its CSR
    row's terms in their order (direction, then component) and of terms that are exactly
    zero, the CSR product's bit for bit, in SciPy's compiled loop; pieces of block rows
    run on the pool's threads.

    Parameters
    ----------
    stencil : Stencil
        Its values are kept by reference.
    free : numpy.ndarray
        ``(points, nc)`` booleans: the free unknowns, lattice order.
    """

    def __init__(self, stencil: Stencil, free: np.ndarray) -> None:
        self.stencil, self.free = stencil, free
        nc, n_points, n_dirs = stencil.nc, free.shape[0], 3**stencil.dim
        index = np.int32 if free.size + nc < 2**31 - 1 else np.int64
        self._positions = np.flatnonzero(free).astype(index)  # point-major lattice dofs
        self.shape = (self._positions.size, self._positions.size)
        # the neighbour point of every point and direction (the sink outside)
        grid = np.indices(stencil.shape[::-1]).reshape(stencil.dim, -1)  # reversed axes
        extent = np.array(stencil.shape[::-1])[:, None]
        self._columns = np.empty((n_points, n_dirs), dtype=index)
        for t, delta in enumerate(stencil._deltas):
            moved = grid + np.array(delta)[:, None]
            inside = np.all((moved >= 0) & (moved < extent), axis=0)
            self._columns[:, t] = np.where(inside, np.ravel_multi_index(
                np.where(inside, moved, 0), stencil.shape[::-1]), n_points)
        self._pieces = [(start * nc, stop * nc, self._block_rows(start, stop))
                        for start in range(0, n_points, _STENCIL_POINTS)
                        for stop in [min(start + _STENCIL_POINTS, n_points)]]

    def _block_rows(self, start: int, stop: int) -> sp.bsr_matrix:
        """The rows of the lattice points ``start:stop`` as a BSR matrix, ``((stop −
        start) nc, (points + 1) nc)``, sharing the stencil's blocks."""
        nc, n_dirs = self.stencil.nc, 3**self.stencil.dim
        blocks = self.stencil.values.reshape(-1, nc, nc)[start * n_dirs:stop * n_dirs]
        indptr = np.arange(0, (stop - start) * n_dirs + 1, n_dirs, dtype=self._columns.dtype)
        return sp.bsr_matrix((blocks, self._columns[start:stop].ravel(), indptr),
                             shape=((stop - start) * nc, (self.free.shape[0] + 1) * nc),
                             blocksize=(nc, nc))

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        lattice = np.zeros(self.free.size + self.stencil.nc, dtype=x.dtype)  # and the sink
        lattice[self._positions] = x
        out = np.empty(self.free.size, dtype=x.dtype)

        def piece(item) -> None:
            start, stop, rows = item
            out[start:stop] = rows @ lattice

        self.stencil.pool.map(piece, self._pieces)
        return out[self._positions]

    def diagonal(self) -> np.ndarray:
        """The diagonal ``(n,)``."""
        centre = (3**self.stencil.dim - 1) // 2
        blocks = self.stencil.values.reshape(-1, 3**self.stencil.dim, self.stencil.nc,
                                             self.stencil.nc)[:, centre]
        return np.diagonal(blocks, axis1=1, axis2=2).reshape(-1)[self._positions]

    def galerkin(self, P: sp.csr_matrix, Pt: sp.csr_matrix) -> sp.csr_matrix:
        """``Pᵀ A P`` for a prolongation ``P`` ``(n, n_coarse)`` and its transpose ``Pt``
        as CSR, not symmetrized.

        ``A`` is read a band of lattice rows at a time (at most :data:`BAND_POINTS`
        points) as CSR rows of the lattice's unknowns, ``Pᵀ``'s columns and ``P``'s rows
        put at the lattice positions of the free unknowns (``P``'s rows of the other
        unknowns and of the sink empty). The terms of the free rows and columns come in
        the order of the CSR product ``(Pᵀ A) P`` and the others reach no entry, so the
        result is that product's bit for bit, without ``A``'s index arrays. The bands
        run in the calling thread: in a worker thread their tens of MB stayed resident
        in that thread's malloc arena after the build (peak of a 160x80x80 OC run on 2
        threads 1611-1680 MB, 1484-1531 MB so).
        """
        nc, n_lattice = self.stencil.nc, self.free.size + self.stencil.nc
        counts = np.zeros(n_lattice + 1, dtype=P.indptr.dtype)
        counts[self._positions + 1] = np.diff(P.indptr)
        spread = sp.csr_matrix((n_lattice, P.shape[1]), dtype=P.dtype)  # P's arrays shared
        spread.indptr, spread.indices, spread.data = np.cumsum(counts), P.indices, P.data
        if Pt.nnz == 0:
            return sp.csr_matrix((Pt.shape[0], P.shape[1]))
        # the first and last lattice point of the columns of every row of Pᵀ, over the
        # rows from it on and up to it (a row is never empty: its coarse point's own fine
        # point)
        point = self._positions[Pt.indices] // nc
        starts = Pt.indptr[:-1]
        low = np.minimum.accumulate(np.minimum.reduceat(point, starts)[::-1])[::-1]
        last = np.maximum.accumulate(np.maximum.reduceat(point, starts))
        pieces, start = [], 0
        while start < Pt.shape[0]:
            lo = int(low[start])
            stop = max(start + 1, int(np.searchsorted(last, lo + BAND_POINTS)))
            hi = int(last[stop - 1]) + 1
            rows = sp.csr_matrix((stop - start, (hi - lo) * nc), dtype=Pt.dtype)
            first, end = Pt.indptr[start], Pt.indptr[stop]
            rows.indptr = Pt.indptr[start:stop + 1] - first
            rows.indices = (self._positions[Pt.indices[first:end]] - lo * nc).astype(
                Pt.indices.dtype)
            rows.data = Pt.data[first:end]
            pieces.append(rows @ self._block_rows(lo, hi).tocsr() @ spread)
            start = stop
        return pieces[0] if len(pieces) == 1 else sp.vstack(pieces, format="csr")

    def tocsr(self) -> sp.csr_matrix:
        """The matrix assembled, ``(n, n)`` CSR (checks, and a coarsest level): every
        coupling of two free unknowns inside the lattice, columns sorted."""
        whole = self._block_rows(0, self.free.shape[0]).tocsr()
        return whole[self._positions][:, self._positions]


class FreeDofLattice(Protocol):
    """What :class:`LatticeProlongation` reads of the fine level: the numbering of its free
    dofs in the lattice arrays (a
    :class:`~fesens.solvers.lattice_operator.LatticeStructure`)."""

    #: Free dofs of the fine level.
    n: int
    #: Components per lattice point.
    n_components: int

    def expand(self, x: np.ndarray) -> np.ndarray:
        """A free-dof vector ``(n,)`` as the lattice array ``(nc, *reversed shape)``."""

    def restrict(self, lattice: np.ndarray) -> np.ndarray:
        """The free-dof vector ``(n,)`` of a lattice array."""


class LatticeProlongation:
    """The prolongation ``P`` ``(n, n_coarse)`` of the first coarsening, applied by
    strided slices of the lattice arrays (:class:`~fesens.solvers.device_lattice.
    LatticeTransfer`), never as a matrix: the operator of the sparse prolongation of
    :mod:`fesens.solvers.grid_hierarchy`, rows in the fine operator's order, columns the
    coarse free dofs in lattice order (components fastest), which :meth:`LatticeStructure.
    galerkin` numbers alike. ``P @ x`` prolongs, ``P.T @ r`` restricts.

    Attributes
    ----------
    shape : tuple of int
        ``(n, n_coarse)``.
    coarse_shape : tuple of int
        Coarse lattice points per axis.
    coarse_free : numpy.ndarray
        ``(coarse points, n_components)`` booleans: the coarse free dofs, lattice order.
    """

    def __init__(self, structure: FreeDofLattice, fine, coarse) -> None:
        self._structure = structure
        self._transfer = LatticeTransfer(_HostLevel(fine), _HostLevel(coarse))
        nc = structure.n_components
        self.coarse_shape = coarse.shape
        self.coarse_free = np.moveaxis(coarse.free, 0, -1).reshape(-1, nc)
        point, component = np.divmod(np.flatnonzero(self.coarse_free), nc)
        n_points = self.coarse_free.shape[0]
        self._positions = component * n_points + point  # in the component-major array
        self._lattice = (nc, *coarse.shape[::-1])
        self.shape = (structure.n, self._positions.size)

    @property
    def T(self) -> _Restriction:  # noqa: N802  (the transpose, as a matrix's)
        return _Restriction(self)

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        coarse = np.zeros(int(np.prod(self._lattice)))
        coarse[self._positions] = x
        # unmasked: the gather reads the fine free dofs only
        fine = self._transfer.interpolate(coarse.reshape(self._lattice))
        return self._structure.restrict(fine)

    def restrict(self, r: np.ndarray) -> np.ndarray:
        """``Pᵀ r`` for a fine free-dof vector ``r`` ``(n,)``."""
        # unmasked: the expanded r is zero at eliminated dofs, and the gather reads the
        # coarse free dofs only
        coarse = self._transfer.anterpolate(self._structure.expand(r))
        return coarse.reshape(-1)[self._positions]


@dataclass(frozen=True)
class _HostLevel:
    """What the unmasked interpolation and its transpose of a
    :class:`~fesens.solvers.device_lattice.LatticeTransfer` read of a level's kernels:
    its geometry, on numpy in float64. A ``LevelKernels`` would also hold the level's
    free dofs as a float mask (25 MB on the fine level of 160x80x80 cells) and its cell
    matrices, which nothing here reads."""

    geometry: LevelGeometry
    xp: ModuleType = np
    host_dtype: type = np.float64


class _Restriction:
    """``Pᵀ`` of a :class:`LatticeProlongation`, applied with ``@``."""

    def __init__(self, prolongation: LatticeProlongation) -> None:
        self.prolongation = prolongation
        self.shape = prolongation.shape[::-1]

    def __matmul__(self, r: np.ndarray) -> np.ndarray:
        return self.prolongation.restrict(r)

"""The pieces of a lattice's first multigrid coarse level, formed cell by cell
(:meth:`fesens.solvers.lattice_operator.LatticeStructure.galerkin`): the local interpolation
of a fine cell from its coarse cell (:data:`HALVES`, :func:`children`), the coarse cell of
every fine cell, and the coarse lattice's 27-point stencil (:class:`Stencil`), which gives
the CSR arrays without sorting; :func:`assembled` sums cell matrices for checks.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fesens.solvers.parallel import SlabPool

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
    neighbours at most one point apart per axis: one plane ``(*reversed shape)`` per
    direction ``t = Σ_axis (δ_axis + 1) 3**axis`` and component pair."""

    def __init__(self, shape: tuple[int, ...], nc: int, pool: SlabPool | None = None) -> None:
        self.shape, self.nc, self.dim = shape, nc, len(shape)
        self.pool = SlabPool(1) if pool is None else pool
        self.values = np.zeros((3**self.dim, nc, nc, *shape[::-1]))
        self._offsets = [[(c >> axis) & 1 for axis in range(self.dim)]
                         for c in range(2**self.dim)]

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

        def direction(t: int) -> None:  # one plane per thread, its pairs in a fixed order
            for a, b in pairs[t]:
                self.values[t][(slice(None), slice(None), *self._points(a, cells, start))] += (
                    blocks[a * nc:(a + 1) * nc, b * nc:(b + 1) * nc])

        self.pool.map(direction, sorted(pairs))

    def add_cell_blocks(self, cell_ids: np.ndarray, blocks: np.ndarray) -> None:
        """Add one ``(m, m)`` block per listed cell (lattice ids of the cells)."""
        cells = [n - 1 for n in self.shape]
        index = np.unravel_index(cell_ids, cells[::-1])  # reversed axes
        flat = self.values.reshape(3**self.dim, self.nc, self.nc, -1)
        nc = self.nc
        for a, off_a in enumerate(self._offsets):
            point = np.ravel_multi_index(
                tuple(i + o for i, o in zip(index, off_a[::-1], strict=True)),
                self.shape[::-1])
            for b in range(len(self._offsets)):
                plane = flat[self._direction(a, b)]
                for i in range(nc):
                    for j in range(nc):
                        np.add.at(plane[i, j], point, blocks[:, a * nc + i, b * nc + j])

    def matrix(self, pattern: tuple) -> sp.csr_matrix:
        """The CSR matrix of the stencil's values on a sparsity of :meth:`pattern`."""
        source, indices, indptr, n = pattern
        # the matrix shares the pattern's (read-only) index arrays: a copy per build was
        # 26 MB at 96x48x48 fine cells
        matrix = sp.csr_matrix((n, n), dtype=self.values.dtype)
        matrix.data = self.values.reshape(-1)[source]
        matrix.indices, matrix.indptr = indices, indptr
        matrix.has_sorted_indices = True  # by construction (pattern)
        return matrix

    def pattern(self, free: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """The sparsity of the matrix on the free unknowns ``free`` ``(points, nc)``
        (lattice order, rows and columns numbered point-major; columns sorted by
        construction): ``(source, indices, indptr, n)``, ``source`` the position in the
        flat :attr:`values` of every stored entry."""
        nc, n_points, n_dirs = self.nc, int(np.prod(self.shape)), 3**self.dim
        rows = np.full(free.shape, -1, dtype=np.int64)
        n = int(np.count_nonzero(free))
        rows[free] = np.arange(n)
        # the neighbour of every point in every direction, -1 outside the lattice
        grid = np.indices(self.shape[::-1]).reshape(self.dim, -1)  # reversed axes
        neighbour = np.empty((n_points, n_dirs), dtype=np.int64)
        for t in range(n_dirs):
            delta = [(t // 3**axis) % 3 - 1 for axis in range(self.dim)][::-1]
            moved = grid + np.array(delta)[:, None]
            inside = np.all((moved >= 0) & (moved < np.array(self.shape[::-1])[:, None]),
                            axis=0)
            neighbour[:, t] = np.where(inside, np.ravel_multi_index(
                np.where(inside, moved, 0), self.shape[::-1]), -1)
        columns = np.where(neighbour[:, :, None] >= 0, rows[neighbour], -1)  # (p, t, nc)
        columns = np.broadcast_to(columns[:, None, :, :], (n_points, nc, n_dirs, nc))
        keep = (columns >= 0) & free[:, :, None, None]
        # (t, i, j, p) -> (p, i, t, j): rows point-major, columns increasing in a row
        flat = np.int32 if self.values.size < 2**31 - 1 else np.int64
        positions = np.arange(self.values.size, dtype=flat).reshape(
            n_dirs, nc, nc, n_points).transpose(3, 1, 0, 2)
        index = np.int32 if n < 2**31 - 1 else np.int64
        indptr = np.zeros(n + 1, dtype=index)
        np.cumsum(keep.reshape(n_points * nc, -1)[free.ravel()].sum(axis=1), out=indptr[1:])
        indices = columns[keep].astype(index)
        for shared in (indices, indptr):  # every matrix of the pattern holds them
            shared.flags.writeable = False
        return positions[keep], indices, indptr, n

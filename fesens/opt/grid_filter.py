"""The cone filter on a lattice of cell centroids as a stencil correlation.

When the cell centroids of a mesh form a complete regular lattice (the ``rectangle`` and
``box`` generators' quadrilaterals and hexahedra, of any order), the cone weights
``H_ei = max(0, r − |c_e − c_i|)`` depend only on the lattice offset between ``e`` and
``i``: ``H x`` is the correlation of the lattice field with one constant stencil
(:func:`scipy.ndimage.correlate`, zero outside the grid). The volume-weighted density
filter ``x̃ = (H (v x)) / (H v)`` is then two correlations, exact at the boundaries
(the normalisation is the correlated volume field, top88's ``Hs`` for unit volumes), and
nothing of size ``n_cells × n_neighbours`` is stored. ``H`` is symmetric, so the
transpose (the sensitivities' filter) is one more correlation with the same stencil.

The correlation runs on all cores in slabs along the lattice's first axis, each with the
stencil's reach of neighbours on both sides (:class:`~fesens.solvers.parallel.SlabPool`):
every output value is the same sum of the same products whatever slab computes it, so
the result is bit-identical for every thread count. On arrays of another library (CuPy
on a GPU, or any library of the Python array API standard) it is a sum of shifted slices,
one per non-zero weight (:func:`correlate_by_slices`; one pass per axis where the stencil
is a tensor product), allocated in the arrays' library: a design filtered on a GPU stays
there. Both are ``scipy.ndimage.correlate`` with zeros outside the grid, so the boundary
normalisation ``H v`` is the same.
"""

from __future__ import annotations

from functools import reduce

import numpy as np
from scipy import ndimage

from fesens.ad.linear_map import apply_linear, apply_linear_transpose
from fesens.arrays import namespace
from fesens.solvers.parallel import SlabPool

#: Relative tolerance (of the lattice spacing) for centroids to count as lattice points.
LATTICE_TOLERANCE = 1e-10
#: Lattice points per slab of the threaded correlation (at least two stencil reaches).
_SLAB_POINTS = 16_384


class CentroidLattice:
    """The regular lattice the cell centroids lie on.

    Attributes
    ----------
    shape : tuple of int
        Lattice points per axis.
    spacing : numpy.ndarray
        ``(dim,)`` distance between neighbouring points per axis (``inf`` on an axis with
        one point).
    position : numpy.ndarray
        ``(n_cells,)`` flat (C-order) lattice index of each cell.
    """

    def __init__(self, shape: tuple[int, ...], spacing: np.ndarray, position: np.ndarray):
        self.shape, self.spacing, self.position = shape, spacing, position

    @classmethod
    def of(cls, centroids: np.ndarray) -> CentroidLattice | None:
        """The lattice of ``centroids`` ``(n_cells, dim)``, or None when they are not
        exactly the points of a complete regular lattice."""
        n_cells, dim = centroids.shape
        lower, upper = centroids.min(axis=0), centroids.max(axis=0)
        shape, spacing, index = [], np.empty(dim), np.empty((n_cells, dim), dtype=np.int64)
        for axis in range(dim):
            values = np.unique(centroids[:, axis])
            extent = upper[axis] - lower[axis]
            if extent == 0.0:
                shape.append(1)
                spacing[axis], index[:, axis] = np.inf, 0
                continue
            # Smallest gap between distinct coordinates = the spacing of a regular lattice.
            gaps = np.diff(values)
            h = gaps[gaps > LATTICE_TOLERANCE * extent].min(initial=extent)
            count = int(round(extent / h)) + 1
            fraction = (centroids[:, axis] - lower[axis]) / h
            index[:, axis] = np.rint(fraction)
            if np.abs(fraction - index[:, axis]).max() > LATTICE_TOLERANCE * count:
                return None
            h = extent / (count - 1)
            shape.append(count)
            spacing[axis] = h
        if int(np.prod(shape)) != n_cells:
            return None
        position = np.ravel_multi_index(tuple(index.T), tuple(shape))
        if np.bincount(position, minlength=n_cells).max() != 1:
            return None
        return cls(tuple(shape), spacing, position)

    def stencil(self, radius: float) -> np.ndarray:
        """The cone weights ``max(0, r − |d · h|)`` for lattice offsets ``d``, centred.

        Two lattice points are at most ``shape − 1`` points apart per axis, so the stencil
        reaches no further whatever the radius: a radius beyond the domain gives at most
        ``(2 shape − 1)`` weights per axis, all of them ``r − |d · h|``."""
        half = [(n - 1) // 2 for n in self.stencil_shape(radius)]
        offsets = np.meshgrid(*[np.arange(-m, m + 1) for m in half], indexing="ij")
        squared = sum((d * (h if np.isfinite(h) else 0.0)) ** 2
                      for d, h in zip(offsets, self.spacing, strict=True))
        return np.maximum(0.0, radius - np.sqrt(squared))

    def stencil_shape(self, radius: float) -> tuple[int, ...]:
        """The shape of :meth:`stencil`, ``2 m + 1`` per axis, ``m ≤ shape − 1``."""
        return tuple(2 * self._half_width(radius, h, count) + 1
                     for h, count in zip(self.spacing, self.shape, strict=True))

    @staticmethod
    def _half_width(radius: float, h: float, count: int) -> int:
        """Lattice offsets within ``radius`` along an axis of spacing ``h`` and ``count``
        points (no further than the last point)."""
        if not np.isfinite(h):
            return 0
        return int(min(np.floor(radius / h), count - 1))

    def to_grid(self, values: np.ndarray) -> np.ndarray:
        """Cell values ``(n_cells,)`` on the lattice array of :attr:`shape`."""
        grid = np.zeros(int(np.prod(self.shape)))
        grid[self.position] = values
        return grid.reshape(self.shape)

    def from_grid(self, grid: np.ndarray) -> np.ndarray:
        """The cell values ``(n_cells,)`` of a lattice array."""
        return grid.ravel()[self.position]


class ConeStencil:
    """``x ↦ (H (v x)) / (H v)`` by correlation on a :class:`CentroidLattice`.

    Parameters
    ----------
    lattice : CentroidLattice
    radius : float
    volumes : numpy.ndarray
        ``(n_cells,)`` cell volumes ``v``.
    threads : int, optional
        Threads of the correlation (default: the usable cores, or ``FESENS_THREADS``);
        the result does not depend on it.
    """

    def __init__(self, lattice: CentroidLattice, radius: float, volumes: np.ndarray,
                 threads: int | None = None):
        self.lattice = lattice
        self.weights = lattice.stencil(radius)
        self.volumes = np.asarray(volumes, dtype=float)
        self.pool = SlabPool(threads)
        self._slabs = _slabs(lattice.shape, self.weights.shape[0] // 2)
        self.normaliser = self.correlate(self.volumes)  # H v
        # per array library other than numpy: its copies of the index and weight arrays
        self._copies: dict[int, tuple] = {}

    def correlate(self, values):
        """``H values`` for cell values ``(n_cells,)``, in their array library."""
        xp = namespace(values)
        if xp is not np:
            cell_at, position, _, _ = self._copies_in(xp)
            grid = xp.reshape(xp.take(values, cell_at), self.lattice.shape)
            return xp.take(xp.reshape(correlate_by_slices(grid, self.weights), (-1,)),
                           position)
        grid = self.lattice.to_grid(values)
        out = np.empty_like(grid)
        reach = self.weights.shape[0] // 2

        def slab(rows: tuple[int, int]) -> None:
            start, stop = rows
            low, high = max(0, start - reach), min(grid.shape[0], stop + reach)
            part = ndimage.correlate(grid[low:high], self.weights, mode="constant", cval=0.0)
            out[start:stop] = part[start - low:stop - low]

        self.pool.map(slab, self._slabs)
        return self.lattice.from_grid(out)

    def apply(self, x):
        """The filtered field ``W x``, ``(n_cells,)``, in ``x``'s array library."""
        volumes, normaliser = self._weights_in(namespace(x))
        return self.correlate(volumes * x) / normaliser

    def transpose(self, g):
        """``Wᵀ g = v · H (g / (H v))`` (``H`` is symmetric), in ``g``'s array library."""
        volumes, normaliser = self._weights_in(namespace(g))
        return volumes * self.correlate(g / normaliser)

    #: :func:`~fesens.ad.linear_map.apply_linear_transpose` calls it by this name.
    apply_transpose = transpose

    def _weights_in(self, xp) -> tuple:
        """``(v, H v)`` ``(n_cells,)`` in the library ``xp``."""
        if xp is np:
            return self.volumes, self.normaliser
        return self._copies_in(xp)[2:]

    def _copies_in(self, xp) -> tuple:
        """The cell at each lattice point, each cell's lattice point, ``v`` and ``H v``
        copied to the library ``xp`` once (the lattice is complete: a permutation)."""
        if id(xp) not in self._copies:
            cell_at = np.empty_like(self.lattice.position)
            cell_at[self.lattice.position] = np.arange(cell_at.size)
            self._copies[id(xp)] = (xp.asarray(cell_at), xp.asarray(self.lattice.position),
                                    xp.asarray(self.volumes), xp.asarray(self.normaliser))
        return self._copies[id(xp)]


def correlate_by_slices(grid, weights: np.ndarray):
    """``scipy.ndimage.correlate(grid, weights, mode="constant", cval=0)`` in ``grid``'s
    array library, by shifted slices.

    ``out[i] = Σ_d w[c + d] grid[i + d]`` over the offsets ``d`` from the stencil's centre
    ``c`` (zero outside the grid): one sliced multiply-add per non-zero weight, or one pass
    per axis with the 1D factors when ``weights`` is a tensor product
    (:func:`separable_factors`).

    Parameters
    ----------
    grid : array
        The lattice field, any shape of ``weights.ndim`` axes.
    weights : numpy.ndarray
        The stencil, odd length on every axis.
    """
    factors = separable_factors(weights)
    if factors is None:
        return _shifted_sum(grid, weights)
    for axis, factor in enumerate(factors):
        shape = [1] * weights.ndim
        shape[axis] = factor.size
        grid = _shifted_sum(grid, factor.reshape(shape))
    return grid


def separable_factors(weights: np.ndarray) -> list[np.ndarray] | None:
    """1D factors ``f_a`` with ``weights = f_0 ⊗ f_1 ⊗ …`` (to round-off), or None when
    ``weights`` is no tensor product (a cone over more than one axis is not)."""
    total = float(np.sum(weights))
    if weights.ndim < 2 or total <= 0.0:
        return None
    axes = range(weights.ndim)
    marginals = [np.sum(weights, axis=tuple(b for b in axes if b != a)) for a in axes]
    marginals[0] = marginals[0] / total ** (weights.ndim - 1)
    product = reduce(np.multiply.outer, marginals)
    if np.max(np.abs(product - weights)) > 1e-14 * np.max(np.abs(weights)):
        return None
    return marginals


def _shifted_sum(grid, weights: np.ndarray):
    """``Σ_d w[c + d] grid[i + d]`` over the non-zero weights (the array API's slicing)."""
    xp = namespace(grid)
    out = xp.zeros(grid.shape, dtype=grid.dtype)
    centre = [n // 2 for n in weights.shape]
    for index in zip(*np.nonzero(weights), strict=True):
        offsets = [int(i) - c for i, c in zip(index, centre, strict=True)]
        if any(abs(d) >= n for d, n in zip(offsets, grid.shape, strict=True)):
            continue  # reaches past the grid: only zeros
        target = tuple(slice(max(0, -d), n - max(0, d))
                       for d, n in zip(offsets, grid.shape, strict=True))
        source = tuple(slice(max(0, d), n - max(0, -d))
                       for d, n in zip(offsets, grid.shape, strict=True))
        out[target] = out[target] + float(weights[index]) * grid[source]
    return out


def _slabs(shape: tuple[int, ...], reach: int) -> list[tuple[int, int]]:
    """Row ranges ``(start, stop)`` of the first axis: about :data:`_SLAB_POINTS` points
    each, at least ``2 reach`` rows (the neighbours each slab reads on both sides)."""
    per_row = int(np.prod(shape[1:]))
    rows = max(1, 2 * reach, -(-_SLAB_POINTS // per_row))
    return [(start, min(start + rows, shape[0])) for start in range(0, shape[0], rows)]


#: ``W x`` of a :class:`ConeStencil`, ``(n_cells,)``: a fixed linear map
#: (:mod:`fesens.ad.linear_map`; VJP ``Wᵀ ȳ``, JVP ``W ẋ``, nested derivatives traced).
apply_cone_stencil = apply_linear
#: ``Wᵀ y`` of a :class:`ConeStencil`: the VJP of :data:`apply_cone_stencil`.
apply_cone_stencil_transpose = apply_linear_transpose

"""The levels of a lattice's multigrid, matrix-free on every level, in any array library.

What :mod:`fesens.solvers.device_multigrid` runs on a GPU (CuPy) or on the CPU (numpy),
written once against the Python array API standard plus what numpy and CuPy both have:
slicing, ``reshape``, ``concat``, ``matmul``, ``take``, ``tensordot`` (no ``add.at``, no
sparse matrices, no in-place scatter by index), so that a level's kernels allocate in their
inputs' library, on their device.

**Levels.** Coarsening keeps every second lattice point per axis and the last one
(:func:`~fesens.solvers.grid_hierarchy.coarse_points`): an axis of ``n`` intervals gets
``ceil(n / 2)``, the last of which spans a single finer interval when ``n`` is odd. So on
every level all cells along an axis have one width except perhaps the last: a level's
cells fall into at most ``2**dim`` boxes of equal cells (:class:`CellBox`), each with its
own reference matrix. A coarse level is *rediscretized*: a coarse cell's coefficient is
the volume-weighted mean of its children's, and its reference matrix is the stiffness of
the bigger cell, ``Σ_children R_cᵀ K_child R_c`` with unit coefficients and ``R_c`` the
(tri)linear interpolation of the coarse cell's corners at the child's corners (on a
lattice of congruent cells that sum is the exact stiffness of the coarse cell:
``2**(dim - 2) K_ref`` for elasticity's, a Laplacian's, hex8/quad4 cell of twice the size).
Only the reference matrices are computed on the host, once per lattice.

**Transfers.** Prolongation is linear interpolation per axis between the coarse points,
weighted by the points' positions (the last interval of an odd axis is shorter), applied
axis by axis by strided slices; restriction is its transpose. A coarse dof is eliminated
when the fine dof at its point is (Dirichlet conditions injected); masks of the free dofs
keep eliminated dofs at zero.

Lattice arrays are component-major, ``(*batch, nc, *reversed shape)`` (x last), as in
:mod:`fesens.solvers.lattice_operator`; a cell's local dofs are corner ``c = i + 2 j + 4 k``
(x fastest) then component, ``c · nc + component``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from fesens.solvers.grid_hierarchy import coarse_points

#: Cells per slab of a batched cell operation: its two ``(m, cells)`` temporaries stay
#: near 0.4 GB in 3D elasticity (m = 24, float64) on a GPU, while a slab is still large
#: enough for one matrix product to fill the device.
SLAB_CELLS = 1 << 20


@dataclass(frozen=True)
class CellBox:
    """Cells of one level with one reference matrix: ``cells`` a range per axis (x first).

    Attributes
    ----------
    cells : tuple of (int, int)
        ``(start, stop)`` cell indices per axis, x first.
    element : numpy.ndarray
        ``(m, m)`` reference matrix of these cells (local numbering of the module).
    """

    cells: tuple[tuple[int, int], ...]
    element: np.ndarray


@dataclass(frozen=True)
class LevelGeometry:
    """What a level is, independent of the coefficients (host arrays).

    Attributes
    ----------
    shape : tuple of int
        Lattice points per axis, x first.
    free : numpy.ndarray
        ``(nc, *reversed shape)`` booleans: the dofs that are unknowns.
    coordinates : tuple of numpy.ndarray
        Per axis, the points' positions in units of the finest level's interval.
    boxes : tuple of CellBox
        The level's cells in boxes of equal cells.
    """

    shape: tuple[int, ...]
    free: np.ndarray
    coordinates: tuple[np.ndarray, ...]
    boxes: tuple[CellBox, ...]

    @property
    def n_free(self) -> int:
        return int(np.count_nonzero(self.free))

    @property
    def cells(self) -> tuple[int, ...]:
        return tuple(n - 1 for n in self.shape)

    def element_of(self, cell: tuple[int, ...]) -> np.ndarray:
        """The reference matrix of the cell at index ``cell`` (x first)."""
        for box in self.boxes:
            if all(lo <= i < hi for i, (lo, hi) in zip(cell, box.cells, strict=True)):
                return box.element
        raise IndexError(f"cell {cell} lies outside the lattice of {self.cells} cells")


def finest_level(shape: tuple[int, ...], free: np.ndarray, element: np.ndarray
                 ) -> LevelGeometry:
    """The finest level: ``shape`` points per axis, ``free`` ``(nc, *reversed shape)``,
    every cell with the reference matrix ``element``."""
    cells = tuple((0, n - 1) for n in shape)
    coordinates = tuple(np.arange(n, dtype=float) for n in shape)
    return LevelGeometry(tuple(shape), np.asarray(free, dtype=bool), coordinates,
                         (CellBox(cells, np.asarray(element, dtype=float)),))


def coarser_level(fine: LevelGeometry) -> LevelGeometry | None:
    """The next coarser level of ``fine``, or None when no axis can halve or every
    coarse dof is eliminated."""
    kept = [coarse_points(n) for n in fine.shape]
    shape = tuple(k.size for k in kept)
    if shape == fine.shape:
        return None
    free = fine.free[np.ix_(np.arange(fine.free.shape[0]), *kept[::-1])]
    if not np.any(free):
        return None
    coordinates = tuple(x[k] for x, k in zip(fine.coordinates, kept, strict=True))
    ranges = []  # per axis: the cell ranges of equal width
    for x in coordinates:
        widths = np.diff(x)
        regular = widths.size if np.all(widths == widths[0]) else widths.size - 1
        ranges.append([(0, regular)] + ([(regular, widths.size)] if regular < widths.size
                                        else []))
    boxes = tuple(CellBox(cells, _coarse_element(fine, kept, coordinates,
                                                  tuple(lo for lo, _ in cells)))
                  for cells in itertools.product(*ranges))
    return LevelGeometry(shape, free, coordinates, boxes)


def _coarse_element(fine: LevelGeometry, kept: list[np.ndarray],
                    coordinates: tuple[np.ndarray, ...], cell: tuple[int, ...]) -> np.ndarray:
    """``Σ_children R_cᵀ K_child R_c`` of the coarse cell at index ``cell``."""
    nc = fine.free.shape[0]
    per_axis = []  # per axis: (fine cell index, 2x2 interpolation) of each child
    for axis, i in enumerate(cell):
        lo, hi = coordinates[axis][i], coordinates[axis][i + 1]
        children = []
        for j in range(kept[axis][i], kept[axis][i + 1]):
            ends = fine.coordinates[axis][j:j + 2]
            # rows: the child's two corners; columns: the coarse cell's
            children.append((j, np.stack([(hi - ends) / (hi - lo), (ends - lo) / (hi - lo)],
                                         axis=1)))
        per_axis.append(children)
    m = 2 ** len(cell) * nc
    out = np.zeros((m, m))
    for combination in itertools.product(*per_axis):
        R = np.ones((1, 1))
        for _, R_axis in combination:  # x first: kron(Rz, kron(Ry, Rx)), components fastest
            R = np.kron(R_axis, R)
        R = np.kron(R, np.eye(nc))
        out += R.T @ fine.element_of(tuple(j for j, _ in combination)) @ R
    return 0.5 * (out + out.T)


def levels_of(finest: LevelGeometry, coarse_size: int) -> list[LevelGeometry]:
    """Finest first, coarsened at least once where possible and until a level has at
    most ``coarse_size`` free dofs."""
    levels = [finest]
    while len(levels) == 1 or levels[-1].n_free > coarse_size:
        coarse = coarser_level(levels[-1])
        if coarse is None:
            break
        levels.append(coarse)
    return levels


# ---------------------------------------------------------------- kernels (any library)
def _index(spans: list[tuple[int, int]]) -> tuple:
    """The lattice-array index of ``spans`` (x first) on all components and batches."""
    return (Ellipsis, slice(None)) + tuple(slice(lo, hi) for lo, hi in spans[::-1])


def _along(axis: int, key: slice) -> tuple:
    """The lattice-array index of ``key`` on lattice axis ``axis`` (x = 0)."""
    return (Ellipsis, key) + (slice(None),) * axis


class LevelKernels:
    """A level's operator, diagonal, cell energies and coefficient coarsening on arrays
    of the library ``xp`` in ``dtype`` (the reference matrices copied there once).

    Parameters
    ----------
    geometry : LevelGeometry
    xp : module
        The array library (numpy, CuPy, or another array-API library).
    dtype
        The library's floating dtype of this level's arrays.
    """

    def __init__(self, geometry: LevelGeometry, xp: ModuleType, dtype: Any) -> None:
        self.geometry, self.xp, self.dtype = geometry, xp, dtype
        self.dim, self.nc = len(geometry.shape), int(geometry.free.shape[0])
        host = self.host_dtype = np.float32 if dtype == xp.float32 else np.float64
        self.free = xp.asarray(geometry.free.astype(host))
        self.elements = [xp.asarray(box.element.astype(host)) for box in geometry.boxes]
        self.diagonals = [xp.asarray(np.diag(box.element)[:, None].astype(host))
                          for box in geometry.boxes]
        # per axis: the cell count and the widths of the left and right child of each
        # coarse cell, the weights of the next coarsening's volume-weighted means
        self._pairs = []
        for axis, x in enumerate(geometry.coordinates):
            widths, pairs = np.diff(x), (x.size - 1) // 2
            shape = (pairs,) + (1,) * axis
            self._pairs.append((widths.size, pairs, *(
                xp.asarray(np.reshape(widths[k:2 * pairs:2], shape).astype(host))
                for k in (0, 1))))

    def _slabs(self, box: CellBox):
        """``(cell spans x first, corner indices)`` per slab of the box's cells along
        the slowest axis."""
        spans = list(box.cells)
        layer = int(np.prod([hi - lo for lo, hi in spans[:-1]]))
        lo, hi = spans[-1]
        step = max(1, SLAB_CELLS // max(layer, 1))
        corners = [[(c >> axis) & 1 for axis in range(self.dim)] for c in range(2**self.dim)]
        for start in range(lo, hi, step):
            slab = spans[:-1] + [(start, min(start + step, hi))]
            yield slab, [_index([(a + o, b + o) for (a, b), o in
                                           zip(slab, offset, strict=True)])
                         for offset in corners]

    def _gather(self, lattice, corners: list[tuple], n_cells: int):
        """``(*batch, m, cells)``: the corner values of the slab's cells (each corner's
        strided slice copied once, into its rows)."""
        xp, nc = self.xp, self.nc
        cells = tuple(lattice[corners[0]].shape[-self.dim:])
        batch = tuple(lattice.shape[:-self.dim - 1])
        out = xp.empty((*batch, len(corners) * nc, *cells), dtype=lattice.dtype)
        for c, where in enumerate(corners):
            out[(Ellipsis, slice(c * nc, (c + 1) * nc)) + (slice(None),) * self.dim] = (
                lattice[where])
        return xp.reshape(out, (*batch, len(corners) * nc, n_cells))

    def _scatter(self, lattice, values, corners: list[tuple]) -> None:
        """Add the slab's cell vectors ``(*batch, m, cells)`` into ``lattice``."""
        xp, nc = self.xp, self.nc
        for c, where in enumerate(corners):
            target = lattice[where]
            lattice[where] = target + xp.reshape(values[..., c * nc:(c + 1) * nc, :],
                                                  target.shape)

    def apply(self, coefficients, u):
        """``A u`` for a lattice array ``u`` ``(*batch, nc, *reversed shape)`` that is zero
        at eliminated dofs; ``coefficients`` ``(*reversed cells)``."""
        xp = self.xp
        target = xp.zeros(u.shape, dtype=u.dtype)
        for box, element in zip(self.geometry.boxes, self.elements, strict=True):
            for slab, corners in self._slabs(box):
                s = self._flat(coefficients, slab)
                local = xp.matmul(element, self._gather(u, corners, s.shape[0])) * s
                self._scatter(target, local, corners)
        return target * self.free

    def diagonal(self, coefficients):
        """The diagonal of ``A`` as a lattice array (zero at eliminated dofs)."""
        xp = self.xp
        target = xp.zeros(self.free.shape, dtype=self.free.dtype)
        for box, diagonal in zip(self.geometry.boxes, self.diagonals, strict=True):
            for slab, corners in self._slabs(box):
                self._scatter(target, diagonal * self._flat(coefficients, slab), corners)
        return target * self.free

    def cell_bilinear(self, u, v):
        """``u_eᵀ K_e v_e`` per cell ``(*reversed cells)`` (unit coefficients) for lattice
        arrays ``u``, ``v`` ``(nc, *reversed shape)``."""
        xp = self.xp
        out = xp.zeros(self.geometry.cells[::-1], dtype=u.dtype)
        for box, element in zip(self.geometry.boxes, self.elements, strict=True):
            for slab, corners in self._slabs(box):
                where = tuple(slice(lo, hi) for lo, hi in slab[::-1])
                size = int(np.prod([hi - lo for lo, hi in slab]))
                local = xp.matmul(element, self._gather(u, corners, size))
                values = xp.sum(local * self._gather(v, corners, size), axis=-2)
                out[where] = xp.reshape(values, out[where].shape)
        return out

    def _flat(self, field, slab: list[tuple[int, int]]):
        """The per-cell values ``(cells,)`` of a slab of ``field`` ``(*reversed cells)``."""
        return self.xp.reshape(field[tuple(slice(lo, hi) for lo, hi in slab[::-1])], (-1,))

    def coarsen_coefficients(self, coefficients):
        """The next coarser level's coefficients ``(*reversed coarse cells)``: per coarse
        cell the volume-weighted mean of its children's."""
        xp, s = self.xp, coefficients
        for axis, (n, pairs, left, right) in enumerate(self._pairs):
            if pairs == 0:
                continue
            pair = (left * s[_along(axis, slice(0, 2 * pairs, 2))]
                    + right * s[_along(axis, slice(1, 2 * pairs, 2))]) / (left + right)
            s = pair if n % 2 == 0 else xp.concat(
                [pair, s[_along(axis, slice(n - 1, n))]], axis=-1 - axis)
        return s


class LatticeTransfer:
    """Prolongation from a coarse level onto a fine one and its transpose, per axis by
    strided slices (module docstring), on the fine level's library and dtype.

    Parameters
    ----------
    fine, coarse : LevelKernels
        Consecutive levels (``coarse`` made by :func:`coarser_level` of ``fine``'s
        geometry), in one library and dtype.
    """

    def __init__(self, fine: LevelKernels, coarse: LevelKernels) -> None:
        self.fine, self.coarse, xp = fine, coarse, fine.xp
        self._axes = []  # per axis: fine points, coarse points, weights of the odd points
        for axis, (x_fine, x_coarse) in enumerate(zip(fine.geometry.coordinates,
                                                     coarse.geometry.coordinates,
                                                     strict=True)):
            n_fine, n_coarse = x_fine.size, x_coarse.size
            if n_fine == n_coarse:
                continue  # the axis does not coarsen
            odd = (n_fine - 1) // 2  # fine points between two coarse ones
            # the odd point 2k + 1 lies between coarse points k and k + 1
            span = x_coarse[1:odd + 1] - x_coarse[:odd]
            left = (x_coarse[1:odd + 1] - x_fine[1:2 * odd:2]) / span
            shape = (odd,) + (1,) * axis
            self._axes.append((axis, n_fine, n_coarse, odd, *(
                xp.asarray(np.reshape(w, shape).astype(fine.host_dtype))
                for w in (left, 1.0 - left))))

    def prolong(self, coarse):
        """The fine lattice array of a coarse one (masked to the fine free dofs)."""
        return self.interpolate(coarse) * self.fine.free

    def interpolate(self, coarse):
        """The fine lattice array of a coarse one, unmasked: for a caller that reads the
        fine free dofs only."""
        xp, u = self.fine.xp, coarse
        for axis, n_fine, n_coarse, odd, left, right in self._axes:
            shape = list(u.shape)
            shape[-1 - axis] = n_fine
            out = xp.zeros(tuple(shape), dtype=u.dtype)
            even = (n_fine + 1) // 2
            out[_along(axis, slice(0, 2 * even - 1, 2))] = u[_along(axis, slice(0, even))]
            if n_fine % 2 == 0:  # the last point is a coarse one after an odd count
                out[_along(axis, slice(n_fine - 1, n_fine))] = u[
                    _along(axis, slice(n_coarse - 1, n_coarse))]
            if odd:
                out[_along(axis, slice(1, 2 * odd, 2))] = (
                    left * u[_along(axis, slice(0, odd))]
                    + right * u[_along(axis, slice(1, odd + 1))])
            u = out
        return u

    def restrict(self, fine):
        """The coarse lattice array ``Pᵀ fine`` (masked to the coarse free dofs)."""
        return self.anterpolate(fine * self.fine.free) * self.coarse.free

    def anterpolate(self, fine):
        """The transpose of :meth:`interpolate`, unmasked: for a ``fine`` zero at the
        eliminated dofs and a caller that reads the coarse free dofs only."""
        xp, u = self.fine.xp, fine
        for axis, n_fine, n_coarse, odd, left, right in reversed(self._axes):
            shape = list(u.shape)
            shape[-1 - axis] = n_coarse
            out = xp.zeros(tuple(shape), dtype=u.dtype)
            even = (n_fine + 1) // 2
            out[_along(axis, slice(0, even))] = u[_along(axis, slice(0, 2 * even - 1, 2))]
            if n_fine % 2 == 0:
                out[_along(axis, slice(n_coarse - 1, n_coarse))] = u[
                    _along(axis, slice(n_fine - 1, n_fine))]
            if odd:
                middle = u[_along(axis, slice(1, 2 * odd, 2))]
                out[_along(axis, slice(0, odd))] += left * middle
                out[_along(axis, slice(1, odd + 1))] += right * middle
            u = out
        return u

"""The overhang filter along an oblique build direction: Langelaar's recursion on cell heights.

Printed along a unit vector ``n`` that is not a lattice axis, the lattice has no layers; the
cells are ordered by their height ``n · c`` (``c`` the centroid) instead, and each cell is
printed after the cells that support it, as in Langelaar's filter (:mod:`fesens.opt.overhang`):

    ``ξ_e = smin(x_e, Ξ_e)``,  ``Ξ_e = smax(ξ_s : s ∈ S_e)``,

with the same smooth minimum and maximum (``P``, ``ε``, ``ξ_0``, the shifts; void outside
the domain). The supporting region is Gaynor & Guest's cone: ``S_e`` holds the cells that
touch cell ``e`` (a face, an edge or a corner: offsets in ``{−1, 0, 1}`` per axis) whose
centroid lies in the cone of half-angle ``90° − α`` about ``−n`` below ``e``'s, that is the
angle between ``c_e − c_s`` and ``n`` is at most ``90° − α``, for the critical angle ``α``
measured from the build plate. Along an axis this region is Langelaar's (the three cells
below at 45° in 2D, the cross of five in 3D; the cell right below at 90°), which is why that
path keeps its layer filter. The region changes only where the cone's surface passes through
a neighbour's centroid, the angles ``90° − ∠(c_e − c_s, n)`` at which a wall of those cells
is inclined exactly ``α``: these are the realizable angles (:func:`oblique_angles`; for
``n = [1, 1]/√2`` 90° and 45°, for ``[1, 1, 1]/√3`` 90°, 54.74°, 35.26°, 19.47°), others are
refused, listing them.

The build plate is the plane normal to ``n`` through the domain's lowest point; the cells
touching it (the lowest centroids: one corner cell of a box along ``[1, 1, 1]/√3``) print as
they are. Every support lies at least ``δ = min_s n · (c_e − c_s) > 0`` lower than the cell
it supports, so cells in a height band narrower than ``δ`` never support each other: the
recursion processes such bands in order of height, each at once, and the adjoint (the
VJP) runs through them in reverse, exactly as the layer filter's:

    ``x̄_e = ∂smin/∂x · (ξ̄_e + λ_e)``,  ``λ_s += ∂Ξ_e/∂ξ_s · ∂smin/∂Ξ · (ξ̄_e + λ_e)``.

References
----------
A. T. Gaynor, J. K. Guest, "Topology optimization considering overhang constraints:
eliminating sacrificial support material in additive manufacturing through design", Struct.
Multidisc. Optim. 54 (2016) 1157–1172, doi:10.1007/s00158-016-1551-x (the support cone below
a cell about the build direction, half-angle ``90° − α``).
M. Langelaar, "An additive manufacturing filter for topology optimization of print-ready
designs", Struct. Multidisc. Optim. 55 (2017) 871–883, doi:10.1007/s00158-016-1522-2 (the
recursion, smooth maximum and minimum, and their adjoint, here ordered by height).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from fesens.ad.registry import defjvp, defvjp
from fesens.ad.tracer import primitive
from fesens.mesh.mesh import Mesh
from fesens.opt.cell_lattice import cell_lattice
from fesens.opt.overhang import (
    ANGLE_TOLERANCE,
    OverhangAngleError,
    OverhangFilter,
    along_axis,
    checked_smoothing,
    smooth_max_constants,
    smooth_min,
    smooth_min_slope,
    unit_vector,
)

#: Slack (degrees) with which a neighbour's centroid on the cone's surface counts as inside.
CONE_SLACK = 1e-6


def _neighbour_angles(normal: np.ndarray, spacing: np.ndarray
                      ) -> list[tuple[tuple[int, ...], float]]:
    """``(offset, angle)`` of each cell touching a cell and lying below it: the offset
    ``(dim,)`` in cells from the cell to the neighbour, and ``∠(c_e − c_s, n)`` in degrees
    (below 90°). Axes of one cell (infinite spacing) have no neighbours along them."""
    steps = [(0,) if not math.isfinite(h) else (-1, 0, 1) for h in spacing]
    found = []
    for offset in itertools.product(*steps):
        if not any(offset):
            continue
        rise = -np.array([o * h if o else 0.0 for o, h in zip(offset, spacing, strict=True)])
        along = float(normal @ rise)
        # atan2 of the parts across and along n: exact to rounding near 0° and 90°.
        angle = math.degrees(math.atan2(float(np.linalg.norm(rise - along * normal)), along))
        if angle < 90.0 - CONE_SLACK:
            found.append((offset, angle))
    return found


def oblique_angles(normal: Sequence[float], spacing: Sequence[float]) -> list[float]:
    """The critical angles (degrees from the build plate, descending) the cone realizes along
    the unit vector ``normal`` ``(dim,)`` on cells of size ``spacing`` ``(dim,)``: ``90° −
    ∠(c_e − c_s, n)`` of the neighbours below a cell, rounded to 1e-9 degree."""
    angles = _neighbour_angles(np.asarray(normal, dtype=float),
                               np.asarray(spacing, dtype=float))
    return sorted({round(90.0 - angle, 9) for _, angle in angles}, reverse=True)


def oblique_offsets(normal: Sequence[float], spacing: Sequence[float],
                    angle: float) -> list[tuple[int, ...]]:
    """The supporting region of a cell as offsets ``(dim,)`` in cells, the one closest to
    ``−n`` first: the touching cells whose centroid lies in the cone of half-angle ``90° −
    angle`` about ``−normal``.

    Raises
    ------
    OverhangAngleError
        For an angle out of ``(0, 90]`` or not one of :func:`oblique_angles`, listing those.
    """
    if isinstance(angle, bool) or not isinstance(angle, int | float) \
            or not 0.0 < angle <= 90.0:
        raise OverhangAngleError(f"the overhang angle {angle!r} must be a number of degrees "
                                 "in (0, 90], measured from the build plate")
    normal, spacing = np.asarray(normal, dtype=float), np.asarray(spacing, dtype=float)
    realizable = oblique_angles(normal, spacing)
    if not realizable:
        raise OverhangAngleError("no cell of this lattice lies below another along the build "
                                 "direction: there is nothing to support a cell with")
    nearest = min(realizable, key=lambda a: abs(a - angle))
    if abs(nearest - angle) > ANGLE_TOLERANCE:
        shown = "[" + ", ".join(f"{c:.4g}" for c in normal) + "]"
        raise OverhangAngleError(
            f"the overhang angle {angle!r} is not realized along the build direction {shown}: "
            "a cell is supported by the cells touching it whose centroid lies in the cone of "
            "half-angle 90° − angle below it, so the realizable angles are those at which a "
            f"neighbour lies on the cone: {', '.join(f'{a:.2f}' for a in realizable)} "
            f"degrees; the nearest is {nearest:.2f}")
    region = [(o, a) for o, a in _neighbour_angles(normal, spacing)
              if a <= 90.0 - nearest + CONE_SLACK]
    return [o for o, _ in sorted(region, key=lambda item: (item[1], item[0]))]


class ObliqueOverhangFilter:
    """The printed densities of a blueprint built along an oblique unit vector.

    Parameters
    ----------
    mesh : Mesh
        quad4 or hex8 cells on a lattice (:func:`~fesens.opt.cell_lattice.cell_lattice`).
    direction : sequence of float
        The build direction, a unit vector ``(dim,)`` (``[0.7071067811865476,
        0.7071067811865476]``); the build plate lies under the domain's lowest point.
    angle : float
        The critical angle in degrees from the build plate, one of :func:`oblique_angles`.
    P, epsilon, xi0 : float
        The smooth maximum's exponent, the smooth minimum's smoothing and the density at
        which the smooth maximum is exact (:class:`~fesens.opt.overhang.OverhangFilter`).

    Raises
    ------
    MeshError
        For a mesh that is not a lattice of quad4/hex8 cells.
    ValueError
        For a direction that is not a unit vector, an angle the cone does not realize or
        parameters out of range.
    """

    #: The map is not affine (a design problem then evaluates its volume exactly).
    linear = False

    def __init__(self, mesh: Mesh, direction: Sequence[float], *, angle: float = 45.0,
                 P: float = 40.0, epsilon: float = 1e-4, xi0: float = 0.5):
        self.lattice = cell_lattice(mesh, "the overhang filter")
        self.dim = mesh.dim
        self.normal = unit_vector(direction, self.dim)
        #: The build direction as given, a tuple of floats.
        self.direction = tuple(float(c) for c in self.normal)
        self.P, self.epsilon, self.xi0 = checked_smoothing(P, epsilon, xi0)
        self.angle = angle
        self._offsets = oblique_offsets(self.normal, self.lattice.spacing, angle)
        self.n_support = len(self._offsets)
        self.Q, self.shift, self.backshift = smooth_max_constants(self.P, self.xi0,
                                                                  self.n_support)
        self._layout()

    def _layout(self) -> None:
        """The supporting cells ``(n_cells, n_support)`` of every cell (``n_cells``: a void
        cell outside the domain), the base cells, and the other cells in bands of height."""
        shape, spacing = self.lattice.shape, self.lattice.spacing
        index = np.array(np.unravel_index(self.lattice.position, shape))   # (dim, n_cells)
        n_cells = index.shape[1]
        cell_at = np.empty(int(np.prod(shape)), dtype=np.int64)
        cell_at[self.lattice.position] = np.arange(n_cells)
        self._support = np.full((n_cells, self.n_support), n_cells, dtype=np.int64)
        for k, offset in enumerate(self._offsets):
            target = index + np.array(offset)[:, None]
            inside = np.all((target >= 0) & (target < np.array(shape)[:, None]), axis=0)
            self._support[inside, k] = cell_at[np.ravel_multi_index(
                tuple(target[:, inside]), shape)]
        finite = np.where(np.isfinite(spacing), spacing, 0.0)
        height = self.normal @ (index * finite[:, None])
        # The smallest rise from a support to the cell it supports: the width of a band.
        rise = min(float(self.normal @ (-np.array(o) * finite)) for o in self._offsets)
        slack = 1e-9 * float(finite.max(initial=1.0))
        self._base = np.flatnonzero(height <= height.min() + slack)
        others = np.setdiff1d(np.arange(n_cells), self._base)
        order = others[np.argsort(height[others], kind="stable")]
        heights = height[order]
        bounds, start = [0], 0
        while start < len(order):
            start = int(np.searchsorted(heights, heights[start] + rise - slack, side="left"))
            bounds.append(start)
        self._order, self._bounds = order, bounds

    def __call__(self, x):
        """The printed densities ``(n_cells,)`` of the blueprint ``x`` ``(n_cells,)``
        (traced: :func:`print_by_height`)."""
        return print_by_height(self, x)

    def _bands(self):
        """Rows of :attr:`_order` per band, lowest first, as slices."""
        return [slice(a, b) for a, b in itertools.pairwise(self._bounds)]

    def _support_power_sum(self, printed: np.ndarray, cells: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
        """``Σ_k (ξ_k + s)^P`` over the region of each of ``cells`` ``(m,)`` and the shifted
        neighbour values ``(m, n_support)``, from ``printed`` ``(n_cells + 1,)`` (void last)."""
        neighbours = printed[self._support[cells]] + self.shift
        return np.sum(neighbours ** self.P, axis=1), neighbours

    def printed(self, x: np.ndarray) -> np.ndarray:
        """The printed densities ``(n_cells,)`` of the blueprint ``x`` ``(n_cells,)``
        (untraced), one band of heights after the other from the build plate."""
        x = np.asarray(x, dtype=float)
        printed = np.append(x, 0.0)    # base cells as they are, the void cell last
        for rows in self._bands():
            cells = self._order[rows]
            power_sum, _ = self._support_power_sum(printed, cells)
            support = power_sum ** (1.0 / self.Q) - self.backshift
            printed[cells] = smooth_min(x[cells], support, self.epsilon)
        return printed[:-1]

    def _slopes(self, x: np.ndarray, printed: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``∂smin/∂x``, ``∂smin/∂Ξ`` ``(m,)`` and ``∂Ξ/∂ξ_k`` ``(m, n_support)`` of the
        non-base cells in :attr:`_order` (``m`` of them), at blueprint ``x`` and its
        ``printed`` field."""
        cells = self._order
        power_sum, neighbours = self._support_power_sum(np.append(printed, 0.0), cells)
        support = power_sum ** (1.0 / self.Q) - self.backshift
        dx = smooth_min_slope(np.asarray(x, dtype=float)[cells], support, self.epsilon)
        outer = (self.P / self.Q) * power_sum ** (1.0 / self.Q - 1.0)
        return dx, 1.0 - dx, outer[:, None] * neighbours ** (self.P - 1.0)

    def vjp(self, x: np.ndarray, printed: np.ndarray, g: np.ndarray) -> np.ndarray:
        """``x̄ = (∂ξ/∂x)ᵀ g`` ``(n_cells,)`` for the cotangent ``g`` ``(n_cells,)`` of the
        printed field, by the recursion from the highest band down."""
        dx, dsupport, dneighbour = self._slopes(x, printed)
        g = np.asarray(g, dtype=float)
        from_above = np.zeros(len(g) + 1)
        out = np.empty(len(g))
        for rows in reversed(self._bands()):
            cells = self._order[rows]
            total = g[cells] + from_above[cells]
            out[cells] = dx[rows] * total
            np.add.at(from_above, self._support[cells],
                      dneighbour[rows] * (dsupport[rows] * total)[:, None])
        out[self._base] = g[self._base] + from_above[self._base]
        return out

    def jvp(self, x: np.ndarray, printed: np.ndarray, t: np.ndarray) -> np.ndarray:
        """``ξ̇ = (∂ξ/∂x) t`` ``(n_cells,)`` for the tangent ``t`` ``(n_cells,)`` of the
        blueprint, from the build plate up."""
        dx, dsupport, dneighbour = self._slopes(x, printed)
        t = np.asarray(t, dtype=float)
        out = np.append(t, 0.0)
        for rows in self._bands():
            cells = self._order[rows]
            support_dot = np.sum(dneighbour[rows] * out[self._support[cells]], axis=1)
            out[cells] = dx[rows] * t[cells] + dsupport[rows] * support_dot
        return out[:-1]

    def unsupported(self, rho: np.ndarray, threshold: float = 0.5) -> np.ndarray:
        """Solid cells (``ρ > threshold``) off the build plate with no solid cell in their
        supporting region, ``(n_cells,)`` bool."""
        solid = np.append(np.asarray(rho, dtype=float) > threshold, False)
        violating = solid[:-1] & ~np.any(solid[self._support], axis=1)
        violating[self._base] = False
        return violating


@primitive
def print_by_height(overhang: ObliqueOverhangFilter, x):
    """The printed field ``(n_cells,)`` of the blueprint ``x`` ``(n_cells,)`` under the
    :class:`ObliqueOverhangFilter` ``overhang``; VJP the adjoint recursion by bands from the
    top, JVP the forward one (neither traced again: no second derivatives)."""
    return overhang.printed(x)


defvjp(print_by_height, None, lambda ans, overhang, x: lambda g: overhang.vjp(x, ans, g))
defjvp(print_by_height, None, lambda t, ans, overhang, x: overhang.jvp(x, ans, t))


def overhang_filter(mesh: Mesh, direction: str | Sequence[float] | None = None, **options
                    ) -> OverhangFilter | ObliqueOverhangFilter:
    """The overhang filter of a build direction: Langelaar's layer filter
    (:class:`~fesens.opt.overhang.OverhangFilter`) for a name or a unit vector along an axis,
    :class:`ObliqueOverhangFilter` for a unit vector oblique to the axes; ``options`` are
    both classes' keywords (``angle``, ``P``, ``epsilon``, ``xi0``).

    Raises
    ------
    MeshError, ValueError
        As the classes do.
    """
    if isinstance(direction, list | tuple | np.ndarray) \
            and not along_axis(unit_vector(direction, mesh.dim)):
        return ObliqueOverhangFilter(mesh, direction, **options)
    return OverhangFilter(mesh, direction, **options)

"""The additive-manufacturing (overhang) filter of Langelaar, layer by layer on a lattice.

A design printed layer by layer can only put material where the layer below supports it.
Langelaar's filter maps a blueprint density field ``x`` to the printed field ``ξ``: the base
layer (on the build plate) is printed as it is, and every cell of a higher layer gets

    ``ξ_e = smin(x_e, Ξ_e)``,  ``Ξ_e = smax(ξ_s : s ∈ S_e)``,

the smaller of its blueprint density and the largest printed density of its supporting
region ``S_e`` in the layer below. Cells outside the domain count as void.

The critical angle ``α`` is measured from the build plate (90°: vertical walls only; a
smaller angle is more permissive); a surface inclined at ``α`` or more needs no support.
``S_e`` holds the cells of the layer below whose centroids lie within the lateral distance
``r = h_build / tan α`` of the cell's (a cone of half-angle ``90° − α`` about the build
direction, cut at the layer below): material may then step ``r`` sideways per layer of
height ``h_build``, an overhang of exactly ``α`` along each lateral axis. The default
``α = 45°`` on cubic cells is the papers' region, the cell right below and its face
neighbours (3 cells in 2D, 5 in 3D); widening it to ``k`` cells per lateral axis gives
``α = atan(h_build / (k h_lateral))``, which on cubic cells is 90°, 45°, 26.57°, 18.43°,
14.04° for ``k = 0 .. 4``: the angles this formulation realizes exactly
(:func:`realizable_angles`); steeper ones between 45° and 90° need supports reaching over
several layers (van de Ven et al.'s front propagation), which this filter does not offer. In
3D the region is the disk of radius ``r``, so a diagonal overhang is as steep as an axial one
up to the lattice's steps (the 5-cell region lets a diagonal step one cell per two layers,
as in Langelaar's 3D paper).

The smooth approximations (both papers' eqs., with the published code's shift that keeps
``x^P`` of a void cell away from 0):

* ``smax(ξ_1..ξ_N) = (Σ_k (ξ_k + s)^P)^(1/Q) − s_b`` over the ``N`` cells of ``S_e``,
  ``Q = P + log N / log ξ_0`` (exact when all ``N`` inputs equal ``ξ_0``), ``s = 100 · tiny^(1/P)``,
  ``s_b = 0.95 N^(1/Q) s^(P/Q)`` (``tiny`` the smallest normal double);
* ``smin(x, Ξ) = (x + Ξ − √((x − Ξ)² + ε) + √ε) / 2``, so ``ξ ≤ x + √ε / 2``;

with ``P = 40``, ``ε = 10⁻⁴``, ``ξ_0 = 0.5``. The VJP is the papers' layer-by-layer adjoint
recursion, from the top layer down: with ``λ_i`` the cotangent that the layers above ``i``
send to ``ξ_i`` (``λ_top = 0``),

    ``x̄_i = ∂smin/∂x · (ξ̄_i + λ_i)``,
    ``λ_{i−1} = (∂Ξ_i/∂ξ_{i−1})ᵀ (∂smin/∂Ξ · (ξ̄_i + λ_i))``,  ``x̄_base = ξ̄_base + λ_base``.

In a design chain it comes after the density filter and projection (the blueprint) and
before the stiffness interpolation, which sees the printed field. A build direction oblique
to the lattice's axes has no layers: :mod:`fesens.opt.overhang_oblique` runs the same
recursion over the cells ordered by height, with the smooth maximum and minimum defined
here (:func:`smooth_max_constants`, :func:`smooth_min`).

References
----------
M. Langelaar, "An additive manufacturing filter for topology optimization of print-ready
designs", Struct. Multidisc. Optim. 55 (2017) 871–883, doi:10.1007/s00158-016-1522-2 (2D;
its Matlab code ``AMfilter.m``, the supplement written for top88, was read for ``s``, ``s_b``
and the treatment of the domain's edges).
M. Langelaar, "Topology optimization of 3D self-supporting structures for additive
manufacturing", Additive Manufacturing 12 (2016) 60–70, doi:10.1016/j.addma.2016.06.010
(3D: the five-cell supporting region).
E. van de Ven, R. Maas, C. Ayas, M. Langelaar, F. van Keulen, "Continuous front propagation-
based overhang control for topology optimization with additive manufacturing", Struct.
Multidisc. Optim. 57 (2018) 2075–2091, doi:10.1007/s00158-017-1880-4 (critical angles other
than 45°; here only those a one-layer region realizes).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fesens.ad.registry import defjvp, defvjp
from fesens.ad.tracer import primitive
from fesens.mesh.mesh import Mesh
from fesens.opt.cell_lattice import AXES, cell_lattice

#: The critical angles (degrees from the build plate) the refusal of another one lists: those
#: of ``k = 0 .. LISTED_REACH`` cells per lateral axis.
LISTED_REACH = 4
#: How far (degrees) a requested angle may lie from a realizable one: half a unit of the two
#: decimals the refusal prints them with, so that a printed angle is accepted as it is.
ANGLE_TOLERANCE = 0.005
#: How far a unit vector's length may lie from 1, and its other components from 0.
UNIT_TOLERANCE = 1e-9


class OverhangAngleError(ValueError):
    """A critical overhang angle out of range or not realized by the lattice."""


def checked_smoothing(P: float, epsilon: float, xi0: float) -> tuple[float, float, float]:
    """``(P, ε, ξ_0)`` as floats after checking their ranges (``ValueError`` otherwise)."""
    if not (P >= 1.0 and epsilon > 0.0 and 0.0 < xi0 < 1.0):
        raise ValueError(f"overhang filter parameters out of range: P = {P!r} must be "
                         f">= 1, epsilon = {epsilon!r} > 0 and xi0 = {xi0!r} in (0, 1)")
    return float(P), float(epsilon), float(xi0)


def smooth_max_constants(P: float, xi0: float, n_support: int) -> tuple[float, float, float]:
    """``(Q, s, s_b)`` of the smooth maximum over ``n_support`` cells (module docstring)."""
    Q = P + math.log(n_support) / math.log(xi0)
    # The published code's shift: (ξ + s)^P of a void cell stays a normal number, so the
    # derivative Q⁻¹ P keep^(1/Q − 1) (ξ + s)^(P − 1) is finite; the back-shift takes most
    # of it off again.
    shift = 100.0 * np.finfo(float).tiny ** (1.0 / P)
    return Q, shift, 0.95 * n_support ** (1.0 / Q) * shift ** (P / Q)


def smooth_min(x: np.ndarray, support: np.ndarray, epsilon: float) -> np.ndarray:
    """``smin(x, Ξ) = (x + Ξ − √((x − Ξ)² + ε) + √ε) / 2``, elementwise."""
    return 0.5 * (x + support - np.sqrt((x - support) ** 2 + epsilon) + math.sqrt(epsilon))


def smooth_min_slope(x: np.ndarray, support: np.ndarray, epsilon: float) -> np.ndarray:
    """``∂smin/∂x`` elementwise (``∂smin/∂Ξ = 1 − ∂smin/∂x``)."""
    return 0.5 * (1.0 - (x - support) / np.sqrt((x - support) ** 2 + epsilon))


def build_directions(dim: int) -> tuple[str, ...]:
    """The build directions of a ``dim``-D lattice: ``'+x', '-x', '+y', ...``."""
    return tuple(sign + axis for axis in AXES[:dim] for sign in "+-")


def parse_direction(direction: str | Sequence[float], dim: int) -> tuple[int, int]:
    """``(axis, sign)`` of a build direction: a name such as ``'+z'`` (layers stacked towards
    ``+z``, the build plate at the lowest ``z``) or ``'-x'``, or a unit vector of ``dim``
    components such as ``[0, 0, 1]``, which must lie along a lattice axis.

    Raises
    ------
    ValueError
        For a name that is not one of :func:`build_directions` ``(dim)``, a vector that is not
        a unit vector (its length differs from 1 by more than ``UNIT_TOLERANCE``), or one not
        along an axis.
    """
    if isinstance(direction, list | tuple | np.ndarray) and not isinstance(direction, str):
        return _vector_direction(direction, dim)
    allowed = build_directions(dim)
    if not isinstance(direction, str) or direction not in allowed:
        raise ValueError(f"unknown build direction {direction!r} in {dim}D: use one of "
                         f"{', '.join(map(repr, allowed))} (the direction the layers are "
                         "stacked in, away from the build plate) or a unit vector along one")
    return AXES.index(direction[1]), 1 if direction[0] == "+" else -1


def _vector_direction(vector: Sequence[float], dim: int) -> tuple[int, int]:
    """``(axis, sign)`` of a build direction given as a unit vector (see
    :func:`parse_direction`)."""
    n = unit_vector(vector, dim)
    axis = int(np.argmax(np.abs(n)))
    if not along_axis(n):
        shown = "[" + ", ".join(map(repr, vector)) + "]"
        raise ValueError(
            f"the build direction {shown} is not along a lattice axis: the layer filter "
            "stacks the lattice's planes of cells; an oblique direction needs the filter of "
            "fesens.opt.overhang_oblique (overhang_filter() picks it)")
    return axis, 1 if n[axis] > 0 else -1


def unit_vector(vector: Sequence[float], dim: int) -> np.ndarray:
    """The build direction ``(dim,)`` given as a unit vector of ``dim`` numbers.

    Raises
    ------
    ValueError
        For a vector of another length or of non-numbers, or one whose length differs from
        1 by more than ``UNIT_TOLERANCE``.
    """
    shown = "[" + ", ".join(map(repr, vector)) + "]"
    if len(vector) != dim or not all(isinstance(c, int | float | np.number)
                                     and not isinstance(c, bool) for c in vector):
        raise ValueError(f"the build direction {shown} is not a vector of {dim} numbers in "
                         f"{dim}D")
    n = np.asarray(vector, dtype=float)
    length = float(np.linalg.norm(n)) if np.all(np.isfinite(n)) else math.inf
    if abs(length - 1.0) > UNIT_TOLERANCE:
        raise ValueError(f"the build direction {shown} is not a unit vector (its length is "
                         f"{length:.6g}): give it divided by its length")
    return n


def along_axis(n: np.ndarray) -> bool:
    """Whether the unit vector ``n`` ``(dim,)`` lies along a lattice axis (its other
    components within ``UNIT_TOLERANCE`` of 0)."""
    axis = int(np.argmax(np.abs(n)))
    return bool(np.abs(np.delete(n, axis)).max(initial=0.0) <= UNIT_TOLERANCE)


def realizable_angles(h_build: float, h_lateral: Sequence[float],
                      reach: int = LISTED_REACH) -> list[float]:
    """The critical angles (degrees from the build plate) of supporting regions ``k = 0 ..
    reach`` cells wide along the first lateral axis with ``h_lateral`` ``(dim − 1,)`` cell
    sizes across the build direction and ``h_build`` along it: ``atan(h_build /
    (k h_lateral))``, 90° for ``k = 0``; on cubic cells 90, 45, 26.57, 18.43, 14.04."""
    h = float(h_lateral[0]) if len(h_lateral) else math.inf
    return [90.0 if k == 0 else math.degrees(math.atan2(h_build, k * h))
            for k in range(reach + 1)]


def support_offsets(angle: float, h_build: float,
                    h_lateral: Sequence[float]) -> list[tuple[int, ...]]:
    """The supporting region of a cell as offsets in the layer below ``(dim − 1)`` each,
    the cell right below first: the cells whose centroids lie within the lateral distance
    ``h_build / tan(angle)`` of the cell's.

    Parameters
    ----------
    angle : float
        The critical angle in degrees from the build plate, ``0 < angle ≤ 90``; it must be
        realized exactly along every lateral axis that has more than one cell (a whole
        number ``k`` of cells sideways per layer, to ``ANGLE_TOLERANCE``).
    h_build : float
        The cell size along the build direction.
    h_lateral : sequence of float
        The cell sizes across it ``(dim − 1,)``, ``inf`` for an axis of one cell.

    Raises
    ------
    OverhangAngleError
        For an angle out of range or one the lattice does not realize, listing those it does.
    """
    if isinstance(angle, bool) or not isinstance(angle, int | float) \
            or not 0.0 < angle <= 90.0:
        raise OverhangAngleError(f"the overhang angle {angle!r} must be a number of degrees "
                                 "in (0, 90], measured from the build plate (45: "
                                 "Langelaar's rule)")
    radius = 0.0 if angle == 90.0 else h_build / math.tan(math.radians(angle))
    reach = []
    for h in h_lateral:
        if not math.isfinite(h):  # one cell across: no neighbours along this axis
            reach.append(0)
            continue
        k = round(radius / h)
        realized = 90.0 if k == 0 else math.degrees(math.atan2(h_build, k * h))
        if abs(realized - angle) > ANGLE_TOLERANCE:
            angles = realizable_angles(h_build, [h], max(LISTED_REACH, k + 1))
            listed = ", ".join(f"{a:.2f}" for a in angles[:LISTED_REACH + 1])
            nearest = min(angles, key=lambda a: abs(a - angle))
            raise OverhangAngleError(
                f"the overhang angle {angle!r} is not realized by Langelaar's layer filter on "
                f"this lattice (cells {h_build:g} along the build direction, {h:g} across): "
                "a cell is supported by the cells within k cells in the layer below, the "
                f"angle atan({h_build:g} / (k {h:g})); the realizable ones are {listed}, ... "
                f"degrees (k = 0, 1, 2, ...); the nearest is {nearest:.2f}")
        reach.append(k)
    # The realized radius, k cells along each axis (equal up to the angle's tolerance).
    realized_radius = max((k * h for k, h in zip(reach, h_lateral, strict=True) if k),
                          default=0.0)
    ranges = [range(-k, k + 1) for k in reach]
    offsets = [o for o in itertools.product(*ranges)
               if math.hypot(*(i * h for i, h in zip(o, h_lateral, strict=True) if i))
               <= realized_radius * (1.0 + 1e-6)]
    return sorted(offsets, key=lambda o: (sum(map(abs, o)) > 0, o))


@dataclass(frozen=True)
class _Slopes:
    """The filter's partial derivatives at one design, layers ``1 .. n − 1`` (the base layer
    has none): ``dx`` ``= ∂smin/∂x``, ``dsupport`` ``= ∂smin/∂Ξ``, each of the layers' shape,
    and ``dneighbour[k]`` ``= ∂Ξ/∂ξ`` of the ``k``-th cell of the supporting region."""

    dx: np.ndarray
    dsupport: np.ndarray
    dneighbour: list[np.ndarray]


class OverhangFilter:
    """Langelaar's additive-manufacturing filter: the printed densities of a blueprint.

    Parameters
    ----------
    mesh : Mesh
        quad4 or hex8 cells on a lattice (:func:`~fesens.opt.cell_lattice.cell_lattice`).
    direction : str or sequence of float, optional
        The build direction, one of ``'+x', '-x', '+y', '-y'`` (and ``'+z', '-z'`` in 3D) or
        a unit vector along an axis (``[0, 0, 1]``): layers are stacked that way, the build
        plate under the first layer. Default: up the last axis (``'+y'`` in 2D, ``'+z'`` in
        3D).
    angle : float
        The critical overhang angle in degrees from the build plate (45: the papers' rule);
        one that :func:`support_offsets` realizes on the lattice.
    P : float
        Exponent of the smooth maximum (40 in both papers).
    epsilon : float
        Smoothing of the smooth minimum (10⁻⁴); the printed field may exceed the blueprint
        by ``√ε / 2`` at most.
    xi0 : float
        Density at which the smooth maximum of equal inputs is exact (0.5).

    Raises
    ------
    MeshError
        For a mesh that is not a lattice of quad4/hex8 cells.
    ValueError
        For an unknown direction, an angle the lattice does not realize or parameters out
        of range.
    """

    #: The map is not affine (a design problem then evaluates its volume exactly).
    linear = False

    def __init__(self, mesh: Mesh, direction: str | Sequence[float] | None = None, *,
                 angle: float = 45.0, P: float = 40.0, epsilon: float = 1e-4,
                 xi0: float = 0.5):
        self.lattice = cell_lattice(mesh, "the overhang filter")
        self.dim = mesh.dim
        direction = ("+" + AXES[self.dim - 1]) if direction is None else direction
        self.axis, self.sign = parse_direction(direction, self.dim)
        #: The build direction by name (a vector's too).
        self.direction = ("+" if self.sign > 0 else "-") + AXES[self.axis]
        self.P, self.epsilon, self.xi0 = checked_smoothing(P, epsilon, xi0)
        spacing = self.lattice.spacing
        self.angle = angle
        self._offsets = support_offsets(angle, float(spacing[self.axis]),
                                        [float(h) for h in np.delete(spacing, self.axis)])
        #: Cells of padding per lateral axis: the region's reach.
        self._pad = tuple(max(abs(o[a]) for o in self._offsets) for a in range(self.dim - 1))
        self.n_support = len(self._offsets)
        self.Q, self.shift, self.backshift = smooth_max_constants(self.P, self.xi0,
                                                                  self.n_support)

    def __call__(self, x):
        """The printed densities ``(n_cells,)`` of the blueprint ``x`` ``(n_cells,)``
        (traced: :func:`print_layers`)."""
        return print_layers(self, x)

    # ------------------------------------------------------------ lattice layers
    def to_layers(self, values: np.ndarray) -> np.ndarray:
        """A cell field ``(n_cells,)`` as layers: the build axis first, the base layer at
        index 0, the other axes in order."""
        grid = np.moveaxis(self.lattice.to_grid(values), self.axis, 0)
        return np.ascontiguousarray(grid[::self.sign])

    def from_layers(self, layers: np.ndarray) -> np.ndarray:
        """The cell field ``(n_cells,)`` of :meth:`to_layers`' array."""
        return self.lattice.from_grid(np.moveaxis(layers[::self.sign], 0, self.axis))

    def _padded(self, layers: np.ndarray, value: float) -> np.ndarray:
        """``layers`` ``(n, ...)`` with the region's reach of ``value`` cells around each
        layer."""
        return np.pad(layers, [(0, 0)] + [(p, p) for p in self._pad], constant_values=value)

    def _neighbours(self, padded: np.ndarray) -> list[tuple[slice, ...]]:
        """Per supporting offset, the slice of a :meth:`_padded` array that puts each cell's
        neighbour at that offset where the cell is."""
        sizes = padded.shape[1:]
        return [(slice(None),) + tuple(slice(p + o, n - p + o) for o, n, p
                                       in zip(offset, sizes, self._pad, strict=True))
                for offset in self._offsets]

    def _support_power_sum(self, below: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """``Σ_k (ξ_k + s)^P`` over the supporting region of each cell of the layers above
        ``below`` ``(m, ...)``, and the shifted neighbour values ``ξ_k + s`` themselves."""
        padded = self._padded(below + self.shift, self.shift)
        neighbours = [padded[view] for view in self._neighbours(padded)]
        return sum(n ** self.P for n in neighbours), neighbours

    # ------------------------------------------------------------ map and derivatives
    def printed(self, x: np.ndarray) -> np.ndarray:
        """The printed densities ``(n_cells,)`` of the blueprint ``x`` ``(n_cells,)``
        (untraced), one layer after the other from the build plate."""
        blueprint = self.to_layers(np.asarray(x, dtype=float))
        layers = np.empty_like(blueprint)
        layers[0] = blueprint[0]
        for i in range(1, len(layers)):
            power_sum, _ = self._support_power_sum(layers[i - 1:i])
            support = power_sum[0] ** (1.0 / self.Q) - self.backshift
            layers[i] = smooth_min(blueprint[i], support, self.epsilon)
        return self.from_layers(layers)

    def _slopes(self, x: np.ndarray, printed: np.ndarray) -> _Slopes:
        """The partial derivatives of every layer at blueprint ``x`` and its ``printed``
        field (both ``(n_cells,)``), all layers at once: each depends only on the layer
        below, which ``printed`` holds."""
        blueprint, layers = self.to_layers(x), self.to_layers(printed)
        power_sum, neighbours = self._support_power_sum(layers[:-1])
        support = power_sum ** (1.0 / self.Q) - self.backshift
        dx = smooth_min_slope(blueprint[1:], support, self.epsilon)
        outer = (self.P / self.Q) * power_sum ** (1.0 / self.Q - 1.0)
        return _Slopes(dx, 1.0 - dx, [outer * n ** (self.P - 1.0) for n in neighbours])

    def vjp(self, x: np.ndarray, printed: np.ndarray, g: np.ndarray) -> np.ndarray:
        """``x̄ = (∂ξ/∂x)ᵀ g`` ``(n_cells,)`` for the cotangent ``g`` of the printed field,
        by the layer-by-layer recursion from the top layer down."""
        slopes = self._slopes(x, printed)
        cotangent = self.to_layers(np.asarray(g, dtype=float))
        out = np.empty_like(cotangent)
        from_above = np.zeros(cotangent.shape[1:])
        for i in range(len(cotangent) - 1, 0, -1):
            total = cotangent[i] + from_above
            out[i] = slopes.dx[i - 1] * total
            support_bar = slopes.dsupport[i - 1] * total
            padded = self._padded(np.zeros((1, *total.shape)), 0.0)
            for view, slope in zip(self._neighbours(padded), slopes.dneighbour, strict=True):
                padded[view] += slope[i - 1] * support_bar
            from_above = padded[(0,) + tuple(slice(p, p + n) for p, n
                                             in zip(self._pad, total.shape, strict=True))]
        out[0] = cotangent[0] + from_above
        return self.from_layers(out)

    def jvp(self, x: np.ndarray, printed: np.ndarray, t: np.ndarray) -> np.ndarray:
        """``ξ̇ = (∂ξ/∂x) t`` ``(n_cells,)`` for the tangent ``t`` of the blueprint, from the
        build plate up."""
        slopes = self._slopes(x, printed)
        tangent = self.to_layers(np.asarray(t, dtype=float))
        out = np.empty_like(tangent)
        out[0] = tangent[0]
        for i in range(1, len(tangent)):
            padded = self._padded(out[i - 1:i], 0.0)
            support_dot = sum(slope[i - 1:i] * padded[view] for view, slope
                              in zip(self._neighbours(padded), slopes.dneighbour, strict=True))
            out[i] = slopes.dx[i - 1] * tangent[i] + slopes.dsupport[i - 1] * support_dot[0]
        return self.from_layers(out)

    # ------------------------------------------------------------ checks of a design
    def unsupported(self, rho: np.ndarray, threshold: float = 0.5) -> np.ndarray:
        """Solid cells (``ρ > threshold``) above the base layer with no solid cell in their
        supporting region: those that violate the overhang rule, ``(n_cells,)`` bool."""
        solid = self.to_layers(np.asarray(rho, dtype=float)) > threshold
        padded = self._padded(solid[:-1], False)
        supported = np.zeros(solid[1:].shape, dtype=bool)
        for view in self._neighbours(padded):
            supported |= padded[view]
        violating = np.zeros_like(solid)
        violating[1:] = solid[1:] & ~supported
        return self.from_layers(violating)


@primitive
def print_layers(overhang: OverhangFilter, x):
    """The printed field ``(n_cells,)`` of the blueprint ``x`` ``(n_cells,)`` under the
    :class:`OverhangFilter` ``overhang``; VJP its layer-by-layer adjoint recursion, JVP the
    forward recursion of tangents (neither is traced again: no second derivatives)."""
    return overhang.printed(x)


defvjp(print_layers, None, lambda ans, overhang, x: lambda g: overhang.vjp(x, ans, g))
defjvp(print_layers, None, lambda t, ans, overhang, x: overhang.jvp(x, ans, t))

"""The additive-manufacturing (overhang) filter of Langelaar, layer by layer on a lattice.

A design printed layer by layer can only put material where the layer below supports it.
Langelaar's filter maps a blueprint density field ``x`` to the printed field ``ξ``: the base
layer (on the build plate) is printed as it is, and every cell of a higher layer gets

    ``ξ_e = smin(x_e, Ξ_e)``,  ``Ξ_e = smax(ξ_s : s ∈ S_e)``,

the smaller of its blueprint density and the largest printed density of its supporting
region ``S_e`` in the layer below: the cell right below and its face neighbours in that
layer (3 cells in 2D, 5 in 3D), so that material overhangs by at most 45° on cubic cells
(``atan(h_build / h_lateral)`` on others). Cells outside the domain count as void. The
smooth approximations (both papers' eqs., with the published code's shift that keeps
``x^P`` of a void cell away from 0):

* ``smax(ξ_1..ξ_N) = (Σ_k (ξ_k + s)^P)^(1/Q) − s_b``, ``Q = P + log N / log ξ_0`` (exact
  when all ``N`` inputs equal ``ξ_0``), ``s = 100 · tiny^(1/P)``,
  ``s_b = 0.95 N^(1/Q) s^(P/Q)`` (``tiny`` the smallest normal double);
* ``smin(x, Ξ) = (x + Ξ − √((x − Ξ)² + ε) + √ε) / 2``, so ``ξ ≤ x + √ε / 2``;

with ``P = 40``, ``ε = 10⁻⁴``, ``ξ_0 = 0.5``. The VJP is the papers' layer-by-layer adjoint
recursion, from the top layer down: with ``λ_i`` the cotangent that the layers above ``i``
send to ``ξ_i`` (``λ_top = 0``),

    ``x̄_i = ∂smin/∂x · (ξ̄_i + λ_i)``,
    ``λ_{i−1} = (∂Ξ_i/∂ξ_{i−1})ᵀ (∂smin/∂Ξ · (ξ̄_i + λ_i))``,  ``x̄_base = ξ̄_base + λ_base``.

In a design chain it comes after the density filter and projection (the blueprint) and
before the stiffness interpolation, which sees the printed field.

References
----------
M. Langelaar, "An additive manufacturing filter for topology optimization of print-ready
designs", Struct. Multidisc. Optim. 55 (2017) 871–883, doi:10.1007/s00158-016-1522-2 (2D;
its Matlab code ``AMfilter.m``, the supplement written for top88, was read for ``s``, ``s_b``
and the treatment of the domain's edges).
M. Langelaar, "Topology optimization of 3D self-supporting structures for additive
manufacturing", Additive Manufacturing 12 (2016) 60–70, doi:10.1016/j.addma.2016.06.010
(3D: the five-cell supporting region).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fesens.ad.registry import defjvp, defvjp
from fesens.ad.tracer import primitive
from fesens.mesh.mesh import Mesh
from fesens.opt.cell_lattice import AXES, cell_lattice


def build_directions(dim: int) -> tuple[str, ...]:
    """The build directions of a ``dim``-D lattice: ``'+x', '-x', '+y', ...``."""
    return tuple(sign + axis for axis in AXES[:dim] for sign in "+-")


def parse_direction(direction: str, dim: int) -> tuple[int, int]:
    """``(axis, sign)`` of a build direction such as ``'+z'`` (layers stacked towards
    ``+z``, the build plate at the lowest ``z``) or ``'-x'``.

    Raises
    ------
    ValueError
        For a direction that is not one of :func:`build_directions` ``(dim)``.
    """
    allowed = build_directions(dim)
    if not isinstance(direction, str) or direction not in allowed:
        raise ValueError(f"unknown build direction {direction!r} in {dim}D: use one of "
                         f"{', '.join(map(repr, allowed))} (the direction the layers are "
                         "stacked in, away from the build plate)")
    return AXES.index(direction[1]), 1 if direction[0] == "+" else -1


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
    direction : str, optional
        The build direction, one of ``'+x', '-x', '+y', '-y'`` (and ``'+z', '-z'`` in 3D):
        layers are stacked that way, the build plate under the first layer. Default: up the
        last axis (``'+y'`` in 2D, ``'+z'`` in 3D).
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
        For an unknown direction or parameters out of range.
    """

    #: The map is not affine (a design problem then evaluates its volume exactly).
    linear = False

    def __init__(self, mesh: Mesh, direction: str | None = None, *, P: float = 40.0,
                 epsilon: float = 1e-4, xi0: float = 0.5):
        self.lattice = cell_lattice(mesh, "the overhang filter")
        self.dim = mesh.dim
        direction = ("+" + AXES[self.dim - 1]) if direction is None else direction
        self.axis, self.sign = parse_direction(direction, self.dim)
        self.direction = direction
        if not (P >= 1.0 and epsilon > 0.0 and 0.0 < xi0 < 1.0):
            raise ValueError(f"overhang filter parameters out of range: P = {P!r} must be "
                             f">= 1, epsilon = {epsilon!r} > 0 and xi0 = {xi0!r} in (0, 1)")
        self.P, self.epsilon, self.xi0 = float(P), float(epsilon), float(xi0)
        self.n_support = 2 * self.dim - 1
        self.Q = self.P + math.log(self.n_support) / math.log(self.xi0)
        # The published code's shift: (ξ + s)^P of a void cell stays a normal number, so the
        # derivative Q⁻¹ P keep^(1/Q − 1) (ξ + s)^(P − 1) is finite; the back-shift takes
        # most of it off again.
        self.shift = 100.0 * np.finfo(float).tiny ** (1.0 / self.P)
        self.backshift = 0.95 * self.n_support ** (1.0 / self.Q) \
            * self.shift ** (self.P / self.Q)
        self._offsets = self._support_offsets()

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

    def _support_offsets(self) -> list[tuple[int, ...]]:
        """The supporting region as offsets in the layer below: the cell itself and its
        face neighbours along each lateral axis."""
        lateral = self.dim - 1
        offsets = [(0,) * lateral]
        for axis in range(lateral):
            for step in (-1, 1):
                offsets.append(tuple(step if a == axis else 0 for a in range(lateral)))
        return offsets

    def _padded(self, layers: np.ndarray, value: float) -> np.ndarray:
        """``layers`` ``(n, ...)`` with one cell of ``value`` around each layer."""
        return np.pad(layers, [(0, 0)] + [(1, 1)] * (layers.ndim - 1), constant_values=value)

    def _neighbours(self, padded: np.ndarray) -> list[tuple[slice, ...]]:
        """Per supporting offset, the slice of a :meth:`_padded` array that puts each cell's
        neighbour at that offset where the cell is."""
        sizes = padded.shape[1:]
        return [(slice(None),) + tuple(slice(1 + o, n - 1 + o) for o, n in zip(offset, sizes,
                                                                            strict=True))
                for offset in self._offsets]

    def _support_power_sum(self, below: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """``Σ_k (ξ_k + s)^P`` over the supporting region of each cell of the layers above
        ``below`` ``(m, ...)``, and the shifted neighbour values ``ξ_k + s`` themselves."""
        padded = self._padded(below + self.shift, self.shift)
        neighbours = [padded[view] for view in self._neighbours(padded)]
        return sum(n ** self.P for n in neighbours), neighbours

    def _smooth_min(self, x: np.ndarray, support: np.ndarray) -> np.ndarray:
        eps = self.epsilon
        return 0.5 * (x + support - np.sqrt((x - support) ** 2 + eps) + math.sqrt(eps))

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
            layers[i] = self._smooth_min(blueprint[i], support)
        return self.from_layers(layers)

    def _slopes(self, x: np.ndarray, printed: np.ndarray) -> _Slopes:
        """The partial derivatives of every layer at blueprint ``x`` and its ``printed``
        field (both ``(n_cells,)``), all layers at once: each depends only on the layer
        below, which ``printed`` holds."""
        blueprint, layers = self.to_layers(x), self.to_layers(printed)
        power_sum, neighbours = self._support_power_sum(layers[:-1])
        support = power_sum ** (1.0 / self.Q) - self.backshift
        dx = 0.5 * (1.0 - (blueprint[1:] - support)
                    / np.sqrt((blueprint[1:] - support) ** 2 + self.epsilon))
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
            from_above = padded[(0,) + tuple(slice(1, -1) for _ in total.shape)]
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

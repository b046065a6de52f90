"""Material interpolation of densities: stiffness, and where one has them mass, cost and phases.

* SIMP (Bendsøe 1989): ``s(ρ) = s_min + ρ^p (1 − s_min)``.
* RAMP (Stolpe & Svanberg 2001): ``s(ρ) = s_min + ρ / (1 + q (1 − ρ)) (1 − s_min)``.
* Du & Olhoff (2007), Pedersen (2000): SIMP-like stiffness with a mass interpolation ``m(ρ)``
  that keeps void regions from carrying spurious low-frequency modes (frequency design,
  :mod:`fesens.opt.frequency`).
* Ordered SIMP (Zuo & Saitou 2017): several solid phases and void with one variable per
  cell, the density normalised by the densest phase's, SIMP-like between consecutive phases.

Every interpolation subclasses :class:`Interpolation`, which declares what else one may
offer (a mass law, the phases' cost, several solid phases) with its default; the
projections of the densities are :mod:`fesens.opt.projection`.

The penalty may follow a :class:`~fesens.opt.continuation.Continuation`.

Grayness: each interpolation knows the values a crisp design variable takes
(:meth:`Interpolation.admissible_values`: void and solid, or void and every phase of the
ordered SIMP); :meth:`Interpolation.grayness` measures a cell's distance to the nearest of
them, Sigmund's measure of non-discreteness between each two adjacent values.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.arrays import namespace
from fesens.opt import projection
from fesens.opt.continuation import Continuation


class Interpolation(ABC):
    """What every material interpolation is: the stiffness scale ``s(ρ)`` of densities, a
    penalty ``p`` that may follow a continuation, the values of a crisp design, and what
    else it offers, each declared here with its default.

    Parameters
    ----------
    penalty : float or Continuation
        The penalty ``p`` (at least :attr:`least_penalty`).
    minimum : float
        Stiffness floor ``s_min``.
    """

    name: str = ""
    """The interpolation's name in :data:`INTERPOLATIONS` (the config's
    ``[penalization] type``)."""
    least_penalty: float = 0.0
    """The smallest penalty that penalizes intermediate densities."""
    interpolates_mass: bool = False
    """True when :meth:`mass` is a law of its own that keeps void regions from carrying
    spurious low-frequency modes (Du & Olhoff, Pedersen), which frequency design needs;
    False: the mass is the density itself."""
    offers_cost: bool = False
    """True when the interpolation prices its phases, ``cost(x)`` (the ordered SIMP)."""
    multiphase: bool = False
    """True when it has several solid phases: ``phases(x)``, ``labels()`` and
    ``mass_density(x)`` (the ordered SIMP)."""

    def __init__(self, penalty: float | Continuation = 3.0, minimum: float = 1e-9):
        self.schedule = penalty if isinstance(penalty, Continuation) else Continuation(penalty)
        for value in (self.schedule.start, self.schedule.final):
            if value is not None and value < self.least_penalty:
                raise ValueError(f"{self.name.upper()} needs a penalty ≥ "
                                 f"{self.least_penalty:g}, got {value!r}")
        self.minimum = minimum
        self.parameter = self.schedule.value(1)

    def update(self, iteration: int) -> None:
        """Start 1-based ``iteration``: take the scheduled penalty."""
        self.parameter = self.schedule.value(iteration)

    @abstractmethod
    def __call__(self, rho):
        """The stiffness scale ``s(ρ)`` ``(n,)`` of densities ``(n,)`` (traced)."""

    def mass(self, rho):
        """The mass factor ``m(ρ)`` of densities ``(n_cells,)`` (traced): ``ρ`` itself."""
        return rho

    def admissible_values(self) -> np.ndarray:
        """The values of the design variable in a crisp design, increasing, ``(k,)``:
        void 0 and solid 1."""
        return np.array([0.0, 1.0])

    def grayness(self, x):
        """How far each cell is from a crisp design, ``(n,)`` in ``[0, 1]`` for densities
        ``x`` ``(n,)`` (untraced; in ``x``'s array library).

        Between two adjacent admissible values ``a < b`` (:meth:`admissible_values`) it is
        ``4 (x − a)(b − x) / (b − a)²``: 0 at either value, 1 midway. With the values 0
        and 1 it is ``4 x (1 − x)``, whose volume mean is Sigmund's measure of
        non-discreteness (Struct. Multidisc. Optim. 33, 2007, 401–424).
        """
        xp = namespace(x)
        values = [float(value) for value in self.admissible_values()]
        # the parabola of the interval holding x is its only positive one
        worst = xp.zeros_like(x)
        for low, high in zip(values[:-1], values[1:], strict=True):
            worst = xp.maximum(worst, 4.0 * (x - low) * (high - x) / (high - low) ** 2)
        return worst


class SIMP(Interpolation):
    """SIMP interpolation ``s_min + ρ^p (1 − s_min)`` (``p`` may follow a continuation)."""

    name = "simp"
    #: Smallest sensible penalty: ``p < 1`` makes ``ρ^p`` concave, which rewards intermediate
    #: densities instead of penalizing them (``p = 1`` is the variable-thickness sheet).
    least_penalty = 1.0

    def __call__(self, rho):
        return self.minimum + rho**self.parameter * (1.0 - self.minimum)


class RAMP(SIMP):
    """RAMP interpolation ``s_min + ρ / (1 + q (1 − ρ)) (1 − s_min)``."""

    name = "ramp"
    #: RAMP penalizes intermediate densities for every ``q > 0``.
    least_penalty = 0.0

    def __init__(self, penalty: float | Continuation = 8.0, minimum: float = 1e-9):
        super().__init__(penalty, minimum)

    def __call__(self, rho):
        return self.minimum + rho / (1.0 + self.parameter * (1.0 - rho)) * (1.0 - self.minimum)


#: Below this density the interpolations of Du & Olhoff and Pedersen switch branch.
THRESHOLD = 0.1


class DuOlhoff(SIMP):
    """SIMP stiffness ``s_min + ρ^p (1 − s_min)`` with Du & Olhoff's (2007) mass
    ``m(ρ) = ρ`` for ``ρ > 0.1``, ``6·10⁵ ρ⁶ − 5·10⁶ ρ⁷`` below (plus ``mass_minimum``).

    Parameters
    ----------
    penalty : float or Continuation
        SIMP exponent ``p`` (Du & Olhoff: 3).
    minimum : float
        Stiffness floor ``s_min``.
    mass_minimum : float
        Mass floor, so that no free dof is massless (a singular mass matrix) where the
        density is exactly 0; small next to ``s_min`` keeps void regions stiff for their mass.
    """

    name = "du-olhoff"
    interpolates_mass = True
    #: ``c₁ ρ⁶ + c₂ ρ⁷`` has value 0.1 and slope 1 at ρ = 0.1.
    C1, C2 = 6e5, -5e6

    def __init__(self, penalty: float | Continuation = 3.0, minimum: float = 1e-9,
                 mass_minimum: float = 1e-12):
        super().__init__(penalty, minimum)
        if not 0.0 < mass_minimum < 1.0:
            raise ValueError(f"mass_minimum must be in (0, 1), got {mass_minimum!r}")
        self.mass_minimum = mass_minimum

    def mass(self, rho):
        """The mass factor ``m(ρ)`` of densities ``(n_cells,)`` (traced)."""
        low = self.C1 * rho**6 + self.C2 * rho**7
        return self.mass_minimum + np.where(rho > THRESHOLD, rho, low) * (1.0 - self.mass_minimum)


class Pedersen(DuOlhoff):
    """Pedersen's (2000) stiffness ``s(ρ) = ρ^p`` for ``ρ > 0.1``, ``0.1^(p−1) ρ`` below
    (floored at ``s_min``), with the linear mass ``m(ρ) = ρ`` (floored at ``mass_minimum``).

    Parameters as :class:`DuOlhoff`.
    """

    name = "pedersen"

    def __call__(self, rho):
        p = self.parameter
        low = THRESHOLD ** (p - 1.0) * rho
        return self.minimum + np.where(rho > THRESHOLD, rho**p, low) * (1.0 - self.minimum)

    def mass(self, rho):
        """The mass factor ``m(ρ) = m_min + ρ (1 − m_min)`` (traced)."""
        return self.mass_minimum + rho * (1.0 - self.mass_minimum)


class OrderedSIMP(SIMP):
    """Ordered SIMP interpolation of ``m`` solid phases and void (Zuo & Saitou 2017).

    W. Zuo and K. Saitou, "Multi-material topology optimization using ordered SIMP
    interpolation", Struct. Multidisc. Optim. 55 (2017) 477–491.

    One design variable per cell, its density normalised by the densest phase's,
    ``x ∈ [0, 1]``. The phases ``i = 1..m``, sorted by density, sit at the breakpoints
    ``x_i = d_i / d_m`` (void: ``x_0 = 0``) with the relative moduli ``Ê_i = E_i / E_m``
    (void: ``s_min``) and costs per unit mass ``P̂_i = c_i / c_m`` (void: 0). On
    ``(x_i, x_{i+1}]`` (the first interval closed at 0 as well)::

        s(x) = A_i x^p + B_i,   A_i = (Ê_i − Ê_{i+1}) / (x_i^p − x_{i+1}^p),
                                B_i = Ê_i − A_i x_i^p,

    so ``s`` is continuous, ``s(x_i) = Ê_i``, and penalizes densities between two phases
    as SIMP does between void and solid; the cost per unit mass ``P(x)`` is interpolated
    alike with the exponent ``1/p``, which makes intermediate densities expensive. The
    derivative is ``p A_i x^(p−1)`` inside an interval; at a breakpoint it is that of the
    interval below it, which is closed on the right (the paper's code). A cell's mass is
    ``x`` times its volume (in units of the densest phase's density): the volume
    constraint of a :class:`~fesens.opt.DesignProblem` on ``x`` is the mass constraint.

    The stiffness scale is relative to the stiffest phase, which must be the densest: the
    model's material is that of the densest phase. Only the ratios of the moduli, densities
    and costs enter.

    Parameters
    ----------
    penalty : float or Continuation
        The exponent ``p`` (Zuo & Saitou: 3).
    minimum : float
        Stiffness of void relative to the densest phase, ``s_min``.
    moduli : sequence of float
        ``(m,)`` Young's moduli (stiffness coefficients) of the solid phases, ``m`` = 2 or 3.
    densities : sequence of float
        ``(m,)`` their mass densities; both increase strictly from phase to phase (a
        heavier phase that is not stiffer would never be chosen by a compliance design).
    costs : sequence of float, optional
        ``(m,)`` their costs per unit mass (for :meth:`cost`); None: no cost.
    names : sequence of str, optional
        ``(m,)`` the phases' names (outputs); default ``phase 1`` ... ``phase m``.

    Raises
    ------
    ValueError
        Naming the parameter that is inconsistent.
    """

    name = "ordered"
    offers_cost = True
    multiphase = True
    #: The numbers of solid phases offered.
    phase_counts = (2, 3)

    def __init__(self, penalty: float | Continuation = 3.0, minimum: float = 1e-9, *,
                 moduli, densities, costs=None, names=None):
        super().__init__(penalty, minimum)
        moduli, densities = _phase_values("moduli", moduli), _phase_values("densities",
                                                                           densities)
        if len(moduli) not in self.phase_counts:
            raise ValueError(f"moduli: give {' or '.join(map(str, self.phase_counts))} solid "
                             f"phases, got {len(moduli)}")
        for label, values in (("densities", densities), ("costs", costs), ("names", names)):
            if values is not None and len(values) != len(moduli):
                raise ValueError(f"{label}: give one value per phase ({len(moduli)}, as "
                                 f"moduli), got {len(values)}")
        for label, values in (("densities", densities), ("moduli", moduli)):
            if np.any(np.diff(values) <= 0.0):
                raise ValueError(f"{label} = {values.tolist()} must increase strictly from "
                                 "phase to phase: list the phases from the lightest to the "
                                 "densest, each stiffer than the one before (a heavier phase "
                                 "that is not stiffer would never be chosen)")
        self.moduli, self.densities = moduli, densities
        self.costs = None if costs is None else _phase_values("costs", costs)
        self.names = [f"phase {i + 1}" for i in range(len(moduli))] if names is None \
            else [str(name) for name in names]
        #: ``(m + 1,)`` breakpoints, relative moduli and costs, void first.
        self.breakpoints = np.concatenate([[0.0], densities / densities[-1]])
        if self.moduli[-1] * minimum >= self.moduli[0]:
            raise ValueError(f"minimum = {minimum!r} makes void as stiff as the softest phase: "
                             "give a smaller minimum, e.g. 1e-9")
        self.relative_moduli = np.concatenate([[minimum], moduli / moduli[-1]])
        self.relative_costs = None if self.costs is None else np.concatenate(
            [[0.0], self.costs / self.costs[-1]])

    def interval(self, x) -> np.ndarray:
        """The interval ``i`` of each density, ``x ∈ (x_i, x_{i+1}]`` (0 for ``x ≤ x_1``),
        ``(n,)`` ints (untraced: the coefficients are constant on each interval)."""
        return np.searchsorted(self.breakpoints[1:-1], np.asarray(getval(x), dtype=float),
                               side="left")

    def _coefficients(self, x, values: np.ndarray, exponent: float):
        """``(A, B)`` of ``values (m + 1,)`` at the densities ``x``, each ``(n,)``."""
        x_i = self.breakpoints**exponent
        slopes = (values[:-1] - values[1:]) / (x_i[:-1] - x_i[1:])
        offsets = values[:-1] - slopes * x_i[:-1]
        i = self.interval(x)
        return slopes[i], offsets[i]

    def __call__(self, x):
        """Stiffness scale ``s(x)`` ``(n,)`` of densities ``x`` ``(n,)`` (traced)."""
        slope, offset = self._coefficients(x, self.relative_moduli, self.parameter)
        return slope * x**self.parameter + offset

    def cost(self, x):
        """Cost per unit volume ``x P(x)`` ``(n,)`` of densities ``x`` ``(n,)``, relative to
        the densest phase's (traced); written ``A x^(1 + 1/p) + B x`` so that its
        derivative stays finite at ``x = 0``.

        Raises
        ------
        ValueError
            When the phases were given no costs.
        """
        if self.relative_costs is None:
            raise ValueError("the ordered interpolation was given no costs: pass costs=")
        q = 1.0 / self.parameter
        slope, offset = self._coefficients(x, self.relative_costs, q)
        return slope * x ** (1.0 + q) + offset * x

    def phases(self, x) -> np.ndarray:
        """The phase of each cell ``(n,)`` ints, 0 void and ``i`` the ``i``-th solid phase:
        the nearest breakpoint (the midpoints between breakpoints split the phases, as the
        paper draws them)."""
        midpoints = 0.5 * (self.breakpoints[:-1] + self.breakpoints[1:])
        return np.searchsorted(midpoints, np.asarray(getval(x), dtype=float), side="left")

    def labels(self) -> list[str]:
        """One line per solid phase for legends: its name, modulus and density."""
        return [f"{name}: E = {modulus:g}, density {density:g}" for name, modulus, density
                in zip(self.names, self.moduli, self.densities, strict=True)]

    def mass_density(self, x) -> np.ndarray:
        """The mass density of each cell ``(n,)``, ``x`` times the densest phase's."""
        return np.asarray(getval(x), dtype=float) * self.densities[-1]

    def admissible_values(self) -> np.ndarray:
        """The values of the design variable in a crisp design, ``(m + 1,)``: void 0 and
        each phase's density relative to the densest's (the breakpoints)."""
        return self.breakpoints.copy()


def _phase_values(label: str, values) -> np.ndarray:
    """``values`` as a float array of positive numbers, refused naming ``label``."""
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or not np.all(np.isfinite(array)) or np.any(array <= 0.0):
        raise ValueError(f"{label} must be a list of positive numbers, one per solid phase, "
                         f"got {values!r}")
    return array


#: Material interpolations by name (the config's ``[penalization] type``); each takes
#: ``(penalty, minimum)``, those that interpolate the mass (for frequency design)
#: ``mass_minimum`` too.
INTERPOLATIONS: dict[str, type[Interpolation]] = {
    cls.name: cls for cls in (SIMP, RAMP, DuOlhoff, Pedersen, OrderedSIMP)}
#: The projections' old home: their names here warn and give :mod:`fesens.opt.projection`'s.
_MOVED = ("Heaviside", "NoProjection", "PROJECTIONS")


def __getattr__(name: str):
    """``Heaviside``, ``NoProjection`` and ``PROJECTIONS`` of :mod:`fesens.opt.projection`,
    with a DeprecationWarning (they lived here; the aliases go in the next release)."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"fesens.opt.interpolation.{name} moved to fesens.opt.projection.{name}",
                  DeprecationWarning, stacklevel=2)
    return vars(projection)[name]

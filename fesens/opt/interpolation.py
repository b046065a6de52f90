"""Material interpolation and projection of densities, with continuation schedules.

* SIMP (Bendsøe 1989): ``s(ρ) = s_min + ρ^p (1 − s_min)``.
* RAMP (Stolpe & Svanberg 2001): ``s(ρ) = s_min + ρ / (1 + q (1 − ρ)) (1 − s_min)``.
* Du & Olhoff (2007), Pedersen (2000): SIMP-like stiffness with a mass interpolation ``m(ρ)``
  that keeps void regions from carrying spurious low-frequency modes (frequency design,
  :mod:`fesens.opt.frequency`).
* Ordered SIMP (Zuo & Saitou 2017): several solid phases and void with one variable per
  cell, the density normalised by the densest phase's, SIMP-like between consecutive phases.
* Heaviside projection (Wang, Lazarov & Sigmund 2011):
  ``ρ̄ = (tanh(βη) + tanh(β(ρ − η))) / (tanh(βη) + tanh(β(1 − η)))``.

Continuation: a parameter starts at ``start``, is multiplied (``factor``) or increased
(``step``) every ``every`` iterations until it reaches ``final``, then holds it for at least
``final_iterations`` iterations before the loop may stop (a design that has just been
sharpened or penalized further has not yet answered the raise).

Grayness: each interpolation knows the values a crisp design variable takes
(:meth:`SIMP.admissible_values`: void and solid, or void and every phase of the ordered
SIMP); :meth:`SIMP.grayness` measures a cell's distance to the nearest of them, Sigmund's
measure of non-discreteness between each two adjacent values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.arrays import namespace


@dataclass
class Continuation:
    """Schedule ``value(iteration)``: ``start`` raised every ``every`` iterations to ``final``.

    The value at an iteration is a function of the iteration alone, so a resumed run takes
    the schedule up where it stopped. ``final_iterations`` (≥ 1) iterations must follow the
    one that first holds ``final`` before :meth:`done`: the design change measured at the
    iteration of a raise is the answer to the old value, never a sign of convergence.
    """

    start: float
    final: float | None = None
    every: int = 20
    factor: float | None = None
    step: float | None = None
    final_iterations: int = 1

    def value(self, iteration: int) -> float:
        """The parameter at 1-based ``iteration``."""
        if self.final is None:
            return self.start
        k = max(0, (iteration - 1) // max(self.every, 1))
        return self._raised(k)

    def _raised(self, k: int) -> float:
        """The value after ``k`` raises, within ``final``."""
        if self.factor is not None:
            try:
                raised = self.start * self.factor**k
            except OverflowError:  # beyond any final value (asked of a distant iteration)
                raised = np.inf
        else:
            raised = self.start + (self.step if self.step is not None else 1.0) * k
        return min(raised, self.final) if self.final >= self.start else max(raised, self.final)

    def first_final_iteration(self, limit: int = 10**9) -> int | None:
        """The first 1-based iteration whose value is ``final`` (1 without a continuation),
        or None when none up to ``limit`` is (a schedule that never reaches it)."""
        if self.final is None:
            return 1
        raises = (limit - 1) // max(self.every, 1)
        if self._raised(raises) != self.final:
            return None
        low, high = -1, raises  # _raised(high) is final, _raised(low) is not (monotone)
        while high - low > 1:
            middle = (low + high) // 2
            if self._raised(middle) == self.final:
                high = middle
            else:
                low = middle
        return 1 + high * max(self.every, 1)

    def iterations_needed(self, limit: int = 10**9) -> int | None:
        """The smallest iteration limit at which :meth:`done` can hold: the first final
        iteration plus ``final_iterations`` (1 without a continuation), or None when
        ``final`` is not reached within ``limit`` iterations."""
        if self.final is None:
            return 1
        first = self.first_final_iteration(limit)
        return None if first is None else first + self.final_iterations

    def done(self, iteration: int) -> bool:
        """True when the value is final and has been for ``final_iterations`` iterations
        before ``iteration`` (it will not change again, and the design has answered it)."""
        if self.final is None:
            return True
        needed = self.iterations_needed(iteration)
        return needed is not None and iteration >= needed


class SIMP:
    """SIMP interpolation ``s_min + ρ^p (1 − s_min)`` (``p`` may follow a continuation)."""

    name = "simp"
    #: Smallest sensible penalty: ``p < 1`` makes ``ρ^p`` concave, which rewards intermediate
    #: densities instead of penalizing them (``p = 1`` is the variable-thickness sheet).
    least_penalty = 1.0

    def __init__(self, penalty: float | Continuation = 3.0, minimum: float = 1e-9):
        self.schedule = penalty if isinstance(penalty, Continuation) else Continuation(penalty)
        for value in (self.schedule.start, self.schedule.final):
            if value is not None and value < self.least_penalty:
                raise ValueError(f"{self.name.upper()} needs a penalty ≥ "
                                 f"{self.least_penalty:g}, got {value!r}")
        self.minimum = minimum
        self.parameter = self.schedule.value(1)

    def update(self, iteration: int) -> None:
        self.parameter = self.schedule.value(iteration)

    def __call__(self, rho):
        return self.minimum + rho**self.parameter * (1.0 - self.minimum)

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


class RAMP(SIMP):
    """RAMP interpolation ``s_min + ρ / (1 + q (1 − ρ)) (1 − s_min)``."""

    name = "ramp"
    #: RAMP penalizes intermediate densities for every ``q > 0``.
    least_penalty = 0.0

    def __init__(self, penalty: float | Continuation = 8.0, minimum: float = 1e-9):
        super().__init__(penalty, minimum)

    def __call__(self, rho):
        return self.minimum + rho / (1.0 + self.parameter * (1.0 - rho)) * (1.0 - self.minimum)


class Heaviside:
    """Smoothed Heaviside projection with threshold ``eta`` and sharpness ``beta``."""

    name = "heaviside"
    linear = False

    def __init__(self, beta: float | Continuation = 1.0, eta: float = 0.5):
        self.schedule = beta if isinstance(beta, Continuation) else Continuation(beta)
        self.eta = eta
        self.beta = self.schedule.value(1)

    def update(self, iteration: int) -> None:
        self.beta = self.schedule.value(iteration)

    def __call__(self, rho):
        b, eta = self.beta, self.eta
        return (np.tanh(b * eta) + np.tanh(b * (rho - eta))) / (
            np.tanh(b * eta) + np.tanh(b * (1.0 - eta)))


class NoProjection:
    """Identity projection."""

    name = "none"
    beta = None
    linear = True

    def update(self, iteration: int) -> None:
        """Nothing to schedule."""

    def __call__(self, rho):
        return rho


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
#: ``(penalty, minimum)``, those with a ``mass`` (for frequency design) ``mass_minimum`` too.
INTERPOLATIONS: dict[str, type[SIMP]] = {cls.name: cls for cls in (SIMP, RAMP, DuOlhoff,
                                                                      Pedersen, OrderedSIMP)}
#: Density projections by name (the config's ``[projection] type``); each takes its
#: parameters as keyword arguments (none for ``"none"``).
PROJECTIONS: dict[str, type[Heaviside] | type[NoProjection]] = {
    cls.name: cls for cls in (NoProjection, Heaviside)}

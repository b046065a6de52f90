"""Material interpolation and projection of densities, with continuation schedules.

* SIMP (Bendsøe 1989): ``s(ρ) = s_min + ρ^p (1 − s_min)``.
* RAMP (Stolpe & Svanberg 2001): ``s(ρ) = s_min + ρ / (1 + q (1 − ρ)) (1 − s_min)``.
* Du & Olhoff (2007), Pedersen (2000): SIMP-like stiffness with a mass interpolation ``m(ρ)``
  that keeps void regions from carrying spurious low-frequency modes (frequency design,
  :mod:`fesens.opt.frequency`).
* Heaviside projection (Wang, Lazarov & Sigmund 2011):
  ``ρ̄ = (tanh(βη) + tanh(β(ρ − η))) / (tanh(βη) + tanh(β(1 − η)))``.

Continuation: a parameter starts at ``start``, is multiplied (``factor``) or increased
(``step``) every ``every`` iterations until it reaches ``final``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Continuation:
    """Schedule ``value(iteration)``: ``start`` raised every ``every`` iterations to ``final``."""

    start: float
    final: float | None = None
    every: int = 20
    factor: float | None = None
    step: float | None = None

    def value(self, iteration: int) -> float:
        """The parameter at 1-based ``iteration``."""
        if self.final is None:
            return self.start
        k = max(0, (iteration - 1) // max(self.every, 1))
        if self.factor is not None:
            raised = self.start * self.factor**k
        else:
            raised = self.start + (self.step if self.step is not None else 1.0) * k
        return min(raised, self.final) if self.final >= self.start else max(raised, self.final)

    def done(self, iteration: int) -> bool:
        """True when the value at ``iteration`` is final (it will not change again)."""
        return self.final is None or self.value(iteration) == self.final


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


#: Material interpolations by name (the config's ``[penalization] type``); each takes
#: ``(penalty, minimum)``, those with a ``mass`` (for frequency design) ``mass_minimum`` too.
INTERPOLATIONS: dict[str, type[SIMP]] = {cls.name: cls for cls in (SIMP, RAMP, DuOlhoff,
                                                                      Pedersen)}
#: Density projections by name (the config's ``[projection] type``); each takes its
#: parameters as keyword arguments (none for ``"none"``).
PROJECTIONS: dict[str, type[Heaviside] | type[NoProjection]] = {
    cls.name: cls for cls in (NoProjection, Heaviside)}

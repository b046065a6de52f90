"""Local stress constraints, one per cell, by the augmented Lagrangian method of
Giraldo-Londoño & Paulino, "PolyStress: a Matlab implementation for topology optimization
with local stress constraints using the augmented Lagrangian method", Struct. Multidisc.
Optim. 63 (2021) 2065–2097 (their §2.3, after Senhora, Giraldo-Londoño, Menezes & Paulino
2020).

Minimize ``f(ρ)`` subject to ``g_j(ρ) ≤ 0``, ``j = 1..N`` (the relaxed constraints of
:mod:`fesens.objectives.local_stress`, one per constrained cell), as a sequence of
subproblems without the constraints: at AL step ``k``

    J^k(ρ) = f(ρ) + (1/N) Σ_j [ λ_j^k h_j(ρ) + (μ^k / 2) h_j(ρ)² ],
    h_j = max(g_j, −λ_j^k / μ^k),

one or a few optimizer steps per subproblem (iterations of the loop), then

    λ_j^(k+1) = λ_j^k + μ^k h_j(ρ^k),        μ^(k+1) = min(α μ^k, μ_max),

with ``h_j`` of the design evaluated in step ``k``. ``J`` is one scalar: one adjoint solve
per iteration however many cells are constrained. The loop stops only where the largest
stress of the cells at least half solid is within ``stop.constraint_tol`` of the limit
(:meth:`AugmentedLagrangianProblem.settled`), besides the design change below
``stop.tol_change`` (PolyStress's stop); an MMA move limit that shrinks (``move_min``) lets
the design settle while the multipliers still move. The multipliers and the penalty are part
of the checkpoint (:meth:`AugmentedLagrangianProblem.warm_start_arrays`), so a resumed run
is the uninterrupted one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.objectives.local_stress import (
    RELAXATIONS,
    relaxed_von_mises,
    stress_violations,
)
from fesens.opt.problem import DesignProblem

#: The checkpoint entries (``warm_`` then these) of the method's state.
STATE_KEYS = ("al_multipliers", "al_penalty", "al_violations", "al_iteration")


@dataclass(frozen=True)
class LocalStress:
    """The local stress constraints and the augmented Lagrangian's parameters.

    Attributes
    ----------
    limit : float
        ``σ_lim`` (> 0).
    cells : numpy.ndarray
        Ids of the constrained cells ``(N,)`` (e.g. the designed ones).
    relaxation : {"polynomial", "qp"}
        :mod:`fesens.objectives.local_stress`.
    exponent : float
        ``q`` of the qp-relaxation.
    penalty : float
        ``μ⁰`` (> 0; PolyStress: 10).
    penalty_factor : float
        ``α ≥ 1`` (PolyStress: 1.1).
    penalty_max : float
        ``μ_max ≥ μ⁰`` (PolyStress: 10000).
    name : str
        The prefix of the history columns.
    iterations_per_step : int
        Optimizer steps per AL subproblem (≥ 1; PolyStress's ``MMA_Iter``, 5 there): the
        multipliers and the penalty advance every this many iterations.
    max_steps : int or None
        The number of AL steps (PolyStress's ``MaxIter``, 150 there): after it the
        multipliers and the penalty stay, and the loop solves that last subproblem until its
        design change falls below the tolerance. None: no limit.
    """

    limit: float
    cells: np.ndarray
    relaxation: str = "polynomial"
    exponent: float = 0.5
    penalty: float = 10.0
    penalty_factor: float = 1.1
    penalty_max: float = 10000.0
    name: str = "stress"
    iterations_per_step: int = 1
    max_steps: int | None = None

    def __post_init__(self):
        if self.max_steps is not None and not (isinstance(self.max_steps, int)
                                               and self.max_steps >= 1):
            raise ValueError(f"max_steps must be None or an integer >= 1, got "
                             f"{self.max_steps!r}")
        if not (isinstance(self.iterations_per_step, int) and self.iterations_per_step >= 1):
            raise ValueError(f"iterations_per_step must be an integer >= 1, got "
                             f"{self.iterations_per_step!r}")
        if not self.limit > 0.0:
            raise ValueError(f"limit must be > 0, got {self.limit!r}")
        if self.relaxation not in RELAXATIONS:
            raise ValueError(f"relaxation {self.relaxation!r} is not one of "
                             f"{', '.join(RELAXATIONS)}")
        if not 0.0 < self.penalty <= self.penalty_max:
            raise ValueError(f"need 0 < penalty <= penalty_max, got {self.penalty!r} and "
                             f"{self.penalty_max!r}")
        if not self.penalty_factor >= 1.0:
            raise ValueError(f"penalty_factor must be >= 1, got {self.penalty_factor!r}")
        cells = np.asarray(self.cells, dtype=np.intp)
        if cells.ndim != 1 or cells.size == 0:
            raise ValueError("cells must be a non-empty 1D array of cell ids")
        object.__setattr__(self, "cells", cells)

    def violations(self, state, rho):
        """``g_j`` of the constrained cells, ``(N,)`` (traced)."""
        return stress_violations(state, rho, self.limit, self.relaxation,
                                 self.exponent)[self.cells]


def augmented_term(g, multipliers: np.ndarray, penalty: float):
    """``(1/N) Σ_j [λ_j h_j + (μ/2) h_j²]`` with ``h_j = max(g_j, −λ_j/μ)`` (traced in
    ``g``, ``(N,)``); the branch of the max is taken on the values, so the gradient is that
    of ``g_j`` on the active side and 0 on the other."""
    floor = -multipliers / penalty
    h = np.where(getval(g) > floor, g, floor)
    return np.sum(multipliers * h + 0.5 * penalty * h * h) / multipliers.size


def updated_multipliers(g: np.ndarray, multipliers: np.ndarray,
                        penalty: float) -> np.ndarray:
    """``λ + μ max(g, −λ/μ)`` ``(N,)`` (= ``max(λ + μ g, 0)``)."""
    return multipliers + penalty * np.maximum(g, -multipliers / penalty)


class AugmentedLagrangianProblem(DesignProblem):
    """A :class:`~fesens.opt.DesignProblem` whose objective is the augmented Lagrangian
    ``J^k`` of the module docstring: the given objective plus the local stress
    constraints' term; the multipliers and the penalty advance at every iteration boundary
    (:meth:`update_schedules`).

    Parameters
    ----------
    model, objective
        As for :class:`~fesens.opt.DesignProblem` (the objective without the constraints,
        e.g. the volume fraction).
    stress : LocalStress
    **options
        The other keywords of :class:`~fesens.opt.DesignProblem` (not ``load_cases``: the
        stresses are of one load case).

    Attributes
    ----------
    multipliers : numpy.ndarray
        ``λ^k`` ``(N,)`` of the current iteration.
    penalty : float
        ``μ^k``.
    """

    def __init__(self, model, objective, *, stress: LocalStress, **options):
        if options.get("load_cases"):
            raise ValueError("local stress constraints take a single load case: give no "
                             "load_cases")
        super().__init__(model, objective, **options)
        self.stress = stress
        self.multipliers = np.zeros(stress.cells.size)
        self.penalty = float(stress.penalty)
        self._violations: np.ndarray | None = None
        self._iteration = 0
        self.reports.update(self._reports())

    def objective_values(self, state, rho) -> list:
        g = self.stress.violations(state, rho)
        self._violations = np.array(getval(g), dtype=float)
        term = augmented_term(g, self.multipliers, self.penalty)
        return [self.objective(state, rho) + term]

    def update_schedules(self, iteration: int) -> None:
        """The loop's iteration boundary: the schedules of
        :meth:`DesignProblem.update_schedules`, then, where an AL step starts (every
        ``iterations_per_step`` iterations from the second step on, up to ``max_steps``),
        the multipliers and the penalty from the last evaluated design's ``g``."""
        super().update_schedules(iteration)
        step, offset = divmod(iteration - 1, self.stress.iterations_per_step)
        within = self.stress.max_steps is None or step < self.stress.max_steps
        if iteration > self._iteration and self._violations is not None and offset == 0 \
                and within:
            self.multipliers = updated_multipliers(self._violations, self.multipliers,
                                                   self.penalty)
            self.penalty = min(self.stress.penalty_factor * self.penalty,
                               self.stress.penalty_max)
        self._iteration = max(self._iteration, iteration)

    def settled(self, record: dict, constraint_tol: float) -> bool:
        """Whether the local constraints hold at the design of the history ``record``: the
        largest relaxed stress of the constrained cells at least half solid (its
        ``<name>_max`` column) at most ``σ_lim (1 + constraint_tol)``. The loop stops only
        on such an iteration (PolyStress's stop: the design change and the largest stress
        violation both below their tolerances), so a run that ends "converged" meets its
        stress limit within ``stop.constraint_tol``."""
        largest = record.get(f"{self.stress.name}_max")
        return largest is not None and largest <= self.stress.limit * (1.0 + constraint_tol)

    def warm_start_arrays(self) -> dict[str, np.ndarray]:
        """:meth:`DesignProblem.warm_start_arrays` and the method's state (:data:`STATE_KEYS`):
        the multipliers, the penalty, the last ``g`` (empty before an evaluation) and the
        iteration they belong to."""
        arrays = super().warm_start_arrays()
        violations = np.zeros(0) if self._violations is None else self._violations
        arrays.update(dict(zip(STATE_KEYS, (self.multipliers.copy(),
                                            np.array([self.penalty]), violations.copy(),
                                            np.array([float(self._iteration)])), strict=True)))
        return arrays

    def restore_warm_start(self, arrays: dict[str, np.ndarray]) -> None:
        """Put back what :meth:`warm_start_arrays` gave.

        Raises
        ------
        KeyError, ValueError
            An entry of the method's state is missing or does not fit the constrained cells.
        """
        arrays = dict(arrays)
        state = {key: np.asarray(arrays.pop(key), dtype=float) for key in STATE_KEYS}
        n = self.stress.cells.size
        if state["al_multipliers"].shape != (n,) or state["al_violations"].size not in (0, n):
            raise ValueError(f"the augmented Lagrangian's state has "
                             f"{state['al_multipliers'].shape[0]} multipliers, but {n} cells "
                             "are constrained")
        self.multipliers = state["al_multipliers"]
        self.penalty = float(state["al_penalty"][0])
        self._violations = state["al_violations"] if state["al_violations"].size else None
        self._iteration = int(state["al_iteration"][0])
        super().restore_warm_start(arrays)

    def _reports(self) -> dict:
        """History columns: ``<name>_max``, the largest relaxed stress of the constrained
        cells at least half solid; ``<name>_violated``, how many ``g_j > 0``;
        ``<name>_penalty``, ``μ`` of the iteration."""
        stress, name = self.stress, self.stress.name

        def largest(state, rho):
            values = relaxed_von_mises(state, rho, stress.relaxation, stress.exponent)
            solid = stress.cells[np.asarray(rho)[stress.cells] >= 0.5]
            return float(np.max(values[solid])) if solid.size else 0.0

        return {f"{name}_max": largest,
                f"{name}_violated": lambda state, rho: float(
                    np.sum(stress.violations(state, rho) > 0.0)),
                f"{name}_penalty": lambda state, rho: self.penalty}

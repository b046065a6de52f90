"""Newton–Raphson with a backtracking line search, load stepping and automatic cut-backs.

The solver knows no finite elements: a :class:`NewtonSystem` evaluates the residual
``R(x, t)`` of the unknowns ``x`` ``(n,)`` at the load factor ``t ∈ [0, 1]`` (with its
scale, the stored energy when there is one, and the reason when the state is
inadmissible, such as an inverted element) and solves with its tangent ``∂R/∂x``.

One load step: from the last converged state, Newton iterates ``K_T δ = −R``,
``x ← x + α δ``, the step length ``α`` shortened (to the minimizer of the residual's
second-order model along ``δ`` within ``[α/10, α/2]``; halved after a NaN or inadmissible
trial) until the residual norm (or the energy, ``line_search="energy"``) decreases
sufficiently (Armijo's rule with ``c = 10⁻⁴``; Nocedal & Wright, *Numerical
Optimization*, 2nd ed., §3.1), until ``‖R‖ ≤ atol + rtol · scale``
or the correction ``δ`` is negligible (``‖δ‖ ≤ stol ‖x‖``, PETSc SNES's step test).
A step that fails (too many iterations, no acceptable ``α``, NaN, an inadmissible state, a
singular tangent) is cut back: the load increment is halved and the step retried from the
last converged state, at most ``max_cutbacks`` times in a row; then :class:`NewtonError`
is raised with every attempt's residual history and the last converged load factor and
state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from fesens.errors import NewtonError, SolverError

#: Line searches of :class:`NewtonOptions`: on the residual norm, on the stored energy
#: (the residual norm decides where round-off hides the energy's decrease), or none (full
#: Newton steps, halved only where a trial state is NaN or inadmissible).
LINE_SEARCHES = ("residual", "energy", None)
_ARMIJO = 1e-4


@dataclass(frozen=True)
class NewtonOptions:
    """Options of a Newton solve.

    Attributes
    ----------
    rtol, atol : float
        Convergence when ``‖R‖ ≤ atol + rtol · scale`` (the system's scale of its residual,
        e.g. the size of the forces it balances).
    stol : float
        Convergence also when the Newton correction ``‖δ‖ ≤ stol · ‖x‖``: with quadratic
        convergence the error left is then of order ``stol² ‖x‖``, and a residual that
        cannot fall further (its round-off, e.g. of a stress law evaluated at ``F ≈ I``
        under tiny loads) does not stall the solve. 0: the residual test only.
    max_iterations : int
        Newton iterations per load step before the step is cut back.
    steps : int
        Equal load steps from the start state to the full load.
    adaptive : bool
        True: a step that converged in at most 4 iterations doubles the next increment
        (after cut-backs, and beyond ``1 / steps``); False: increments return to
        ``1 / steps`` after a cut-back.
    max_cutbacks : int
        How many times in a row a failed step's increment may be halved.
    line_search : {"residual", "energy", None}
        See :data:`LINE_SEARCHES`.
    max_backtracks : int
        Shortenings of the step length ``α`` per iteration (each to between a tenth
        and a half of the last).
    """

    rtol: float = 1e-10
    atol: float = 0.0
    stol: float = 1e-8
    max_iterations: int = 25
    steps: int = 1
    adaptive: bool = True
    max_cutbacks: int = 8
    line_search: str | None = "residual"
    max_backtracks: int = 10

    def __post_init__(self):
        for name in ("rtol", "atol", "stol"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"newton option {name} must be a finite number >= 0, "
                                 f"got {value!r}")
        if self.rtol == 0 and self.atol == 0:
            raise ValueError("newton options rtol and atol are both 0: no residual can "
                             "converge; give rtol > 0 (e.g. 1e-10) or atol > 0")
        for name in ("max_iterations", "steps"):
            value = getattr(self, name)
            if not (isinstance(value, int | np.integer) and value >= 1):
                raise ValueError(f"newton option {name} must be an integer >= 1, "
                                 f"got {value!r}")
        for name in ("max_cutbacks", "max_backtracks"):
            value = getattr(self, name)
            if not (isinstance(value, int | np.integer) and value >= 0):
                raise ValueError(f"newton option {name} must be an integer >= 0, "
                                 f"got {value!r}")
        if self.line_search not in LINE_SEARCHES:
            raise ValueError(f"newton option line_search must be one of {LINE_SEARCHES}, "
                             f"got {self.line_search!r}")


@dataclass
class Evaluation:
    """The residual of one state.

    Attributes
    ----------
    residual : numpy.ndarray
        ``R(x, t)``, ``(n,)``.
    scale : float
        The size ``rtol`` is relative to.
    energy : float or None
        The stored energy minus the external work, where the system has one.
    reason : str or None
        Why the state is inadmissible (None: it is admissible); ``residual`` is then
        not read.
    """

    residual: np.ndarray
    scale: float
    energy: float | None = None
    reason: str | None = None


class NewtonSystem(Protocol):
    """What :func:`solve_steps` needs of a nonlinear system."""

    def evaluate(self, x: np.ndarray, t: float) -> Evaluation:
        """The residual at ``x`` ``(n,)`` and load factor ``t``."""

    def solve_tangent(self, x: np.ndarray, t: float, rhs: np.ndarray) -> np.ndarray:
        """``K_T(x, t)⁻¹ rhs``, ``(n,)``; raises :class:`~fesens.errors.SolverError`."""


@dataclass
class Attempt:
    """One Newton attempt at a load factor: its residual norms, whether it converged, and
    why it failed."""

    load_factor: float
    residuals: np.ndarray
    converged: bool
    reason: str = ""


@dataclass
class NewtonReport:
    """What a solve did: every attempt and the converged states.

    Attributes
    ----------
    attempts : list of Attempt
        In order; the failed ones were cut back.
    load_factors : list of float
        ``0`` (the start) and the load factor of every converged step.
    states : list of numpy.ndarray
        The unknowns ``(n,)`` at each entry of :attr:`load_factors`.
    warm_start : bool
        Set by the caller: whether the start state was a previous solve's.
    factorizations : int
        Set by the caller (:meth:`count_factorizations`): the numeric factorizations (or
        preconditioner set-ups) of the tangent during the solve, and of the converged
        tangent when a gradient's adjoint factorizes it.
    fallbacks : int
        Of those, how many the backend could not do its own way and handed to another
        (a Cholesky that met an indefinite tangent, factorized by LU).
    fallback_reason : str or None
        Why the last of them fell back.
    """

    attempts: list[Attempt] = field(default_factory=list)
    load_factors: list[float] = field(default_factory=list)
    states: list[np.ndarray] = field(default_factory=list)
    warm_start: bool = False
    factorizations: int = 0
    fallbacks: int = 0
    fallback_reason: str | None = None

    def count_factorizations(self, before: dict, after: dict) -> None:
        """Add the factorizations and fallbacks between two snapshots of the tangent
        backend's :attr:`~fesens.solvers.LinearSolver.stats`."""
        self.factorizations += after["n_numeric"] - before["n_numeric"]
        fallbacks = after.get("n_fallbacks", 0) - before.get("n_fallbacks", 0)
        if fallbacks:
            self.fallbacks += fallbacks
            self.fallback_reason = after["fallback_reason"]

    @property
    def cutbacks(self) -> list[tuple[float, str]]:
        """``(load factor tried, reason)`` of every failed attempt."""
        return [(a.load_factor, a.reason) for a in self.attempts if not a.converged]

    @property
    def history(self) -> list[np.ndarray]:
        """Residual norms of every attempt, in order."""
        return [a.residuals for a in self.attempts]

    @property
    def iterations(self) -> int:
        """Newton iterations (tangent solves) of all attempts."""
        return sum(max(len(a.residuals) - 1, 0) for a in self.attempts)

    def table(self) -> str:
        """One line per attempt: load factor, iterations, final residual, outcome; then
        the factorizations that fell back, if any."""
        lines = ["  load factor  iterations     residual  outcome"]
        for a in self.attempts:
            outcome = "converged" if a.converged else f"cut back: {a.reason}"
            last = a.residuals[-1] if len(a.residuals) else float("nan")
            lines.append(f"  {a.load_factor:11.5g}  {len(a.residuals) - 1:10d}  "
                         f"{last:11.3e}  {outcome}")
        if self.fallbacks:
            lines.append(f"  {self.fallbacks} of {self.factorizations} tangent "
                         f"factorizations fell back: {self.fallback_reason}")
        return "\n".join(lines)


class _StepFailed(Exception):  # noqa: N818 - a signal between the functions below
    def __init__(self, reason: str, residuals: list[float]):
        super().__init__(reason)
        self.reason, self.residuals = reason, residuals


def solve_steps(system: NewtonSystem, x0: np.ndarray, options: NewtonOptions,
                stops: tuple[float, ...] = ()) -> tuple[np.ndarray, NewtonReport]:
    """Solve ``R(x, 1) = 0`` from ``x0`` (a state at ``t = 0``) by load steps.

    ``stops``: load factors in ``(0, 1]`` that a step must end on exactly (whatever the
    increments and cut-backs), so that the report holds the converged state at each of
    them (``report.states[report.load_factors.index(stop)]``).

    Returns
    -------
    x : numpy.ndarray
        The converged unknowns ``(n,)``.
    report : NewtonReport

    Raises
    ------
    NewtonError
        A step failed ``max_cutbacks + 1`` times in a row, or its increment would fall
        below ``1/steps / 2^max_cutbacks``; carries the residual history and the last
        converged load factor and state (``state`` holds the unknowns ``x``).
    """
    report = NewtonReport(load_factors=[0.0], states=[np.array(x0, dtype=float)])
    x, t = report.states[0], 0.0
    base = 1.0 / options.steps
    # increments never shrink below this: halving on each failure alone would otherwise
    # creep towards a limit load in ever smaller steps (down to round-off)
    floor = base * 0.5 ** options.max_cutbacks
    increment, failures = base, 0
    ends = sorted({*(float(stop) for stop in stops), 1.0})
    while t < 1.0:
        end = next(stop for stop in ends if stop > t)
        target = end if t + increment > end - 1e-12 else t + increment
        try:
            x_new, residuals = newton(system, x, target, options)
        except _StepFailed as failed:
            report.attempts.append(Attempt(target, np.array(failed.residuals), False,
                                           failed.reason))
            failures += 1
            increment = (target - t) / 2
            why = None
            if failures > options.max_cutbacks:
                why = (f"after {options.max_cutbacks} cut-back(s) of the load increment (last: "
                       f"{target - t:.3g})", "Try more load steps (steps=...), more cut-backs "
                       "(max_cutbacks=...) or more iterations (max_iterations=...)")
            elif increment < floor:
                why = (f"the load increment would fall to {increment:.3g}, below its floor "
                       f"{floor:.3g} (1/steps / 2^max_cutbacks)", "The load path may end there "
                       "(an instability or inverted cells ahead), or the tolerance may lie "
                       "below the residual's round-off (rtol=...)")
            if why is not None:
                raise NewtonError(
                    f"Newton did not converge at load factor {target:.6g}: {why[0]}: "
                    f"{failed.reason}. The last converged load factor is {t:.6g} (kept on the "
                    f"error: load_factor, state). {why[1]}",
                    reason=failed.reason, history=report.history, load_factor=t,
                    state=x) from None
            continue
        report.attempts.append(Attempt(target, np.array(residuals), True))
        report.load_factors.append(target)
        report.states.append(x_new)
        x, t, failures = x_new, target, 0
        if options.adaptive and len(residuals) <= 5:
            increment *= 2
        elif not options.adaptive:
            increment = base
    return x, report


def newton(system: NewtonSystem, x: np.ndarray, t: float, options: NewtonOptions
           ) -> tuple[np.ndarray, list[float]]:
    """One load step: Newton iterations at load factor ``t`` from ``x``.

    Returns the converged unknowns and the residual norms (one per evaluation accepted);
    raises ``_StepFailed`` with the reason.
    """
    current = system.evaluate(x, t)
    if current.reason is not None:
        raise _StepFailed(f"the start state is inadmissible: {current.reason}", [])
    norm = _norm(current.residual)
    residuals = [norm]
    if not np.isfinite(norm):
        raise _StepFailed("the residual is NaN or infinite at the start state", residuals)
    for _ in range(options.max_iterations):
        if norm <= options.atol + options.rtol * current.scale:
            return x, residuals
        try:
            delta = system.solve_tangent(x, t, -current.residual)
        except SolverError as exc:
            raise _StepFailed(f"the tangent solve failed ({exc})", residuals) from None
        negligible = _norm(delta) <= options.stol * _norm(x)
        try:
            x, current, norm = _line_search(system, x, t, delta, current, norm, options,
                                            residuals)
        except _StepFailed:
            if negligible:  # the residual is at its round-off: nothing left to correct
                return x, residuals
            raise
        residuals.append(norm)
        if negligible:
            return x, residuals
    if norm <= options.atol + options.rtol * current.scale:
        return x, residuals
    raise _StepFailed(f"no convergence in {options.max_iterations} iterations (residual "
                      f"{norm:.3e}, target {options.atol + options.rtol * current.scale:.3e})",
                      residuals)


def _line_search(system, x, t, delta, current: Evaluation, norm: float,
                 options: NewtonOptions, residuals: list[float]):
    """The accepted ``(x + α δ, its evaluation, its residual norm)``."""
    slope = float(np.dot(current.residual, delta))  # dΠ/dα at α = 0 for an energy Π
    alpha, why = 1.0, ""
    for _ in range(options.max_backtracks + 1):
        trial = x + alpha * delta
        evaluation = system.evaluate(trial, t)
        trial_norm = np.inf if evaluation.reason else _norm(evaluation.residual)
        if evaluation.reason is not None:
            why = f"every trial state is inadmissible ({evaluation.reason})"
        elif not np.isfinite(trial_norm):
            why = "the residual is NaN or infinite at every trial state"
        elif _accepted(options.line_search, alpha, norm, trial_norm, current, evaluation,
                       slope):
            return trial, evaluation, trial_norm
        else:
            why = (f"the line search found no step length that reduces the residual below "
                   f"{norm:.3e} (stalled)")
            alpha = _backtracked(alpha, current.residual, evaluation.residual)
            continue
        alpha /= 2  # an inadmissible or NaN trial tells nothing of a better length
    raise _StepFailed(why, residuals)


def _backtracked(alpha: float, residual: np.ndarray, trial: np.ndarray) -> float:
    """The next step length after the residual ``trial`` ``(n,)`` at a rejected ``α``.

    Along a Newton correction ``δ`` (``K_T δ = −R``) the residual is, to second order,
    ``R(α) = (1 − α) R + α² Q``, and ``Q`` follows from the rejected trial (exactly where
    the residual is quadratic in the unknowns, as a conductivity linear in the temperature
    makes it). The next ``α`` minimizes ``‖R(α)‖`` on ``[α/10, α/2]``, the bounds of the
    safeguarded backtracking of Dennis & Schnabel (*Numerical Methods for Unconstrained
    Optimization and Nonlinear Equations*, 1983, §6.3.2): a wild overshoot (a tangent that
    stiffens steeply along the step, such as that of a nearly void cell whose conductivity
    grows with its temperature) shortens ``α`` tenfold per trial, which halving alone
    could not within ``max_backtracks``.
    """
    q = (trial - (1.0 - alpha) * residual) / alpha ** 2
    uu, uq, qq = float(residual @ residual), float(residual @ q), float(q @ q)
    # d/da ‖(1 − a) R + a² Q‖² / 2 = 2 qq a³ − 3 uq a² + (uu + 2 uq) a − uu
    roots = np.roots([2.0 * qq, -3.0 * uq, uu + 2.0 * uq, -uu])
    low, high = 0.1 * alpha, 0.5 * alpha
    candidates = [low, high, *(r.real for r in roots
                               if abs(r.imag) <= 1e-12 * abs(r) and low < r.real < high)]
    return min(candidates, key=lambda a: float(np.linalg.norm((1.0 - a) * residual
                                                             + a ** 2 * q)))


def _accepted(line_search, alpha, norm, trial_norm, current, evaluation, slope) -> bool:
    if line_search is None:
        return True
    decreased = trial_norm <= (1.0 - _ARMIJO * alpha) * norm
    if line_search == "energy" and current.energy is not None and slope < 0:
        return evaluation.energy <= current.energy + _ARMIJO * alpha * slope or decreased
    return decreased


def _norm(residual: np.ndarray) -> float:
    return float(np.linalg.norm(residual))

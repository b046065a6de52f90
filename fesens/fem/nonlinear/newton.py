"""Newton–Raphson with an adaptive line search, load stepping and automatic cut-backs.

The solver knows no finite elements: a :class:`NewtonSystem` evaluates the residual
``R(x, t)`` of the unknowns ``x`` ``(n,)`` at the load factor ``t ∈ [0, 1]`` (with its
scale, the stored energy when there is one, and the reason when the state is
inadmissible, such as an inverted element) and solves with its tangent ``∂R/∂x``.

One load step: from the last converged state, Newton iterates ``K_T δ = −R``,
``x ← x + α δ`` (the step length ``α`` of :mod:`~fesens.fem.nonlinear.line_search`)
until ``‖R‖ ≤ atol + rtol · scale`` or the correction ``δ`` is negligible
(``‖δ‖ ≤ stol ‖x‖``, PETSc SNES's step test). The default line search, ``"auto"``,
takes the full step unless the energy or the residual norm decreases along a shorter one
as the residual's model predicts, and hands over to the energy line search from the best
iterate when full steps stop making progress (:data:`WATCHDOG`).
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
from fesens.fem.nonlinear.advice import SEARCHED, advice
from fesens.fem.nonlinear.line_search import ADAPTIVE, LINE_SEARCHES, StepFailed, search

#: ``"auto"``: full Newton steps fail (and the line search takes over from the iterate of
#: the lowest residual) after this many iterations in a row without a new lowest residual
#: norm since the first step, the watchdog of Chamberlain, Powell, Lemaréchal & Pedersen
#: (Math. Programming Study 16, 1982, 1–17) with a non-monotone window as in Grippo,
#: Lampariello & Lucidi (SIAM J. Numer. Anal. 23, 1986, 707–716): a slender body's first
#: iterates raise the residual by orders of magnitude on the way to a quadratically
#: converging Newton, which a monotone search refuses.
WATCHDOG = 5


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
    line_search : {"auto", "residual", "energy", None}
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
    line_search: str | None = ADAPTIVE
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
        except StepFailed as failed:
            report.attempts.append(Attempt(target, np.array(failed.residuals), False,
                                           failed.reason))
            failures += 1
            increment = (target - t) / 2
            if failures > options.max_cutbacks:
                why = (f"after {options.max_cutbacks} cut-back(s) of the load increment (last: "
                       f"{target - t:.3g})")
            elif increment < floor:
                why = (f"the load increment would fall to {increment:.3g}, below its floor "
                       f"{floor:.3g} (1/steps / 2^max_cutbacks)")
            else:
                continue
            remedy = advice(failed.kind, options.line_search, target - t, increment < floor,
                            _full_steps_converge(system, x, target, options, failed.kind),
                            failed.residuals)
            raise NewtonError(
                f"Newton did not converge at load factor {target:.6g}: {why}: "
                f"{failed.reason}. The last converged load factor is {t:.6g} (kept on the "
                f"error: load_factor, state). {remedy}",
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



def _full_steps_converge(system, x, t, options: NewtonOptions, kind: str) -> bool:
    """Whether full Newton steps converge from ``x`` at ``t`` where a line search among
    :data:`~fesens.fem.nonlinear.advice.SEARCHED` stalled or ran out of iterations (one
    more Newton attempt, made only on the way to an error)."""
    if options.line_search not in SEARCHED or kind not in ("stalled", "iterations"):
        return False
    try:
        _iterate(system, x, t, options, None)
    except StepFailed:
        return False
    return True


def newton(system: NewtonSystem, x: np.ndarray, t: float, options: NewtonOptions
           ) -> tuple[np.ndarray, list[float]]:
    """One load step: Newton iterations at load factor ``t`` from ``x``.

    ``line_search="auto"``: full steps under the watchdog (:data:`WATCHDOG`); where they
    fail, the energy line search (the residual's where the system has no energy) from the
    iterate of the lowest residual. Returns the converged unknowns and the residual norms
    (one per evaluation accepted, both phases in order); raises ``StepFailed`` with the
    reason.
    """
    if options.line_search != ADAPTIVE:
        return _iterate(system, x, t, options, options.line_search)
    try:
        return _iterate(system, x, t, options, ADAPTIVE, watchdog=True)
    except StepFailed as full:
        budget = options.max_iterations - (len(full.residuals) - 1)
        if full.kind in ("solver", "start") or budget < 1:
            raise
        try:
            x, more = _iterate(system, full.best, t, options, "energy", budget=budget)
        except StepFailed as searched:
            raise StepFailed(f"full Newton steps failed ({full.reason}), then the line "
                             f"search from their best iterate: {searched.reason}",
                             full.residuals + searched.residuals[1:], searched.kind) from None
        return x, full.residuals + more[1:]


def _iterate(system, x, t, options: NewtonOptions, line_search: str | None,
             watchdog: bool = False, budget: int | None = None
             ) -> tuple[np.ndarray, list[float]]:
    """At most ``budget`` (default ``max_iterations``) Newton iterations with one line
    search; ``watchdog``: fail as soon as :data:`WATCHDOG` iterations in a row set no new
    lowest residual, the failure keeping the iterate of the lowest residual (``best``)."""
    budget = options.max_iterations if budget is None else budget
    current = system.evaluate(x, t)
    if current.reason is not None:
        raise StepFailed(f"the start state is inadmissible: {current.reason}", [], "start")
    norm = _norm(current.residual)
    residuals = [norm]
    if not np.isfinite(norm):
        raise StepFailed("the residual is NaN or infinite at the start state", residuals,
                         "start")
    best, lowest, since = x, np.inf, 0
    try:
        for _ in range(budget):
            if norm <= options.atol + options.rtol * current.scale:
                return x, residuals
            try:
                delta = system.solve_tangent(x, t, -current.residual)
            except SolverError as exc:
                raise StepFailed(f"the tangent solve failed ({exc})", residuals,
                                 "solver") from None
            size = _norm(x)  # an infinite state (a diverged one) is never converged
            negligible = np.isfinite(size) and _norm(delta) <= options.stol * size
            try:
                x, current, norm = search(system, x, t, delta, current, norm, line_search,
                                          options.max_backtracks, residuals)
            except StepFailed:
                if negligible:  # the residual is at its round-off: nothing left to correct
                    return x, residuals
                raise
            residuals.append(norm)
            if negligible:
                return x, residuals
            lowest, since = (norm, 0) if norm < lowest else (lowest, since + 1)
            if norm < min(residuals[:-1]):
                best = x
            if watchdog and since >= WATCHDOG:
                raise StepFailed(f"no new lowest residual in {WATCHDOG} iterations "
                                 f"(residual {norm:.3e})", residuals, "no progress")
        if norm <= options.atol + options.rtol * current.scale:
            return x, residuals
        target = options.atol + options.rtol * current.scale
        raise StepFailed(f"no convergence in {budget} iterations (residual "
                         f"{norm:.3e}, target {target:.3e})", residuals, "iterations")
    except StepFailed as failed:
        failed.best = best
        raise


def _norm(residual: np.ndarray) -> float:
    return float(np.linalg.norm(residual))

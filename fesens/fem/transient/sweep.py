"""The forward and reverse sweeps over the time steps of one run, shared by every stepped
run (linear and nonlinear heat, Newmark and generalized-α dynamics; the increments of a
path-dependent material next), and the contract they hold a stepper and an adjoint to.

A **stepper** (:class:`SweepStepper`) advances a *state* (what a step reads: a heat
state ``(T_n, T_(n−1), ..., T_(n−L+1))`` of a scheme reading ``L`` earlier levels, a
dynamic one ``(u_n, v_n, a_n)``) and *packs* it into the *record* a level keeps (heat:
``T_n``; dynamics: the state itself); ``unpack`` rebuilds state ``n`` from the records of
the ``levels`` levels ``n, n − 1, ...`` it spans. The forward sweep keeps the records of
every level, or those of the snapshots of Griewank's binomial schedule
(:mod:`~fesens.fem.transient.checkpointing`) and the ``levels − 1`` before each.

An **adjoint** (:class:`SweepAdjoint`) has one method, ``step(n, before, after)``: the
adjoint of step ``n`` from states ``n − 1`` and ``n``, called for ``n = N, ..., 1`` in
this order; it closes with its own ``finish`` after the sweep. The reverse sweep gives it
the stored states, or recomputes them from the snapshots (each state after a step the one
the sweep gave the step reversed before: one step re-run, the last).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import numpy as np

from fesens.ad.traced import Traced
from fesens.fem.transient.checkpointing import (
    forward_snapshots,
    reverse_sweep,
    with_next_state,
)

StepTerm = Callable[..., float]


class SteppedProblem(Protocol):
    """What the sweeps and the steppers read of the problem a run belongs to (a
    :class:`~fesens.fem.transient.integrate.TransientProblem` or a
    :class:`~fesens.fem.transient.dynamics.DynamicProblem`): declared here, below the
    problems, so that the steppers they build never import them back."""

    model: Any
    times: np.ndarray
    coefficients: Any
    scheme: str
    max_states: int | None
    lock: threading.RLock
    stats: dict
    newton_options: Any

    @property
    def n_steps(self) -> int:
        """``N``, the steps of the run."""

    def check_gradient_memory(self) -> None:
        """Raise before a traced run keeps more states than the memory holds."""

    def step_solver(self, key: tuple[float, float], K, M):
        """The solver of the step matrix of weights ``key``, factorized once."""

    def tangent_backend(self):
        """A nonlinear model's solver of its step tangents."""


class SweepStepper(Protocol):
    """What the sweeps need of a stepper (see the module)."""

    #: Levels whose records a state spans (``>= 1``).
    levels: int

    def start(self):
        """State 0 (from the run's initial inputs)."""

    def advance(self, n: int, state):
        """State ``n`` from state ``n − 1``."""

    def pack(self, state):
        """The record a level keeps of its state."""

    def unpack(self, n: int, records: dict):
        """State ``n`` from ``records`` (level -> record) of levels ``n, n − 1, ...``."""

    def observed(self, n: int, state) -> np.ndarray:
        """The field of state ``n`` on all dofs ``(n_dofs,)`` that the step term reads."""

    def thread_limit(self):
        """The BLAS threads of the steps' solves (a context manager)."""


class SweepAdjoint(Protocol):
    """What the reverse sweep needs of an adjoint (see the module)."""

    def step(self, n: int, before, after) -> None:
        """The adjoint of step ``n`` from states ``n − 1`` and ``n``."""


class Run:
    """One traced call: the problem, the step term and the records the forward sweep kept."""

    def __init__(self, problem: SteppedProblem, step_term: StepTerm):
        self.problem = problem
        self.step_term = step_term
        self.keep = False
        self.stored: dict[int, object] = {}  # level -> record (all, or snapshots)

    def term(self, n: int, full: np.ndarray, term_args) -> float:
        value = self.step_term(full, float(self.problem.times[n]), *term_args)
        if isinstance(value, Traced):
            raise TypeError("step_term returned a traced value for plain inputs: pass the "
                            "traced values it uses as term_args instead of a closure")
        value = np.asarray(value, dtype=float)
        if value.shape != ():
            raise ValueError(f"step_term must return a scalar, got shape {value.shape}")
        return float(value)

    def release(self, levels: Iterable[int], unpack: Callable[[int], object]) -> dict:
        """``{n: unpack(n)}`` for the snapshot ``levels`` still kept, for a reverse sweep
        that frees each once past it: the run stops holding every record but level 0's
        (else the forward's snapshots would stay alive beside those the sweep places, up
        to twice the budget). A second pullback of the same run finds none and recomputes
        them from state 0."""
        snapshots = {n: unpack(n) for n in levels if n in self.stored}
        for n in [n for n in self.stored if n != 0]:  # in place: callers hold the dict
            del self.stored[n]
        return snapshots


def kept_levels(run: Run, levels: int) -> set[int]:
    """The levels whose records a forward sweep keeps: none for a plain run, every one
    without ``max_states``, else level 0 and each snapshot with the ``levels − 1``
    before it."""
    problem = run.problem
    if not run.keep:
        return set()
    if problem.max_states is None:
        return set(range(problem.n_steps + 1))
    spine = forward_snapshots(problem.n_steps, problem.max_states)
    return {0} | {n - back for n in spine for back in range(levels)}


def sweep_forward(run: Run, stepper: SweepStepper, term_args) -> np.ndarray:
    """``values[n] = j(state n, t_n, *term_args)``, ``(N + 1,)``, keeping the records of
    :func:`kept_levels` when traced."""
    problem = run.problem
    N = problem.n_steps
    values = np.empty(N + 1)
    keep = kept_levels(run, stepper.levels)
    # the step solvers (and their factorizations) are the problem's: one run at a time
    with problem.lock, stepper.thread_limit():
        state = stepper.start()
        for n in range(N + 1):
            if n > 0:
                state = stepper.advance(n, state)
            values[n] = run.term(n, stepper.observed(n, state), term_args)
            if n in keep:
                run.stored[n] = stepper.pack(state)
        problem.stats.update(steps=N, advanced=0, taped=0, kept=len(run.stored))
    return values


def sweep_backwards(run: Run, stepper: SweepStepper, adjoint: SweepAdjoint) -> None:
    """Every adjoint step of a run, last first: from the stored states, or under the
    run's checkpointing schedule, recomputing forward segments from its snapshots (each
    adjoint step takes the state after its step from the step reversed before it)."""
    problem, stored, N = run.problem, run.stored, run.problem.n_steps
    if problem.max_states is None:
        for n in range(N, 0, -1):
            adjoint.step(n, stepper.unpack(n - 1, stored), stepper.unpack(n, stored))
        return
    stats = problem.stats

    def advance(n, state):
        stats["advanced"] += 1
        return stepper.advance(n, state)

    def adjoint_step(n, state, after):
        if after is None:  # the last state, not among the snapshots: re-run
            stats["taped"] += 1
            after = stepper.advance(n, state)
        adjoint.step(n, state, after)

    # handed over, not named here: the sweep frees each snapshot past it
    reverse_sweep(N, problem.max_states, stepper.unpack(0, stored), advance,
                  with_next_state(adjoint_step),
                  run.release(forward_snapshots(N, problem.max_states),
                              lambda n: stepper.unpack(n, stored)))


def refuse_second_derivatives(what: str, error: type, reason: str, *values) -> None:
    """Raise ``error`` when a pullback's cotangent or inputs are traced: a run's adjoint
    runs on plain arrays (``what``: the run, ``reason``: why)."""
    if any(isinstance(x, Traced) for x in values):
        raise error(f"second derivatives through {what} (grad of grad, hvp) are not "
                    f"available: {reason}; differentiate once")

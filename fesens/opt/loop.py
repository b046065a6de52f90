"""The optimization loop: evaluate, update, record, checkpoint; resumable.

The checkpoint (``.npz``, written atomically every iteration; :mod:`fesens.opt.checkpoint`)
holds the design, the iteration count, the history, the optimizer's internal state and
where the next evaluation's solves start (a nonlinear model's Newton warm start, an
iterative solver's last solutions), so a resumed run reproduces the uninterrupted one
exactly. Under the ``fesens`` command a Ctrl-C is a recorded request
(:class:`~fesens.interrupts.InterruptFlag`) that the loop honours at the start of the next
iteration or at the return of a solve (:func:`~fesens.interrupts.interruption_point`).

Distributed (``evaluation.collective``, :mod:`fesens.mpi`): each rank holds its part of the
design; the change is the largest over all ranks, and every rank's checkpoint holds the
WHOLE design (``problem.gather_design``) and the optimizer's state with each array the
optimizer declares design-sized (its ``design_sized_state``) gathered likewise, so a
checkpoint does not depend on the number of ranks; a resume takes this rank's part back
(``problem.design_part``).

A compliance design whose solver runs on a device (``gmg`` with ``matrix_free`` and a
``device``) keeps its design and state in the device's library for the whole run
(:mod:`fesens.opt.resident`): per iteration only numbers cross, the design when a
checkpoint is written; the result is the general path's evaluation of the last design.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fesens.arrays import namespace
from fesens.errors import NonFiniteError
from fesens.interrupts import interruption_point
from fesens.opt.checkpoint import (
    CheckpointError,
    check_optimizer_state,
    load_checkpoint,
    load_fingerprint,
    missing_fingerprint,
    restore_warm_start,
    save_checkpoint,
)
from fesens.opt.optimizer_base import Optimizer
from fesens.opt.problem import DesignProblem
from fesens.opt.resident import resident_path
from fesens.opt.responses import Evaluation
from fesens.opt.status import CONSTRAINT_TOL, decide_status


@dataclass
class Result:
    """Outcome of :func:`optimize`.

    Attributes
    ----------
    x : numpy.ndarray
        Final design variables (this rank's part in a distributed run).
    evaluation : Evaluation
        Responses at the final design.
    history : list of dict
        One record per iteration: iteration, objective, volume, change, seconds, plus the
        constraints' values, schedule parameters and the solver's ``rtol`` when adaptive.
    converged : bool
        True when the status is ``converged``: the design change fell below the tolerance
        after every continuation, the constraints hold within ``constraint_tol`` and the
        design is not degenerate (:mod:`fesens.opt.status`).
    status : str
        ``converged``, ``max_iter``, ``infeasible`` or ``degenerate``
        (:data:`fesens.opt.status.STATUSES`).
    reason : str
        Why an ``infeasible`` or ``degenerate`` run is so, with the numbers; empty otherwise.
    """

    x: np.ndarray
    evaluation: Evaluation
    history: list[dict] = field(default_factory=list)
    converged: bool = False
    status: str = "max_iter"
    reason: str = ""


def _gathered_state(problem: DesignProblem, optimizer: Optimizer, state: dict) -> dict:
    """The optimizer's ``state`` with each array it declares design-sized
    (``optimizer.design_sized_state``: this rank's part) replaced by the whole array.

    The optimizer names them rather than the loop guessing by length: another array (a
    multiplier per constraint, say) may have as many entries as this rank's part of the
    design, and gathering it would store a rank-dependent array in the checkpoint.
    """
    sized = optimizer.design_sized_state
    return {key: problem.gather_design(value) if key in sized else value
            for key, value in state.items()}


def _state_part(problem: DesignProblem, optimizer: Optimizer, state: dict) -> dict:
    """The inverse of :func:`_gathered_state`: this rank's part of each array the optimizer
    declares design-sized."""
    sized = optimizer.design_sized_state
    return {key: problem.design_part(value) if key in sized else value
            for key, value in state.items()}


def optimize(
    problem: DesignProblem,
    optimizer: Optimizer,
    x0: np.ndarray | None = None,
    *,
    max_iter: int = 200,
    tol_change: float = 0.01,
    callback: Callable[[dict, Evaluation, np.ndarray], None] | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
    fingerprint: str | None = None,
    resident: bool = True,
    constraint_tol: float = CONSTRAINT_TOL,
) -> Result:
    """Run the design loop until the largest design change is below ``tol_change``.

    Parameters
    ----------
    problem : DesignProblem
    optimizer : Optimizer
        OC or MMA (:data:`~fesens.opt.optimizers.OPTIMIZERS`); one with ``bound_constraints``
        for a :attr:`~fesens.opt.problem.DesignProblem.bounded` problem.
    x0 : numpy.ndarray, optional
        Starting design (default: uniform at the volume fraction).
    max_iter : int
        Iteration limit.
    tol_change : float
        Stop when ``max |x_(k+1) − x_k| < tol_change``, every continuation has held its
        final value for its ``final_iterations`` (:meth:`Continuation.done
        <fesens.opt.Continuation.done>`) and the problem is settled (:meth:`DesignProblem.settled
        <fesens.opt.problem.DesignProblem.settled>`: a robust problem's volume limit current).
    callback : callable, optional
        ``callback(record, evaluation, x_new)`` after every iteration (progress, output).
    checkpoint : path, optional
        ``.npz`` file written atomically every iteration.
    resume : bool
        Continue from ``checkpoint``.
    fingerprint : str, optional
        What the checkpoint was computed for (:mod:`fesens.config.fingerprint`), stored in
        it; a resume refuses a checkpoint that holds another one.
    resident : bool
        Run a compliance design whose solver is on a device resident in the device's
        array library when it qualifies (:func:`fesens.opt.resident.resident_refusal`);
        False: always the general, traced path (the same designs to the solver's
        tolerance).
    constraint_tol : float
        The largest constraint violation ``g_i`` that still counts as satisfied: a run whose
        stop rule held with a larger one ends ``infeasible``, not ``converged``
        (:func:`fesens.opt.status.decide_status`, which also calls a design without material
        ``degenerate``).

    In a distributed run ``x0`` and the result's ``x`` are this rank's part, the
    checkpoint holds the whole design (the module's docstring).

    With ``problem.adaptive_tolerance`` (:mod:`fesens.opt.tolerance`) the solver's ``rtol``
    is set before every evaluation from the previous change and recorded in the history
    (``rtol``); the loop stops only on an iteration solved to its ``rtol_min``.
    """
    if problem.bounded and not optimizer.bound_constraints:
        raise ValueError(f"{type(problem).__name__} minimizes the largest of several functions "
                         f"(the bound formulation); the optimizer {optimizer.name!r} cannot: "
                         "use MMA")
    checkpoint = Path(checkpoint) if checkpoint is not None else None
    history: list[dict] = []
    start = 0
    x = problem.initial_design() if x0 is None else np.asarray(x0, dtype=float).copy()
    x = optimizer.start(x)  # within the optimizer's box (OC: raised to its x_min)
    path = resident_path(problem, optimizer) if resident else None
    # what starts the next evaluation's solves: the resident path's own, or the problem's
    solves = problem if path is None else path
    if resume:
        if checkpoint is None or not checkpoint.exists():
            raise FileNotFoundError(f"no checkpoint to resume from at {checkpoint}")
        n_whole = int(problem.collective.sum(x.size))  # this rank's design variables
        x_whole, start, history, optimizer_state = load_checkpoint(checkpoint, n_whole)
        stored = load_fingerprint(checkpoint)
        if fingerprint is not None and stored is None:
            raise CheckpointError(missing_fingerprint(checkpoint))
        if fingerprint is not None and stored != fingerprint:
            raise CheckpointError(f"checkpoint {checkpoint} was written for another problem "
                                  "(its fingerprint differs)")
        check_optimizer_state(checkpoint, optimizer, optimizer_state, n_whole)
        x = problem.design_part(x_whole)
        optimizer.load_state(_state_part(problem, optimizer, optimizer_state))
        problem.restore(history)
        restore_warm_start(solves, checkpoint)
    evaluation = None
    converged = False
    tolerance = problem.adaptive_tolerance
    evaluate, volume_excess = ((problem.evaluate, problem.volume_excess) if path is None
                               else (path.evaluate, path.volume_excess))
    host = (lambda values: values) if path is None else path.to_host
    if path is not None:
        x = path.to_device(x)
    for iteration in range(start + 1, max_iter + 1):
        # the iteration boundary: the last checkpoint is whole, a Ctrl-C ends the run here
        interruption_point()
        tic = time.perf_counter()
        problem.update_schedules(iteration)
        if tolerance is not None:
            rtol = tolerance.rtol(history[-1]["change"] if history else None, tol_change)
            problem.set_solver_rtol(rtol)
        # where this evaluation starts, kept for a finished run's resume to evaluate it again
        started = None if checkpoint is None else solves.warm_start_arrays()
        evaluation = evaluate(x)
        collective = evaluation.collective
        if not collective.min(float(_finite(evaluation))):  # every rank raises, or none
            raise NonFiniteError(f"iteration {iteration}: the objective, a constraint or "
                                 "their gradients are NaN or infinite")
        x_new = optimizer.step(x, evaluation, volume_excess(x, evaluation), iteration)
        if not collective.min(float(_all_finite(x_new))):  # never a NaN design saved
            raise NonFiniteError(
                f"iteration {iteration}: {optimizer.name}'s update gave NaN or infinite "
                "design variables (its subproblem broke down, from finite objective and "
                "constraint values and gradients); the last checkpoint holds the design "
                "before it")
        change = float(collective.max(_largest_change(x_new, x)))
        record = {"iteration": iteration, "objective": evaluation.objective,
                  "volume": evaluation.volume_fraction, "change": change,
                  "seconds": time.perf_counter() - tic, **evaluation.extras}
        if problem.interpolation.parameter is not None:
            record["penalty"] = problem.interpolation.parameter
        if problem.projection.beta is not None:
            record["beta"] = problem.projection.beta
        if tolerance is not None:
            record["rtol"] = rtol
        history.append(record)
        x, evaluated = x_new, x
        if checkpoint is not None:
            save_checkpoint(checkpoint, problem.gather_design(host(x)), iteration, history,
                            _gathered_state(problem, optimizer, optimizer.state()),
                            problem.gather_design(host(evaluated)), fingerprint,
                            solves.warm_start_arrays(), started)
        if callback is not None:
            callback(record, evaluation, x)
        # a small change counts once every continuation has held its final value for its
        # final_iterations (not at a raise) and what the problem derives is current
        if change < tol_change and problem.schedules_done(iteration) and problem.settled(
                record, constraint_tol) and (
                tolerance is None or rtol <= tolerance.rtol_min):  # stop on a tight solve
            converged = True
            break
    if tolerance is not None:  # later solves (the user's) get the final tolerance back
        problem.set_solver_rtol(tolerance.rtol_min)
    x = host(x)
    final = problem.evaluate(x) if evaluation is None else evaluation.on_host()
    ending = decide_status(problem, final, converged, constraint_tol)
    return Result(x, final, history, ending.converged, ending.status, ending.reason)


def _finite(evaluation: Evaluation) -> bool:
    """Whether the objective, the constraints and their gradients (in any array library)
    are finite."""
    return bool(np.isfinite(evaluation.objective)) and all(
        _all_finite(values) for values in (evaluation.gradient, evaluation.constraints,
                                           evaluation.constraint_gradients))


def _all_finite(values) -> bool:
    """Whether every entry of ``values`` (an array of any array library) is finite."""
    xp = namespace(values)
    return bool(xp.all(xp.isfinite(xp.asarray(values))))


def _largest_change(x_new, x) -> float:
    """``max |x_new − x|`` (0 for an empty part of a distributed design), in the arrays'
    library, as a number."""
    xp = namespace(x_new, x)
    if x.shape[0] == 0:
        return 0.0
    return float(xp.max(xp.abs(x_new - x)))

"""The optimization loop: evaluate, update, record, checkpoint; resumable.

The checkpoint (``.npz``, written atomically every iteration) holds the design, the
iteration count, the history, the optimizer's internal state and where the model's next
solve starts (a nonlinear model's Newton warm start), so a resumed run reproduces the
uninterrupted one exactly. Ctrl-C never lands inside a checkpoint write
(:func:`deferred_interrupts`): a KeyboardInterrupt raised inside ``np.savez`` can leave the
zip file half open, and its cleanup then raises a ``ValueError`` in place of the interrupt.
Under the ``fesens`` command a Ctrl-C is a recorded request
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

import copy
import os
import signal
import threading
import time
import tokenize
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fesens.arrays import namespace
from fesens.errors import FesensError, NonFiniteError, writing
from fesens.interrupts import interruption_point
from fesens.opt.problem import DesignProblem, Evaluation
from fesens.opt.resident import resident_path
from fesens.opt.status import CONSTRAINT_TOL, decide_status

HISTORY_FIELDS = ("iteration", "objective", "volume", "change", "seconds")
#: What numpy raises on a checkpoint that is truncated, empty, random or lacks an entry;
#: only the archive's own messages are shown (numpy's quote the header they failed on).
_ARCHIVE = (EOFError, zipfile.BadZipFile, zlib.error)
_DAMAGED = (*_ARCHIVE, ValueError, KeyError, tokenize.TokenError)


class CheckpointError(FesensError, ValueError):
    """A checkpoint file exists but cannot be read (truncated, empty, not a checkpoint)."""


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


@contextmanager
def deferred_interrupts(*, deliver: bool = True) -> Iterator[None]:
    """Hold SIGINT (Ctrl-C) back while the block runs, so that a file being written is
    never left half done.

    An interrupt that arrives inside the block is recorded; when the block ends the previous
    handler is restored and, with ``deliver``, the interrupt is delivered to it once (however
    many arrived), so the default handler raises ``KeyboardInterrupt`` right after the block
    and the ``fesens`` command's :class:`~fesens.interrupts.InterruptFlag` records it for
    the next iteration boundary (or raises at once, when a Ctrl-C was already pending).
    Without ``deliver`` the interrupts are dropped: for the save that follows a first
    Ctrl-C, when a second one must not cut it short. Outside the main thread (where Python
    cannot set signal handlers) the block runs unprotected.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received and deliver:
        signal.raise_signal(signal.SIGINT)


def _save_checkpoint(path: Path, x, iteration, history, optimizer_state,
                     evaluated, fingerprint: str | None, warm_start: dict) -> None:
    columns = sorted({key for record in history for key in record})
    table = np.array([[record.get(k, np.nan) for k in columns] for record in history])
    tmp = path.with_name(f".{path.name}.tmp.npz")
    stamp = {} if fingerprint is None else {"fingerprint": np.array(fingerprint)}
    with deferred_interrupts(), writing(path, tmp):
        np.savez(tmp, x=x, iteration=iteration, history=table, columns=np.array(columns),
                 evaluated=evaluated, **stamp,
                 **{f"optimizer_{k}": v for k, v in optimizer_state.items()},
                 **{f"warm_{k}": v for k, v in warm_start.items()})
        os.replace(tmp, path)


def _gathered_state(problem: DesignProblem, optimizer, state: dict) -> dict:
    """The optimizer's ``state`` with each array it declares design-sized
    (``optimizer.design_sized_state``: this rank's part) replaced by the whole array.

    The optimizer names them rather than the loop guessing by length: another array (a
    multiplier per constraint, say) may have as many entries as this rank's part of the
    design, and gathering it would store a rank-dependent array in the checkpoint.
    """
    sized = optimizer.design_sized_state
    return {key: problem.gather_design(value) if key in sized else value
            for key, value in state.items()}


def _state_part(problem: DesignProblem, optimizer, state: dict) -> dict:
    """The inverse of :func:`_gathered_state`: this rank's part of each array the optimizer
    declares design-sized."""
    sized = optimizer.design_sized_state
    return {key: problem.design_part(value) if key in sized else value
            for key, value in state.items()}


def load_evaluated_design(path: Path) -> np.ndarray | None:
    """The design evaluated in the checkpoint's last iteration (its ``x`` is the design
    after that iteration's update): what the run reported last. None in a checkpoint
    written before fesens stored it.

    Raises
    ------
    CheckpointError
        The file is damaged.
    """
    return _read_checkpoint(path)["evaluated"]


def load_fingerprint(path: Path) -> str | None:
    """The fingerprint of the problem the checkpoint was written for (the ``fingerprint``
    given to :func:`optimize`); None when it was written without one.

    Raises
    ------
    CheckpointError
        The file is damaged.
    """
    return _read_checkpoint(path)["fingerprint"]


def load_warm_start(path: Path) -> dict[str, np.ndarray]:
    """Where the model of the checkpoint's run starts its next solve (a nonlinear model's
    last converged state, :meth:`~fesens.fem.model.base.Model.warm_start_arrays`); empty
    for a linear model or a checkpoint written before fesens stored it.

    Raises
    ------
    CheckpointError
        The file is damaged.
    """
    return _read_checkpoint(path)["warm_start"]


def load_checkpoint(path: Path, n_design: int | None = None
                    ) -> tuple[np.ndarray, int, list[dict], dict]:
    """``(x, iteration, history, optimizer_state)`` from a checkpoint file.

    Parameters
    ----------
    path : Path
    n_design : int, optional
        The number of (whole) design variables the checkpoint must hold.

    Raises
    ------
    CheckpointError
        The file is truncated, empty, not a checkpoint, or holds entries no run writes
        (strings, NaN, a history that does not end at its iteration, another number of
        design variables than ``n_design``); the message names it and what is wrong.
    OSError
        The file cannot be opened.
    """
    read = _read_checkpoint(path)
    x = read["x"]
    if n_design is not None and x.size != n_design:
        raise CheckpointError(f"checkpoint {path} holds {x.size} design variables, but the "
                              f"problem has {n_design}: it belongs to another problem")
    return x, read["iteration"], read["history"], read["state"]


def _read_checkpoint(path: Path) -> dict:
    """The checked entries of the checkpoint at ``path`` (:func:`load_checkpoint`)."""
    try:
        # numpy leaves the file open when the zip is damaged: we own the handle
        with open(path, "rb") as file:
            data = np.load(file, allow_pickle=False)
            if not isinstance(data, np.lib.npyio.NpzFile):  # a .npy file: one array
                raise _DamagedEntryError("a single array, not a checkpoint written by fesens")
            with data:
                return _checked_entries({name: np.asarray(data[name]) for name in data.files})
    except _DamagedEntryError as exc:
        raise CheckpointError(f"checkpoint {path} is damaged ({exc})") from None
    except _DAMAGED as exc:
        reason = str(exc).splitlines()[0] if isinstance(exc, _ARCHIVE) and str(exc) else \
            "not a checkpoint written by fesens"
        raise CheckpointError(f"checkpoint {path} is damaged ({reason})") from exc


class _DamagedEntryError(Exception):
    """What is wrong with an entry of a checkpoint (the reason of a CheckpointError)."""


def _numbers(name: str, value: np.ndarray, ndim: int) -> np.ndarray:
    """``value`` as finite floats of ``ndim`` dimensions, else :class:`_DamagedEntryError`."""
    if value.dtype.kind not in "fiub":
        raise _DamagedEntryError(f"{name!r} holds {value.dtype} values, not numbers")
    if value.ndim != ndim:
        raise _DamagedEntryError(f"{name!r} has {value.ndim} dimensions, expected {ndim}")
    if not np.all(np.isfinite(value)):
        raise _DamagedEntryError(f"{name!r} holds NaN or infinite values")
    return np.array(value, dtype=float)


def _design_variables(name: str, value: np.ndarray) -> np.ndarray:
    """``value`` as one-dimensional design variables, each a density in [0, 1] as every
    optimizer's update leaves it, else :class:`_DamagedEntryError`."""
    x = _numbers(name, value, 1)
    if x.size and (x.min() < 0.0 or x.max() > 1.0):
        raise _DamagedEntryError(f"{name!r} holds values outside [0, 1] (found {x.min():g} to "
                                 f"{x.max():g}): design variables are densities")
    return x


def missing_fingerprint(path: Path) -> str:
    """The message of a checkpoint without the fingerprint of its problem."""
    return (f"checkpoint {path} is damaged (no 'fingerprint' entry: it cannot show which "
            "problem it was written for)")


def check_optimizer_state(path: Path, optimizer, state: dict, n_design: int) -> None:
    """Raise :class:`CheckpointError` naming the checkpoint at ``path`` and the entry, if
    the optimizer ``state`` read from it (whole-design arrays) is not one ``optimizer``
    leaves for ``n_design`` design variables (each ``design_sized_state`` entry one value
    per variable; the optimizer's ``load_state`` checks the rest)."""
    for key in optimizer.design_sized_state:
        if key in state and np.shape(state[key]) != (n_design,):
            raise CheckpointError(
                f"checkpoint {path} is damaged ('optimizer_{key}' holds "
                f"{np.size(state[key])} values, but the problem has {n_design} design "
                "variables)")
    try:
        copy.copy(optimizer).load_state(state)  # a copy: the check leaves this one as it is
    except ValueError as exc:
        raise CheckpointError(f"checkpoint {path} is damaged (its {optimizer.name} state, the "
                              f"'optimizer_' entries: {exc})") from None


def _checked_entries(entries: dict[str, np.ndarray]) -> dict:
    missing = [name for name in ("x", "iteration", "history", "columns") if name not in entries]
    if missing:
        raise _DamagedEntryError(f"no {', '.join(repr(m) for m in missing)} entry")
    x = _design_variables("x", entries["x"])
    if x.size == 0:
        raise _DamagedEntryError("'x' is empty")
    iteration = entries["iteration"]
    if iteration.shape != () or iteration.dtype.kind not in "iu" or int(iteration) < 1:
        raise _DamagedEntryError(f"'iteration' must be one whole number ≥ 1, found "
                                 f"{iteration.dtype} of shape {iteration.shape}")
    iteration = int(iteration)
    columns = entries["columns"]
    if columns.dtype.kind != "U" or columns.ndim != 1:
        raise _DamagedEntryError("'columns' must be the names of the history's columns")
    columns = [str(c) for c in columns]
    absent = [name for name in HISTORY_FIELDS if name not in columns]
    if absent:
        raise _DamagedEntryError(f"the history has no {', '.join(absent)} column")
    table = entries["history"]
    if table.dtype.kind not in "fiub" or table.shape != (iteration, len(columns)):
        raise _DamagedEntryError(f"the history must be {iteration} rows (one per iteration) of "
                       f"{len(columns)} numbers, found shape {table.shape}")
    table = np.array(table, dtype=float)
    _numbers("history", table[:, [columns.index(name) for name in HISTORY_FIELDS]], 2)
    if not np.array_equal(table[:, columns.index("iteration")], np.arange(1, iteration + 1)):
        raise _DamagedEntryError(f"the history does not number the iterations 1 to {iteration}")
    history = [{k: (int(v) if k == "iteration" else float(v))
                for k, v in zip(columns, row, strict=True)} for row in table]
    state = {}
    for name, value in entries.items():
        if name.startswith("optimizer_"):
            state[name[len("optimizer_"):]] = _numbers(name, value, value.ndim).astype(
                value.dtype)
    warm_start = {name[len("warm_"):]: _numbers(name, value, value.ndim)
                  for name, value in entries.items() if name.startswith("warm_")}
    evaluated = entries.get("evaluated")
    if evaluated is not None:
        evaluated = _design_variables("evaluated", evaluated)
        if evaluated.shape != x.shape:
            raise _DamagedEntryError(f"'evaluated' holds {evaluated.size} values, 'x' {x.size}")
    fingerprint = entries.get("fingerprint")
    if fingerprint is not None:
        if fingerprint.dtype.kind != "U" or fingerprint.shape != ():
            raise _DamagedEntryError("'fingerprint' is not one string")
        fingerprint = str(fingerprint)
    return {"x": x, "iteration": iteration, "history": history, "state": state,
            "evaluated": evaluated, "fingerprint": fingerprint, "warm_start": warm_start}


def optimize(
    problem: DesignProblem,
    optimizer,
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
    optimizer : OC or MMA
    x0 : numpy.ndarray, optional
        Starting design (default: uniform at the volume fraction).
    max_iter : int
        Iteration limit.
    tol_change : float
        Stop when ``max |x_(k+1) − x_k| < tol_change`` (and every continuation is done).
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
    if getattr(problem, "bounded", False) and not getattr(optimizer, "bound_constraints", False):
        raise ValueError(f"{type(problem).__name__} minimizes the largest of several functions "
                         "(the bound formulation); the optimizer "
                         f"{getattr(optimizer, 'name', type(optimizer).__name__)!r} cannot: "
                         "use MMA")
    checkpoint = Path(checkpoint) if checkpoint is not None else None
    history: list[dict] = []
    start = 0
    x = problem.initial_design() if x0 is None else np.asarray(x0, dtype=float).copy()
    x = optimizer.start(x)  # within the optimizer's box (OC: raised to its x_min)
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
        _restore_warm_start(problem, checkpoint)
    evaluation = None
    converged = False
    tolerance = getattr(problem, "adaptive_tolerance", None)
    path = resident_path(problem, optimizer) if resident else None
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
        evaluation = evaluate(x)
        collective = evaluation.collective
        if not collective.min(float(_finite(evaluation))):  # every rank raises, or none
            raise NonFiniteError(f"iteration {iteration}: the objective or its gradient is "
                                 "NaN or infinite")
        x_new = optimizer.step(x, evaluation, volume_excess(x, evaluation), iteration)
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
            _save_checkpoint(checkpoint, problem.gather_design(host(x)), iteration, history,
                             _gathered_state(problem, optimizer, optimizer.state()),
                             problem.gather_design(host(evaluated)), fingerprint,
                             problem.warm_start_arrays())
        if callback is not None:
            callback(record, evaluation, x)
        if change < tol_change and problem.schedules_done(iteration) and (
                tolerance is None or rtol <= tolerance.rtol_min):  # stop on a tight solve
            converged = True
            break
    if tolerance is not None:  # later solves (the user's) get the final tolerance back
        problem.set_solver_rtol(tolerance.rtol_min)
    x = host(x)
    final = problem.evaluate(x) if evaluation is None else evaluation.on_host()
    ending = decide_status(problem, final, converged, constraint_tol)
    return Result(x, final, history, ending.converged, ending.status, ending.reason)


def _restore_warm_start(problem: DesignProblem, checkpoint: Path) -> None:
    """Start the model's next solve where the interrupted run would have: a nonlinear
    model's Newton from the state the checkpoint keeps, so that the resumed run is the
    uninterrupted one bit for bit (from its reference state the answer would differ at
    Newton's tolerance)."""
    try:
        problem.restore_warm_start(load_warm_start(checkpoint))
    except (KeyError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {checkpoint} holds a warm start that does not fit "
                              f"the model ({exc}); it belongs to another problem") from None


def _finite(evaluation: Evaluation) -> bool:
    """Whether the objective and its gradient (in any array library) are finite."""
    xp = namespace(evaluation.gradient)
    return bool(np.isfinite(evaluation.objective)) and bool(
        xp.all(xp.isfinite(evaluation.gradient)))


def _largest_change(x_new, x) -> float:
    """``max |x_new − x|`` (0 for an empty part of a distributed design), in the arrays'
    library, as a number."""
    xp = namespace(x_new, x)
    if x.shape[0] == 0:
        return 0.0
    return float(xp.max(xp.abs(x_new - x)))

"""An optimization's checkpoint: written atomically every iteration, read back checked.

The checkpoint (``.npz``) holds the design, the iteration count, the history, the
optimizer's internal state and where the next evaluation's solves start (``warm_`` entries:
a nonlinear model's Newton warm start and the solvers' state, e.g. the multigrid's last
solutions; :meth:`~fesens.opt.problem.DesignProblem.warm_start_arrays`), so a resumed run
reproduces the uninterrupted one exactly, and where the last iteration's evaluation
started (``evaluated_warm_`` entries), so that a finished run's resume evaluates its last
design again as that iteration did (the same bits, Newton's and the adjoint's). Ctrl-C
never lands inside a checkpoint write (:func:`deferred_interrupts`): a KeyboardInterrupt
raised inside ``np.savez`` can leave the zip file half open, and its cleanup then raises a
``ValueError`` in place of the interrupt.

Reading validates every entry (:func:`load_checkpoint`): a damaged or tampered file is a
:class:`CheckpointError` naming the checkpoint and the entry, never a raw numpy error.
"""

from __future__ import annotations

import copy
import os
import signal
import threading
import tokenize
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import numpy as np

from fesens.errors import FesensError, writing

HISTORY_FIELDS = ("iteration", "objective", "volume", "change", "seconds")
#: What numpy raises on a checkpoint that is truncated, empty, random or lacks an entry;
#: only the archive's own messages are shown (numpy's quote the header they failed on).
_ARCHIVE = (EOFError, zipfile.BadZipFile, zlib.error)
_DAMAGED = (*_ARCHIVE, ValueError, KeyError, tokenize.TokenError)


class WarmStarts(Protocol):
    """What keeps where the next evaluation's solves start: a
    :class:`~fesens.opt.problem.DesignProblem`, or the resident path that evaluates it."""

    def warm_start_arrays(self) -> dict[str, np.ndarray]: ...

    def restore_warm_start(self, arrays: dict[str, np.ndarray]) -> None: ...


class CheckpointError(FesensError, ValueError):
    """A checkpoint file exists but cannot be read (truncated, empty, not a checkpoint)."""


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


def save_checkpoint(path: Path, x: np.ndarray, iteration: int, history: list[dict],
                    optimizer_state: dict, evaluated: np.ndarray, fingerprint: str | None,
                    warm_start: dict[str, np.ndarray],
                    evaluated_warm_start: dict[str, np.ndarray] | None = None) -> None:
    """Write the checkpoint at ``path`` atomically (a temporary file replaces it), Ctrl-C
    held back meanwhile: the design ``x`` after ``iteration`` and the design it
    ``evaluated`` (whole, ``(n_design,)``), the ``history`` (one record per iteration), the
    optimizer's state (``optimizer_`` entries), the problem's ``fingerprint``, where
    the next solves start (``warm_`` entries) and where the evaluation of ``evaluated``
    started (``evaluated_warm_`` entries; None: none)."""
    columns = sorted({key for record in history for key in record})
    table = np.array([[record.get(k, np.nan) for k in columns] for record in history])
    tmp = path.with_name(f".{path.name}.tmp.npz")
    stamp = {} if fingerprint is None else {"fingerprint": np.array(fingerprint)}
    with deferred_interrupts(), writing(path, tmp):
        np.savez(tmp, x=x, iteration=iteration, history=table, columns=np.array(columns),
                 evaluated=evaluated, **stamp,
                 **{f"optimizer_{k}": v for k, v in optimizer_state.items()},
                 **{f"warm_{k}": v for k, v in warm_start.items()},
                 **{f"evaluated_warm_{k}": v for k, v in (evaluated_warm_start or {}).items()})
        os.replace(tmp, path)


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


def load_evaluated_warm_start(path: Path) -> dict[str, np.ndarray]:
    """Where the checkpoint's last evaluation (of :func:`load_evaluated_design`) started
    its solves, as :func:`load_warm_start` gives it; empty where it started from the
    reference state (the first iteration's of a nonlinear model), for a linear model with a
    direct solver, or in a checkpoint written before fesens stored it.

    Raises
    ------
    CheckpointError
        The file is damaged.
    """
    return _read_checkpoint(path)["evaluated_warm_start"]


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
    evaluated_warm_start = {name[len("evaluated_warm_"):]: _numbers(name, value, value.ndim)
                            for name, value in entries.items()
                            if name.startswith("evaluated_warm_")}
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
            "evaluated": evaluated, "fingerprint": fingerprint, "warm_start": warm_start,
            "evaluated_warm_start": evaluated_warm_start}


def restore_warm_start(solves: WarmStarts, checkpoint: Path, evaluated: bool = False
                       ) -> None:
    """Start the next evaluation's solves where the interrupted run would have: a nonlinear
    model's Newton from the state the checkpoint keeps, an iterative solver from its last
    solutions (:meth:`~fesens.solvers.base.LinearSolver.state`), so that the resumed run is
    the uninterrupted one bit for bit (from their reference states the answers would
    differ at Newton's and the solver's tolerances). With ``evaluated``: where the last
    iteration's evaluation started instead (:func:`load_evaluated_warm_start`), to evaluate
    the checkpoint's ``evaluated`` design again as that iteration did (a finished run's
    resume: from the state that evaluation ended in, Newton would stop on other criteria
    and the adjoint would not reuse Newton's last factorization, which changes the last
    bits).

    Raises
    ------
    CheckpointError
        The checkpoint's ``warm_`` entries do not fit ``solves`` (another problem's, or
        tampered with), naming the checkpoint and what does not fit.
    """
    try:
        solves.restore_warm_start(load_evaluated_warm_start(checkpoint) if evaluated
                                  else load_warm_start(checkpoint))
    except (KeyError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {checkpoint} holds a warm start that does not fit "
                              f"the model ({exc}); it belongs to another problem") from None

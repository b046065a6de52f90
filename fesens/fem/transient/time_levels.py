"""The time levels of a run and the time functions of its loads and prescribed values.

One home for the rule of a time grid: a constant step must divide the interval
(:func:`step_count`), and :func:`time_grid` builds the levels from a step, a number of
steps or given times. The config layer calls these and turns their errors into messages
that name its keys.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.errors import BoundaryConditionError, NonFiniteError
from fesens.fem.transient.run_memory import check_levels

#: The fix a :func:`step_count` refusal names from Python (the config layer names its keys).
STEP_FIX = "give a dt that does, or the time levels as times="


def interval(t_start: float, t_end: float) -> float:
    """``t_end − t_start`` of a run's interval.

    Raises
    ------
    NonFiniteError
        NaN or infinity in either end.
    ValueError
        ``t_end <= t_start``.
    """
    _finite(t_start=t_start, t_end=t_end)
    span = t_end - t_start
    if span <= 0:
        raise ValueError(f"t_end must be after t_start, got t_start={t_start!r}, "
                         f"t_end={t_end!r}")
    return span


def step_count(t_start: float, t_end: float, dt: float, fix: str = STEP_FIX) -> int:
    """``N``, the number of constant steps ``dt`` from ``t_start`` to ``t_end``: ``dt``
    must divide the interval (to a relative 1e-9).

    Parameters
    ----------
    t_start, t_end, dt : float
    fix : str
        What to change when ``dt`` does not divide the interval, for the message.

    Raises
    ------
    NonFiniteError
        NaN or infinity.
    ValueError
        ``dt <= 0``, ``t_end <= t_start``, or a ``dt`` that does not divide the interval.
    """
    _finite(t_start=t_start, t_end=t_end, dt=dt)
    if dt <= 0:
        raise ValueError(f"dt must be > 0, got {dt!r}")
    span = interval(t_start, t_end)
    n = int(round(span / dt))
    if n < 1 or abs(n * dt - span) > 1e-9 * span:
        raise ValueError(f"dt={dt!r} does not divide t_end - t_start = {span!r}; {fix}")
    return n


def _finite(**values: float) -> None:
    for name, value in values.items():
        if not np.isfinite(value):
            raise NonFiniteError(f"{name} is {value}; give a finite number")


def time_grid(*, t_end: float | None = None, dt: float | None = None, t_start: float = 0.0,
              times=None, steps: int | None = None) -> np.ndarray:
    """The time levels ``t_0 < t_1 < ... < t_N``, ``(N + 1,)``.

    One of: ``times`` (strictly increasing, at least two); ``t_end`` and ``dt`` (a
    constant step that divides ``t_end − t_start``: ``t_start + n dt``); ``t_end`` and
    ``steps`` (``N`` equal steps: ``t_start + (t_end − t_start) n / N``).

    Raises
    ------
    ValueError
        ``dt <= 0``, ``steps < 1``, ``t_end <= t_start``, a ``dt`` that does not divide the
        interval, times that do not increase strictly, or not exactly one form given.
    NonFiniteError
        NaN or infinity in the times.
    TooLargeError
        More levels than the available memory holds
        (:func:`~fesens.fem.transient.run_memory.check_levels`), before any is made.
    """
    if times is not None:
        if t_end is not None or dt is not None or steps is not None:
            raise ValueError("give either times or t_end and dt, not both")
        return _given_times(times)
    if t_end is None or (dt is None) == (steps is None):
        raise ValueError("give t_end and dt (a constant step), or times")
    if steps is None:
        n = step_count(t_start, t_end, dt)
        check_levels(n + 1, f"dt = {dt!r} from t_start = {t_start!r} to t_end = {t_end!r}",
                     "give a larger dt")
        return t_start + dt * np.arange(n + 1)
    span = interval(t_start, t_end)
    if int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    check_levels(steps + 1, f"steps = {steps!r}", "give fewer steps")
    return t_start + span * np.arange(steps + 1) / steps


def _given_times(times) -> np.ndarray:
    """``times`` as a float array ``(N + 1,)`` after its checks (see :func:`time_grid`)."""
    grid = np.asarray(times, dtype=float)
    if grid.ndim != 1 or grid.size < 2:
        raise ValueError(f"times must be a 1D array of at least two time levels, got "
                         f"shape {grid.shape}")
    if not np.all(np.isfinite(grid)):
        raise NonFiniteError("times contain NaN or infinity; give finite time levels")
    if np.any(np.diff(grid) <= 0):
        bad = int(np.flatnonzero(np.diff(grid) <= 0)[0])
        raise ValueError(f"times must increase strictly: times[{bad + 1}] = "
                         f"{grid[bad + 1]!r} <= times[{bad}] = {grid[bad]!r}")
    return grid


TimeFunction = Callable[[float], float] | tuple


def history_weights(table_times, times: np.ndarray, what: str) -> np.ndarray:
    """``W`` ``(N + 1, n_table)`` with ``W @ values`` the linear interpolation of a table
    ``(table_times, values)`` at ``times`` (constant beyond its ends).

    Raises
    ------
    ValueError
        Table times that do not increase strictly, or fewer than one.
    NonFiniteError
        NaN or infinity in the table times.
    """
    table_times = np.asarray(table_times, dtype=float)
    if table_times.ndim != 1 or table_times.size < 1:
        raise ValueError(f"{what}: the table's times must be a 1D array, got shape "
                         f"{table_times.shape}")
    if not np.all(np.isfinite(table_times)):
        raise NonFiniteError(f"{what}: the table's times contain NaN or infinity")
    if np.any(np.diff(table_times) <= 0):
        raise ValueError(f"{what}: the table's times must increase strictly, got "
                         f"{table_times.tolist()}; sort them and drop repeated times")
    eye = np.eye(table_times.size)
    return np.stack([np.interp(times, table_times, eye[i]) for i in range(table_times.size)],
                    axis=1)


def history_values(function: TimeFunction, times: np.ndarray, what: str):
    """A time function at ``times``, ``(N + 1,)``: a callable ``t -> factor`` (plain) or a
    table ``(times, values)`` interpolated linearly (traced in ``values``).

    Raises
    ------
    ValueError
        A table of the wrong form, or a callable that returns no number.
    NonFiniteError
        NaN or infinity in the values.
    """
    if callable(function):
        values = np.array([float(function(t)) for t in times])
        if not np.all(np.isfinite(values)):
            bad = int(np.flatnonzero(~np.isfinite(values))[0])
            raise NonFiniteError(f"{what}: the time function gives {values[bad]} at "
                                 f"t={times[bad]!r}; give finite values")
        return values
    if not isinstance(function, tuple) or len(function) != 2:
        raise ValueError(f"{what}: give a callable t -> factor or a table (times, values), "
                         f"got {type(function).__name__}")
    table_times, values = function
    weights = history_weights(table_times, times, what)
    raw = np.asarray(getval(values), dtype=float)
    if raw.shape != (weights.shape[1],):
        raise ValueError(f"{what}: the table has {weights.shape[1]} times but values of "
                         f"shape {raw.shape}")
    if not np.all(np.isfinite(raw)):
        raise NonFiniteError(f"{what}: the table's values contain NaN or infinity")
    return weights @ values


def dirichlet_factors(function: TimeFunction | None, times: np.ndarray, prescribed: bool):
    """``φ_g`` at ``times``, ``(N + 1,)``, the factor of every prescribed value (1 without
    ``function``); None when nothing is prescribed.

    Parameters
    ----------
    function : callable, (times, values) or None
        The run's ``dirichlet_history``.
    times : numpy.ndarray
        ``(N + 1,)``.
    prescribed : bool
        Whether the run prescribes values (a given ``dirichlet``, or a non-zero value of
        a support).

    Raises
    ------
    BoundaryConditionError
        ``function`` given where nothing is prescribed: it would multiply zeros, so it
        has no effect, and a run that ignored it would hide the mistake.
    ValueError, NonFiniteError
        As :func:`history_values`.
    """
    if not prescribed:
        if function is not None:
            raise BoundaryConditionError(
                f"dirichlet_history = {function!r:.80} has no effect: every prescribed value "
                "is zero (or nothing is fixed), and the history multiplies them; remove "
                "dirichlet_history, or give the supports non-zero values (fix(..., "
                "value=...) or dirichlet=...)")
        return None
    if function is None:
        return np.ones(times.size)
    return history_values(function, times, "dirichlet_history")

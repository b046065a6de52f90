"""Time grids, the coefficients of the time-stepping schemes and time functions of loads.

Every scheme is written as one linear multistep form for ``M Ṫ + K T = f(t)``:

    Σ_(k=0..2) α_(n,k) M T_(n−k) / Δt_n + Σ_(k=0..1) β_(n,k) (K T_(n−k) − f_(n−k)) = 0

* θ-method: ``α = (1, −1, 0)``, ``β = (θ, 1 − θ)`` (backward Euler θ = 1, Crank–Nicolson
  θ = ½);
* BDF2 (variable steps, ``ω = Δt_n / Δt_(n−1)``): ``α = ((1 + 2ω)/(1 + ω), −(1 + ω),
  ω²/(1 + ω))``, ``β = (1, 0)`` (E. Hairer, S. P. Nørsett, G. Wanner, *Solving Ordinary
  Differential Equations I*, §III.5); its first step is one backward Euler step (the
  second state it needs does not exist yet). For ``ω = 1``: ``α = (3/2, −2, 1/2)``.

The matrix of step ``n`` is ``α_(n,0)/Δt_n M + β_(n,0) K``: a constant step gives one matrix
for the θ-method, two for BDF2 (its backward Euler start and the rest).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.errors import BoundaryConditionError, NonFiniteError
from fesens.fem.transient.run_memory import check_levels

#: Scheme names and their θ (None: BDF2).
SCHEMES: dict[str, float | None] = {"backward_euler": 1.0, "crank_nicolson": 0.5,
                                    "theta": None, "bdf2": None}


def time_grid(*, t_end: float | None = None, dt: float | None = None, t_start: float = 0.0,
              times=None) -> np.ndarray:
    """The time levels ``t_0 < t_1 < ... < t_N``, ``(N + 1,)``.

    Either ``times`` (strictly increasing, at least two) or ``t_end`` and ``dt`` (a
    constant step that divides ``t_end − t_start``).

    Raises
    ------
    ValueError
        ``dt <= 0``, ``t_end <= t_start``, a ``dt`` that does not divide the interval,
        times that do not increase strictly, or both or neither forms given.
    NonFiniteError
        NaN or infinity in the times.
    TooLargeError
        More levels than the available memory holds
        (:func:`~fesens.fem.transient.run_memory.check_levels`), before any is made.
    """
    if times is not None:
        if t_end is not None or dt is not None:
            raise ValueError("give either times or t_end and dt, not both")
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
    if t_end is None or dt is None:
        raise ValueError("give t_end and dt (a constant step), or times")
    for name, value in (("t_start", t_start), ("t_end", t_end), ("dt", dt)):
        if not np.isfinite(value):
            raise NonFiniteError(f"{name} is {value}; give a finite number")
    if dt <= 0:
        raise ValueError(f"dt must be > 0, got {dt!r}")
    span = t_end - t_start
    if span <= 0:
        raise ValueError(f"t_end must be after t_start, got t_start={t_start!r}, "
                         f"t_end={t_end!r}")
    n = int(round(span / dt))
    if n < 1 or abs(n * dt - span) > 1e-9 * span:
        raise ValueError(f"dt={dt!r} does not divide t_end - t_start = {span!r}; give a "
                         "dt that does, or the time levels as times=")
    check_levels(n + 1, f"dt = {dt!r} from t_start = {t_start!r} to t_end = {t_end!r}",
                 "give a larger dt")
    return t_start + dt * np.arange(n + 1)


@dataclass(frozen=True)
class StepCoefficients:
    """``α_(n,k)`` ``(N + 1, 3)`` and ``β_(n,k)`` ``(N + 1, 2)`` of every step (row 0 unused)
    and the steps ``Δt_n`` ``(N + 1,)`` (``Δt_0`` unused)."""

    alpha: np.ndarray
    beta: np.ndarray
    dt: np.ndarray

    def matrix_key(self, n: int) -> tuple[float, float]:
        """``(α_(n,0)/Δt_n, β_(n,0))``: the weights of ``M`` and ``K`` in step ``n``'s
        matrix (equal keys share one factorization)."""
        return (float(self.alpha[n, 0] / self.dt[n]), float(self.beta[n, 0]))


def step_coefficients(times: np.ndarray, scheme: str, theta: float | None = None
                      ) -> StepCoefficients:
    """The coefficients of ``scheme`` on the time levels ``times`` (see the module's form).

    Steps that differ by round-off only (relative 1e-9) are taken as equal.

    Raises
    ------
    ValueError
        An unknown scheme, or θ outside ``[1/2, 1]`` (the unconditionally stable range)
        for ``scheme="theta"``.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown time scheme {scheme!r}; choose one of {sorted(SCHEMES)}")
    n_levels = times.size
    dt = np.concatenate([[np.nan], _snapped(np.diff(times))])
    alpha, beta = np.zeros((n_levels, 3)), np.zeros((n_levels, 2))
    if scheme == "bdf2":
        alpha[1], beta[1] = (1.0, -1.0, 0.0), (1.0, 0.0)  # the backward Euler start
        omega = dt[2:] / dt[1:-1]
        alpha[2:, 0] = (1 + 2 * omega) / (1 + omega)
        alpha[2:, 1] = -(1 + omega)
        alpha[2:, 2] = omega ** 2 / (1 + omega)
        beta[2:, 0] = 1.0
        return StepCoefficients(alpha, beta, dt)
    if scheme == "theta":
        if theta is None or not 0.5 <= theta <= 1.0:
            raise ValueError(f"scheme='theta' needs theta in [0.5, 1] (unconditionally "
                             f"stable), got theta={theta!r}")
    elif theta is not None:
        raise ValueError(f"theta is set by scheme={scheme!r}; give scheme='theta' to "
                         "choose it")
    theta = SCHEMES[scheme] if theta is None else float(theta)
    alpha[1:] = (1.0, -1.0, 0.0)
    beta[1:] = (theta, 1.0 - theta)
    return StepCoefficients(alpha, beta, dt)


def _snapped(steps: np.ndarray, rtol: float = 1e-9) -> np.ndarray:
    """``steps`` with the ones equal to ``rtol`` (round-off of ``t_0 + n Δt`` or of a sum
    of steps) replaced by one value, so that equal steps share one step matrix."""
    order = np.argsort(steps, kind="stable")
    snapped = steps.copy()
    first = steps[order[0]]
    for i in order[1:]:
        if steps[i] - first > rtol * first:
            first = steps[i]
        snapped[i] = first
    return snapped


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

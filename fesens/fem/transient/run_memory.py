"""What a run in time holds in memory, estimated before it allocates or steps.

A run holds a few numbers per time level whatever its model (:data:`LEVEL_BYTES`: the
level, its step, the scheme's coefficients, the objective's value, the prescribed values'
time factor, and the temporaries of building them), each load's time factor per level,
and, for the gradient, the states its discrete adjoint reads: every one
(``max_states=None``) or the snapshots of the binomial schedule. A time grid whose levels,
or a traced run whose kept states, need more than the memory the machine has available
(:func:`fesens.solvers.memory.available_bytes`) is refused with a
:class:`~fesens.errors.TooLargeError` that names the estimate, the memory and the fix,
where numpy's allocation would otherwise raise a bare ``MemoryError`` (or the run grow
until the system kills it).

No limit on the steps' time is set: a run's time per step ranges over orders of magnitude
with its model and solver, so that no step count is absurd for every model, while its
memory is a sum of known array sizes.
"""

from __future__ import annotations

from fesens.errors import TooLargeError
from fesens.fem.transient.schemes import time_scheme
from fesens.solvers.memory import available_bytes

#: Bytes per time level of every run: the level and its step length, the scheme's
#: coefficients (five; BDF3's six are within the rounding), the objective's value and the
#: prescribed values' time factor (nine float64), twice for the temporaries of building
#: them (``np.diff``, ``np.concatenate``).
LEVEL_BYTES = 2 * 9 * 8
#: Bytes of a kept state vector besides its values: the numpy array object (112) and its
#: entries in the run's dictionary of states and set of levels to keep (about 200).
STATE_OVERHEAD_BYTES = 112 + 200


def snapshot_vectors(scheme: str) -> int:
    """State vectors a snapshot of ``scheme`` keeps: the earlier levels its step reads (its
    record's ``levels``: BDF2's snapshots keep the level before as well)."""
    return time_scheme(scheme).levels


def levels_bytes(n_levels: float, n_loads: int = 0) -> float:
    """Bytes of ``n_levels`` time levels of a run with ``n_loads`` load terms (each a time
    factor per level). Floats, so that absurd counts (``1e15``) cannot overflow."""
    return float(n_levels) * (LEVEL_BYTES + 8.0 * n_loads)


def kept_states(n_levels: float, max_states: int | None, per_snapshot: int = 1) -> float:
    """The states a traced run keeps for its adjoint: every level without ``max_states``,
    else at most ``per_snapshot`` per snapshot (:func:`snapshot_vectors`) and the
    start."""
    if max_states is None:
        return float(n_levels)
    return min(float(n_levels), per_snapshot * float(max_states) + 1.0)


def states_bytes(n_states: float, n_free: int, vectors: int = 1) -> float:
    """Bytes of ``n_states`` kept states of ``vectors`` vectors of ``n_free`` values each
    (a heat state is ``T``, a dynamic one ``(u, v, a)``)."""
    return float(n_states) * vectors * (8.0 * n_free + STATE_OVERHEAD_BYTES)


def memory_size(n_bytes: float) -> str:
    """``2.8 MB``, ``1.23 GB`` or ``4.5e+06 GB``."""
    return f"{n_bytes / 1e6:.3g} MB" if n_bytes < 1e9 else f"{n_bytes / 1e9:.3g} GB"


def check_levels(n_levels: float, what: str, fix: str) -> None:
    """Refuse ``n_levels`` time levels whose arrays (:func:`levels_bytes`) exceed the
    available memory.

    Parameters
    ----------
    n_levels : float
        ``N + 1``.
    what : str
        What gives that many levels, for the message (``dt = 1e-12 over [0, 1]``).
    fix : str
        What to change (``give a larger dt``).

    Raises
    ------
    TooLargeError
        Naming ``what``, the steps, the estimate, the available memory and ``fix``.
    """
    needed, available = levels_bytes(n_levels), available_bytes()
    if available is not None and needed > available:
        raise TooLargeError(
            f"{what} gives {n_levels - 1:.4g} time steps, whose levels and scheme "
            f"coefficients alone need about {memory_size(needed)}, more than the "
            f"{memory_size(available)} of memory available; {fix}")


def check_kept_states(n_states: float, n_free: int, vectors: int, n_levels: float,
                      n_loads: int, what: str, fix: str) -> None:
    """Refuse a traced run whose kept states (:func:`states_bytes`) and levels
    (:func:`levels_bytes`) exceed the available memory.

    Raises
    ------
    TooLargeError
        Naming ``what`` (the states kept: ``max_states = None keeps all 20,000,001``), the
        estimate, the available memory and ``fix``.
    """
    needed = states_bytes(n_states, n_free, vectors) + levels_bytes(n_levels, n_loads)
    available = available_bytes()
    if available is not None and needed > available:
        raise TooLargeError(
            f"{what}: {n_states:.4g} states of {n_free:,} unknowns"
            f"{f' x {vectors} vectors' if vectors > 1 else ''} for the gradient need about "
            f"{memory_size(needed)} with the run's levels, more than the {memory_size(available)}"
            f" of memory available; {fix}")

"""Binomial checkpointing of a reverse sweep over time steps (revolve).

The adjoint of ``l`` time steps visits the steps in reverse order and needs, for step ``n``,
the state ``x_(n-1)`` it started from. With room for only ``s`` stored states
(snapshots) the states are recomputed from snapshots. Griewank's binomial schedule
(A. Griewank and A. Walther, "Algorithm 799: revolve", *ACM TOMS* 26(1), 2000, 19–45)
needs the fewest forward steps: with ``β(s, r) = C(s + r, s)`` and ``r`` the integer with
``β(s, r − 1) < l <= β(s, r)``,

    t(l, s) = r l − β(s + 1, r − 1)

forward steps (*advances*). The schedule here is the recursive form: advance ``m`` steps
from the snapshot of the start, store the state, reverse the ``l − m`` steps after it with
one snapshot fewer, then the ``m`` steps before it. :func:`binomial_split` picks an ``m``
for which this recursion reaches ``t(l, s)``.

An adjoint step that reads the state after its step as well as the one before needs no
re-run of its step (a *taped* step) but for the last: the state after step ``n`` is the
one the sweep gave step ``n + 1``, reversed just before (revolve's *youturn*);
:func:`with_next_state` passes it on.

The snapshot count ``s`` includes the one holding the start of the sweep (``x_0``).
"""

from __future__ import annotations

from collections.abc import Callable
from math import comb

import numpy as np


def _beta(s: int, r: int) -> int:
    """``β(s, r) = C(s + r, s)``: the most steps ``s`` snapshots reverse with ``r``
    advances of each step; 0 for ``r < 0``."""
    return comb(s + r, s) if r >= 0 else 0


def _repetitions(l: int, s: int) -> int:
    """``r`` with ``β(s, r − 1) < l <= β(s, r)``."""
    r = 0
    while _beta(s, r) < l:
        r += 1
    return r


def check_snapshots(max_states: int) -> int:
    """``max_states`` as an int after its check (at least 2: one for the start, one more).

    Raises
    ------
    ValueError
        Fewer than 2 snapshots, or not an integer.
    """
    if isinstance(max_states, bool) or not isinstance(max_states, (int, np.integer)):
        raise ValueError(f"max_states must be an integer >= 2 (or None to store every "
                         f"state), got {max_states!r}")
    if max_states < 2:
        raise ValueError(f"max_states must be >= 2 (the initial state and at least one "
                         f"more), got {max_states}; give max_states=None to store every "
                         "state")
    return int(max_states)


def minimal_advances(l: int, s: int) -> int:
    """Griewank's ``t(l, s)``: the fewest forward steps that reverse ``l`` steps with ``s``
    snapshots (a step re-run just before its adjoint, where the adjoint needs one, not
    counted)."""
    if l < 1 or s < 1:
        raise ValueError(f"need l >= 1 steps and s >= 1 snapshots, got l={l}, s={s}")
    r = _repetitions(l, s)
    return r * l - _beta(s + 1, r - 1)


def binomial_split(l: int, s: int) -> int:
    """Where the next snapshot goes: the number ``m`` (``1 <= m < l``) of steps to advance
    from the start of ``l`` steps with ``s`` snapshots, so that
    ``m + t(l − m, s − 1) + t(m, s) = t(l, s)``.

    With ``r`` as in ``t(l, s)``: the ``m`` steps before the snapshot are reversed with
    ``r − 1`` advances each at most (``m <= β(s, r − 1)``), the ``l − m`` after it with ``r``
    and one snapshot fewer (``l − m <= β(s − 1, r)``); the smallest ``m`` with both.
    """
    if l < 2:
        raise ValueError(f"nothing to split: {l} step(s)")
    if s == 1:  # no second snapshot: advance to the last step
        return l - 1
    r = _repetitions(l, s)
    return max(1, l - _beta(s - 1, r), _beta(s, r - 2))


def reverse_sweep(l: int, s: int, start_state, advance: Callable, adjoint_step: Callable,
                  stored: dict | None = None) -> None:
    """Run ``adjoint_step`` for the steps ``l, l − 1, ..., 1`` with at most ``s`` snapshots.

    Parameters
    ----------
    l : int
        Number of steps; step ``n`` takes state ``n − 1`` to state ``n``.
    s : int
        Snapshots, the one of ``start_state`` included (``>= 1``).
    start_state
        State 0.
    advance : callable
        ``advance(n, state) -> state``: step ``n`` forward from state ``n − 1`` (an
        advance of the schedule; the caller counts them).
    adjoint_step : callable
        ``adjoint_step(n, state)``: the adjoint of step ``n`` from state ``n − 1``
        (called for ``n = l, l − 1, ..., 1`` in this order; see :func:`with_next_state`).
    stored : dict, optional
        ``{n: state n}`` placed already by a forward sweep that followed
        :func:`forward_snapshots` (their advances are not repeated).
    """
    stored = dict(stored or {})

    def sweep(first: int, state, steps: int, snaps: int):
        # steps first+1 .. first+steps, from state ``first``, with ``snaps`` snapshots
        while steps > 0:
            if steps == 1:
                adjoint_step(first + 1, state)
                return
            m = binomial_split(steps, snaps)
            later = stored.pop(first + m, None)
            if later is None:
                later = state
                for n in range(first + 1, first + m + 1):
                    later = advance(n, later)
            sweep(first + m, later, steps - m, max(snaps - 1, 1))
            steps = m  # then the steps before the snapshot, from the same start

    sweep(0, start_state, l, s)


def with_next_state(adjoint_step: Callable) -> Callable:
    """``adjoint_step(n, state, after)`` as the ``adjoint_step(n, state)`` of
    :func:`reverse_sweep`: ``after`` is state ``n``, the state the sweep gave step ``n + 1``
    (which it reverses just before step ``n``), and None for the first step reversed
    (step ``l``, whose state the caller holds or re-runs).

    The state held in between is one more than the snapshots: the one the taped step
    would otherwise compute.
    """
    held = [None]

    def step(n: int, state) -> None:
        adjoint_step(n, state, held[0])
        held[0] = state

    return step


def forward_snapshots(l: int, s: int) -> list[int]:
    """The states a forward sweep over ``l`` steps stores for :func:`reverse_sweep`: the
    first snapshot of each level of its recursion (its first chain of advances), so the
    reverse sweep starts with them in place. Increasing step indices (state 0 excluded)."""
    indices, first, steps, snaps = [], 0, l, s
    while steps > 1 and snaps > 1:  # with one snapshot left the advances are transient
        m = binomial_split(steps, snaps)
        first, steps, snaps = first + m, steps - m, snaps - 1
        indices.append(first)
    return indices

"""Binomial checkpointing (fesens/fem/transient/checkpointing.py): Griewank's count of
forward steps (Griewank & Walther, "Algorithm 799: revolve", ACM TOMS 26(1), 2000) against
the optimum of the recursive schedule found by brute force, and the schedule run on a
counting toy: adjoint order, advances, snapshots held."""

import gc
import weakref
from functools import cache

import pytest

from fesens.fem.transient.checkpointing import (
    binomial_split,
    check_snapshots,
    forward_snapshots,
    minimal_advances,
    reverse_sweep,
)


@cache
def _optimum(l: int, s: int) -> int:
    """The fewest advances of any split sequence (dynamic programming over the split)."""
    if l == 1:
        return 0
    if s == 1:
        return l - 1 + _optimum(l - 1, 1)
    return min(m + _optimum(l - m, s - 1) + _optimum(m, s) for m in range(1, l))


def test_known_counts():
    """t(l, s) = r l − β(s + 1, r − 1): 3 steps, 1 snapshot: 2 + 1 advances; enough
    snapshots: l − 1 (one forward sweep); one snapshot: l (l − 1) / 2."""
    assert minimal_advances(3, 1) == 3
    assert minimal_advances(10, 9) == 9
    assert minimal_advances(10, 1) == 45
    # β(5, 4) = 126 < 200 <= β(5, 5) = 252: r = 5, 5·200 − C(10, 6) = 1000 − 210
    assert minimal_advances(200, 5) == 790


@pytest.mark.parametrize("s", [1, 2, 3, 4, 6])
def test_formula_is_the_optimum_and_the_split_reaches_it(s):
    for l in range(1, 70):
        assert minimal_advances(l, s) == _optimum(l, s), (l, s)
        if l > 1:
            m = binomial_split(l, s)
            assert 1 <= m < l
            assert m + _optimum(l - m, max(s - 1, 1)) + _optimum(m, s) == _optimum(l, s)


@pytest.mark.parametrize(("l", "s"), [(1, 2), (7, 2), (30, 3), (200, 4), (55, 10)])
def test_sweep_visits_every_step_backwards_with_the_minimal_advances(l, s):
    """Each adjoint step receives its own start state; the advances equal t(l, s); at
    most s states are held (plus the one being advanced); with the forward sweep's
    snapshots in place the reverse sweep repeats none of its advances."""
    advances, order = [0], []

    def advance(n, state):
        assert state == n - 1
        advances[0] += 1
        return n

    def adjoint_step(n, state):
        assert state == n - 1
        order.append(n)

    reverse_sweep(l, s, 0, advance, adjoint_step)
    assert order == list(range(l, 0, -1))
    assert advances[0] == minimal_advances(l, s)

    spine = forward_snapshots(l, s)
    assert len(spine) <= s - 1
    advances[0], order[:] = 0, []
    reverse_sweep(l, s, 0, advance, adjoint_step, {n: n for n in spine})
    assert order == list(range(l, 0, -1))
    assert advances[0] + (spine[-1] if spine else 0) == minimal_advances(l, s)


@pytest.mark.slow
def test_at_most_s_snapshots_are_alive():
    """Count the states referenced by the recursion at once (weak references)."""
    class State:
        def __init__(self, n):
            self.n = n

    alive, peak = weakref.WeakSet(), [0]

    def advance(n, state):
        new = State(n)
        alive.add(new)
        return new

    def adjoint_step(n, state):
        gc.collect()
        peak[0] = max(peak[0], len(alive))

    start = State(0)
    alive.add(start)
    reverse_sweep(40, 4, start, advance, adjoint_step)
    assert peak[0] <= 4 + 1  # the snapshots and the state being advanced


@pytest.mark.parametrize("bad", [1, 0, -3, 2.5, True, None])
def test_too_few_snapshots_are_refused(bad):
    with pytest.raises(ValueError, match="max_states"):
        check_snapshots(bad)

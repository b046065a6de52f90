"""A Ctrl-C is a recorded request honoured at safe points: one that lands in a finalizer or a
callback, where Python swallows exceptions, is not lost, and a second one raises at once."""

import signal
import sys
import threading
import weakref

import numpy as np
import pytest
import scipy.sparse as sp

from fesens.interrupts import InterruptFlag, interruption_point
from fesens.solvers.registry import make_solver


@pytest.fixture
def flag():
    """The ``fesens`` command's SIGINT handler during the test, Python's own after it."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        installed = InterruptFlag.install()
        assert installed is not None
        yield installed
    finally:
        signal.signal(signal.SIGINT, previous)


class _CtrlCWhenCollected:
    """An object whose finalizer receives a Ctrl-C (as when SIGINT lands while ``__del__``
    runs): an exception raised there is reported as "Exception ignored" and dropped."""

    def __del__(self):
        signal.raise_signal(signal.SIGINT)


def _ctrl_c_in_a_del() -> None:
    _CtrlCWhenCollected()  # collected at once: its __del__ runs here


def _ctrl_c_in_a_weakref_callback() -> None:
    target = type("Target", (), {})()
    weakref.finalize(target, signal.raise_signal, signal.SIGINT)
    del target


def _solver():
    solver = make_solver("superlu")
    solver.factorize(sp.csr_matrix(np.array([[2.0, 1.0], [1.0, 3.0]])))
    return solver


def test_the_first_ctrl_c_is_recorded_and_raised_at_the_next_safe_point(flag):
    interruption_point()  # nothing pending: nothing happens
    signal.raise_signal(signal.SIGINT)
    assert flag.pending and flag.received == 1
    with pytest.raises(KeyboardInterrupt):
        interruption_point()
    with pytest.raises(KeyboardInterrupt):  # it stays pending: the run must end
        interruption_point()


def test_a_second_ctrl_c_while_one_is_pending_raises_at_once(flag):
    signal.raise_signal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):  # and so does every later one: none is ignored
        signal.raise_signal(signal.SIGINT)
    assert flag.received == 3
    assert signal.getsignal(signal.SIGINT) is flag


@pytest.mark.parametrize("swallowing", [_ctrl_c_in_a_del, _ctrl_c_in_a_weakref_callback])
def test_a_ctrl_c_inside_a_finalizer_stops_the_next_solve(flag, swallowing):
    """Python's handler raised the KeyboardInterrupt inside the finalizer, which dropped it
    (and a handler that ignored later Ctrl-Cs left the run unstoppable); the flag keeps it
    for the solve's return."""
    solver = _solver()
    swallowing()
    assert flag.pending
    assert signal.getsignal(signal.SIGINT) is flag  # never SIG_IGN
    with pytest.raises(KeyboardInterrupt):
        solver.solve(np.array([1.0, 2.0]))


def test_an_interrupt_swallowed_by_a_finalizer_is_raised_again(flag, monkeypatch):
    """The second Ctrl-C raises at once, here inside a finalizer that drops it: the request
    is still pending, so the next safe point raises."""
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", dropped.append)
    signal.raise_signal(signal.SIGINT)
    _ctrl_c_in_a_del()
    assert [type(d.exc_value) for d in dropped] == [KeyboardInterrupt]
    with pytest.raises(KeyboardInterrupt):
        _solver().solve(np.array([1.0, 2.0]))


def test_only_the_main_thread_raises(flag):
    signal.raise_signal(signal.SIGINT)
    outcome = []

    def worker() -> None:
        try:
            interruption_point()
            outcome.append("went on")
        except KeyboardInterrupt:
            outcome.append("raised")

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(timeout=300)
    assert outcome == ["went on"]


def test_without_the_flag_nothing_is_pending():
    """Python's own handler (a notebook, a script): safe points do nothing, Ctrl-C raises
    where it lands, as Python does."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        interruption_point()
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_process_that_ignores_ctrl_c_keeps_ignoring_it():
    """A background job starts with SIGINT ignored; the command does not turn it on."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert InterruptFlag.install() is None
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)

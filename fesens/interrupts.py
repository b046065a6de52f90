"""Ctrl-C as a request that a run honours at its next safe point, never lost.

Python's own SIGINT handler raises ``KeyboardInterrupt`` wherever the main thread happens
to be, inside a finalizer (``__del__``, a weakref callback) or a library's callback too,
where Python prints "Exception ignored in ..." and carries on: that interrupt is lost. A
handler that also ignored later Ctrl-Cs (to protect the save that follows the first) then
left the run unstoppable.

:class:`InterruptFlag`, the SIGINT handler that the ``fesens`` command installs, only
records a Ctrl-C; the run raises ``KeyboardInterrupt`` at its safe points
(:func:`interruption_point`: the optimization loop's iteration boundary, the return of
every linear solve, so of every time step, Newton iteration and study sample, and the
study's wait for its workers). A recorded interrupt stays recorded, so one raised where
it is swallowed is raised again at the next safe point; a second Ctrl-C while one is
pending raises at once. Only the save that follows an interrupt ignores Ctrl-C
(:func:`fesens.opt.checkpoint.deferred_interrupts`).

Without the handler (Python's default, a notebook, a test) :func:`interruption_point`
does nothing and Ctrl-C raises where it lands, as Python does.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

__all__ = ["InterruptFlag", "interruption_point"]


class InterruptFlag:
    """The SIGINT handler of one run: records each Ctrl-C; raises ``KeyboardInterrupt`` at
    once from the second on.

    Attributes
    ----------
    received : int
        Ctrl-Cs received so far; from the first on the run stops at its next
        :func:`interruption_point`.
    """

    def __init__(self) -> None:
        self.received = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received += 1
        if self.received > 1:  # the first is pending: the user insists, stop here
            raise KeyboardInterrupt

    @property
    def pending(self) -> bool:
        """Whether a Ctrl-C was received (it stays so: the run must end)."""
        return self.received > 0

    @classmethod
    def install(cls) -> InterruptFlag | None:
        """Make a new flag the SIGINT handler where Python's default handler is in place
        (a process that ignores SIGINT, a background job, keeps ignoring it) and this is
        the main thread (the only one that may set handlers); the flag, or None."""
        if threading.current_thread() is not threading.main_thread():
            return None
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return None
        flag = cls()
        signal.signal(signal.SIGINT, flag)
        return flag


def interruption_point() -> None:
    """Raise ``KeyboardInterrupt`` if the process's SIGINT handler is an
    :class:`InterruptFlag` that received a Ctrl-C; nothing otherwise.

    Only the main thread raises: that is where the handler runs and the run's own loop
    is; a worker thread's ``KeyboardInterrupt`` could end that thread alone.

    Raises
    ------
    KeyboardInterrupt
        A Ctrl-C is pending.
    """
    handler = signal.getsignal(signal.SIGINT)
    if (isinstance(handler, InterruptFlag) and handler.pending
            and threading.current_thread() is threading.main_thread()):
        raise KeyboardInterrupt

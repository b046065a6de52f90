"""Where a nonlinear model's next solve starts: each thread's last converged state.

Newton starts from the last converged state when the inputs changed little (an
optimization loop). That state is kept per thread, so a model shared by threads never
starts one thread's solve from another's, and it can be taken out and put back as plain
arrays: an optimization's checkpoint keeps it, so that a resumed run starts its next
solve where the uninterrupted one would (the same bits).
"""

from __future__ import annotations

import threading

import numpy as np

from fesens.fem.assembly.assembler import Assembler
from fesens.fem.nonlinear.implicit_solve import ConvergedState


class ThreadWarmStart(threading.local):
    """One thread's last converged solve of a model and the assembler (the set of
    unknowns) it was made on; each thread sees its own (class defaults: none)."""

    state: ConvergedState | None = None
    assembler: Assembler | None = None


class WarmStart:
    """Mixin of :class:`~fesens.fem.model.nonlinear.NonlinearModel`: its warm start.

    The model sets ``_warm`` (a :class:`ThreadWarmStart`) and ``_assembler`` in its
    ``__init__`` and owns the :attr:`assembler` property.
    """

    _warm: ThreadWarmStart
    _assembler: Assembler | None
    assembler: Assembler
    free_dofs: np.ndarray
    constrained_dofs: np.ndarray

    @property
    def converged_state(self) -> ConvergedState | None:
        """This thread's last converged solve on the current pattern, the start of its
        next solve when the inputs are close (None before the first).

        Kept per thread: a solve never starts from another thread's state, so that a
        thread's sequence of solves gives what the same sequence gives alone, whatever the
        other threads do (the model may be shared by threads).
        """
        warm = self._warm
        if warm.state is None or warm.assembler is not self._assembler:
            return None  # another set of Dirichlet dofs since: other unknowns
        return warm.state

    @converged_state.setter
    def converged_state(self, state: ConvergedState | None) -> None:
        self._warm.state, self._warm.assembler = state, self._assembler

    def warm_start_arrays(self) -> dict[str, np.ndarray]:
        """This thread's warm start (:attr:`converged_state`) as named arrays, empty when
        there is none: what an optimization's checkpoint keeps."""
        state = self.converged_state
        return {} if state is None else state.arrays()

    def restore_warm_start(self, arrays: dict[str, np.ndarray]) -> None:
        """Make ``arrays`` (of :meth:`warm_start_arrays`) this thread's warm start; empty:
        none (the next solve starts from the reference state).

        Raises
        ------
        KeyError
            ``arrays`` lacks ``u_free``, ``f`` or ``g``.
        ValueError
            One of them has another size than this model's free, all or prescribed dofs.
        """
        self.assembler  # noqa: B018 - made now: the pattern the state belongs to
        if not arrays:
            self.converged_state = None
            return
        sizes = {"u_free": self.free_dofs.size, "f": self.dofmap.n_dofs,
                 "g": self.constrained_dofs.size}
        for name, size in sizes.items():
            if np.shape(arrays[name]) != (size,):
                raise ValueError(f"the warm start's {name!r} has shape "
                                 f"{np.shape(arrays[name])}, the model's ({size},)")
        self.converged_state = ConvergedState.from_arrays(arrays)

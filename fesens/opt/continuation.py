"""Continuation schedules of a penalty or a projection's sharpness.

A parameter starts at ``start``, is multiplied (``factor``) or increased (``step``) every
``every`` iterations until it reaches ``final``, then holds it for at least
``final_iterations`` iterations before the loop may stop (a design that has just been
sharpened or penalized further has not yet answered the raise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Continuation:
    """Schedule ``value(iteration)``: ``start`` raised every ``every`` iterations to ``final``.

    The value at an iteration is a function of the iteration alone, so a resumed run takes
    the schedule up where it stopped. ``final_iterations`` (≥ 1) iterations must follow the
    one that first holds ``final`` before :meth:`done`: the design change measured at the
    iteration of a raise is the answer to the old value, never a sign of convergence.
    """

    start: float
    final: float | None = None
    every: int = 20
    factor: float | None = None
    step: float | None = None
    final_iterations: int = 1

    def value(self, iteration: int) -> float:
        """The parameter at 1-based ``iteration``."""
        if self.final is None:
            return self.start
        k = max(0, (iteration - 1) // max(self.every, 1))
        return self._raised(k)

    def _raised(self, k: int) -> float:
        """The value after ``k`` raises, within ``final``."""
        if self.factor is not None:
            try:
                raised = self.start * self.factor**k
            except OverflowError:  # beyond any final value (asked of a distant iteration)
                raised = np.inf
        else:
            raised = self.start + (self.step if self.step is not None else 1.0) * k
        return min(raised, self.final) if self.final >= self.start else max(raised, self.final)

    def first_final_iteration(self, limit: int = 10**9) -> int | None:
        """The first 1-based iteration whose value is ``final`` (1 without a continuation),
        or None when none up to ``limit`` is (a schedule that never reaches it)."""
        if self.final is None:
            return 1
        raises = (limit - 1) // max(self.every, 1)
        if self._raised(raises) != self.final:
            return None
        low, high = -1, raises  # _raised(high) is final, _raised(low) is not (monotone)
        while high - low > 1:
            middle = (low + high) // 2
            if self._raised(middle) == self.final:
                high = middle
            else:
                low = middle
        return 1 + high * max(self.every, 1)

    def iterations_needed(self, limit: int = 10**9) -> int | None:
        """The smallest iteration limit at which :meth:`done` can hold: the first final
        iteration plus ``final_iterations`` (1 without a continuation), or None when
        ``final`` is not reached within ``limit`` iterations."""
        if self.final is None:
            return 1
        first = self.first_final_iteration(limit)
        return None if first is None else first + self.final_iterations

    def done(self, iteration: int) -> bool:
        """True when the value is final and has been for ``final_iterations`` iterations
        before ``iteration`` (it will not change again, and the design has answered it)."""
        if self.final is None:
            return True
        needed = self.iterations_needed(iteration)
        return needed is not None and iteration >= needed

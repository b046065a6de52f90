"""Optimality criteria update (Bendsøe & Sigmund 2003, §1.2; top88: Andreassen et al. 2011).

For one volume constraint and a decreasing objective (∂c/∂x ≤ 0, as compliance):

    x_new = clip(x · sqrt(−∂c/∂x / (λ ∂V/∂x)), x − m, x + m, 0, 1)

with the Lagrange multiplier ``λ`` found by bisection so that the (filtered, projected)
volume meets its bound, and the move limit ``m``.

Distributed (``evaluation.collective``, :mod:`fesens.mpi`): ``x`` and the gradients are this
rank's part; the one reduction over them, the mean of ``∂V/∂x``, is taken over all ranks, and
``volume_excess`` gives the global volume, so every rank bisects to the same ``λ``.

The update is written against the Python array API: ``x`` and the gradients may live in
another array library (a design resident on a GPU, :mod:`fesens.opt.resident`); only the
bisection's volume tests come to the host, one number each.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from fesens.arrays import namespace
from fesens.mpi import SERIAL
from fesens.opt.problem import Evaluation

#: Bisection stops before ``λ`` underflows (the bound is then met at any ``λ`` > 0).
_SMALLEST_LAMBDA = np.finfo(float).tiny


class OC:
    """Optimality-criteria optimizer (volume constraint only).

    Parameters
    ----------
    move : float
        Move limit per iteration (top88: 0.2).
    tolerance : float
        Relative bisection tolerance on ``λ`` (top88: 1e-3).
    """

    name = "oc"
    #: Handles constraints besides the volume (``[[constraints.extra]]``): no.
    general_constraints = False
    #: The :meth:`state` entries with one value per design variable (none): a distributed
    #: checkpoint gathers exactly these into the whole design's.
    design_sized_state: tuple[str, ...] = ()

    def __init__(self, move: float = 0.2, tolerance: float = 1e-3):
        if not 0 < move <= 1:
            raise ValueError(f"OC move limit must be in (0, 1], got {move!r}")
        self.move = move
        self.tolerance = tolerance

    def state(self) -> dict:
        """Internal state to checkpoint (none)."""
        return {}

    def load_state(self, state: dict) -> None:
        """Restore :meth:`state` (nothing to restore).

        Raises
        ------
        ValueError
            ``state`` has entries: OC keeps none, so it is another optimizer's.
        """
        if state:
            raise ValueError(f"OC keeps no state, found the entries {', '.join(sorted(state))} "
                             "(another optimizer's)")

    def step(self, x, evaluation: Evaluation, volume_excess: Callable, iteration: int):
        """The next design.

        Parameters
        ----------
        volume_excess : callable
            ``x ↦ V(ρ(x))/V_Ω − f`` (must be ≤ 0 at the returned design).
        """
        if evaluation.constraints.size != 1:
            raise ValueError("OC handles the volume constraint only; use the MMA optimizer "
                             "for additional constraints")
        xp = namespace(x, evaluation.gradient)
        dc = xp.minimum(evaluation.gradient, 0.0)
        # λ is found by bisection on [0, 1e9]; scaling ∂V/∂x to mean 1 makes λ (and so the
        # bisection path) the same as top88's, which uses ∂V/∂x = 1 per unit-volume cell.
        collective = getattr(evaluation, "collective", SERIAL)
        dv = (np.asarray(evaluation.constraint_gradients[0], dtype=float) if xp is np
              else evaluation.constraint_gradients[0, ...])
        mean = collective.sum(float(xp.sum(dv))) / collective.sum(dv.shape[0])
        dv = xp.maximum(dv / mean, 1e-30)
        lower, upper = xp.maximum(x - self.move, 0.0), xp.minimum(x + self.move, 1.0)
        scale = x * xp.sqrt(-dc / dv)
        # λ → 0 gives the fullest design the move limit allows (cells without a decrease of
        # the objective stay at their lower bound); if it meets the bound, no λ > 0 is active.
        fullest = xp.where(scale > 0, upper, lower)
        if volume_excess(fullest) <= 0:
            return fullest
        low, high = 0.0, 1e9
        candidate = fullest
        while high - low > self.tolerance * (high + low) and high > _SMALLEST_LAMBDA:
            mid = 0.5 * (low + high)
            with np.errstate(over="ignore"):
                candidate = xp.clip(scale / math.sqrt(mid), lower, upper)
            if volume_excess(candidate) > 0:
                low = mid
            else:
                high = mid
        return candidate

"""Optimality criteria update (Bendsøe & Sigmund 2003, §1.2; top88: Andreassen et al. 2011).

For one volume constraint and a decreasing objective (∂c/∂x ≤ 0, as compliance):

    x_new = clip(x̃ · (−∂c/∂x / (λ ∂V/∂x))^η, x − m, x + m, x_min, 1),   x̃ = max(x, x_min)

with the Lagrange multiplier ``λ`` found by bisection so that the (filtered, projected)
volume meets its bound, the move limit ``m``, the damping ``η`` (top88: 1/2; Sigmund's
compliant-mechanism code: 0.3) and the positive lower bound ``x_min`` (Sigmund's 99-line
code: 1e-3). The update is multiplicative: with a lower bound of 0 a cell that reaches 0
stays there (``0 · B^η = 0``), so an all-void start ends at once and a mechanism design,
whose objective gradient changes sign, empties its cells one by one; ``x_min > 0`` keeps
every cell able to grow back.

Distributed (``evaluation.collective``, :mod:`fesens.mpi`): ``x`` and the gradients are this
rank's part; the one reduction over them, the mean of ``∂V/∂x``, is taken over all ranks, and
``volume_excess`` gives the global volume, so every rank bisects to the same ``λ``.

The update is written against the Python array API: ``x`` and the gradients may live in
another array library (a design resident on a GPU, :mod:`fesens.opt.resident`); only the
bisection's volume tests come to the host, one number each.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens.arrays import namespace
from fesens.opt.optimizer_base import Optimizer
from fesens.opt.responses import Evaluation

#: Bisection stops before ``λ`` underflows (the bound is then met at any ``λ`` > 0).
_SMALLEST_LAMBDA = np.finfo(float).tiny


class OC(Optimizer):
    """Optimality-criteria optimizer (volume constraint only).

    Parameters
    ----------
    move : float
        Move limit per iteration (top88: 0.2), in (0, 1].
    tolerance : float
        Relative bisection tolerance on ``λ`` (top88: 1e-3).
    damping : float
        Exponent ``η`` of the update factor, in (0, 1] (top88: 0.5; compliant mechanisms:
        0.3 damps the oscillation of cells whose gradient changes sign).
    x_min : float
        Lower bound of the design variables, in [0, 1) (Sigmund's codes: 1e-3). 0 is
        top88's bound, under which a cell that reaches 0 can never grow back.
    lambda_max : float
        Upper end of the bisection interval ``[0, λ_max]`` of the multiplier, > 0 (top88:
        1e9; Sigmund's 99-line code and its mechanism version: 1e5). With ``∂V/∂x`` scaled
        to mean 1, ``λ`` is the codes' own, so their bisection path is reproduced.

    Sigmund's compliant-mechanism code (Struct. Multidisc. Optim. 21, 2001, §5.3) is
    ``OC(move=0.1, tolerance=1e-4, damping=0.3, x_min=1e-3, lambda_max=1e5)``: its factor
    ``max(1e-10, −∂c/∂x / λ)^0.3`` floors what the bounds clip anyway, and where the fullest
    design the move limit allows stays within the volume its bisection runs ``λ`` down to 0,
    which gives that design, as here.
    """

    name = "oc"
    # the volume constraint only, no bound formulation, no design-sized state: the
    # defaults of Optimizer

    def __init__(self, move: float = 0.2, tolerance: float = 1e-3, damping: float = 0.5,
                 x_min: float = 1e-9, lambda_max: float = 1e9):
        if not 0 < move <= 1:
            raise ValueError(f"OC move limit must be in (0, 1], got {move!r}")
        if not 0 < damping <= 1:
            raise ValueError(f"OC damping must be in (0, 1], got {damping!r}")
        if not 0 <= x_min < 1:
            raise ValueError(f"OC x_min (the lower bound of the design variables) must be in "
                             f"[0, 1), got {x_min!r}")
        if not (lambda_max > 0 and np.isfinite(lambda_max)):
            raise ValueError(f"OC lambda_max (the upper end of the multiplier's bisection) "
                             f"must be > 0 and finite, got {lambda_max!r}")
        self.move = move
        self.tolerance = tolerance
        self.damping = damping
        self.x_min = x_min
        self.lambda_max = lambda_max

    def start(self, x):
        """The design a run starts from when asked to start at ``x`` ``(n,)``: ``x`` within
        ``[x_min, 1]``. At ``x = 0`` SIMP's slope vanishes, so an all-void start
        gives OC no gradient to grow from; at ``x_min`` it has one."""
        xp = namespace(x)
        return xp.clip(x, self.x_min, 1.0)

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
        # λ is found by bisection on [0, λ_max]; scaling ∂V/∂x to mean 1 makes λ (and so the
        # bisection path) the same as top88's, which uses ∂V/∂x = 1 per unit-volume cell.
        collective = evaluation.collective
        dv = (np.asarray(evaluation.constraint_gradients[0], dtype=float) if xp is np
              else evaluation.constraint_gradients[0, ...])
        mean = collective.sum(float(xp.sum(dv))) / collective.sum(dv.shape[0])
        dv = xp.maximum(dv / mean, 1e-30)
        lower = xp.maximum(x - self.move, self.x_min)
        upper = xp.maximum(xp.minimum(x + self.move, 1.0), lower)  # a start below x_min
        # the factor acts on x raised to x_min: a cell below the bound grows like one at it
        scale = xp.maximum(x, self.x_min) * (-dc / dv) ** self.damping
        # λ → 0 gives the fullest design the move limit allows (cells without a decrease of
        # the objective stay at their lower bound); if it meets the bound, no λ > 0 is active.
        fullest = xp.where(scale > 0, upper, lower)
        if volume_excess(fullest) <= 0:
            return fullest
        low, high = 0.0, self.lambda_max
        candidate = fullest
        while high - low > self.tolerance * (high + low) and high > _SMALLEST_LAMBDA:
            mid = 0.5 * (low + high)
            with np.errstate(over="ignore"):
                candidate = xp.clip(scale / mid ** self.damping, lower, upper)
            if volume_excess(candidate) > 0:
                low = mid
            else:
                high = mid
        return candidate

"""Method of Moving Asymptotes (MMA), Svanberg's 2007 variant.

References
----------
K. Svanberg, "The method of moving asymptotes — a new method for structural optimization",
International Journal for Numerical Methods in Engineering 24 (1987) 359–373.

K. Svanberg, "MMA and GCMMA — two methods for nonlinear optimization", KTH note (2007):
the ``mmasub`` subproblem and the ``subsolv`` primal-dual interior-point method below.

The problem solved is Svanberg's standard form with ``a0 = 1``, ``a_i = 0``, ``c_i`` large and
``d_i = 1``, which makes it equivalent to ``min f0(x)`` s.t. ``f_i(x) ≤ 0``, ``xmin ≤ x ≤ xmax``
whenever that problem is feasible (the artificial ``y_i`` then vanish)::

    min  f0(x) + a0 z + Σ (c_i y_i + ½ d_i y_i²)
    s.t. f_i(x) − a_i z − y_i ≤ 0,   xmin ≤ x ≤ xmax,   y ≥ 0,  z ≥ 0.

**Bound constraints** (min–max, Svanberg 2007 §"min-max problems"): when an evaluation
carries ``bounds`` ``f_c(x) ≥ 0`` (e.g. the compliance of each load case), the objective is
``max_c f_c(x)``, written with the variable ``z`` as its bound: ``f0 = 0`` and each ``f_c``
becomes a constraint with ``a_c = 1``::

    min  z + Σ (c_i y_i + ½ d_i y_i²)
    s.t. f_c(x) − z − y_c ≤ 0 (each bound),   g_i(x) − y_i ≤ 0 (the other constraints).

All ``f_c`` share one scale (``objective_scale / max_c |f_c(x_1)|``), so the largest stays
the largest.

Each iteration replaces every ``f_i`` by a convex separable approximation around ``x_k``::

    f̃_i(x) = Σ_j p_ij / (U_j − x_j) + q_ij / (x_j − L_j) + r_i

    p_ij = (U_j − x_j)² (1.001 max(∂f_i/∂x_j, 0) + 0.001 max(−∂f_i/∂x_j, 0) + raa0 / Δ_j)
    q_ij = (x_j − L_j)² (0.001 max(∂f_i/∂x_j, 0) + 1.001 max(−∂f_i/∂x_j, 0) + raa0 / Δ_j)

(``Δ = xmax − xmin``) and solves the subproblem on ``α ≤ x ≤ β``::

    α = max(xmin, L + albefa (x_k − L), x_k − move Δ)
    β = min(xmax, U − albefa (U − x_k), x_k + move Δ)

The asymptotes start at ``x_k ∓ asyinit Δ`` (first two iterations); afterwards they widen by
``asyincr`` where a variable keeps moving in one direction, narrow by ``asydecr`` where it
oscillates, and stay within ``[0.01 Δ, 10 Δ]`` of ``x_k``.

**Distributed** (``evaluation.collective``, :mod:`fesens.mpi`): each rank holds its part of
``x`` and of every gradient; the sums over the design variables in the subproblem (the
constraint approximations, the reduced Newton system, the residual norm) and the maxima
(the step length, the stopping test, the bounds check) are taken over all ranks, so every
rank solves the same ``(m + 1) × (m + 1)`` systems and takes the same steps.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens.mpi import SERIAL, Collective
from fesens.opt.optimizer_base import Optimizer
from fesens.opt.responses import Evaluation

#: Barrier parameter at which the interior-point subproblem solver stops.
EPSILON_MIN = 1e-7
#: Asymptotes stay within [ASYMPTOTE_MIN, ASYMPTOTE_MAX] · Δ of the current design.
ASYMPTOTE_MIN, ASYMPTOTE_MAX = 0.01, 10.0
#: Newton iterations per barrier level and step halvings per Newton iteration (Svanberg).
MAX_NEWTON, MAX_HALVINGS = 200, 50


class MMA(Optimizer):
    """Method of Moving Asymptotes for ``min f0(x)`` s.t. ``g_i(x) ≤ 0`` and bounds.

    Same interface as :class:`~fesens.opt.oc.OC`; any number of constraints (the volume
    constraint and the :class:`~fesens.opt.problem.Constraint` list of a design problem).

    Parameters
    ----------
    move : float
        Move limit per iteration, as a fraction of ``upper − lower`` (Svanberg: 0.5).
    asyinit, asyincr, asydecr : float
        Initial asymptote distance (fraction of ``upper − lower``), and the factors that
        widen and narrow it (Svanberg: 0.5, 1.2, 0.7).
    albefa : float
        How close to an asymptote the subproblem bounds may come (Svanberg: 0.1).
    raa0 : float
        Regularisation of the approximations (Svanberg: 1e-5).
    c, d : float
        Cost coefficients of the artificial variables ``y_i`` (``c`` large: 1000; ``d = 1``).
    objective_scale : float or None
        The objective is multiplied internally by ``objective_scale / |f0(x_1)|`` (its
        value at the first iteration), which makes MMA independent of the objective's
        units; ``None`` leaves it unscaled. Constraints are used as given. With bound
        constraints, every ``f_c`` is multiplied by ``objective_scale / max_c |f_c(x_1)|``.
    lower, upper : float or numpy.ndarray
        Bounds of the design variables, scalars or ``(n_design,)`` (default ``[0, 1]``).
    move_min : float or None
        With it, the move limit shrinks: ``move`` for the first ``move_shrink_after``
        iterations, then multiplied by ``move_shrink`` every iteration down to ``move_min``
        (:meth:`move_limit`; in ``(0, move]``). A long run whose design keeps moving at the
        limit (an augmented Lagrangian's) thus settles; a ``move_min`` below ``stop.
        tol_change`` makes the design change test hold by itself once it is reached, so that
        only the other stop tests decide. None: the move limit stays ``move``.
    move_shrink : float
        The factor in ``(0, 1)`` of each shrink.
    move_shrink_after : int
        Iterations (≥ 0) at the full ``move`` before the shrinking starts.

    Notes
    -----
    :meth:`state` holds everything the next step depends on (previous designs, asymptotes,
    objective scale, step count), so a resumed run reproduces the uninterrupted one.
    A call with ``iteration <= 1`` starts afresh.
    """

    name = "mma"
    general_constraints = True
    bound_constraints = True
    #: The previous designs and the asymptotes; ``scale`` and ``steps`` are one number each.
    design_sized_state: tuple[str, ...] = ("xold1", "xold2", "low", "upp")

    def __init__(
        self,
        move: float = 0.5,
        asyinit: float = 0.5,
        asyincr: float = 1.2,
        asydecr: float = 0.7,
        *,
        albefa: float = 0.1,
        raa0: float = 1e-5,
        c: float = 1000.0,
        d: float = 1.0,
        objective_scale: float | None = 10.0,
        lower: float | np.ndarray = 0.0,
        upper: float | np.ndarray = 1.0,
        move_min: float | None = None,
        move_shrink: float = 0.98,
        move_shrink_after: int = 0,
    ):
        checks = [
            (0 < move <= 1, f"MMA move limit must be in (0, 1], got {move!r}"),
            (0 < asyinit <= 1, f"asyinit must be in (0, 1], got {asyinit!r}"),
            (asyincr >= 1, f"asyincr must be >= 1, got {asyincr!r}"),
            (0 < asydecr <= 1, f"asydecr must be in (0, 1], got {asydecr!r}"),
            (0 < albefa < 1, f"albefa must be in (0, 1), got {albefa!r}"),
            (raa0 > 0, f"raa0 must be > 0, got {raa0!r}"),
            (c > 0 and d > 0, f"c and d must be > 0, got c={c!r}, d={d!r}"),
            (objective_scale is None or objective_scale > 0,
             f"objective_scale must be > 0 or None, got {objective_scale!r}"),
            (np.all(np.asarray(lower) < np.asarray(upper)),
             "every lower bound must be below its upper bound"),
            (move_min is None or 0 < move_min <= move,
             f"move_min must be None or in (0, move = {move!r}], got {move_min!r}"),
            (0 < move_shrink < 1, f"move_shrink must be in (0, 1), got {move_shrink!r}"),
            (isinstance(move_shrink_after, int) and move_shrink_after >= 0,
             f"move_shrink_after must be an integer >= 0, got {move_shrink_after!r}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        self.move, self.asyinit, self.asyincr, self.asydecr = move, asyinit, asyincr, asydecr
        self.albefa, self.raa0, self.c, self.d = albefa, raa0, c, d
        self.objective_scale = objective_scale
        self.lower, self.upper = lower, upper
        self.move_min, self.move_shrink = move_min, move_shrink
        self.move_shrink_after = move_shrink_after
        self._history: dict = {}

    def move_limit(self, iteration: int) -> float:
        """The move limit of 1-based ``iteration``: ``move``, or with ``move_min``
        ``max(move_min, move · move_shrink^(iteration − move_shrink_after))`` after the first
        ``move_shrink_after`` iterations (a function of the iteration alone, so a resumed
        run takes it up where it stopped)."""
        shrinks = iteration - self.move_shrink_after
        if self.move_min is None or shrinks <= 0:
            return self.move
        return max(self.move_min, self.move * self.move_shrink**shrinks)

    # ------------------------------------------------------------ checkpointing
    def state(self) -> dict:
        """Arrays to checkpoint: ``xold1``, ``xold2``, ``low``, ``upp``, ``scale``, ``steps``."""
        return {k: np.array(v, copy=True) for k, v in self._history.items()}

    def load_state(self, state: dict) -> None:
        """Restore :meth:`state` (an empty dict starts afresh).

        Raises
        ------
        ValueError
            ``state`` is not one :meth:`step` leaves: other keys, previous designs and
            asymptotes of different lengths, a previous design outside the bounds, the
            asymptotes not on either side of it, a scale that is not a positive number or a
            step count that is not a whole number ≥ 1; the message names the entry.
        """
        if state:
            _check_state(state, self.lower, self.upper)
        self._history = {k: np.array(v, dtype=int if k == "steps" else float)
                         for k, v in state.items()}

    # ------------------------------------------------------------ the update
    def step(self, x: np.ndarray, evaluation: Evaluation, volume_excess: Callable | None = None,
             iteration: int = 1) -> np.ndarray:
        """The next design: the solution of the MMA subproblem at ``x``.

        Parameters
        ----------
        x : numpy.ndarray
            Current design ``(n,)``, within the bounds.
        evaluation : Evaluation
            Uses ``objective``, ``gradient`` ``(n,)``, ``constraints`` ``(m,)`` (``g_i ≤ 0``)
            and ``constraint_gradients`` ``(m, n)``; when its ``bounds`` ``(k,)`` (with
            ``bound_gradients`` ``(k, n)``) are given (not None), minimizes their maximum
            instead of ``objective``; the arrays are this rank's part when its
            ``collective`` is distributed.
        volume_excess : callable, optional
            Unused (the volume constraint is one of ``evaluation.constraints``).
        iteration : int
            1-based; ``iteration <= 1`` discards the previous designs and asymptotes.
        """
        x = np.asarray(x, dtype=float)
        collective = evaluation.collective
        lower = np.broadcast_to(np.asarray(self.lower, dtype=float), x.shape)
        upper = np.broadcast_to(np.asarray(self.upper, dtype=float), x.shape)
        if collective.max(float(np.any(x < lower) or np.any(x > upper))) > 0:
            raise ValueError("MMA: the design lies outside its bounds")
        constraints = np.atleast_1d(np.asarray(evaluation.constraints, dtype=float))
        jacobian = np.asarray(evaluation.constraint_gradients, dtype=float).reshape(
            constraints.size, x.size)
        bounds = evaluation.bounds
        if bounds is not None:
            bounds = np.atleast_1d(np.asarray(bounds, dtype=float))
            bound_gradients = np.asarray(evaluation.bound_gradients, dtype=float).reshape(
                bounds.size, x.size)
        fresh = (iteration <= 1 or not self._history
                 or self._history["xold1"].shape != x.shape)
        if fresh:
            f0 = abs(float(evaluation.objective)) if bounds is None else \
                float(np.max(np.abs(bounds)))
            scale = (self.objective_scale / f0
                     if self.objective_scale is not None and f0 > 0 else 1.0)
            self._history = {"xold1": x.copy(), "xold2": x.copy(), "low": lower.copy(),
                             "upp": upper.copy(), "scale": np.array(scale),
                             "steps": np.array(0)}
        h = self._history
        steps = int(h["steps"]) + 1
        low, upp = self._asymptotes(x, h["xold1"], h["xold2"], h["low"], h["upp"],
                                    lower, upper, steps)
        scale = float(h["scale"])
        a = np.zeros(constraints.size)
        if bounds is None:
            gradient = scale * np.asarray(evaluation.gradient, dtype=float)
        else:  # min z s.t. scale f_c(x) − z ≤ 0: f0 = 0, a_c = 1
            gradient = np.zeros(x.size)
            constraints = np.concatenate([scale * bounds, constraints])
            jacobian = np.vstack([scale * bound_gradients, jacobian])
            a = np.concatenate([np.ones(bounds.size), a])
        x_new = self._solve_subproblem(x, gradient, constraints, jacobian, a, low, upp,
                                       lower, upper, self.move_limit(iteration), collective)
        self._history = {"xold1": x.copy(), "xold2": h["xold1"], "low": low, "upp": upp,
                         "scale": h["scale"], "steps": np.array(steps)}
        return x_new

    def _asymptotes(self, x, xold1, xold2, low, upp, lower, upper, steps):
        """``(L, U)`` of Svanberg (2007), eqs. for ``low``/``upp`` in ``mmasub``."""
        span = upper - lower
        if steps <= 2:
            return x - self.asyinit * span, x + self.asyinit * span
        trend = (x - xold1) * (xold1 - xold2)
        factor = np.where(trend > 0, self.asyincr, np.where(trend < 0, self.asydecr, 1.0))
        low = np.clip(x - factor * (xold1 - low), x - ASYMPTOTE_MAX * span,
                      x - ASYMPTOTE_MIN * span)
        upp = np.clip(x + factor * (upp - xold1), x + ASYMPTOTE_MIN * span,
                      x + ASYMPTOTE_MAX * span)
        return low, upp

    def _solve_subproblem(self, x, gradient, constraints, jacobian, a, low, upp, lower,
                          upper, move, collective=SERIAL):
        """Build the convex approximations at ``x`` and solve the subproblem (``a``: the
        ``a_i`` of each constraint, 1 for a bound, else 0; ``move``: the move limit;
        ``collective``: the ranks among which ``x`` is split)."""
        span = np.maximum(upper - lower, 1e-5)
        alpha = np.maximum.reduce([low + self.albefa * (x - low), x - move * span, lower])
        beta = np.minimum.reduce([upp - self.albefa * (upp - x), x + move * span, upper])
        ux, xl = upp - x, x - low

        def coefficients(dfdx):
            positive, negative = np.maximum(dfdx, 0.0), np.maximum(-dfdx, 0.0)
            shift = 0.001 * (positive + negative) + self.raa0 / span
            return (positive + shift) * ux**2, (negative + shift) * xl**2

        p0, q0 = coefficients(gradient)
        P, Q = coefficients(jacobian)
        b = collective.sum(P @ (1.0 / ux) + Q @ (1.0 / xl)) - constraints
        m = constraints.size
        subproblem = _Subproblem(low, upp, alpha, beta, p0, q0, P, Q, b, a,
                                 np.full(m, self.c), np.full(m, self.d), collective)
        return np.clip(subproblem.solve(), lower, upper)


#: The entries of an MMA state: the previous designs and asymptotes (one value per design
#: variable), the objective's scale and the number of steps taken.
STATE_KEYS = ("xold1", "xold2", "low", "upp", "scale", "steps")


def _check_state(state: dict, lower, upper) -> None:
    """Raise ValueError naming the first entry of ``state`` that :meth:`MMA.step` cannot
    have left (the bounds ``lower``, ``upper`` are the optimizer's)."""
    if set(state) != set(STATE_KEYS):
        raise ValueError(f"not an MMA state: its entries are {', '.join(sorted(state))}, "
                         f"expected {', '.join(STATE_KEYS)}")
    arrays = {k: np.asarray(state[k]) for k in STATE_KEYS}
    n = arrays["xold1"].shape
    for key in STATE_KEYS[:4]:
        if arrays[key].ndim != 1 or arrays[key].shape != n or arrays[key].dtype.kind not in "fiu":
            raise ValueError(f"{key!r} holds {arrays[key].size} values of shape "
                             f"{arrays[key].shape}, expected one number per design variable "
                             f"like 'xold1' {n}")
        if not np.all(np.isfinite(arrays[key])):
            raise ValueError(f"{key!r} holds NaN or infinite values")
    scale, steps = arrays["scale"], arrays["steps"]
    if scale.shape != () or scale.dtype.kind not in "fiu" or not 0 < float(scale) < np.inf:
        raise ValueError(f"'scale' must be one positive number, found {scale!r}")
    if steps.shape != () or steps.dtype.kind not in "iu" or int(steps) < 1:
        raise ValueError(f"'steps' must be one whole number ≥ 1, found {steps!r}")
    low_bound = np.broadcast_to(np.asarray(lower, dtype=float), n)
    high_bound = np.broadcast_to(np.asarray(upper, dtype=float), n)
    for key in ("xold1", "xold2"):
        if np.any(arrays[key] < low_bound) or np.any(arrays[key] > high_bound):
            raise ValueError(f"{key!r} holds values outside the bounds [{np.min(low_bound):g}, "
                             f"{np.max(high_bound):g}] (found {arrays[key].min():g} to "
                             f"{arrays[key].max():g})")
    # each step leaves the asymptotes strictly on either side of the design it was taken at
    if not (np.all(arrays["low"] < arrays["xold1"]) and np.all(arrays["xold1"] < arrays["upp"])):
        raise ValueError("the asymptotes 'low' and 'upp' do not enclose the previous design "
                         "'xold1'")


class _Subproblem:
    """The MMA subproblem (``a0 = 1``), solved by Svanberg's ``subsolv``.

    ``min Σ_j p0_j/(U_j − x_j) + q0_j/(x_j − L_j) + z + Σ_i c_i y_i + ½ d_i y_i²``
    s.t. ``Σ_j P_ij/(U_j − x_j) + Q_ij/(x_j − L_j) − a_i z − y_i ≤ b_i``, ``α ≤ x ≤ β``,
    ``y, z ≥ 0`` (``a_i`` = 1 for a bound constraint, else 0).

    A primal-dual interior-point method: Newton steps on the perturbed KKT conditions (all
    complementarity products equal to ``ε``) with the slack and bound multipliers eliminated
    and the Newton system reduced to the ``(m + 1) × (m + 1)`` system in ``(Δλ, Δz)``;
    step lengths keep every positive variable positive and are halved until the residual
    norm decreases; ``ε`` goes from 1 to 1e-7 by factors of 10.

    The ``x``-sized arrays (``x``, ``ξ``, ``η``, ``p0``, the columns of ``P``, ...) are this
    rank's part, the ``m``-sized ones (``y``, ``λ``, ``s``, ``μ``) and ``z``, ``ζ`` are the
    same on every rank: ``collective`` sums and maximizes over the design variables.
    """

    #: Variables that must stay positive (``x`` must stay inside ``(α, β)``).
    POSITIVE = ("y", "z", "lam", "xsi", "eta", "mu", "zet", "s")
    #: Those of them that are ``x``-sized (split among the ranks).
    DESIGN_SIZED = ("xsi", "eta")

    def __init__(self, low, upp, alpha, beta, p0, q0, P, Q, b, a, c, d,
                 collective: Collective = SERIAL):
        self.low, self.upp, self.alpha, self.beta = low, upp, alpha, beta
        self.p0, self.q0, self.P, self.Q, self.b, self.c, self.d = p0, q0, P, Q, b, c, d
        self.a0 = 1.0
        self.a = np.asarray(a, dtype=float)
        self.collective = collective

    def _terms(self, v: dict) -> dict:
        """Quantities at ``v`` shared by the residual and the Newton step."""
        ux_inv, xl_inv = 1.0 / (self.upp - v["x"]), 1.0 / (v["x"] - self.low)
        ux_inv2, xl_inv2 = ux_inv * ux_inv, xl_inv * xl_inv
        plam = self.p0 + np.dot(v["lam"], self.P)
        qlam = self.q0 + np.dot(v["lam"], self.Q)
        return {"ux_inv": ux_inv, "xl_inv": xl_inv, "ux_inv2": ux_inv2, "xl_inv2": xl_inv2,
                "plam": plam, "qlam": qlam, "dpsidx": plam * ux_inv2 - qlam * xl_inv2,
                "g": self.collective.sum(self.P @ ux_inv + self.Q @ xl_inv),
                "xa": v["x"] - self.alpha, "bx": self.beta - v["x"]}

    def residual(self, v: dict, t: dict, epsi: float) -> tuple[np.ndarray, np.ndarray]:
        """The perturbed KKT residual at the primal-dual point ``v`` (``t = _terms(v)``):
        its ``x``-sized rows (this rank's part) and its other rows (the same on every
        rank)."""
        design = np.concatenate([
            t["dpsidx"] - v["xsi"] + v["eta"],
            v["xsi"] * t["xa"] - epsi,
            v["eta"] * t["bx"] - epsi,
        ])
        shared = np.concatenate([
            self.c + self.d * v["y"] - v["mu"] - v["lam"],
            [self.a0 - v["zet"] - self.a @ v["lam"]],
            t["g"] - self.a * v["z"] - v["y"] + v["s"] - self.b,
            v["mu"] * v["y"] - epsi,
            [v["zet"] * v["z"] - epsi],
            v["lam"] * v["s"] - epsi,
        ])
        return design, shared

    def norm(self, residual: tuple[np.ndarray, np.ndarray]) -> float:
        """The Euclidean norm of a :meth:`residual` over all ranks."""
        design, shared = residual
        return float(np.sqrt(self.collective.sum(float(design @ design))
                             + float(shared @ shared)))

    def largest(self, residual: tuple[np.ndarray, np.ndarray]) -> float:
        """The largest absolute entry of a :meth:`residual` over all ranks."""
        design, shared = residual
        return max(self.collective.max(float(np.max(np.abs(design), initial=0.0))),
                   float(np.max(np.abs(shared))))

    def newton_direction(self, v: dict, t: dict, epsi: float) -> dict:
        """Newton step of the perturbed KKT system, reduced to ``(Δλ, Δz)``."""
        y, z, lam = v["y"], v["z"], v["lam"]
        xa_inv, bx_inv = 1.0 / t["xa"], 1.0 / t["bx"]
        G = self.P * t["ux_inv2"] - self.Q * t["xl_inv2"]
        delx = t["dpsidx"] + epsi * (bx_inv - xa_inv)
        dely = self.c + self.d * y - lam - epsi / y
        delz = self.a0 - self.a @ lam - epsi / z
        dellam = t["g"] - self.a * z - y - self.b + epsi / lam
        diagx = (2.0 * (t["plam"] * t["ux_inv2"] * t["ux_inv"]
                        + t["qlam"] * t["xl_inv2"] * t["xl_inv"])
                 + v["xsi"] * xa_inv + v["eta"] * bx_inv)
        diagx_inv = 1.0 / diagx
        diagy = self.d + v["mu"] / y
        m = lam.size
        system = np.empty((m + 1, m + 1))
        system[:m, :m] = (np.diag(v["s"] / lam + 1.0 / diagy)
                          + self.collective.sum((G * diagx_inv) @ G.T))
        system[:m, m] = system[m, :m] = self.a
        system[m, m] = -v["zet"] / z
        rhs = np.concatenate([dellam + dely / diagy
                              - self.collective.sum(G @ (delx * diagx_inv)), [delz]])
        solution = np.linalg.solve(system, rhs)
        dlam, dz = solution[:m], solution[m]
        dx = -(delx + np.dot(dlam, G)) * diagx_inv
        dy = (dlam - dely) / diagy
        return {
            "x": dx, "y": dy, "z": dz, "lam": dlam,
            "xsi": -v["xsi"] + (epsi - v["xsi"] * dx) * xa_inv,
            "eta": -v["eta"] + (epsi + v["eta"] * dx) * bx_inv,
            "mu": -v["mu"] + (epsi - v["mu"] * dy) / y,
            "zet": -v["zet"] + (epsi - v["zet"] * dz) / z,
            "s": -v["s"] + (epsi - v["s"] * dlam) / lam,
        }

    def max_step(self, v: dict, t: dict, dv: dict) -> float:
        """Largest step ≤ 1 keeping positive variables positive and x inside (α, β)."""
        shared = [np.max(-1.01 * np.divide(dv[k], v[k])) for k in self.POSITIVE
                  if k not in self.DESIGN_SIZED]
        design = [np.max(-1.01 * np.divide(dv[k], v[k]), initial=-np.inf)
                  for k in self.DESIGN_SIZED]
        design.append(np.max(-1.01 * dv["x"] / t["xa"], initial=-np.inf))
        design.append(np.max(1.01 * dv["x"] / t["bx"], initial=-np.inf))
        return 1.0 / max(1.0, *shared, self.collective.max(float(max(design))))

    def solve(self) -> np.ndarray:
        """The optimal ``x`` of the subproblem."""
        m = self.b.size
        x = 0.5 * (self.alpha + self.beta)
        v = {"x": x, "y": np.ones(m), "z": 1.0, "lam": np.ones(m),
             "xsi": np.maximum(1.0 / (x - self.alpha), 1.0),
             "eta": np.maximum(1.0 / (self.beta - x), 1.0),
             "mu": np.maximum(1.0, 0.5 * self.c), "zet": 1.0, "s": np.ones(m)}
        t = self._terms(v)
        epsi = 1.0
        while epsi > EPSILON_MIN:
            residual = self.residual(v, t, epsi)
            norm = self.norm(residual)
            for _ in range(MAX_NEWTON):
                if self.largest(residual) <= 0.9 * epsi:
                    break
                dv = self.newton_direction(v, t, epsi)
                step = self.max_step(v, t, dv)
                for _ in range(MAX_HALVINGS):
                    trial = {k: v[k] + step * dv[k] for k in v}
                    trial_terms = self._terms(trial)
                    trial_residual = self.residual(trial, trial_terms, epsi)
                    trial_norm = self.norm(trial_residual)
                    if trial_norm <= norm:
                        break
                    step *= 0.5
                v, t, residual, norm = trial, trial_terms, trial_residual, trial_norm
            epsi *= 0.1
        return v["x"]

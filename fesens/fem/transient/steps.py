"""One run of a first-order time-discrete problem as a primitive, and its discrete adjoint.

:class:`Run` is what a :class:`~fesens.fem.transient.integrate.TransientProblem` run keeps
(its schedule of stored states, its statistics); :class:`Stepper` advances the states with
the step matrices' factorizations; :data:`integrate` is the primitive whose output is the
per-step objective terms, and whose VJP (:class:`Adjoint`) runs the adjoint steps backwards
with the forward factorizations, recomputing forward segments of a checkpointing schedule.
:func:`term_pullback` is the cotangent of one step term, which the dynamics reuse with
the matrix cotangents' running sums (:class:`~fesens.fem.transient.pattern_sums.PatternOuters`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import numpy as np

from fesens.ad.api import vjp
from fesens.ad.registry import defvjp_joint
from fesens.ad.sparse import PatternMatrix
from fesens.ad.traced import Traced
from fesens.ad.tracer import primitive
from fesens.fem.transient.checkpointing import (
    forward_snapshots,
    reverse_sweep,
    with_next_state,
)
from fesens.fem.transient.pattern_sums import PatternOuters
from fesens.solvers import LinearSolver

if TYPE_CHECKING:
    from fesens.fem.transient.integrate import TransientProblem

StepTerm = Callable[..., float]


def check_same_pattern(K: PatternMatrix, M: PatternMatrix) -> None:
    """Step matrices add ``K`` and ``M`` values entry by entry: their patterns must agree."""
    if K.pattern is M.pattern:
        return
    if not (np.array_equal(K.pattern.indptr, M.pattern.indptr)
            and np.array_equal(K.pattern.indices, M.pattern.indices)):
        raise ValueError("the stiffness and mass matrices have different sparsity patterns; "
                         "a transient run needs both assembled over the same cells")


class Run:
    """One traced call: the problem, the step term and what the forward sweep kept."""

    def __init__(self, problem: TransientProblem, step_term: StepTerm):
        self.problem = problem
        self.step_term = step_term
        self.keep = False
        self.stored: dict[int, np.ndarray] = {}  # state index -> T_n (all, or snapshots)

    def term(self, n: int, full: np.ndarray, term_args) -> float:
        value = self.step_term(full, float(self.problem.times[n]), *term_args)
        if isinstance(value, Traced):
            raise TypeError("step_term returned a traced value for plain inputs: pass the "
                            "traced values it uses as term_args instead of a closure")
        value = np.asarray(value, dtype=float)
        if value.shape != ():
            raise ValueError(f"step_term must return a scalar, got shape {value.shape}")
        return float(value)

    def release(self, levels: Iterable[int], pack: Callable[[int], object]) -> dict:
        """``{n: pack(n)}`` for the snapshot ``levels`` still kept, for a reverse sweep that
        frees each once past it: the run stops holding every state but state 0 (else the
        forward's snapshots would stay alive beside those the sweep places, up to twice
        the budget). A second pullback of the same run finds none and recomputes them
        from state 0."""
        snapshots = {n: pack(n) for n in levels if n in self.stored}
        for n in [n for n in self.stored if n != 0]:  # in place: callers hold the dict
            del self.stored[n]
        return snapshots


class Stepper:
    """The time steps of one set of (plain) matrices, loads and prescribed values."""

    def __init__(self, problem: TransientProblem, K_ff, M_ff, K_fc, M_fc, F, H, g, phi):
        self.problem, self.c = problem, problem.coefficients
        self.K, self.M = K_ff, M_ff
        self.K_csr, self.M_csr = K_ff.tocsr(), M_ff.tocsr()
        self.K_T, self.M_T = self.K_csr.T, self.M_csr.T  # the adjoint's, made once
        self.F, self.H = np.asarray(F, dtype=float), np.asarray(H, dtype=float)
        self.prescribed = g is not None
        if self.prescribed:
            self.g, self.phi = np.asarray(g, dtype=float), np.asarray(phi, dtype=float)
            self.Kg = K_fc.tocsr() @ self.g  # K_fc g, M_fc g: (n_free,)
            self.Mg = M_fc.tocsr() @ self.g
        model = problem.model
        self.free, self.constrained = model.free_dofs, model.constrained_dofs
        self.n_dofs = model.dofmap.n_dofs
        self._solvers: dict[tuple, LinearSolver] = {}

    def weights(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``α_(n,k)/Δt_n`` ``(3,)`` and ``β_(n,k)`` ``(2,)``."""
        return self.c.alpha[n] / self.c.dt[n], self.c.beta[n]

    def g_weights(self, n: int) -> tuple[float, float]:
        """``Σ_k α_(n,k)/Δt_n φ_g(t_(n−k))`` and ``Σ_k β_(n,k) φ_g(t_(n−k))``."""
        a, b = self.weights(n)
        phi = self.phi[[n, n - 1, max(n - 2, 0)]]
        return float(a @ phi), float(b @ phi[:2])

    def solver(self, n: int) -> LinearSolver:
        """The factorized matrix of step ``n`` (checked against these values once per
        distinct matrix)."""
        key = self.c.matrix_key(n)
        backend = self._solvers.get(key)
        if backend is None:
            backend = self._solvers[key] = self.problem.step_solver(key, self.K, self.M)
        return backend

    def thread_limit(self):
        """The BLAS threads of these solves, as the pattern chooses them for any solve."""
        return self.K.pattern.thread_limit(self.solver(1))

    def step(self, n: int, state: tuple) -> np.ndarray:
        """``T_n`` from the state ``(T_(n−1), T_(n−2))`` (``T_(−1)``: None)."""
        a, b = self.weights(n)
        rhs = self.F @ (b[0] * self.H[n] + b[1] * self.H[n - 1])
        for k in (1, 2):
            if a[k] != 0.0 or (k < 2 and b[k] != 0.0):
                T = state[k - 1]
                rhs = rhs - a[k] * (self.M_csr @ T)
                if k < 2 and b[k] != 0.0:
                    rhs = rhs - b[k] * (self.K_csr @ T)
        if self.prescribed:
            sa, sb = self.g_weights(n)
            rhs = rhs - sa * self.Mg - sb * self.Kg
        return self.solver(n).solve(rhs)

    def full(self, n: int, T_free: np.ndarray) -> np.ndarray:
        """The field on all dofs at level ``n``, ``(n_dofs,)`` (``g φ_g(t_n)`` where
        prescribed)."""
        full = np.zeros(self.n_dofs)
        full[self.free] = T_free
        if self.prescribed:
            full[self.constrained] = self.g * self.phi[n]
        return full


def sweep_forward(run: Run, stepper, T0_free: np.ndarray, term_args) -> np.ndarray:
    """``values[n] = j(T_n, t_n, *term_args)``, ``(N + 1,)``: the forward sweep of a linear
    or nonlinear run (``stepper.step(n, state)`` gives ``T_n``), keeping every state, or
    the snapshots of the binomial schedule, when traced."""
    problem = run.problem
    N = problem.n_steps
    values = np.empty(N + 1)
    state = (np.asarray(T0_free, dtype=float), None)
    values[0] = run.term(0, stepper.full(0, state[0]), term_args)
    if problem.max_states is None:
        keep = set(range(N + 1)) if run.keep else set()
    elif run.keep:  # the snapshots of the schedule (BDF2's also hold the level before)
        spine = forward_snapshots(N, problem.max_states)
        previous = {n - 1 for n in spine} if problem.scheme == "bdf2" else set()
        keep = {0} | set(spine) | previous
    else:
        keep = set()
    if 0 in keep:
        run.stored[0] = state[0]
    # the step solvers (and their factorizations) are the problem's: one run at a time
    with problem.lock, stepper.thread_limit():
        for n in range(1, N + 1):
            state = (stepper.step(n, state), state[0])
            values[n] = run.term(n, stepper.full(n, state[0]), term_args)
            if n in keep:
                run.stored[n] = state[0]
        problem.stats.update(steps=N, advanced=0, taped=0, kept=len(run.stored))
    return values


def _integrate(run: Run, K_ff, M_ff, K_fc, M_fc, F, H, g, phi, T0_free, *term_args):
    """``values[n] = j(T_n, t_n, *term_args)``, ``(N + 1,)`` (:func:`sweep_forward`)."""
    stepper = Stepper(run.problem, K_ff, M_ff, K_fc, M_fc, F, H, g, phi)
    return sweep_forward(run, stepper, T0_free, term_args)


integrate = primitive(_integrate, "transient_integrate")


def prescribed_cotangents(K_fc, M_fc, adjoint, g: np.ndarray) -> tuple:
    """The cotangents of the coupling blocks and of the prescribed values of a run with
    prescribed dofs, from the adjoint's sums ``lam_K`` and ``lam_M`` (the weighted sums of
    ``λ`` that met ``K_fc`` and ``M_fc``) and its direct ``g_bar``.

    Returns
    -------
    (K_fc_bar, M_fc_bar, g_bar)
        Pattern values of ``K_fc`` and ``M_fc`` (``-lam ⊗ g`` on each pattern), and
        ``(n_prescribed,)``.
    """
    return (-K_fc.pattern.outer(adjoint.lam_K, g), -M_fc.pattern.outer(adjoint.lam_M, g),
            adjoint.g_bar - K_fc.tocsr().T @ adjoint.lam_K - M_fc.tocsr().T @ adjoint.lam_M)


def term_pullback(run: Run, n: int, full: np.ndarray, gbar_n: float, term_args,
                  positions) -> tuple[np.ndarray, list]:
    """``ḡ_n ∂j_n/∂T_n`` on all dofs ``(n_dofs,)`` and the cotangents of the traced
    ``term_args`` (at ``positions``) of level ``n``'s step term."""
    times = run.problem.times
    argnums = (0, *(p + 1 for p in positions))
    _, pull = vjp(lambda T, *a: run.step_term(T, float(times[n]), *a), full, *term_args,
                  argnums=argnums)
    cotangents = pull(gbar_n)
    return np.asarray(cotangents[0], dtype=float), list(cotangents[1:])


class StepTermCotangent:
    """The step term's part of an adjoint step, shared by the linear and nonlinear sweeps:
    they hold the same ``s`` (stepper), ``run``, ``gbar``, ``term_args``, ``positions``,
    ``args_bar``, ``g_bar`` and ``phi_bar``."""

    def term_cotangent(self, n: int, T_free: np.ndarray) -> np.ndarray:
        """``ḡ_n ∂j_n/∂T_n`` on the free dofs (its prescribed part and ``term_args``'
        cotangents accumulated)."""
        s = self.s
        if self.gbar[n] == 0.0:
            return np.zeros(s.free.size)
        T_bar, cotangents = term_pullback(self.run, n, s.full(n, T_free), self.gbar[n],
                                          self.term_args, self.positions)
        self.args_bar = [total + c for total, c in zip(self.args_bar, cotangents,
                                                       strict=True)]
        if s.prescribed:
            T_c = T_bar[s.constrained]
            self.g_bar += s.phi[n] * T_c
            self.phi_bar[n] += float(s.g @ T_c)
        return T_bar[s.free]


class Adjoint(StepTermCotangent):
    """The reverse sweep's accumulators: ``λ`` contributions owed to earlier levels and
    the cotangent of every input."""

    def __init__(self, run: Run, stepper: Stepper, gbar, term_args, argnums):
        self.run, self.s, self.term_args = run, stepper, term_args
        self.gbar = np.asarray(gbar, dtype=float)
        self.owed: dict[int, np.ndarray] = {}  # level -> −Σ (α M + β K)ᵀ λ of later steps
        n_free = stepper.free.size
        # K̄ (argument 1), M̄ (2) of the traced matrices only (one pattern: checked)
        self.matrices = [i for i in (1, 2) if i in argnums]
        self.outers = PatternOuters.for_sweep(stepper.K.pattern, len(self.matrices),
                                              run.problem.n_steps,
                                              run.problem.max_states is not None)
        self.matrix_bars = dict(zip(self.matrices, self.outers.sums, strict=True))
        self._combined = {i: np.empty(n_free) for i in self.matrices}  # their x of λ xᵀ
        self._scratch = np.empty(n_free)
        # F̄ (5), H̄ (6) where traced
        self.F_bar = np.zeros((n_free, stepper.F.shape[1])) if 5 in argnums else None
        self._F_step = np.empty_like(self.F_bar) if 5 in argnums else None
        self.H_bar = np.zeros_like(stepper.H) if 6 in argnums else None
        self.lam_K = self.lam_M = self.g_bar = self.phi_bar = None
        if stepper.prescribed:
            self.lam_K = np.zeros(n_free)  # Σ_n (Σ_k β φ_g) λ_n
            self.lam_M = np.zeros(n_free)
            self.g_bar = np.zeros(stepper.constrained.size)
            self.phi_bar = np.zeros(stepper.phi.size)
        # the traced step-term arguments (primitive arguments from 10 on)
        self.positions = [i - 10 for i in argnums if i >= 10]
        self.args_bar = [0.0] * len(self.positions)

    def step(self, n: int, state: tuple, T_n: np.ndarray) -> None:
        """The adjoint of step ``n``: ``λ_n``, what it owes earlier levels, and its part of
        every cotangent."""
        s = self.s
        a, b = s.weights(n)
        rhs = self.term_cotangent(n, T_n)  # a new array: updated in place
        owed = self.owed.pop(n, None)
        if owed is not None:
            rhs += owed
        lam = s.solver(n).solve_transpose(rhs)
        levels = (T_n, *state)
        M_lam = None  # Mᵀλ, once for both levels it reaches
        for k in (1, 2):
            if a[k] != 0.0 or (k < 2 and b[k] != 0.0):
                M_lam = s.M_T @ lam if M_lam is None else M_lam
                push = np.multiply(M_lam, a[k], out=self._scratch)
                if k < 2 and b[k] != 0.0:
                    push += b[k] * (s.K_T @ lam)
                owed_k = self.owed.get(n - k)
                if owed_k is None:
                    self.owed[n - k] = np.negative(push)
                else:
                    owed_k -= push
        self.outers.subtract(lam, *(self.combination(i, n, levels) for i in self.matrices))
        if self.F_bar is not None:
            np.multiply(lam[:, None], b[0] * s.H[n] + b[1] * s.H[n - 1], out=self._F_step)
            self.F_bar += self._F_step
        if self.H_bar is not None:
            FT_lam = s.F.T @ lam
            self.H_bar[n] += b[0] * FT_lam
            self.H_bar[n - 1] += b[1] * FT_lam
        if s.prescribed:
            sa, sb = s.g_weights(n)
            self.lam_M += sa * lam
            self.lam_K += sb * lam
            Mg_lam, Kg_lam = float(s.Mg @ lam), float(s.Kg @ lam)
            for k in range(3):
                if n - k >= 0 and (a[k] != 0.0 or (k < 2 and b[k] != 0.0)):
                    self.phi_bar[n - k] -= a[k] * Mg_lam + (b[k] * Kg_lam if k < 2 else 0.0)

    def combination(self, matrix: int, n: int, levels: tuple) -> np.ndarray:
        """``Σ_k β_(n,k) T_(n−k)`` (``matrix`` 1, ``K``) or ``Σ_k α_(n,k)/Δt_n T_(n−k)``
        (2, ``M``) ``(n_free,)``: what step ``n``'s multiplier meets in that matrix's
        cotangent, summed in place in the order of ``Σ_k`` (``levels``: ``T_n``,
        ``T_(n−1)``, ``T_(n−2)``)."""
        a, b = self.s.weights(n)
        weights = b if matrix == 1 else a
        combined = np.multiply(levels[0], weights[0], out=self._combined[matrix])
        for k in range(1, weights.size):
            if weights[k] != 0.0:
                combined += np.multiply(levels[k], weights[k], out=self._scratch)
        return combined

    def finish(self, T0_free: np.ndarray) -> np.ndarray:
        """``T̄_0`` on the free dofs (after the last step's adjoint); the matrix
        cotangents complete."""
        self.outers.flush()
        T0_bar = self.term_cotangent(0, T0_free)
        owed = self.owed.pop(0, None)
        return T0_bar if owed is None else T0_bar + owed


def sweep_backwards(run: Run, stepper, adjoint, T0: np.ndarray) -> None:
    """Every adjoint step of a run, last first: from the stored states, or under the
    run's checkpointing schedule, recomputing forward segments from its snapshots (each
    adjoint step takes the state after its step from the step reversed before it).

    ``stepper.step(n, state)`` gives ``T_n`` from ``state = (T_(n−1), T_(n−2))`` and
    ``adjoint.step(n, state, T_n)`` is the adjoint of step ``n`` (linear or nonlinear).
    """
    problem, stored, N = run.problem, run.stored, run.problem.n_steps
    if problem.max_states is None:
        for n in range(N, 0, -1):
            adjoint.step(n, (stored[n - 1], stored.get(n - 2)), stored[n])
        return
    stats = problem.stats

    def advance(n, state):
        stats["advanced"] += 1
        return (stepper.step(n, state), state[0])

    def adjoint_step(n, state, after):
        if after is None:  # the last state, not among the snapshots: re-run
            stats["taped"] += 1
            after = (stepper.step(n, state), state[0])
        adjoint.step(n, state, after[0])

    # handed over, not named here: the sweep frees each snapshot past it
    reverse_sweep(N, problem.max_states, (T0, None), advance, with_next_state(adjoint_step),
                  run.release(forward_snapshots(N, problem.max_states),
                              lambda n: (stored[n], stored.get(n - 1))))


def _integrate_vjp(argnums, values, run, K_ff, M_ff, K_fc, M_fc, F, H, g, phi, T0_free,
                   *term_args):
    def pullback(gbar):
        if any(isinstance(x, Traced) for x in (gbar, K_ff, M_ff, K_fc, M_fc, F, H, g, phi,
                                              T0_free, *term_args)):
            raise NotImplementedError(
                "second derivatives through a transient run (grad of grad, hvp) are not "
                "available: its adjoint runs on plain arrays; differentiate once")
        problem = run.problem
        stepper = Stepper(problem, K_ff, M_ff, K_fc, M_fc, F, H, g, phi)
        adjoint = Adjoint(run, stepper, gbar, term_args, argnums)
        T0 = np.asarray(T0_free, dtype=float)
        with problem.lock, stepper.thread_limit():  # as the forward sweep
            sweep_backwards(run, stepper, adjoint, T0)
        T0_bar = adjoint.finish(T0)
        cotangents = {**adjoint.matrix_bars, 5: adjoint.F_bar, 6: adjoint.H_bar, 9: T0_bar}
        if stepper.prescribed:
            cotangents[3], cotangents[4], cotangents[7] = prescribed_cotangents(
                K_fc, M_fc, adjoint, stepper.g)
            cotangents[8] = adjoint.phi_bar
        for p, c in zip(adjoint.positions, adjoint.args_bar, strict=True):
            cotangents[10 + p] = c
        return tuple(cotangents[i] for i in argnums)

    return pullback


defvjp_joint(integrate, _integrate_vjp)

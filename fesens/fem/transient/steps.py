"""One run of a first-order time-discrete problem as a primitive, and its discrete adjoint.

:class:`Stepper` advances the states with the step matrices' factorizations, the state of
a scheme reading ``L`` earlier levels being ``(T_n, ..., T_(n−L+1))`` with ``L`` read from
its coefficients (:func:`step_levels`, :class:`LevelStates`); :data:`integrate` is the
primitive whose output is the per-step objective terms (its inputs named,
:class:`~fesens.fem.transient.run_inputs.HeatInputs`), and whose VJP (:class:`Adjoint`)
runs the adjoint steps backwards with the forward factorizations through the sweeps of
:mod:`~fesens.fem.transient.sweep`. :func:`term_pullback` is the cotangent of one step
term, which the dynamics reuse with the matrix cotangents' running sums
(:class:`~fesens.fem.transient.pattern_sums.PatternOuters`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fesens.ad.api import vjp
from fesens.ad.pytree import flatten
from fesens.ad.sparse import PatternMatrix
from fesens.ad.tree_primitive import defvjp_tree, tree_primitive
from fesens.fem.transient.pattern_sums import PatternOuters
from fesens.fem.transient.run_inputs import HeatInputs
from fesens.fem.transient.sweep import (
    Run,
    SteppedProblem,
    StepTerm,
    refuse_second_derivatives,
    sweep_backwards,
    sweep_forward,
)
from fesens.solvers import LinearSolver

if TYPE_CHECKING:
    from fesens.fem.transient.schemes import StepCoefficients

__all__ = ["Adjoint", "LevelStates", "PatternOuters", "Run", "StepTerm", "Stepper",
           "check_same_pattern", "integrate", "step_levels", "term_pullback"]


def check_same_pattern(K: PatternMatrix, M: PatternMatrix) -> None:
    """Step matrices add ``K`` and ``M`` values entry by entry: their patterns must agree."""
    if K.pattern is M.pattern:
        return
    if not (np.array_equal(K.pattern.indptr, M.pattern.indptr)
            and np.array_equal(K.pattern.indices, M.pattern.indices)):
        raise ValueError("the stiffness and mass matrices have different sparsity patterns; "
                         "a transient run needs both assembled over the same cells")


def step_levels(coefficients: StepCoefficients) -> int:
    """``L``, the earlier levels a step reads: the last column ``k`` of ``α`` ``(N + 1,
    L' + 1)`` or ``β`` ``(N + 1, 2)`` that is non-zero in some step (at least 1; the
    θ-method's third column of ``α`` is zero, so it reads one level, BDF2 two)."""
    alpha, beta = coefficients.alpha[1:], coefficients.beta[1:]
    read = [k for k in range(1, alpha.shape[1])
            if np.any(alpha[:, k] != 0.0) or (k < beta.shape[1] and np.any(beta[:, k] != 0.0))]
    return max(read, default=1)


def reads_level(a: np.ndarray, b: np.ndarray, k: int) -> bool:
    """Whether a step of weights ``a`` (of ``M``) and ``b`` (of ``K``) reads level ``n − k``."""
    return a[k] != 0.0 or (k < b.size and b[k] != 0.0)


class LevelStates:
    """The state of a multistep run, ``(T_n, T_(n−1), ..., T_(n−L+1))`` on the free dofs
    (``None`` before level 0), a level's record its ``T_n``: the
    :class:`~fesens.fem.transient.sweep.SweepStepper` part shared by the linear and
    nonlinear heat steppers, which set ``coefficients``, ``levels``, ``initial``,
    ``phi``, ``g``, ``prescribed``, ``free``, ``constrained``, ``n_dofs`` and ``step``."""

    def start(self) -> tuple:
        """``(T_0, None, ...)``."""
        return (self.initial, *([None] * (self.levels - 1)))

    def advance(self, n: int, state: tuple) -> tuple:
        """State ``n``: ``T_n`` (:meth:`step`) before the levels of state ``n − 1``."""
        return (self.step(n, state), *state[:-1])

    def pack(self, state: tuple) -> np.ndarray:
        return state[0]

    def unpack(self, n: int, records: dict) -> tuple:
        return (records[n], *(records.get(n - back) for back in range(1, self.levels)))

    def observed(self, n: int, state: tuple) -> np.ndarray:
        return self.full(n, state[0])

    def weights(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``α_(n,k)/Δt_n`` ``(L' + 1,)`` and ``β_(n,k)`` ``(2,)``."""
        return self.coefficients.alpha[n] / self.coefficients.dt[n], self.coefficients.beta[n]

    def g_weights(self, n: int) -> tuple[float, float]:
        """``Σ_k α_(n,k)/Δt_n φ_g(t_(n−k))`` and ``Σ_k β_(n,k) φ_g(t_(n−k))``."""
        a, b = self.weights(n)
        phi = self.phi[[max(n - k, 0) for k in range(a.size)]]
        return float(a @ phi), float(b @ phi[:b.size])

    def full(self, n: int, T_free: np.ndarray) -> np.ndarray:
        """The field on all dofs at level ``n``, ``(n_dofs,)`` (``g φ_g(t_n)`` where
        prescribed)."""
        full = np.zeros(self.n_dofs)
        full[self.free] = T_free
        if self.prescribed:
            full[self.constrained] = self.g * self.phi[n]
        return full


class Stepper(LevelStates):
    """The time steps of one set of (plain) matrices, loads and prescribed values."""

    def __init__(self, problem: SteppedProblem, inputs: HeatInputs):
        self.problem, self.coefficients = problem, problem.coefficients
        self.levels = step_levels(self.coefficients)
        self.K, self.M = inputs.stiffness, inputs.mass
        self.K_csr, self.M_csr = self.K.tocsr(), self.M.tocsr()
        self.K_T, self.M_T = self.K_csr.T, self.M_csr.T  # the adjoint's, made once
        self.F = np.asarray(inputs.forces, dtype=float)
        self.H = np.asarray(inputs.histories, dtype=float)
        self.initial = np.asarray(inputs.initial, dtype=float)
        self.prescribed = inputs.prescribed is not None
        if self.prescribed:
            self.g = np.asarray(inputs.prescribed, dtype=float)
            self.phi = np.asarray(inputs.prescribed_history, dtype=float)
            self.Kg = inputs.coupling_stiffness.tocsr() @ self.g  # K_fc g, M_fc g: (n_free,)
            self.Mg = inputs.coupling_mass.tocsr() @ self.g
        model = problem.model
        self.free, self.constrained = model.free_dofs, model.constrained_dofs
        self.n_dofs = model.dofmap.n_dofs
        self._solvers: dict[tuple, LinearSolver] = {}

    def solver(self, n: int) -> LinearSolver:
        """The factorized matrix of step ``n`` (checked against these values once per
        distinct matrix)."""
        key = self.coefficients.matrix_key(n)
        backend = self._solvers.get(key)
        if backend is None:
            backend = self._solvers[key] = self.problem.step_solver(key, self.K, self.M)
        return backend

    def thread_limit(self):
        """The BLAS threads of these solves, as the pattern chooses them for any solve."""
        return self.K.pattern.thread_limit(self.solver(1))

    def step(self, n: int, state: tuple) -> np.ndarray:
        """``T_n`` from state ``n − 1``, ``(T_(n−1), ..., T_(n−L))``."""
        a, b = self.weights(n)
        rhs = self.F @ (b[0] * self.H[n] + b[1] * self.H[n - 1])
        for k in range(1, self.levels + 1):
            if reads_level(a, b, k):
                T = state[k - 1]
                rhs = rhs - a[k] * (self.M_csr @ T)
                if k < b.size and b[k] != 0.0:
                    rhs = rhs - b[k] * (self.K_csr @ T)
        if self.prescribed:
            sa, sb = self.g_weights(n)
            rhs = rhs - sa * self.Mg - sb * self.Kg
        return self.solver(n).solve(rhs)


def _integrate(run: Run, inputs: HeatInputs):
    """``values[n] = j(T_n, t_n, *term_args)``, ``(N + 1,)`` (:func:`sweep_forward`)."""
    return sweep_forward(run, Stepper(run.problem, inputs), inputs.term_args)


integrate = tree_primitive(_integrate, "transient_integrate")


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
    """The step term's part of an adjoint step, shared by the linear, nonlinear and
    dynamic sweeps: they hold ``stepper``, ``run``, ``gbar``, ``term_args``; the
    prescribed part goes to :meth:`prescribed_term`."""

    def start_terms(self, run: Run, stepper, gbar, term_args, traced_args) -> None:
        """Hold the run, its stepper, the output's cotangent and the step term's
        arguments (``traced_args``: whether each is traced)."""
        self.run, self.stepper, self.term_args = run, stepper, term_args
        self.gbar = np.asarray(gbar, dtype=float)
        self.positions = [i for i, traced in enumerate(traced_args) if traced]
        self.args_bar = [0.0] * len(self.positions)

    def term_args_bar(self) -> tuple:
        """The cotangents of ``term_args`` (None where not traced)."""
        bars = [None] * len(self.term_args)
        for position, bar in zip(self.positions, self.args_bar, strict=True):
            bars[position] = bar
        return tuple(bars)

    def term_cotangent(self, n: int, state) -> np.ndarray:
        """``ḡ_n ∂j_n/∂x_n`` on the free dofs, ``x_n`` the field of ``state`` (level
        ``n``) that the step term reads (its prescribed part and ``term_args``'
        cotangents accumulated)."""
        stepper = self.stepper
        if self.gbar[n] == 0.0:
            return np.zeros(stepper.free.size)
        T_bar, cotangents = term_pullback(self.run, n, stepper.observed(n, state),
                                          self.gbar[n], self.term_args, self.positions)
        self.args_bar = [total + c for total, c in zip(self.args_bar, cotangents,
                                                       strict=True)]
        if stepper.prescribed:
            self.prescribed_term(n, T_bar[stepper.constrained])
        return T_bar[stepper.free]

    def prescribed_term(self, n: int, T_c: np.ndarray) -> None:
        """The step term's cotangent at the prescribed dofs of level ``n`` into ``ḡ`` and
        ``φ̄_g``."""
        stepper = self.stepper
        self.g_bar += stepper.phi[n] * T_c
        self.phi_bar[n] += float(stepper.g @ T_c)


class Adjoint(StepTermCotangent):
    """The reverse sweep's accumulators: ``λ`` contributions owed to earlier levels and
    the cotangent of every input."""

    def __init__(self, run: Run, stepper: Stepper, gbar, inputs: HeatInputs,
                 traced: HeatInputs):
        self.start_terms(run, stepper, gbar, inputs.term_args, traced.term_args)
        self.owed: dict[int, np.ndarray] = {}  # level -> −Σ (α M + β K)ᵀ λ of later steps
        n_free = stepper.free.size
        # K̄, M̄ of the traced matrices only (one pattern: checked)
        self.matrices = [name for name in ("stiffness", "mass") if getattr(traced, name)]
        self.outers = PatternOuters.for_sweep(stepper.K.pattern, len(self.matrices),
                                              run.problem.n_steps,
                                              run.problem.max_states is not None)
        self.matrix_bars = dict(zip(self.matrices, self.outers.sums, strict=True))
        self._combined = {name: np.empty(n_free) for name in self.matrices}  # x of λ xᵀ
        self._scratch = np.empty(n_free)
        self.F_bar = np.zeros((n_free, stepper.F.shape[1])) if traced.forces else None
        self._F_step = np.empty_like(self.F_bar) if traced.forces else None
        self.H_bar = np.zeros_like(stepper.H) if traced.histories else None
        self.lam_K = self.lam_M = self.g_bar = self.phi_bar = None
        if stepper.prescribed:
            self.lam_K = np.zeros(n_free)  # Σ_n (Σ_k β φ_g) λ_n
            self.lam_M = np.zeros(n_free)
            self.g_bar = np.zeros(stepper.constrained.size)
            self.phi_bar = np.zeros(stepper.phi.size)

    def step(self, n: int, before: tuple, after: tuple) -> None:
        """The adjoint of step ``n``: ``λ_n``, what it owes earlier levels, and its part of
        every cotangent."""
        stepper = self.stepper
        a, b = stepper.weights(n)
        T_n = after[0]
        rhs = self.term_cotangent(n, after)  # a new array: updated in place
        owed = self.owed.pop(n, None)
        if owed is not None:
            rhs += owed
        lam = stepper.solver(n).solve_transpose(rhs)
        levels = (T_n, *before)
        M_lam = None  # Mᵀλ, once for all levels it reaches
        for k in range(1, stepper.levels + 1):
            if reads_level(a, b, k):
                M_lam = stepper.M_T @ lam if M_lam is None else M_lam
                push = np.multiply(M_lam, a[k], out=self._scratch)
                if k < b.size and b[k] != 0.0:
                    push += b[k] * (stepper.K_T @ lam)
                owed_k = self.owed.get(n - k)
                if owed_k is None:
                    self.owed[n - k] = np.negative(push)
                else:
                    owed_k -= push
        self.outers.subtract(lam, *(self.combination(name, n, levels)
                                    for name in self.matrices))
        if self.F_bar is not None:
            np.multiply(lam[:, None], b[0] * stepper.H[n] + b[1] * stepper.H[n - 1],
                        out=self._F_step)
            self.F_bar += self._F_step
        if self.H_bar is not None:
            FT_lam = stepper.F.T @ lam
            self.H_bar[n] += b[0] * FT_lam
            self.H_bar[n - 1] += b[1] * FT_lam
        if stepper.prescribed:
            self.prescribed_step(n, lam, a, b)

    def prescribed_step(self, n: int, lam: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """Step ``n``'s part of the prescribed values' cotangents for multiplier ``lam``."""
        stepper = self.stepper
        sa, sb = stepper.g_weights(n)
        self.lam_M += sa * lam
        self.lam_K += sb * lam
        Mg_lam, Kg_lam = float(stepper.Mg @ lam), float(stepper.Kg @ lam)
        for k in range(stepper.levels + 1):
            if n - k >= 0 and reads_level(a, b, k):
                self.phi_bar[n - k] -= a[k] * Mg_lam + (b[k] * Kg_lam if k < b.size else 0.0)

    def combination(self, matrix: str, n: int, levels: tuple) -> np.ndarray:
        """``Σ_k β_(n,k) T_(n−k)`` (``matrix`` "stiffness") or ``Σ_k α_(n,k)/Δt_n
        T_(n−k)`` ("mass") ``(n_free,)``: what step ``n``'s multiplier meets in that
        matrix's cotangent, summed in place in the order of ``Σ_k`` (``levels``: ``T_n``,
        ``T_(n−1)``, ...)."""
        a, b = self.stepper.weights(n)
        weights = b if matrix == "stiffness" else a
        combined = np.multiply(levels[0], weights[0], out=self._combined[matrix])
        for k in range(1, weights.size):
            if weights[k] != 0.0:
                combined += np.multiply(levels[k], weights[k], out=self._scratch)
        return combined

    def finish(self, start: tuple) -> np.ndarray:
        """``T̄_0`` on the free dofs (after the last step's adjoint; ``start``: state 0);
        the matrix cotangents complete."""
        self.outers.flush()
        T0_bar = self.term_cotangent(0, start)
        owed = self.owed.pop(0, None)
        return T0_bar if owed is None else T0_bar + owed


def _integrate_vjp(traced: HeatInputs, values, run: Run, inputs: HeatInputs):
    def pullback(gbar):
        refuse_second_derivatives("a transient run", NotImplementedError,
                                  "its adjoint runs on plain arrays", gbar,
                                  *flatten(inputs)[0])
        problem = run.problem
        stepper = Stepper(problem, inputs)
        adjoint = Adjoint(run, stepper, gbar, inputs, traced)
        with problem.lock, stepper.thread_limit():  # as the forward sweep
            sweep_backwards(run, stepper, adjoint)
        T0_bar = adjoint.finish(stepper.start())
        cotangents = HeatInputs(
            stiffness=adjoint.matrix_bars.get("stiffness"),
            mass=adjoint.matrix_bars.get("mass"), coupling_stiffness=None,
            coupling_mass=None, forces=adjoint.F_bar, histories=adjoint.H_bar,
            prescribed=None, prescribed_history=adjoint.phi_bar, initial=T0_bar,
            term_args=adjoint.term_args_bar())
        if stepper.prescribed:
            K_fc_bar, M_fc_bar, g_bar = prescribed_cotangents(
                inputs.coupling_stiffness, inputs.coupling_mass, adjoint, stepper.g)
            cotangents = cotangents._replace(coupling_stiffness=K_fc_bar,
                                             coupling_mass=M_fc_bar, prescribed=g_bar)
        return cotangents

    return pullback


defvjp_tree(integrate, _integrate_vjp)

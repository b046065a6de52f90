"""One run of a second-order (structural dynamics) problem as a primitive, and its
discrete adjoint: :class:`NewmarkStepper` advances ``(u, v, a)`` by Newmark or
generalized-α with the effective stiffness's factorization; :data:`dynamic_integrate` is
the primitive of a :class:`~fesens.fem.transient.dynamics.DynamicProblem` run, whose VJP
(:class:`DynamicAdjoint`) runs the adjoint steps backwards with the forward factorizations;
:data:`~fesens.fem.transient.motion_rates.newmark_rates` (offered here with the stepper)
is the velocity and acceleration factors of a prescribed motion ``g φ(t)`` by the same
update.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.pytree import flatten
from fesens.ad.tree_primitive import defvjp_tree, tree_primitive
from fesens.fem.transient.motion_rates import newmark_rates
from fesens.fem.transient.run_inputs import DynamicInputs
from fesens.fem.transient.steps import (
    PatternOuters,
    StepTermCotangent,
    prescribed_cotangents,
)
from fesens.fem.transient.sweep import (
    Run,
    SteppedProblem,
    refuse_second_derivatives,
    sweep_backwards,
    sweep_forward,
)
from fesens.solvers import LinearSolver

#: What the module offers; ``newmark_rates`` (:mod:`~fesens.fem.transient.motion_rates`)
#: with the stepper whose prescribed motion it gives.
__all__ = ["MASS_KEY", "DynamicAdjoint", "NewmarkStepper", "dynamic_integrate",
           "newmark_rates"]

#: ``(a, b)`` of ``a M + b K`` for ``M`` alone: the initial acceleration's matrix.
MASS_KEY = (1.0, 0.0)


def _plus(x: np.ndarray, w: float, y: np.ndarray) -> np.ndarray:
    """``x + w y``; ``x`` itself where ``w`` is 0 (the same values for a finite ``y``, and
    no pass: undamped Newmark's weights are mostly 0)."""
    return x if w == 0.0 else x + w * y


def _blend(w: float, new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """``(1 − w) new + w old``; ``new`` itself where ``w`` is 0."""
    return new if w == 0.0 else (1 - w) * new + w * old


class NewmarkStepper:
    """The steps of one set of (plain) matrices, damping, loads and prescribed motion; a
    state is ``(u, v, a)`` on the free dofs, a level's record the state itself (a
    :class:`~fesens.fem.transient.sweep.SweepStepper` of one level).

    Without prescribed motion ``inputs``' coupling blocks, ``g`` and rates (``[φ, φ̇, φ̈]``
    ``(N + 1, 3)`` of :data:`newmark_rates`) are None; with it, the constrained dofs move
    as ``g φ_n`` (velocity ``g φ̇_n``, acceleration ``g φ̈_n``) and each residual gains
    ``K_fc (u_c + c_K v_c) + M_fc (a_c + c_M v_c)`` at the blended levels."""

    levels = 1

    def __init__(self, problem: SteppedProblem, inputs: DynamicInputs):
        self.problem, self.coefficients = problem, problem.coefficients
        self.inputs = inputs
        self.K, self.M = inputs.stiffness, inputs.mass
        self.K_csr, self.M_csr = self.K.tocsr(), self.M.tocsr()
        self.K_T, self.M_T = self.K_csr.T, self.M_csr.T  # the adjoint's, made once
        self.cM, self.cK = float(inputs.mass_damping), float(inputs.stiffness_damping)
        self.F = np.asarray(inputs.forces, dtype=float)
        self.H = np.asarray(inputs.histories, dtype=float)
        model = problem.model
        self.free, self.n_dofs = model.free_dofs, model.dofmap.n_dofs
        self.constrained = model.constrained_dofs
        self.prescribed = inputs.prescribed is not None
        if self.prescribed:
            self.g = np.asarray(inputs.prescribed, dtype=float)
            self.rates = np.asarray(inputs.prescribed_rates, dtype=float)
            self.Kg = inputs.coupling_stiffness.tocsr() @ self.g  # K_fc g, M_fc g: (n_free,)
            self.Mg = inputs.coupling_mass.tocsr() @ self.g
        self._step_solver: LinearSolver | None = None

    def start(self) -> tuple:
        """State 0, ``(u_0, v_0, a_0)`` (:meth:`initial`)."""
        return self.initial(self.inputs.initial_displacement, self.inputs.initial_velocity)

    def advance(self, n: int, state: tuple) -> tuple:
        return self.step(n, state)

    def pack(self, state: tuple) -> tuple:
        return state

    def unpack(self, n: int, records: dict) -> tuple:
        return records[n]

    def observed(self, n: int, state: tuple) -> np.ndarray:
        """``u_n`` on all dofs."""
        return self.full(state[0], n)

    @property
    def step_solver(self) -> LinearSolver:
        """The factorized ``S = s_M M + s_K K`` of every step."""
        if self._step_solver is None:
            key = self.coefficients.step_key(self.cM, self.cK)
            self._step_solver = self.problem.step_solver(key, self.K, self.M)
        return self._step_solver

    def thread_limit(self):
        """The BLAS threads of these solves, as the pattern chooses them for any solve."""
        return self.K.pattern.thread_limit(self.step_solver)

    def load_weights(self, n: int) -> dict[int, float]:
        """``{level: weight}`` of ``h_n`` (level 0: ``H_0`` alone)."""
        if n == 0:
            return {0: 1.0}
        af = self.coefficients.alpha_f
        return {n: 1.0 - af, n - 1: af} if af != 0.0 else {n: 1.0}

    def coupling_weights(self, n: int) -> dict[int, tuple[float, float]]:
        """``{level: (w_f, w_m)}``: the weights of the levels in the blends at ``α_f`` (of
        ``u``, ``v``) and ``α_m`` (of ``a``) of level ``n``'s residual (level 0: itself)."""
        if n == 0:
            return {0: (1.0, 1.0)}
        af, am = self.coefficients.alpha_f, self.coefficients.alpha_m
        return {n: (1.0 - af, 1.0 - am), n - 1: (af, am)}

    def coupling(self, n: int) -> tuple[float, float]:
        """``(s_K, s_M)`` with ``K_fc (u_c + c_K v_c) + M_fc (a_c + c_M v_c) = s_K K_fc g +
        s_M M_fc g`` at level ``n``'s blended levels."""
        s_K = s_M = 0.0
        for level, (wf, wm) in self.coupling_weights(n).items():
            u, v, a = self.rates[level]
            s_K += wf * (u + self.cK * v)
            s_M += wm * a + wf * self.cM * v
        return s_K, s_M

    def prescribed_forces(self, n: int, rhs: np.ndarray) -> np.ndarray:
        """``rhs`` less the prescribed motion's forces on the free dofs at level ``n``."""
        if not self.prescribed:
            return rhs
        s_K, s_M = self.coupling(n)
        return rhs - s_K * self.Kg - s_M * self.Mg

    def residual_operand(self, u, v, a=None):
        """``K (u + c_K v) + M (a + c_M v)``: the internal forces of blended levels (``a``
        None: zero, and no product with ``M`` without mass damping)."""
        forces = self.K_csr @ _plus(u, self.cK, v)
        if a is None and self.cM == 0.0:
            return forces
        return forces + self.M_csr @ (self.cM * v if a is None else _plus(a, self.cM, v))

    def initial(self, u0, v0) -> tuple:
        """``(u_0, v_0, a_0)`` with ``M a_0 = F H_0 − C v_0 − K u_0``."""
        u0, v0 = np.asarray(u0, dtype=float), np.asarray(v0, dtype=float)
        rhs = self.prescribed_forces(0, self.F @ self.H[0] - self.residual_operand(u0, v0))
        mass = self.problem.step_solver(MASS_KEY, self.K, self.M)
        return u0, v0, mass.solve(rhs)

    def predictors(self, state) -> tuple:
        """``u_(n−1) + Δt v_(n−1) + Δt² (½ − β) a_(n−1)`` and ``v_(n−1) + Δt (1 − γ)
        a_(n−1)``: the new level without its acceleration."""
        u, v, a = state
        c = self.coefficients
        return (u + c.dt * v + c.dt ** 2 * (0.5 - c.beta) * a,
                v + c.dt * (1 - c.gamma) * a)

    def step(self, n: int, state: tuple) -> tuple:
        """``(u_n, v_n, a_n)`` from ``(u_(n−1), v_(n−1), a_(n−1))``."""
        c = self.coefficients
        u, v, a = state
        u_hat, v_hat = self.predictors(state)
        h = sum(w * self.H[level] for level, w in self.load_weights(n).items())
        af, am = c.alpha_f, c.alpha_m
        # the blended levels with a_n = 0; S a_n supplies the rest
        rhs = self.F @ h - self.residual_operand(_blend(af, u_hat, u), _blend(af, v_hat, v),
                                                 am * a if am != 0.0 else None)
        rhs = self.prescribed_forces(n, rhs)
        a_new = self.step_solver.solve(rhs)
        return (u_hat + c.beta * c.dt ** 2 * a_new, v_hat + c.gamma * c.dt * a_new, a_new)

    def blended(self, state: tuple, new: tuple) -> tuple:
        """``(u_(n−α_f), v_(n−α_f), a_(n−α_m))``."""
        af, am = self.coefficients.alpha_f, self.coefficients.alpha_m
        return (_blend(af, new[0], state[0]), _blend(af, new[1], state[1]),
                _blend(am, new[2], state[2]))

    def full(self, x_free: np.ndarray, n: int | None = None, field: int = 0) -> np.ndarray:
        """A free-dof field on all dofs, ``(n_dofs,)``: at the constrained dofs, the
        prescribed motion's ``field`` (0: ``u``, 1: ``v``, 2: ``a``) at level ``n``, or zero
        (``n`` None or no prescribed motion)."""
        full = np.zeros(self.n_dofs)
        full[self.free] = x_free
        if self.prescribed and n is not None:
            full[self.constrained] = self.g * self.rates[n, field]
        return full


def _dynamic_integrate(run: Run, inputs: DynamicInputs):
    """``values[n] = j(u_n, t_n, *term_args)``, ``(N + 1,)``
    (:func:`~fesens.fem.transient.sweep.sweep_forward`)."""
    return sweep_forward(run, NewmarkStepper(run.problem, inputs), inputs.term_args)


dynamic_integrate = tree_primitive(_dynamic_integrate, "dynamic_integrate")


class DynamicAdjoint(StepTermCotangent):
    """The reverse sweep: the cotangent of the state after the step being reversed and
    the cotangent of every input."""

    def __init__(self, run: Run, stepper: NewmarkStepper, gbar, inputs: DynamicInputs,
                 traced: DynamicInputs):
        self.start_terms(run, stepper, gbar, inputs.term_args, traced.term_args)
        n_free = stepper.free.size
        zero = np.zeros(n_free)
        self.carry = (zero, zero, zero)  # (ū, v̄, ā) of the level after the reversed step
        # K̄, M̄ of the traced matrices only (one pattern: checked)
        self.matrices = [name for name in ("stiffness", "mass") if getattr(traced, name)]
        self.outers = PatternOuters.for_sweep(stepper.K.pattern, len(self.matrices),
                                              run.problem.n_steps,
                                              run.problem.max_states is not None)
        self.matrix_bars = dict(zip(self.matrices, self.outers.sums, strict=True))
        self.cM_bar = self.cK_bar = 0.0
        self.damping_traced = (traced.mass_damping, traced.stiffness_damping)
        self.F_bar = np.zeros((n_free, stepper.F.shape[1])) if traced.forces else None
        self.H_bar = np.zeros_like(stepper.H) if traced.histories else None
        self.lam_K = self.lam_M = self.g_bar = self.rates_bar = None
        if stepper.prescribed:
            self.lam_K = np.zeros(n_free)  # Σ_n s_K,n λ_n
            self.lam_M = np.zeros(n_free)
            self.g_bar = np.zeros(stepper.constrained.size)
            self.rates_bar = np.zeros_like(stepper.rates)

    def prescribed_term(self, n: int, u_c: np.ndarray) -> None:
        """The step term's cotangent at the prescribed dofs of level ``n`` into ``ḡ`` and
        the cotangent of ``φ_n``."""
        stepper = self.stepper
        self.g_bar += stepper.rates[n, 0] * u_c
        self.rates_bar[n, 0] += float(stepper.g @ u_c)

    def residual(self, n: int, lam: np.ndarray, blended: tuple, mass: bool = False
                 ) -> tuple:
        """The parameter cotangents of level ``n``'s residual ``M (a + c_M v) + K (u + c_K
        v) − F h_n`` at the blended levels, for multiplier ``lam``; returns ``(Mᵀ λ, Kᵀ λ)``
        (``Mᵀ λ`` None unless ``mass``, the mass damping or its cotangent reads it)."""
        s = self.stepper
        u, v, a = blended
        operands = {"stiffness": lambda: _plus(u, s.cK, v), "mass": lambda: _plus(a, s.cM, v)}
        self.outers.subtract(lam, *(operands[i]() for i in self.matrices))
        need_M = mass or s.cM != 0.0 or self.damping_traced[0]
        M_lam, K_lam = (s.M_T @ lam if need_M else None), s.K_T @ lam
        if self.damping_traced[0]:
            self.cM_bar -= float(M_lam @ v)
        if self.damping_traced[1]:
            self.cK_bar -= float(K_lam @ v)
        FT_lam = s.F.T @ lam if self.H_bar is not None else None
        for level, weight in s.load_weights(n).items():
            if self.F_bar is not None:
                self.F_bar += weight * np.outer(lam, s.H[level])
            if FT_lam is not None:
                self.H_bar[level] += weight * FT_lam
        if s.prescribed:
            self.prescribed_residual(n, lam)
        return M_lam, K_lam

    def prescribed_residual(self, n: int, lam: np.ndarray) -> None:
        """The cotangents of the prescribed motion's part ``s_K K_fc g + s_M M_fc g`` of
        level ``n``'s residual for multiplier ``lam``: its factors per level, the damping
        it reads, and ``λ`` summed for ``K̄_fc``, ``M̄_fc``, ``ḡ``."""
        s = self.stepper
        s_K, s_M = s.coupling(n)
        self.lam_K += s_K * lam
        self.lam_M += s_M * lam
        Kg_lam, Mg_lam = float(s.Kg @ lam), float(s.Mg @ lam)
        for level, (wf, wm) in s.coupling_weights(n).items():
            v = s.rates[level, 1]
            self.rates_bar[level, 0] -= wf * Kg_lam
            self.rates_bar[level, 1] -= wf * (s.cK * Kg_lam + s.cM * Mg_lam)
            self.rates_bar[level, 2] -= wm * Mg_lam
            self.cK_bar -= wf * v * Kg_lam
            self.cM_bar -= wf * v * Mg_lam

    def step(self, n: int, state: tuple, new: tuple) -> None:
        """The adjoint of step ``n`` (``state`` the level before, ``new`` its result):
        ``carry`` becomes the cotangent of ``state``."""
        s, c = self.stepper, self.stepper.coefficients
        u_bar, v_bar, a_bar = self.carry
        u_bar = u_bar + self.term_cotangent(n, new)
        lam = s.step_solver.solve_transpose(a_bar + c.beta * c.dt ** 2 * u_bar
                                            + c.gamma * c.dt * v_bar)
        af, am, dt = c.alpha_f, c.alpha_m, c.dt
        M_lam, K_lam = self.residual(n, lam, s.blended(state, new), mass=am != 0.0)
        # −∂r/∂(u, v, a) of the level before, through the blended levels and predictors
        # (terms of zero weight skipped: the same values)
        pu_bar, damped = -K_lam, self.damping(M_lam, K_lam)
        pv_bar = None if damped is None else -damped
        pu_bar_hat = u_bar + (1 - af) * pu_bar  # cotangent of the predictor û
        pv_bar_hat = v_bar if pv_bar is None else v_bar + (1 - af) * pv_bar
        v_carry = dt * pu_bar_hat + pv_bar_hat
        a_carry = dt ** 2 * (0.5 - c.beta) * pu_bar_hat + dt * (1 - c.gamma) * pv_bar_hat
        self.carry = (_plus(pu_bar_hat, af, pu_bar),
                      v_carry if pv_bar is None else _plus(v_carry, af, pv_bar),
                      _plus(a_carry, -am, M_lam))

    def damping(self, M_x: np.ndarray | None, K_x: np.ndarray) -> np.ndarray | None:
        """``c_M M_x + c_K K_x`` ``(n_free,)``; None without damping."""
        s = self.stepper
        terms = [w * x for w, x in ((s.cM, M_x), (s.cK, K_x)) if w != 0.0]
        return terms[0] + terms[1] if len(terms) == 2 else (terms[0] if terms else None)

    def finish(self, initial: tuple) -> tuple:
        """``(ū_0, v̄_0)`` on the free dofs, through the initial acceleration's solve."""
        s = self.stepper
        u_bar, v_bar, a_bar = self.carry
        u_bar = u_bar + self.term_cotangent(0, initial)
        mu = s.problem.step_solver(MASS_KEY, s.K, s.M).solve_transpose(a_bar)
        M_mu, K_mu = self.residual(0, mu, initial)
        self.outers.flush()  # the matrix cotangents complete
        damped = self.damping(M_mu, K_mu)
        return u_bar - K_mu, v_bar if damped is None else v_bar - damped


def _dynamic_vjp(traced: DynamicInputs, values, run: Run, inputs: DynamicInputs):
    def pullback(gbar):
        refuse_second_derivatives("a dynamic run", NotImplementedError,
                                  "its adjoint runs on plain arrays", gbar,
                                  *flatten(inputs)[0])
        problem = run.problem
        stepper = NewmarkStepper(problem, inputs)
        adjoint = DynamicAdjoint(run, stepper, gbar, inputs, traced)
        with problem.lock, stepper.thread_limit():  # as the forward sweep
            sweep_backwards(run, stepper, adjoint)
            u0_bar, v0_bar = adjoint.finish(stepper.unpack(0, run.stored))
        cotangents = DynamicInputs(
            stiffness=adjoint.matrix_bars.get("stiffness"),
            mass=adjoint.matrix_bars.get("mass"), mass_damping=adjoint.cM_bar,
            stiffness_damping=adjoint.cK_bar, forces=adjoint.F_bar, histories=adjoint.H_bar,
            initial_displacement=u0_bar, initial_velocity=v0_bar, coupling_stiffness=None,
            coupling_mass=None, prescribed=None, prescribed_rates=adjoint.rates_bar,
            term_args=adjoint.term_args_bar())
        if stepper.prescribed:
            K_fc_bar, M_fc_bar, g_bar = prescribed_cotangents(
                inputs.coupling_stiffness, inputs.coupling_mass, adjoint, stepper.g)
            cotangents = cotangents._replace(coupling_stiffness=K_fc_bar,
                                             coupling_mass=M_fc_bar, prescribed=g_bar)
        return cotangents

    return pullback


defvjp_tree(dynamic_integrate, _dynamic_vjp)

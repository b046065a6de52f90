"""Transient nonlinear problems ``C Ṫ + R_int(T) = f(t)``: the run as one primitive, its
Newton stepper and its discrete adjoint.

The model is a :class:`~fesens.fem.model.nonlinear.NonlinearModel` (conduction with
``k(T)``: ``R_int`` its internal forces, ``C`` the heat capacity matrix ``∫ ρ c N Nᵀ``).
Step ``n`` is the linear multistep form of :mod:`fesens.fem.transient.schemes` with the
internal forces in place of ``K T``; with ``a_(n,k) = α_(n,k)/Δt_n``,
``u_m = state(T_m, g_m)`` the field on all dofs and ``g_m = g φ_g(t_m)``:

    r_n(T_n) = Σ_k a_(n,k) (M_ff T_(n−k) + M_fc g_(n−k))
               + Σ_k β_(n,k) ([R_int(u_(n−k); θ, X)]_f − F H_(n−k)) = 0

(backward Euler: ``C (T_n − T_(n−1))/Δt + R_int(T_n) − f_n = 0``), solved by Newton
(:mod:`fesens.fem.nonlinear.newton`) from ``T_(n−1)`` with the tangent
``A_n = a_(n,0) M_ff + β_(n,0) K_T(u_n)`` on the pattern of the model's tangent: one
symbolic analysis for the whole run, one numeric factorization per Newton iteration.

The gradient is that of the discrete scheme. With the Lagrangian
``L = Σ_n ḡ_n j_n(u_n) − Σ_n λ_nᵀ r_n``, backwards for ``n = N..1``:

    A_nᵀ λ_n = ḡ_n ∂j_n/∂T_n − Σ_(k≥1) a_(n+k,k) M_ffᵀ λ_(n+k) − β_(n+1,1) K_T(u_n)ᵀ λ_(n+1)
    θ̄ −= μ_nᵀ ∂[R_int(u_n; θ, X)]_f/∂(θ, X, g),     μ_n = β_(n,0) λ_n + β_(n+1,1) λ_(n+1)
    M̄_ff −= λ_n (Σ_k a_(n,k) T_(n−k))ᵀ,   F̄ += λ_n (Σ_k β_(n,k) H_(n−k))ᵀ,
    H̄_(n−k) += β_(n,k) Fᵀ λ_n

one transposed solve with the step's converged tangent and one traced evaluation of the
internal forces per level (the per-cell fields, the node coordinates and the prescribed
values pulled back through it at once); ``T̄_0`` closes the sweep like a step without its
solve. The Newton iterations are never taped. The states the adjoint reads are all stored,
or recomputed from snapshots on Griewank's binomial schedule
(:mod:`fesens.fem.transient.checkpointing`): a Newton step re-run from the same state
repeats the same operations, so both give the same bits.

Only first derivatives: the backward rule uses the hand-derived tangent, whose own
derivative is not implemented.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fesens.ad.api import vjp
from fesens.ad.pytree import flatten
from fesens.ad.registry import NotDifferentiableError
from fesens.ad.sparse import PatternMatrix
from fesens.ad.traced import Traced
from fesens.ad.tree_primitive import defvjp_tree, tree_primitive
from fesens.errors import NewtonError
from fesens.fem.nonlinear.newton import Evaluation, solve_steps
from fesens.fem.transient.run_inputs import NonlinearHeatInputs
from fesens.fem.transient.steps import (
    LevelStates,
    StepTermCotangent,
    check_same_pattern,
    step_levels,
)
from fesens.fem.transient.sweep import (
    Run,
    SteppedProblem,
    StepTerm,
    refuse_second_derivatives,
    sweep_backwards,
    sweep_forward,
)
from fesens.solvers import LinearSolver

#: The inputs of the internal forces besides the material fields (keys of the adjoint's
#: cotangents; a field's key is ``("fields", name)``).
_FORCE_INPUTS = ("prescribed", "prescribed_history", "points")


class NonlinearStepper(LevelStates):
    """The Newton time steps of one set of (plain) mass matrices, material fields, loads
    and prescribed values."""

    def __init__(self, problem: SteppedProblem, inputs: NonlinearHeatInputs):
        self.problem, self.coefficients = problem, problem.coefficients
        self.levels = step_levels(self.coefficients)
        model = self.model = problem.model
        self.M = inputs.mass
        self.M_csr = self.M.tocsr()
        self.F = np.asarray(inputs.forces, dtype=float)
        self.H = np.asarray(inputs.histories, dtype=float)
        self.initial = np.asarray(inputs.initial, dtype=float)
        self.free, self.constrained = model.free_dofs, model.constrained_dofs
        self.n_dofs = model.dofmap.n_dofs
        self.prescribed = inputs.prescribed is not None
        self.g = self.phi = None
        if self.prescribed:
            self.g = np.asarray(inputs.prescribed, dtype=float)
            self.phi = np.asarray(inputs.prescribed_history, dtype=float)
            self.Mg = inputs.coupling_mass.tocsr() @ self.g  # M_fc g: (n_free,)
        self.points = None if inputs.points is None else np.asarray(inputs.points, dtype=float)
        self.fields = {name: np.asarray(value, dtype=float)
                       for name, value in inputs.fields.items()}
        self.operator = model.operator("ff")
        check_same_pattern(self.operator, self.M)
        self.backend: LinearSolver = problem.tangent_backend()
        self.options = problem.newton_options

    def prescribed_at(self, m: int) -> np.ndarray:
        """``g_m = g φ_g(t_m)`` ``(n_constrained,)`` (zeros without prescribed values)."""
        if self.prescribed:
            return self.g * self.phi[m]
        return np.zeros(self.constrained.size)

    def forces(self, m: int, T: np.ndarray) -> np.ndarray:
        """``[R_int(u_m)]_f`` ``(n_free,)`` of the free values ``T`` at level ``m``."""
        u = self.model.state(T, self.prescribed_at(m))
        return np.asarray(self.model.internal_forces(u, self.fields, self.points))[self.free]

    def tangent(self, m: int, T: np.ndarray) -> PatternMatrix:
        """``K_T(u_m)`` on the free dofs of the model's tangent pattern."""
        return self.model.tangent(self.model.state(T, self.prescribed_at(m)), self.fields,
                                  self.points)

    def factorized(self, a: float, b: float, K: PatternMatrix) -> LinearSolver:
        """The backend holding the factorization of ``a M_ff + b K`` (symbolic analysis
        kept across the run)."""
        pattern, backend = K.pattern, self.backend
        data = a * self.M.data + b * K.data
        before = backend.stats["n_numeric"]
        backend.factorize_once(pattern, data, lambda: sp.csr_matrix(
            (data, pattern.indices, pattern.indptr), shape=pattern.shape))
        self.problem.stats["factorizations"] += backend.stats["n_numeric"] - before
        return backend

    def thread_limit(self):
        """The BLAS threads of these solves, as the pattern chooses them for any solve."""
        return self.operator.pattern.thread_limit(self.backend)

    def step(self, n: int, state: tuple) -> np.ndarray:
        """``T_n`` from the state ``(T_(n−1), T_(n−2))`` (``T_(−1)``: None), by Newton from
        ``T_(n−1)``.

        Raises
        ------
        NewtonError
            Newton did not converge within the step (naming it and the remedy).
        """
        a, b = self.weights(n)
        known = -(self.F @ (b[0] * self.H[n] + b[1] * self.H[n - 1]))
        for k in range(1, self.levels + 1):
            if a[k] != 0.0:
                known = known + a[k] * (self.M_csr @ state[k - 1])
        if b[1] != 0.0:
            known = known + b[1] * self.forces(n - 1, state[0])
        if self.prescribed:
            known = known + self.g_weights(n)[0] * self.Mg
        system = _StepSystem(self, n, a[0], b[0], known)
        try:
            T, report = solve_steps(system, state[0], self.options)
        except NewtonError as exc:
            times = self.problem.times
            # a step that reuses earlier levels (not backward Euler's) may have no
            # admissible solution where it ended outside the admissible states
            advice = (self._overshoot_hint()
                      if system.refused and (np.any(a[2:] != 0.0) or b[1] != 0.0) else "Give")
            raise NewtonError(
                f"time step {n} (t = {times[n - 1]:.6g} to {times[n]:.6g}) did not converge: "
                f"{exc.reason}. {advice} smaller time steps (the last converged state is that "
                f"of t = {times[n - 1]:.6g}, on the error: state), more Newton iterations "
                "(newton max_iterations) or a looser tolerance (newton rtol)",
                reason=exc.reason, history=exc.history, load_factor=float(times[n - 1]),
                state=self.full(n - 1, state[0])) from None
        self.problem.stats["newton_iterations"] += report.iterations
        return T

    def _overshoot_hint(self) -> str:
        """Why a step of a scheme other than backward Euler may have no admissible state,
        and the remedy (the start of the error's advice).

        Such a scheme overshoots a value that relaxes within a step: a mode decaying at
        rate ``λ`` is multiplied per step by ``(1 − (1 − θ) λΔt)/(1 + θ λΔt)`` in the
        θ-method, negative beyond ``λΔt = 1/(1 − θ)`` (2 for Crank–Nicolson), and by the
        complex roots of ``(3/2 + λΔt) r² − 2 r + 1/2`` in BDF2 beyond ``λΔt = 1/2``;
        backward Euler's ``1/(1 + λΔt)`` stays in ``(0, 1)``. A cell whose capacity is
        small against its stiffness relaxes fast, such as a nearly void cell of a design
        (its capacity follows the density, its stiffness keeps the interpolation's
        minimum); there the overshoot can leave the model's admissible states, and the
        step then has no admissible solution at all.
        """
        return (f"Scheme \"{self.problem.scheme}\" overshoots values that relax within a "
                "step (cells whose capacity is small against their stiffness, such as nearly "
                "void cells of a design), and the solution of this step may lie outside the "
                "admissible states: use scheme=\"backward_euler\" (time.scheme in a "
                "config), which does not overshoot; or give")


class _StepSystem:
    """The :class:`~fesens.fem.nonlinear.newton.NewtonSystem` of one time step: ``r_n(x) =
    a M_ff x + b [R_int(u_n(x))]_f + known`` (the load factor is not used: a step is
    never cut back, which would change the scheme)."""

    def __init__(self, stepper: NonlinearStepper, n: int, a: float, b: float,
                 known: np.ndarray):
        self.stepper, self.level, self.known = stepper, n, known
        self.mass_weight, self.forces_weight = a, b  # of M_ff x and of the internal forces
        # whether the last state evaluated was inadmissible: a failed step that ended
        # there may have no admissible solution at all
        self.refused = False

    def evaluate(self, x: np.ndarray, t: float) -> Evaluation:
        s = self.stepper
        u = s.model.state(x, s.prescribed_at(self.level))
        reason = s.model.inadmissibility(u, s.fields, s.points)
        self.refused = reason is not None
        if reason is not None:
            return Evaluation(np.empty(0), 0.0, reason=reason)
        capacity = self.mass_weight * (s.M_csr @ x)
        internal = np.asarray(s.model.internal_forces(u, s.fields, s.points))[s.free]
        forces = self.forces_weight * internal
        scale = max(float(np.linalg.norm(capacity)), float(np.linalg.norm(forces)),
                    float(np.linalg.norm(self.known)))
        return Evaluation(capacity + forces + self.known, scale)

    def solve_tangent(self, x: np.ndarray, t: float, rhs: np.ndarray) -> np.ndarray:
        s = self.stepper
        K = s.tangent(self.level, x)
        with s.backend.lock:  # the model's tangent solver: other threads' solves share it
            return s.factorized(self.mass_weight, self.forces_weight, K).solve(rhs)


# ------------------------------------------------------------------ the primitive
def _integrate_nonlinear(run: Run, inputs: NonlinearHeatInputs):
    """``values[n] = j(T_n, t_n, *term_args)``, ``(N + 1,)``
    (:func:`~fesens.fem.transient.sweep.sweep_forward`, each step a Newton solve)."""
    problem = run.problem
    stepper = NonlinearStepper(problem, inputs)
    with problem.lock:  # the statistics of this run, not of another thread's
        problem.stats.update(newton_iterations=0)
        return sweep_forward(run, stepper, inputs.term_args)


integrate_nonlinear = tree_primitive(_integrate_nonlinear, "transient_integrate_nonlinear")


class NonlinearAdjoint(StepTermCotangent):
    """The reverse sweep's accumulators: ``λ`` contributions owed to earlier levels, the
    last ``λ`` with its weight on the internal forces of the level before, and the
    cotangent of every input."""

    def __init__(self, run: Run, stepper: NonlinearStepper, gbar,
                 inputs: NonlinearHeatInputs, traced: NonlinearHeatInputs):
        self.start_terms(run, stepper, gbar, inputs.term_args, traced.term_args)
        self.owed: dict[int, np.ndarray] = {}  # level -> −Σ a M_ffᵀ λ of later steps
        self.later: tuple[np.ndarray, float] | None = None  # (λ_(n+1), β_(n+1,1))
        n_free = stepper.free.size
        self.M_bar = np.zeros(stepper.M.pattern.nnz)
        self.F_bar = np.zeros((n_free, stepper.F.shape[1]))
        self.H_bar = np.zeros_like(stepper.H)
        self.lam_M = np.zeros(n_free)  # Σ_n (Σ_k a_(n,k) φ_g(t_(n−k))) λ_n
        self.g_bar = np.zeros(stepper.constrained.size) if stepper.prescribed else None
        self.phi_bar = np.zeros(stepper.phi.size) if stepper.prescribed else None
        # the differentiated inputs of the internal forces and their cotangents
        self.inner = {key: 0.0 for key in (
            *(name for name in _FORCE_INPUTS if getattr(traced, name)),
            *(("fields", name) for name, wanted in traced.fields.items() if wanted))}

    def _forces_pullback(self, m: int, T_m: np.ndarray, mu: np.ndarray) -> None:
        """``−μᵀ ∂[R_int(u_m)]_f`` into the differentiated fields, coordinates and
        prescribed values, by one traced evaluation of the internal forces."""
        if not self.inner or not np.any(mu):
            return
        s = self.stepper
        plain = {"prescribed": s.g, "prescribed_history": s.phi, "points": s.points,
                 **{("fields", name): value for name, value in s.fields.items()}}
        wanted = tuple(self.inner)

        def forces(*differentiated):
            values = {**plain, **dict(zip(wanted, differentiated, strict=True))}
            g_m = (values["prescribed"] * values["prescribed_history"][m] if s.prescribed
                   else s.prescribed_at(m))
            fields = {name: values["fields", name] for name in s.fields}
            u = s.model.state(T_m, g_m)
            return s.model.internal_forces(u, fields, values["points"])[s.free]

        _, pull = vjp(forces, *(plain[key] for key in wanted),
                      argnums=tuple(range(len(wanted))))
        for key, cotangent in zip(wanted, pull(-mu), strict=True):
            self.inner[key] = self.inner[key] + cotangent

    def _closing(self, m: int, T_m: np.ndarray, rhs: np.ndarray
                 ) -> tuple[np.ndarray, PatternMatrix | None]:
        """``rhs`` with what the later step owes level ``m`` through its internal forces,
        ``−β_(m+1,1) K_T(u_m)ᵀ λ_(m+1)``, and the tangent ``K_T(u_m)`` when assembled."""
        if self.later is None or self.later[1] == 0.0:
            return rhs, None
        K = self.stepper.tangent(m, T_m)
        lam, weight = self.later
        return rhs - weight * (K.tocsr().T @ lam), K

    def step(self, n: int, before: tuple, after: tuple) -> None:
        """The adjoint of step ``n``: ``λ_n``, what it owes earlier levels, and its part of
        every cotangent."""
        s = self.stepper
        a, b = s.weights(n)
        T_n = after[0]
        rhs = self.term_cotangent(n, after)
        owed = self.owed.pop(n, None)
        if owed is not None:
            rhs = rhs + owed
        rhs, K = self._closing(n, T_n, rhs)
        if K is None:
            K = s.tangent(n, T_n)
        with s.backend.lock:  # as in the forward step
            lam = s.factorized(a[0], b[0], K).solve_transpose(rhs)
        for k in range(1, s.levels + 1):
            if a[k] != 0.0:
                push = a[k] * (s.M_csr.T @ lam)
                self.owed[n - k] = self.owed[n - k] - push if n - k in self.owed else -push
        mu = b[0] * lam if self.later is None else b[0] * lam + self.later[1] * self.later[0]
        self._forces_pullback(n, T_n, mu)
        levels = (T_n, *before)
        self.M_bar -= s.M.pattern.outer(lam, sum(a[k] * levels[k] for k in range(s.levels + 1)
                                                 if a[k] != 0.0))
        self.F_bar += np.outer(lam, b[0] * s.H[n] + b[1] * s.H[n - 1])
        FT_lam = s.F.T @ lam
        self.H_bar[n] += b[0] * FT_lam
        self.H_bar[n - 1] += b[1] * FT_lam
        if s.prescribed:
            self.lam_M += s.g_weights(n)[0] * lam
            Mg_lam = float(s.Mg @ lam)
            for k in range(s.levels + 1):
                if a[k] != 0.0:
                    self.phi_bar[n - k] -= a[k] * Mg_lam
        self.later = (lam, float(b[1]))

    def finish(self, start: tuple) -> np.ndarray:
        """``T̄_0`` on the free dofs (after the last step's adjoint; ``start``: state 0),
        and the first step's pull on the internal forces of the initial state."""
        T0_free = start[0]
        T0_bar = self.term_cotangent(0, start)
        owed = self.owed.pop(0, None)
        if owed is not None:
            T0_bar = T0_bar + owed
        T0_bar, _ = self._closing(0, T0_free, T0_bar)
        if self.later is not None and self.later[1] != 0.0:
            self._forces_pullback(0, T0_free, self.later[1] * self.later[0])
        return T0_bar


def _integrate_nonlinear_vjp(traced: NonlinearHeatInputs, values, run: Run,
                             inputs: NonlinearHeatInputs):
    def pullback(gbar):
        refuse_second_derivatives(
            "a nonlinear transient run", NotDifferentiableError,
            "its adjoint uses the hand-derived tangent, whose own derivative is not "
            "implemented", gbar, *flatten(inputs)[0])
        problem = run.problem
        stepper = NonlinearStepper(problem, inputs)
        adjoint = NonlinearAdjoint(run, stepper, gbar, inputs, traced)
        with problem.lock, stepper.thread_limit():  # one run of the problem at a time
            sweep_backwards(run, stepper, adjoint)
            T0_bar = adjoint.finish(stepper.start())
        inner = adjoint.inner
        cotangents = NonlinearHeatInputs(
            mass=adjoint.M_bar, coupling_mass=None, forces=adjoint.F_bar,
            histories=adjoint.H_bar, prescribed=None, prescribed_history=None,
            initial=T0_bar, points=inner.get("points"),
            fields={name: inner.get(("fields", name)) for name in inputs.fields},
            term_args=adjoint.term_args_bar())
        if stepper.prescribed:
            M_fc = inputs.coupling_mass
            cotangents = cotangents._replace(
                coupling_mass=-M_fc.pattern.outer(adjoint.lam_M, stepper.g),
                prescribed=(adjoint.g_bar - M_fc.tocsr().T @ adjoint.lam_M
                            + inner.get("prescribed", 0.0)),
                prescribed_history=adjoint.phi_bar + inner.get("prescribed_history", 0.0))
        return cotangents

    return pullback


defvjp_tree(integrate_nonlinear, _integrate_nonlinear_vjp)


def nonlinear_values(problem: SteppedProblem, step_term: StepTerm, system: tuple,
                     term_args: tuple):
    """``values[n] = step_term(T_n, t_n, *term_args)`` ``(N + 1,)`` of a nonlinear run
    from its inputs ``(M_ff, M_fc, F, H, g, φ_g, T0_f, points, fields)`` (``fields`` the
    model's material fields by name); one primitive, traced when an input is."""
    run = Run(problem, step_term)
    inputs = NonlinearHeatInputs(*system, term_args=tuple(term_args))
    run.keep = any(isinstance(x, Traced) for x in flatten(inputs)[0])
    if run.keep:
        problem.check_gradient_memory()
    return integrate_nonlinear(run, inputs)

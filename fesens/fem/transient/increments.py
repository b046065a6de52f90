"""Load increments of a model with internal variables at its quadrature points (a
path-dependent material): the run as one primitive, its Newton stepper with cut-backs and
its discrete adjoint over the increments.

**The model** is a :class:`~fesens.fem.model.nonlinear.NonlinearModel` that also declares
(see :class:`HistoryModel`) the internal variables of its unloaded body
(``history_start()``), how the previous increment's internal variables join the fields of a
residual evaluation (``with_history(fields, history)``: a Newton iterate returns from them
and never updates them), and the converged increment ``increment(u, fields, points)``:
internal forces, new internal variables, dissipated work and per-point outputs, one traced
evaluation.

**Increment** ``n`` (load factor ``t_n``, prescribed factor ``d_n``) solves

    R_n(u_n; h_(n−1), θ, X, g_n) = [R_int(u_n; h_(n−1), θ, X)]_f − t_n f_f = 0,
    u_n = state(u_(n,f), d_n g),     h_n = H(u_n, h_(n−1), θ, X),     W_n = W_(n−1) + ΔW_n,

by Newton (:func:`~fesens.fem.nonlinear.newton.newton`) from an elastic predictor of
``u_(n−1)`` (:meth:`IncrementStepper.predictor`), one return map per iterate giving its
residual and tangent. A failed increment is cut back: split in halves (from its last
converged sub-increment), its sub-increments no smaller than ``2^-max_cutbacks`` of it; its
sub-increments ``0 < s_1 < … < s_k = 1`` (load factor
``t_(n−1) + s (t_n − t_(n−1))``) are recorded on the run, and the adjoint re-runs them from
state ``n − 1`` (the same operations, so the same bits) and reverses each like an increment.

**The adjoint** (Michaleris, Tortorelli & Vidal 1994, Int. J. Numer. Meth. Engng 37,
2471–2499): with the output cotangents ``ḡ_n`` of ``values[n] = j(u_n, R_int(u_n), W_n)``,
backwards for ``n = N..1`` (``h̄``, ``W̄`` carried from the later increments):

    ū_n = ḡ_n ∂j_n/∂u_n + (∂(R_int, H, ΔW)/∂u_n)ᵀ (ḡ_n ∂j_n/∂R_int + …, h̄_n, W̄_n),
    K_nᵀ λ_n = ū_n,
    h̄_(n−1) = (∂H/∂h)ᵀ h̄_n + (∂ΔW/∂h)ᵀ W̄_n − (∂R_n/∂h)ᵀ λ_n,
    θ̄, X̄, ḡ += (the same pullback in θ, X, g_n),  f̄_f += t_n λ_n,

one traced evaluation of the converged increment (forces, internal variables and work
packed in one vector) per increment, pulled back twice (before and after the transposed
solve with the increment's converged consistent tangent). The sweeps are
:mod:`~fesens.fem.transient.sweep`'s, with Griewank's binomial checkpointing under
``max_states``: a re-run increment repeats the same operations, so storing every state or
a few gives the same bits.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

import numpy as np

from fesens.ad.api import vjp
from fesens.ad.pytree import flatten
from fesens.ad.registry import NotDifferentiableError
from fesens.ad.traced import Traced
from fesens.ad.tree_primitive import defvjp_tree, tree_primitive
from fesens.errors import ConvergenceError, NewtonError
from fesens.fem.nonlinear.line_search import StepFailed
from fesens.fem.nonlinear.newton import Evaluation, newton
from fesens.fem.transient.sweep import (
    Run,
    refuse_second_derivatives,
    sweep_backwards,
    sweep_forward,
)


class HistoryModel(Protocol):
    """What the increments need of a model besides a
    :class:`~fesens.fem.model.nonlinear.NonlinearModel`'s residual and tangent."""

    def history_start(self) -> dict[str, np.ndarray]:
        """The internal variables of the unloaded body by name, ``(n_cells, n_qp, ...)``."""

    def with_history(self, fields: dict, history: dict) -> dict:
        """The fields of a residual evaluation from the previous internal variables."""

    def increment(self, u, fields: dict, points=None):
        """The increment at ``u`` from the internal variables among ``fields``:
        ``forces`` (the internal forces ``(n_dofs,)``), ``history`` (the new internal
        variables), ``dissipation``, ``outputs`` (per-point fields by name) and
        ``cell_tangents()`` (the consistent tangent's cell matrices, plain), traced."""


class IncrementInputs(NamedTuple):
    """The traced inputs of a run, by name."""

    forces: object
    """``f`` ``(n_dofs,)`` the loads at load factor 1."""
    prescribed: object
    """``g`` ``(n_constrained,)`` the prescribed values at factor 1, or None (none)."""
    points: object
    """Node coordinates ``(n_points, dim)`` or None (the mesh's)."""
    fields: dict
    """The model's material fields by name."""
    term_args: tuple
    """The step term's extra arguments."""


class IncrementState(NamedTuple):
    """What the step term reads of an increment's converged state."""

    u: np.ndarray
    """``(n_dofs,)`` the field on all dofs."""
    reactions: np.ndarray
    """``(n_dofs,)`` the internal forces ``R_int(u_n)``: the reactions on the constrained
    dofs, the applied loads (to Newton's tolerance) on the free ones."""
    dissipation: float
    """The work dissipated up to the increment (plasticity: the plastic work)."""


class Level(NamedTuple):
    """A converged state of the stepper (what a level's record keeps)."""

    u_free: np.ndarray
    history: dict
    dissipation: float
    forces: np.ndarray
    outputs: dict | None
    factors: tuple[float, float]
    """The load and prescribed factors it converged at."""


class IncrementRun(Run):
    """A :class:`~fesens.fem.transient.sweep.Run` that records each increment's
    sub-increments (the fractions ``s_1 < … < s_k = 1`` its cut-backs left)."""

    def __init__(self, problem, step_term):
        super().__init__(problem, step_term)
        self.substeps: dict[int, tuple[float, ...]] = {}


class IncrementStepper:
    """The Newton increments of one set of (plain) inputs: a
    :class:`~fesens.fem.transient.sweep.SweepStepper`."""

    levels = 1

    def __init__(self, problem, inputs: IncrementInputs, substeps: dict,
                 keep_outputs: bool = False):
        self.problem, self.model = problem, problem.model
        model = self.model
        self.f = np.asarray(inputs.forces, dtype=float)
        self.g = None if inputs.prescribed is None else np.asarray(inputs.prescribed, float)
        self.points = None if inputs.points is None else np.asarray(inputs.points, float)
        self.fields = {k: np.asarray(v, dtype=float) for k, v in inputs.fields.items()}
        self.free, self.constrained = model.free_dofs, model.constrained_dofs
        self.backend = problem.tangent_backend()
        self.options, self.max_cutbacks = problem.newton_options, problem.max_cutbacks
        self.substeps, self.keep_outputs = substeps, keep_outputs

    # ------------------------------------------------------------ factors
    def factors(self, n: int, s: float) -> tuple[float, float]:
        """``(t, d)``: load and prescribed factors at the fraction ``s`` of increment ``n``
        (exactly ``t_n, d_n`` at ``s = 1``)."""
        t, d = self.problem.times, self.problem.dirichlet_factors
        if s == 1.0:
            return float(t[n]), float(d[n])
        return (float(t[n - 1] + s * (t[n] - t[n - 1])),
                float(d[n - 1] + s * (d[n] - d[n - 1])))

    def prescribed_at(self, d: float) -> np.ndarray:
        """``d g`` ``(n_constrained,)`` (zeros without prescribed values)."""
        return np.zeros(self.constrained.size) if self.g is None else d * self.g

    # ------------------------------------------------------------ the sweep's stepper
    def start(self) -> Level:
        n_dofs = self.model.dofmap.n_dofs
        return Level(np.zeros(self.free.size), self.model.history_start(), 0.0,
                     np.zeros(n_dofs), None, (0.0, 0.0))

    def advance(self, n: int, state: Level) -> Level:
        """State ``n`` from state ``n − 1``, cutting the increment back where Newton fails.

        Raises
        ------
        NewtonError
            The increment failed with sub-increments down to ``2^-max_cutbacks`` of it,
            naming it, its load factors and the last converged increment
            (``error.last_converged``).
        """
        # the sub-increments never fall below 2^-max_cutbacks of the increment: halving
        # on each failure alone would creep towards a limit load in ever smaller steps
        s, size, fractions = 0.0, 1.0, []
        current = state
        while s < 1.0:
            target = 1.0 if s + size >= 1.0 - 1e-12 else s + size
            try:
                current = self.substep(n, current, target)
            except StepFailed as failed:
                if size <= 0.5 ** self.max_cutbacks:
                    raise self._failure(n, state, s, target, failed) from None
                size = (target - s) / 2
                continue
            fractions.append(target)
            s = target
        self.substeps[n] = tuple(fractions)
        return current

    def substep(self, n: int, state: Level, s: float) -> Level:
        """The converged state at fraction ``s`` of increment ``n`` from ``state`` (Newton;
        raises ``StepFailed``)."""
        system = _IncrementSystem(self, n, state)
        t, d = self.factors(n, s)
        x, residuals = newton(system, self.predictor(state, t, d, system.fields), s,
                              self.options)
        self.problem.stats["newton_iterations"] = (
            self.problem.stats.get("newton_iterations", 0) + len(residuals))
        done = system.increment_at(x, s)
        return Level(x, done.history, state.dissipation + float(done.dissipation),
                     np.asarray(done.forces, dtype=float),
                     done.outputs if self.keep_outputs else None, (t, d))

    def predictor(self, state: Level, t: float, d: float, fields: dict) -> np.ndarray:
        """Newton's start for the factors ``(t, d)`` from the converged ``state``: one step
        with the tangent *at* ``state`` (elastic at every point, the converged points lying
        on or inside their yield surfaces), ``K_ff Δx = −(R_f + K_fc Δg − Δt f_f)``. A
        start at ``state`` itself with the new prescribed values would strain the cells
        next to them alone, often far into the plastic range, and Newton then cycles
        between points loading and unloading."""
        t0, d0 = state.factors
        u0 = self.model.state(state.u_free, self.prescribed_at(d0))
        rhs = t * self.f[self.free] - state.forces[self.free]
        cells = self.model._cell_tangents(u0, fields, self.points)
        if self.g is not None and d != d0:
            K_fc = self.model.operator("fc").cell_matrix(cells)
            rhs = rhs - K_fc.tocsr() @ ((d - d0) * self.g)
        with self.backend.lock:
            return state.u_free + self.factorized(
                self.model.operator("ff").cell_matrix(cells)).solve(rhs)

    def _failure(self, n: int, state: Level, s: float, target: float,
                 failed: StepFailed) -> NewtonError:
        times = self.problem.times
        error = NewtonError(
            f"increment {n} (load factor {times[n - 1]:.6g} to {times[n]:.6g}) did not "
            f"converge with sub-increments down to 2^-{self.max_cutbacks} of it "
            f"(max_cutbacks halvings; last tried: fraction {s:.4g} to {target:.4g}): "
            f"{failed.reason}. The last converged increment is {n - 1} (load factor "
            f"{times[n - 1]:.6g}; on the error: last_converged, partial). Give more "
            "increments between these factors, more cut-backs "
            "(max_cutbacks) or more Newton iterations (newton max_iterations)",
            reason=failed.reason, history=[failed.residuals],
            load_factor=float(times[n - 1]), state=self.full(state, n - 1))
        error.increment, error.last_converged, error.partial = n, n - 1, None
        return error

    def pack(self, state: Level) -> Level:
        return state

    def unpack(self, n: int, records: dict) -> Level:
        return records[n]

    def full(self, state: Level, n: int, s: float = 1.0) -> np.ndarray:
        """The field on all dofs ``(n_dofs,)`` of ``state`` at fraction ``s`` of ``n``."""
        d = self.factors(n, s)[1] if n > 0 else 0.0
        return np.asarray(self.model.state(state.u_free, self.prescribed_at(d)), dtype=float)

    def observed(self, n: int, state: Level) -> IncrementState:
        return IncrementState(self.full(state, n), state.forces, state.dissipation)

    def thread_limit(self):
        """The BLAS threads of these solves, as the pattern chooses them for any solve."""
        return self.model.operator("ff").pattern.thread_limit(self.backend)

    def factorized(self, K):
        """The backend holding the factorization of the tangent ``K`` (a pattern matrix;
        its lock held by the caller)."""
        before = self.backend.stats["n_numeric"]
        self.backend.factorize_once(K.pattern, K.data, K.tocsr)
        self.problem.stats["factorizations"] = (self.problem.stats.get("factorizations", 0)
                                                + self.backend.stats["n_numeric"] - before)
        return self.backend


class _IncrementSystem:
    """The :class:`~fesens.fem.nonlinear.newton.NewtonSystem` of one (sub-)increment from a
    converged state: ``R(x, s) = [R_int(state(x, d(s) g); h)]_f − t(s) f_f`` with the
    internal variables ``h`` of that state (``s``: the fraction of the increment)."""

    def __init__(self, stepper: IncrementStepper, n: int, state: Level):
        self.stepper, self.level = stepper, n
        self.fields = stepper.model.with_history(stepper.fields, state.history)
        # the forces balanced where the increment starts: a body unloaded to zero loads
        # and reactions has no forces of its own to measure its residual by
        self.reference = max(float(np.linalg.norm(state.forces)),
                             float(np.linalg.norm(state.factors[0] * stepper.f)))

        # the last increments evaluated, (x, s, increment): the accepted iterate's tangent
        # and the converged state's update come from the return map that gave its residual
        self._evaluated: list[tuple] = []

    def increment_at(self, x: np.ndarray, s: float):
        """The model's increment at the free values ``x`` and fraction ``s`` (plain; the
        one evaluated last at this ``x`` where there is one)."""
        for known, fraction, done in self._evaluated:
            if known is x and fraction == s:
                return done
        st = self.stepper
        d = st.factors(self.level, s)[1]
        done = st.model.increment(st.model.state(x, st.prescribed_at(d)), self.fields,
                                  st.points)
        self._evaluated = [*self._evaluated[-1:], (x, s, done)]
        return done

    def evaluate(self, x: np.ndarray, s: float) -> Evaluation:
        st = self.stepper
        try:
            done = self.increment_at(x, s)
        except ConvergenceError as exc:
            return Evaluation(np.empty(0), 0.0, reason=f"the material update failed: {exc}")
        forces = np.asarray(done.forces)
        if not np.all(np.isfinite(forces)):
            return Evaluation(np.empty(0), 0.0, reason="the internal forces are not finite")
        load = st.factors(self.level, s)[0] * st.f
        scale = max(float(np.linalg.norm(forces)), float(np.linalg.norm(load)),
                    self.reference)
        return Evaluation((forces - load)[st.free], scale)

    def solve_tangent(self, x: np.ndarray, s: float, rhs: np.ndarray) -> np.ndarray:
        st = self.stepper
        K = st.model.operator("ff").cell_matrix(self.increment_at(x, s).cell_tangents())
        with st.backend.lock:  # another thread's solve must not replace it
            return st.factorized(K).solve(rhs)


# ------------------------------------------------------------------ the primitive
def _run_increments(run: IncrementRun, inputs: IncrementInputs):
    """``values[n] = j(state n, t_n, *term_args)``, ``(N + 1,)``."""
    stepper = IncrementStepper(run.problem, inputs, run.substeps)
    return sweep_forward(run, stepper, inputs.term_args)


run_increments = tree_primitive(_run_increments, "incremental_run")


class IncrementAdjoint:
    """The reverse sweep's accumulators (a :class:`~fesens.fem.transient.sweep.SweepAdjoint`)."""

    def __init__(self, run: IncrementRun, stepper: IncrementStepper, gbar,
                 inputs: IncrementInputs, traced: IncrementInputs):
        self.run, self.stepper, self.inputs = run, stepper, inputs
        self.gbar = np.asarray(gbar, dtype=float)
        self.positions = [i for i, wanted in enumerate(traced.term_args) if wanted]
        self.args_bar = [0.0] * len(self.positions)
        start = stepper.start()
        self.h_bar = {k: np.zeros_like(v) for k, v in start.history.items()}
        self.W_bar = 0.0
        self.f_bar = np.zeros_like(stepper.f)
        self.g_bar = None if stepper.g is None else np.zeros_like(stepper.g)
        self.fields_wanted = tuple(k for k, wanted in traced.fields.items() if wanted)
        self.fields_bar = {k: 0.0 for k in self.fields_wanted}
        self.points_bar = 0.0 if traced.points else None

    def term(self, n: int, state: Level):
        """``ḡ_n`` times the step term's cotangent of state ``n`` (an
        :class:`IncrementState`; None where ``ḡ_n = 0``), its arguments' accumulated."""
        if self.gbar[n] == 0.0:
            return None
        t = float(self.run.problem.times[n])
        argnums = (0, *(p + 1 for p in self.positions))
        record = self.stepper.observed(n, state)
        _, pull = vjp(lambda rec, *a: self.run.step_term(rec, t, *a), record,
                      *self.inputs.term_args, argnums=argnums)
        cotangents = pull(self.gbar[n])
        self.args_bar = [a + c for a, c in zip(self.args_bar, cotangents[1:], strict=True)]
        return cotangents[0]

    def step(self, n: int, before: Level, after: Level) -> None:
        """The adjoint of increment ``n`` (its sub-increments last first)."""
        s = self.stepper
        fractions = self.run.substeps[n]
        levels = [before]
        for fraction in fractions[:-1]:  # re-run: the same operations as the forward's
            levels.append(s.substep(n, levels[-1], fraction))
        levels.append(after)
        record_bar = self.term(n, after)
        if record_bar is not None:
            self.W_bar += float(record_bar.dissipation)
        for j in range(len(fractions) - 1, -1, -1):
            self._reverse(n, fractions[j], levels[j], levels[j + 1],
                          record_bar if j == len(fractions) - 1 else None)

    def _reverse(self, n: int, fraction: float, start: Level, end: Level, record_bar) -> None:
        """The adjoint of one (sub-)increment from ``start`` to ``end``."""
        s, model = self.stepper, self.stepper.model
        t, d = s.factors(n, fraction)
        g_n = s.prescribed_at(d)
        names = tuple(start.history)
        wanted = self.fields_wanted
        plain_fields = s.fields

        evaluated = []  # the traced increment, whose tangent the transposed solve takes

        def converged(u_free, g, history, fields, points):
            u = model.state(u_free, g)
            done = model.increment(u, model.with_history({**plain_fields, **fields}, history),
                                   points)
            evaluated.append(done)
            return np.concatenate([done.forces, *(np.reshape(done.history[k], -1)
                                                  for k in names),
                                   np.reshape(done.dissipation, 1)])

        traced_points = self.points_bar is not None
        args = (end.u_free, g_n, start.history, {k: plain_fields[k] for k in wanted},
                s.points if traced_points else None)
        argnums = (0, 1, 2, 3, 4) if traced_points else (0, 1, 2, 3)
        _, pull = vjp(converged, *args, argnums=argnums)
        n_dofs = model.dofmap.n_dofs
        out_bar = np.concatenate([
            np.zeros(n_dofs) if record_bar is None else np.asarray(record_bar.reactions),
            *(np.reshape(self.h_bar[k], -1) for k in names), [self.W_bar]])
        first = pull(out_bar)
        size, out_bar = out_bar.size, None  # held no longer than its pullback needs it
        u_bar = np.asarray(first[0], dtype=float)
        g_bar = np.asarray(first[1], dtype=float)
        if record_bar is not None:
            u_full_bar = np.asarray(record_bar.u, dtype=float)
            u_bar = u_bar + u_full_bar[s.free]
            g_bar = g_bar + u_full_bar[s.constrained]
        K = model.operator("ff").cell_matrix(evaluated[0].cell_tangents())
        with s.backend.lock:
            lam = s.factorized(K).solve_transpose(u_bar)
        residual_bar = np.zeros(size)
        residual_bar[s.free] = -lam
        second = pull(residual_bar)
        self.h_bar = {k: first[2][k] + second[2][k] for k in names}
        for k in wanted:
            self.fields_bar[k] = self.fields_bar[k] + first[3][k] + second[3][k]
        if traced_points:
            self.points_bar = self.points_bar + first[4] + second[4]
        if self.g_bar is not None:
            self.g_bar += d * (g_bar + np.asarray(second[1], dtype=float))
        self.f_bar[s.free] += t * lam

    def finish(self, start: Level) -> None:
        """State 0's step term (its arguments only: the unloaded state depends on no
        input, its prescribed factor being 0)."""
        self.term(0, start)

    def term_args_bar(self) -> tuple:
        bars = [None] * len(self.inputs.term_args)
        for position, bar in zip(self.positions, self.args_bar, strict=True):
            bars[position] = bar
        return tuple(bars)


def _run_increments_vjp(traced: IncrementInputs, values, run: IncrementRun,
                        inputs: IncrementInputs):
    def pullback(gbar):
        refuse_second_derivatives(
            "a run of load increments", NotDifferentiableError,
            "its adjoint uses the hand-derived consistent tangent, whose own derivative is "
            "not implemented", gbar, *flatten(inputs)[0])
        problem = run.problem
        stepper = IncrementStepper(problem, inputs, run.substeps)
        adjoint = IncrementAdjoint(run, stepper, gbar, inputs, traced)
        with problem.lock, stepper.thread_limit():  # one run of the problem at a time
            sweep_backwards(run, stepper, adjoint)
            adjoint.finish(stepper.start())
        return IncrementInputs(
            forces=adjoint.f_bar, prescribed=adjoint.g_bar, points=adjoint.points_bar,
            fields={k: adjoint.fields_bar.get(k) for k in inputs.fields},
            term_args=adjoint.term_args_bar())

    return pullback


defvjp_tree(run_increments, _run_increments_vjp)


def increment_values(problem, step_term, inputs: IncrementInputs):
    """``values[n] = step_term(state_n, t_n, *term_args)`` ``(N + 1,)`` of a run of load
    increments (``state_n`` an :class:`IncrementState`); one primitive, traced when an
    input is."""
    run = IncrementRun(problem, step_term)
    run.keep = any(isinstance(x, Traced) for x in flatten(inputs)[0])
    return run_increments(run, inputs)

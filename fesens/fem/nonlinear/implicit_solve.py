"""The nonlinear solve ``R(u, θ) = 0`` as one differentiable primitive.

Forward: load-stepped Newton (:mod:`~fesens.fem.nonlinear.newton`) on raw values, from the
last converged state of the model in this thread when the inputs changed little (an
optimization loop), else from its reference state. Backward, by the implicit function
theorem: ``R(u*(θ), θ) = 0`` gives ``du*/dθ = −K_T⁻¹ ∂R/∂θ`` with the tangent
``K_T = ∂R/∂u`` at the converged state, so

    λ = K_T(u*)⁻ᵀ ū            one (transposed) solve with the converged tangent
    θ̄ = −λᵀ ∂R/∂θ              one traced evaluation of R(u*, θ), pulled back with −λ

for every input at once: the per-cell material fields, the load vector, the prescribed
values and the node coordinates. The Newton iterations are never taped.

The converged tangent ``K* = K_T(u*)`` is not assembled: Newton's last factorization
``K_k = K_T(x_k)`` (of the iterate before the converged one, still held by the backend,
or made again from its kept values where another solve sharing the backend replaced
it, so that the gradient has the same bits whatever ran in between) is used: ``λ`` is
then found by iterative refinement preconditioned with it,
``λ₀ = K_k⁻ᵀ ū``, ``λ ← λ + K_k⁻ᵀ (ū − K*ᵀ λ)``, each product ``K*ᵀ λ`` the
hand-derived tangent ``∂P/∂∇u`` (and ``∂P/∂u``) at ``u*``, evaluated once at the
quadrature points, applied cell by cell without assembling ``K*``
(``model.transposed_tangent``): a product costs a small part of a tangent assembly, and
several times less than a reverse sweep through a traced residual. Near quadratic
convergence ``‖x_k − u*‖`` is small, so each correction gains several digits; the
refinement stops at ``‖ū − K*ᵀ λ‖ ≤ rtol_adjoint ‖ū‖`` and gives way to the assembled
``K*`` (one more factorization) when it needs more than ``max_refinements``
corrections or its residual stops falling, so the adjoint is never less accurate.

The states at several load factors ``t_1 < … < t_m = 1`` of one load-stepped solve
(:func:`solve_residual_at`: a load–displacement curve, the compliances at several load
levels) are one primitive too. Each converged state solves its own equilibrium
``R(u_k, θ, t_k) = 0`` (the load vector, the prescribed values and the pressures of
follower loads all at ``t_k`` times their size), which does not depend on the path that
reached it for a physics whose flux is a function of the current state
(hyperelasticity, a conductivity ``k(T)``; not plasticity or damage, which carry
history), so each has the rule above at its own load factor: ``λ_k = K_T(u_k)⁻ᵀ ū_k``
and ``θ̄ = −Σ_k λ_kᵀ ∂R/∂θ (u_k, θ, t_k)``, one transposed solve and one traced residual
evaluation for each state whose cotangent ``ū_k`` is not zero (an objective of the last
state costs what :func:`solve_residual` costs).

Second derivatives (Hessian-vector products) would need the derivative of ``K_T`` along
the tangent of ``u*``, which the hand-derived tangent does not provide: the backward rule
refuses to be differentiated again.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fesens.ad.registry import NotDifferentiableError, defvjp_joint
from fesens.ad.traced import Traced
from fesens.ad.tracer import primitive
from fesens.errors import NewtonError, SolverError
from fesens.fem.nonlinear.newton import Evaluation, NewtonOptions, NewtonReport, solve_steps
from fesens.readonly import snapshot

_F, _G, _POINTS = 1, 2, 3  # argument positions of solve_residual (0: the ResidualSolve)


class ResidualSolve:
    """One nonlinear solve of a model: its solver, Newton options and field names.

    The model (a :class:`~fesens.fem.model.nonlinear.NonlinearModel`) provides
    ``state(u_free, g)``, ``internal_forces(u, fields, points)``,
    ``stored_energy(u, fields, points)``, ``inadmissibility(u, fields, points)``,
    ``tangent(u, fields, points)``, ``transposed_tangent(u, fields, points)`` (the
    tangent's transposed action on cell vectors), ``fields_at(fields, start, t)`` (the
    fields at load factor ``t``: the loads among them, such as follower pressures, ramped
    from ``start`` like the load vector), ``reference_state()``, ``free_dofs``,
    ``constrained_dofs``, ``dofmap``, ``mesh``, ``n_components`` and keeps
    :attr:`converged` on itself (``converged_state``).

    Attributes
    ----------
    report : NewtonReport or None
        What the last forward solve did (``report.warm_start``: whether it started from
        the model's last converged state).
    start_inputs : tuple or None
        The load vector, prescribed values and fields ``(f₀, g₀, fields₀)`` at load
        factor 0 (``fields₀`` None: the reference state's, loads among the fields at 0).
    stops : tuple of float
        The load factors, increasing and ending with 1, whose states
        :func:`solve_residual_at` returns (empty for :func:`solve_residual`).
    kept : KeptFactorization or None
        Newton's last tangent matrix of this solve, whose factorization the adjoint
        refines with (None before its first).
    refinements : int or None
        Corrections the last :meth:`adjoint` made with it (None: it assembled and
        factorized the converged tangent instead).
    rtol_adjoint : float
        (Class attribute) the relative residual ``‖ū − K*ᵀ λ‖ / ‖ū‖`` a refined adjoint
        must reach, 1e-12: the exact path's own backward error is of order
        ``ε κ(K*)``, so this keeps the refined ``λ`` as accurate on moderately
        conditioned tangents and, where round-off hides it, falls back to that path.
    rtol_stagnation : float
        (Class attribute) 1e-10: a refinement whose residual stops halving is at the
        round-off of the product ``K*ᵀ λ`` (about ``10⁻¹²`` relative on a 10⁴-unknown
        hyperelastic tangent, where the exact path's own ``λ`` measures ``4·10⁻¹²``);
        its best ``λ`` is taken when that residual is at most this (relative), else the
        refinement gives way.
    max_refinements : int
        (Class attribute) corrections before the refinement gives way, 4.
    """

    rtol_adjoint = 1e-12
    rtol_stagnation = 1e-10
    max_refinements = 4

    def __init__(self, model, backend, options: NewtonOptions, names: tuple[str, ...],
                 warm_start: bool = True, stops: tuple[float, ...] = ()):
        self.model, self.backend, self.options, self.names = model, backend, options, names
        self.warm_start = warm_start
        self.stops = tuple(stops)
        self.report: NewtonReport | None = None
        self.start_inputs: tuple | None = None
        self.kept: KeptFactorization | None = None
        self.refinements: int | None = None

    def fields(self, values) -> dict:
        return dict(zip(self.names, values, strict=True))

    # ------------------------------------------------------------ forward
    def forward(self, f, g, points, values) -> np.ndarray:
        """The converged free unknowns ``(n_free,)`` for raw inputs."""
        fields = self.fields(values)
        kept = self.model.converged_state
        if self.warm_start and kept is not None and kept.close_to(
                f, g, points, fields, self.model.warm_start_tolerance):
            try:
                return self._run(kept.u_free, (kept.f, kept.g, kept.fields), f, g, points,
                                 fields, replace(self.options, steps=1), warm=True)
            except NewtonError:
                pass  # too far for one step from there: the full path from the reference
        return self._from_reference(f, g, points, fields)

    def forward_at(self, f, g, points, values) -> np.ndarray:
        """The converged free unknowns at each of :attr:`stops`, ``(n_stops, n_free)``,
        for raw inputs: one load-stepped solve from the reference state (whose steps end
        on every stop), never from a previous solve's state, whose load path
        ``f_prev + t (f − f_prev)`` would not pass through ``t_k f``."""
        self._from_reference(f, g, points, self.fields(values), stops=self.stops)
        factors, states = self.report.load_factors, self.report.states
        return np.array([states[factors.index(t)] for t in self.stops])

    def _from_reference(self, f, g, points, fields, stops=()) -> np.ndarray:
        reference = self.model.reference_state()
        start = (np.zeros_like(f), reference[self.model.constrained_dofs], None)
        return self._run(reference[self.model.free_dofs], start, f, g, points, fields,
                         self.options, warm=False, stops=stops)

    def _run(self, x0, start: tuple, f, g, points, fields, options, warm,
             stops=()) -> np.ndarray:
        """Load-stepped Newton from ``x0``, the state at the inputs ``start = (f₀, g₀,
        fields₀)`` (see :attr:`start_inputs`), to the inputs ``f, g, fields``."""
        path = LoadPath(self, start, f, g, points, fields)
        self.start_inputs = start
        try:
            x, self.report = solve_steps(path, x0, options, stops)
            self.report.warm_start = warm
        except NewtonError as exc:
            if exc.state is not None:  # the model's dof vector, as NewtonError promises
                exc.state = self.model.state(exc.state, path.prescribed(exc.load_factor))
            raise
        self.model.converged_state = ConvergedState(x, f, g, points, fields)
        return x

    # ------------------------------------------------------------ adjoint
    def adjoint(self, u_free, g, points, values, u_bar, t: float = 1.0) -> np.ndarray:
        """``λ = K_T(u*)⁻ᵀ ū`` ``(n_free,)`` with the tangent at the converged state of
        free values ``u_free`` and prescribed values ``g`` (those of its load factor
        ``t``): refined with Newton's last factorization where it is of this load factor
        and still held, else with the assembled and factorized converged tangent."""
        u_bar = np.asarray(u_bar, dtype=float)
        # the tangent of the state's own load factor: follower pressures at t as well
        fields = self.model.fields_at(self.fields(values), self.start_inputs[2], t)
        lam = self._refined_adjoint(u_free, g, points, fields, u_bar, t)
        if lam is not None:
            return lam
        self.refinements = None
        u = self.model.state(u_free, g)
        K = self.model.tangent(u, fields, points)
        backend = self.backend
        before = backend.stats
        # another thread's factorization must not replace K's before the solve reads it
        with backend.lock, K.pattern.thread_limit(backend):
            backend.factorize_once(K.pattern, K.data, K.tocsr)
            lam = backend.solve_transpose(u_bar)
        if self.report is not None:  # a fallback of the converged tangent is the solve's too
            self.report.count_factorizations(before, backend.stats)
        return lam

    def _refined_adjoint(self, u_free, g, points, fields: dict, u_bar: np.ndarray,
                         t: float) -> np.ndarray | None:
        """``λ`` ``(n_free,)`` by iterative refinement preconditioned with :attr:`kept`, or
        None where that factorization is not usable or the refinement does not reach
        :attr:`rtol_adjoint` (see the module notes)."""
        kept, backend, model = self.kept, self.backend, self.model
        # an iterative backend's solve is not a substitution; a distributed backend's
        # ranks would have to agree on every stopping decision
        if (kept is None or kept.load_factor != t or not backend.is_direct
                or backend.distributes
                or kept.matrix.pattern is not model.operator("ff").pattern):
            return None
        target = self.rtol_adjoint * float(np.linalg.norm(u_bar))
        if target == 0.0:
            self.refinements = 0
            return np.zeros_like(u_bar)

        transposed_product = _on_free_dofs(
            model, model.transposed_tangent(model.state(u_free, g), fields, points))
        floor = self.rtol_stagnation * float(np.linalg.norm(u_bar))
        best, best_size = None, np.inf
        try:
            # Newton's last factorization, made again where another solve sharing the
            # backend (another thread's, a failed one) replaced it since: the same factor,
            # so the same bits whatever ran in between; held to the last substitution
            pattern = kept.matrix.pattern
            with backend.lock, pattern.thread_limit(backend):
                before = backend.stats
                backend.factorize_once(pattern, kept.matrix.data, kept.matrix.tocsr)
                if self.report is not None:
                    self.report.count_factorizations(before, backend.stats)
                lam = backend.solve_transpose(u_bar)
                for corrections in range(self.max_refinements + 1):
                    rest = u_bar - transposed_product(lam)
                    size = float(np.linalg.norm(rest))
                    if size <= target:
                        self.refinements = corrections
                        return lam
                    if not size < 0.5 * best_size:
                        # stalled: at the round-off of the product K*ᵀ λ, the best λ is
                        # as good as the exact path's; above it K_k is too far from K*
                        if best_size <= floor:
                            self.refinements = corrections
                            return best
                        return None
                    if corrections == self.max_refinements:
                        return None  # K_k too far from K*: the assembled tangent instead
                    best, best_size = lam, size
                    lam = lam + backend.solve_transpose(rest)
        except SolverError:
            return None  # e.g. the held factorization failed its residual check
        return None


def _on_free_dofs(model, cells):
    """The product ``(n_free,) → (n_free,)`` of a per-cell action ``cells`` (cell vectors
    ``(n_cells, n_nodes, n_comp)`` to cell vectors) on the free dofs: gathered with zero
    prescribed values, summed over the cells."""
    cell_dofs, free, n_dofs = model.dofmap.cell_dofs, model.free_dofs, model.dofmap.n_dofs
    shape = (model.mesh.n_cells, -1, model.n_components)

    def product(v_free: np.ndarray) -> np.ndarray:
        v = np.zeros(n_dofs)
        v[free] = v_free
        out = cells(np.reshape(v[cell_dofs], shape))
        return np.bincount(cell_dofs.ravel(), weights=out.ravel(), minlength=n_dofs)[free]

    return product


class KeptFactorization:
    """The matrix of Newton's last factorization, :attr:`matrix` (a
    :class:`~fesens.ad.sparse.PatternMatrix`, its values kept), at load factor
    :attr:`load_factor`: the backend still holds its factor unless another solve
    replaced it, and then factorizes it again."""

    def __init__(self, matrix, load_factor: float):
        self.matrix, self.load_factor = matrix, load_factor


class LoadPath:
    """The :class:`~fesens.fem.nonlinear.newton.NewtonSystem` of a solve: the residual on
    the free dofs at load factor ``t``, for ``f(t) = f₀ + t (f − f₀)``,
    ``g(t) = g₀ + t (g − g₀)``, the fields of the model's ``fields_at(fields, fields₀, t)``
    (the loads among them, such as follower pressures, ramped alike; the material fields
    fixed) and fixed coordinates."""

    def __init__(self, solve: ResidualSolve, start: tuple, f, g, points, fields):
        self.solve, self.model = solve, solve.model
        (self.f0, self.g0, self.fields0), self.f, self.g = start, f, g
        self.points, self.fields = points, fields

    def load(self, t: float) -> np.ndarray:
        return along(t, self.f0, self.f)

    def prescribed(self, t: float) -> np.ndarray:
        return along(t, self.g0, self.g)

    def fields_at(self, t: float) -> dict:
        return self.model.fields_at(self.fields, self.fields0, t)

    def evaluate(self, x: np.ndarray, t: float) -> Evaluation:
        model = self.model
        u = model.state(x, self.prescribed(t))
        fields = self.fields_at(t)
        reason = model.inadmissibility(u, fields, self.points)
        if reason is not None:
            return Evaluation(np.empty(0), 0.0, reason=reason)
        forces = model.internal_forces(u, fields, self.points)
        load = self.load(t)
        # no merit where follower loads act: their work has no potential in general
        energy = None if model.followers else model.stored_energy(u, fields, self.points)
        if energy is not None:
            energy = energy - float(np.dot(load, u))
        scale = max(float(np.linalg.norm(forces)), float(np.linalg.norm(load)))
        return Evaluation((forces - load)[model.free_dofs], scale, energy)

    def solve_tangent(self, x: np.ndarray, t: float, rhs: np.ndarray) -> np.ndarray:
        u = self.model.state(x, self.prescribed(t))
        K = self.model.tangent(u, self.fields_at(t), self.points)
        backend = self.solve.backend
        # another thread's factorization must not replace K's before the solve reads it
        with backend.lock, K.pattern.thread_limit(backend):
            backend.factorize_once(K.pattern, K.data, K.tocsr)
            self.solve.kept = KeptFactorization(K, t)
            return backend.solve(rhs)


def along(t: float, start, end):
    """``start + t (end − start)`` (traced in ``end``), exactly ``end`` at ``t = 1``."""
    return end if t == 1.0 else start + t * (end - start)


class ConvergedState:
    """A model's last converged solve: its free unknowns and (snapshots of) its inputs."""

    def __init__(self, u_free, f, g, points, fields: dict):
        self.u_free = np.array(u_free, dtype=float)
        self.f, self.g = snapshot(np.asarray(f, dtype=float)), snapshot(np.asarray(g, float))
        self.points = None if points is None else snapshot(np.asarray(points, dtype=float))
        self.fields = {k: snapshot(np.asarray(v, dtype=float)) for k, v in fields.items()}

    def arrays(self) -> dict[str, np.ndarray]:
        """The state as named arrays (what a checkpoint stores): ``u_free``, ``f``, ``g``,
        ``points`` (when given) and ``field:NAME`` per field; :meth:`from_arrays` reads
        them back, the same bits."""
        out = {"u_free": self.u_free, "f": self.f, "g": self.g}
        if self.points is not None:
            out["points"] = self.points
        return {**out, **{f"field:{k}": v for k, v in self.fields.items()}}

    @classmethod
    def from_arrays(cls, arrays: dict) -> ConvergedState:
        """The state that :meth:`arrays` gave.

        Raises
        ------
        KeyError
            ``u_free``, ``f`` or ``g`` is missing.
        """
        fields = {k[len("field:"):]: v for k, v in arrays.items() if k.startswith("field:")}
        return cls(arrays["u_free"], arrays["f"], arrays["g"], arrays.get("points"), fields)

    def close_to(self, f, g, points, fields: dict, tolerance: float) -> bool:
        """Whether every input changed by at most ``tolerance`` relative to its size
        (coordinates: relative to the spread of the points)."""
        if (points is None) != (self.points is None) or fields.keys() != self.fields.keys():
            return False
        pairs = [(f, self.f), (g, self.g), *((fields[k], self.fields[k]) for k in fields)]
        if any(np.shape(new) != np.shape(old) for new, old in pairs):
            return False
        if points is not None:
            if np.shape(points) != self.points.shape:
                return False
            spread = float(np.linalg.norm(self.points - self.points.mean(axis=0)))
            if np.linalg.norm(points - self.points) > tolerance * spread:
                return False
        return all(np.linalg.norm(np.asarray(new) - old) <= tolerance * np.linalg.norm(old)
                   for new, old in pairs)


@primitive
def solve_residual(problem: ResidualSolve, f, g, points, *fields):
    """The free unknowns ``u_f`` ``(n_free,)`` of ``R(u, θ) = 0``.

    Parameters
    ----------
    problem : ResidualSolve
        The model, solver and Newton options (constant).
    f : array
        External load vector ``(n_dofs,)`` at the full load, differentiable.
    g : array
        Prescribed values ``(n_constrained,)``, differentiable.
    points : array or None
        Node coordinates ``(n_points, dim)`` (None: the mesh's), differentiable.
    *fields : array
        The material fields in the order of ``problem.names``, each ``(n_cells,)``,
        differentiable.
    """
    return problem.forward(f, g, points, fields)


@primitive
def solve_residual_at(problem: ResidualSolve, f, g, points, *fields):
    """The free unknowns ``(n_stops, n_free)`` of ``R(u, θ, t) = 0`` at each load factor
    ``t`` of ``problem.stops`` (increasing, the last 1), the load ``t f`` and the
    prescribed values ``g₀ + t (g − g₀)`` (``g₀``: the reference state's), all from one
    load-stepped solve.

    The arguments are those of :func:`solve_residual`; the gradient costs one transposed
    solve and one traced residual evaluation per state whose cotangent is not zero.
    """
    return problem.forward_at(f, g, points, fields)


def _first_order_only(*inputs) -> None:
    if any(isinstance(v, Traced) for v in inputs):
        raise NotDifferentiableError(
            "second derivatives through a nonlinear solve (hvp, grad of grad) are not "
            "available: its backward rule uses the converged tangent, whose own "
            "derivative is not implemented; use finite differences of gradients")


def _pullback(problem: ResidualSolve, argnums, arguments: list, u_free, t: float,
              lam) -> tuple:
    """``−λᵀ ∂R/∂θ`` of the differentiated arguments (``argnums`` of the primitive) by
    one traced evaluation of the residual at the state ``u_free`` and load factor ``t``."""
    from fesens.ad.api import vjp as pullback_of  # the AD entry points sit above the rules

    f0, g0, fields0 = problem.start_inputs

    def residual(*differentiated):
        values = list(arguments)
        for i, value in zip(argnums, differentiated, strict=True):
            values[i - 1] = value
        f_, g_, points_, *fields_ = values
        model = problem.model
        u = model.state(u_free, along(t, g0, g_))
        # the loads among the fields (follower pressures) at t, as the forward path had them
        fields_t = model.fields_at(problem.fields(fields_), fields0, t)
        forces = model.internal_forces(u, fields_t, points_)
        return (forces - along(t, f0, f_))[model.free_dofs]

    _, pull = pullback_of(residual, *(arguments[i - 1] for i in argnums),
                          argnums=tuple(range(len(argnums))))
    return tuple(pull(-lam))


def _solve_residual_vjp(argnums, u_free, problem, f, g, points, *fields):
    def vjp(u_bar):
        _first_order_only(u_bar, u_free, f, g, points, *fields)
        lam = problem.adjoint(u_free, g, points, fields, u_bar)
        return _pullback(problem, argnums, [f, g, points, *fields], u_free, 1.0, lam)

    return vjp


def _solve_residual_at_vjp(argnums, states, problem, f, g, points, *fields):
    def vjp(u_bar):
        _first_order_only(u_bar, states, f, g, points, *fields)
        arguments = [f, g, points, *fields]
        g0 = problem.start_inputs[1]
        total = tuple(np.zeros(np.shape(arguments[i - 1])) for i in argnums)
        u_bar = np.asarray(u_bar, dtype=float)
        for k, t in enumerate(problem.stops):
            if not np.any(u_bar[k]):  # a state the objective does not read: no solve
                continue
            lam = problem.adjoint(states[k], along(t, g0, g), points, fields, u_bar[k], t)
            parts = _pullback(problem, argnums, arguments, states[k], t, lam)
            total = tuple(a + b for a, b in zip(total, parts, strict=True))
        return total

    return vjp


defvjp_joint(solve_residual, _solve_residual_vjp)
defvjp_joint(solve_residual_at, _solve_residual_at_vjp)

"""The nonlinear solve ``R(u, θ) = 0`` as one differentiable primitive.

Forward: load-stepped Newton (:mod:`~fesens.fem.nonlinear.newton`) on raw values, from the
model's last converged state when the inputs changed little (an optimization loop), else
from its reference state. Backward, by the implicit function theorem: ``R(u*(θ), θ) = 0``
gives ``du*/dθ = −K_T⁻¹ ∂R/∂θ`` with the tangent ``K_T = ∂R/∂u`` at the converged state, so

    λ = K_T(u*)⁻ᵀ ū            one (transposed) solve with the converged tangent
    θ̄ = −λᵀ ∂R/∂θ              one traced evaluation of R(u*, θ), pulled back with −λ

for every input at once: the per-cell material fields, the load vector, the prescribed
values and the node coordinates. The Newton iterations are never taped.

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
from fesens.errors import NewtonError
from fesens.fem.nonlinear.newton import Evaluation, NewtonOptions, NewtonReport, solve_steps
from fesens.readonly import snapshot

_F, _G, _POINTS = 1, 2, 3  # argument positions of solve_residual (0: the ResidualSolve)


class ResidualSolve:
    """One nonlinear solve of a model: its solver, Newton options and field names.

    The model (a :class:`~fesens.fem.model.nonlinear.NonlinearModel`) provides
    ``state(u_free, g)``, ``internal_forces(u, fields, points)``,
    ``stored_energy(u, fields, points)``, ``inadmissibility(u, fields, points)``,
    ``tangent(u, fields, points)``, ``reference_state()``, ``free_dofs``,
    ``constrained_dofs`` and keeps :attr:`converged` on itself (``converged_state``).

    Attributes
    ----------
    report : NewtonReport or None
        What the last forward solve did (``report.warm_start``: whether it started from
        the model's last converged state).
    start_inputs : tuple or None
        The load vector and prescribed values ``(f₀, g₀)`` at load factor 0.
    """

    def __init__(self, model, backend, options: NewtonOptions, names: tuple[str, ...],
                 warm_start: bool = True):
        self.model, self.backend, self.options, self.names = model, backend, options, names
        self.warm_start = warm_start
        self.report: NewtonReport | None = None
        self.start_inputs: tuple | None = None

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
                return self._run(kept.u_free, kept.f, kept.g, f, g, points, fields,
                                 replace(self.options, steps=1), warm=True)
            except NewtonError:
                pass  # too far for one step from there: the full path from the reference
        reference = self.model.reference_state()
        return self._run(reference[self.model.free_dofs], np.zeros_like(f),
                         reference[self.model.constrained_dofs], f, g, points, fields,
                         self.options, warm=False)

    def _run(self, x0, f0, g0, f, g, points, fields, options, warm) -> np.ndarray:
        path = LoadPath(self, f0, f, g0, g, points, fields)
        self.start_inputs = (f0, g0)
        try:
            x, self.report = solve_steps(path, x0, options)
            self.report.warm_start = warm
        except NewtonError as exc:
            if exc.state is not None:  # the model's dof vector, as NewtonError promises
                exc.state = self.model.state(exc.state, path.prescribed(exc.load_factor))
            raise
        self.model.converged_state = ConvergedState(x, f, g, points, fields)
        return x

    # ------------------------------------------------------------ adjoint
    def adjoint(self, u_free, f, g, points, values, u_bar) -> np.ndarray:
        """``λ = K_T(u*)⁻ᵀ ū`` ``(n_free,)`` with the tangent at the converged state."""
        u = self.model.state(u_free, g)
        K = self.model.tangent(u, self.fields(values), points)
        backend = self.backend
        with K.pattern.thread_limit(backend):
            backend.factorize_once(K.pattern, K.data, K.tocsr)
            return backend.solve_transpose(np.asarray(u_bar, dtype=float))


class LoadPath:
    """The :class:`~fesens.fem.nonlinear.newton.NewtonSystem` of a solve: the residual on
    the free dofs at load factor ``t``, for ``f(t) = f₀ + t (f − f₀)`` and
    ``g(t) = g₀ + t (g − g₀)`` and fixed material fields and coordinates."""

    def __init__(self, solve: ResidualSolve, f0, f, g0, g, points, fields):
        self.solve, self.model = solve, solve.model
        self.f0, self.f, self.g0, self.g = f0, f, g0, g
        self.points, self.fields = points, fields

    def load(self, t: float) -> np.ndarray:
        return self.f0 + t * (self.f - self.f0)

    def prescribed(self, t: float) -> np.ndarray:
        return self.g0 + t * (self.g - self.g0)

    def evaluate(self, x: np.ndarray, t: float) -> Evaluation:
        model = self.model
        u = model.state(x, self.prescribed(t))
        reason = model.inadmissibility(u, self.fields, self.points)
        if reason is not None:
            return Evaluation(np.empty(0), 0.0, reason=reason)
        forces = model.internal_forces(u, self.fields, self.points)
        load = self.load(t)
        energy = model.stored_energy(u, self.fields, self.points)
        if energy is not None:
            energy = energy - float(np.dot(load, u))
        scale = max(float(np.linalg.norm(forces)), float(np.linalg.norm(load)))
        return Evaluation((forces - load)[model.free_dofs], scale, energy)

    def solve_tangent(self, x: np.ndarray, t: float, rhs: np.ndarray) -> np.ndarray:
        u = self.model.state(x, self.prescribed(t))
        K = self.model.tangent(u, self.fields, self.points)
        backend = self.solve.backend
        with K.pattern.thread_limit(backend):
            backend.factorize_once(K.pattern, K.data, K.tocsr)
            return backend.solve(rhs)


class ConvergedState:
    """A model's last converged solve: its free unknowns and (snapshots of) its inputs."""

    def __init__(self, u_free, f, g, points, fields: dict):
        self.u_free = np.array(u_free, dtype=float)
        self.f, self.g = snapshot(np.asarray(f, dtype=float)), snapshot(np.asarray(g, float))
        self.points = None if points is None else snapshot(np.asarray(points, dtype=float))
        self.fields = {k: snapshot(np.asarray(v, dtype=float)) for k, v in fields.items()}

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


def _solve_residual_vjp(argnums, u_free, problem, f, g, points, *fields):
    from fesens.ad.api import vjp as pullback_of  # the AD entry points sit above the rules

    def vjp(u_bar):
        inputs = (u_bar, u_free, f, g, points, *fields)
        if any(isinstance(v, Traced) for v in inputs):
            raise NotDifferentiableError(
                "second derivatives through a nonlinear solve (hvp, grad of grad) are not "
                "available: its backward rule uses the converged tangent, whose own "
                "derivative is not implemented; use finite differences of gradients")
        lam = problem.adjoint(u_free, f, g, points, fields, u_bar)
        arguments = [f, g, points, *fields]

        def residual(*differentiated):
            values = list(arguments)
            for i, value in zip(argnums, differentiated, strict=True):
                values[i - 1] = value
            f_, g_, points_, *fields_ = values
            model = problem.model
            u = model.state(u_free, g_)
            forces = model.internal_forces(u, problem.fields(fields_), points_)
            return (forces - f_)[model.free_dofs]

        _, pull = pullback_of(residual, *(arguments[i - 1] for i in argnums),
                              argnums=tuple(range(len(argnums))))
        return tuple(pull(-lam))

    return vjp


defvjp_joint(solve_residual, _solve_residual_vjp)


"""Structural dynamics ``M ü + C u̇ + K u = f(t)``: Newmark and generalized-α time
integration and the exact gradient of time-discrete objectives (discrete adjoint, with
checkpointing).

The generalized-α method (J. Chung and G. M. Hulbert, *J. Appl. Mech.* 60, 1993, 371–375)
holds the equation of motion at blended levels, ``x_(n−α) = (1 − α) x_n + α x_(n−1)``,

    M a_(n−α_m) + C v_(n−α_f) + K u_(n−α_f) = F h_n,    h_n = (1 − α_f) H_n + α_f H_(n−1)
    u_n = u_(n−1) + Δt v_(n−1) + Δt² ((½ − β) a_(n−1) + β a_n)
    v_n = v_(n−1) + Δt ((1 − γ) a_(n−1) + γ a_n)

with ``α_m = (2ρ∞ − 1)/(ρ∞ + 1)``, ``α_f = ρ∞/(ρ∞ + 1)``, ``γ = ½ − α_m + α_f``,
``β = ¼ (1 − α_m + α_f)²`` for the spectral radius ``ρ∞ ∈ [0, 1]`` at infinite frequency.
Newmark's method is ``α_m = α_f = 0`` (average acceleration: ``γ = ½``, ``β = ¼``;
T. J. R. Hughes, *The Finite Element Method*, §9.1). The load is blended like the other
terms (not evaluated at ``t_(n−α_f)``), so that for a linear system ρ∞ = 1 reproduces
average acceleration exactly. ``C = c_M M + c_K K`` is Rayleigh damping; the step
solves ``S a_n = r_n`` with one factorization of ``S = (1 − α_m + (1 − α_f) γ Δt c_M) M +
(1 − α_f)(β Δt² + γ Δt c_K) K`` for the whole run (constant Δt), and the initial
acceleration solves ``M a_0 = F H_0 − C v_0 − K u_0``.

:meth:`DynamicProblem.values` is one primitive over the whole run, like
:class:`~fesens.fem.transient.integrate.TransientProblem`'s: ``values[n] = j(u_n, t_n,
*term_args)``; its VJP runs backwards with the forward factorizations. With ``λ_n = S⁻ᵀ
(ā_n + β Δt² ū_n + γ Δt v̄_n)`` the cotangents of step ``n``'s residual are

    K̄ −= λ_n (u_(n−α_f) + c_K v_(n−α_f))ᵀ,      M̄ −= λ_n (a_(n−α_m) + c_M v_(n−α_f))ᵀ
    c̄_K −= λ_nᵀ K v_(n−α_f),  c̄_M −= λ_nᵀ M v_(n−α_f),  F̄ += λ_n h_nᵀ

(on the pattern, pulled back by the assembly primitives to every per-cell field and the
node coordinates) and the state cotangents pass to ``(u_(n−1), v_(n−1), a_(n−1))`` through
the transposed update; level 0 takes the adjoint of the initial acceleration's solve with
``M``. States ``(u, v, a)`` are stored or recomputed on Griewank's binomial schedule, with
the same bits.

A prescribed motion ``u_c(t_n) = g φ_n`` of the constrained dofs takes its velocity and
acceleration from the same update (:data:`~fesens.fem.transient.dynamic_steps.newmark_rates`,
from ``φ̇_0``, ``φ̈_0``), and each free residual gains ``M_fc a_c + C_fc v_c + K_fc u_c`` at
the blended levels, ``C_fc = c_M M_fc + c_K K_fc``; its adjoint adds ``K̄_fc −= λ_n (u_c +
c_K v_c)ᵀ``, ``M̄_fc −= λ_n (a_c + c_M v_c)ᵀ`` (summed over the levels as ``λ``'s with the
blend's weights, then one outer product with ``g``), ``ḡ`` and the cotangents of ``(φ_n,
φ̇_n, φ̈_n)``, which ``newmark_rates``' VJP takes back to ``φ`` and ``(φ̇_0, φ̈_0)``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.ad.traced import Traced
from fesens.errors import NonFiniteError
from fesens.fem.transient.dynamic_steps import (
    MASS_KEY,
    NewmarkStepper,
    dynamic_integrate,
    newmark_rates,
)
from fesens.fem.transient.integrate import TransientProblem
from fesens.fem.transient.run_inputs import DynamicInputs, rayleigh_damping
from fesens.fem.transient.schemes import (
    DEFAULT_SCHEMES,
    NewmarkCoefficients,
    schemes_of_order,
    time_scheme,
)
from fesens.fem.transient.steps import Run, StepTerm, check_same_pattern
from fesens.fem.transient.time_levels import TimeFunction, dirichlet_factors
from fesens.solvers import LinearSolver


class DynamicProblem(TransientProblem):
    """A run of ``M ü + C u̇ + K u = f(t)`` for a linear model (elasticity: ``K`` the
    stiffness, ``M`` the mass matrix ``∫ ρ N Nᵀ``).

    Parameters
    ----------
    model : LinearModel
        Its mesh, Dirichlet conditions (a non-zero value is a prescribed motion, see
        :meth:`values`), load terms and parameters.
    times : array_like, optional
        Equally spaced time levels ``(N + 1,)``; or
    t_end, dt : float, optional
        A constant step ``dt`` from ``t_start`` to ``t_end``.
    t_start : float
    scheme : str
        A second-order scheme of :data:`~fesens.fem.transient.schemes.TIME_SCHEMES`
        (default Newmark).
    gamma, beta : float, optional
        Newmark's parameters (default ½, ¼: average acceleration; γ >= ½, β >= 0).
    rho_inf : float, optional
        The generalized-α method's spectral radius at infinite frequency (default 1; in
        ``[0, 1]``).
    lumped : bool
        HRZ-lumped mass instead of the consistent one.
    max_states : int, optional
        States ``(u, v, a)`` the gradient may keep (``>= 2``); the others are recomputed on
        Griewank's binomial schedule. None: every state is kept during a traced run.
    solver : str or (str, dict), optional
        Backend of the step matrix and of ``M`` (default: the model's choice).
    solver_options : dict, optional

    Attributes
    ----------
    times : numpy.ndarray
        ``(N + 1,)``.
    coefficients : NewmarkCoefficients
    stats : dict
        As :class:`~fesens.fem.transient.integrate.TransientProblem`'s.

    Raises
    ------
    ValueError, NonFiniteError
        Bad time levels (or not equally spaced), scheme parameters, ``max_states < 2``.
    TooLargeError
        As :class:`~fesens.fem.transient.integrate.TransientProblem`'s.
    """

    #: A kept state is ``(u, v, a)``.
    state_vectors = 3

    def __init__(self, model, *, times=None, t_end: float | None = None,
                 dt: float | None = None, t_start: float = 0.0, scheme: str = DEFAULT_SCHEMES[2],
                 gamma: float | None = None, beta: float | None = None,
                 rho_inf: float | None = None, lumped: bool = False,
                 max_states: int | None = None, solver=None,
                 solver_options: dict | None = None):
        self._scheme_parameters = (gamma, beta, rho_inf)
        super().__init__(model, times=times, t_end=t_end, dt=dt, t_start=t_start,
                         scheme=scheme, lumped=lumped, max_states=max_states, solver=solver,
                         solver_options=solver_options)

    def _scheme_coefficients(self, scheme: str, theta: float | None) -> NewmarkCoefficients:
        gamma, beta, rho_inf = self._scheme_parameters
        return time_scheme(scheme, 2).coefficients(self.times, gamma=gamma, beta=beta,
                                                   rho_inf=rho_inf)

    def step_solver(self, key: tuple[float, float], K, M) -> LinearSolver:
        """The solver of ``a M_ff + b K_ff`` for ``key = (a, b)``: ``M`` alone (the initial
        acceleration) and the step matrix, whose key follows the damping coefficients. A
        new step key takes over the instance of the old one, so that changing damping
        (a design variable) keeps two instances and their symbolic analysis."""
        if key not in self._solvers and key != MASS_KEY:
            stale = [k for k in self._solvers if k != MASS_KEY]
            if stale:
                self._solvers[key] = self._solvers.pop(stale[0])
        return super().step_solver(key, K, M)

    # ------------------------------------------------------------ the traced run
    def values(self, step_term: StepTerm, *, term_args: tuple = (), u0=0.0, v0=0.0,
               loads: dict | None = None, histories: dict | None = None, dirichlet=None,
               dirichlet_history: TimeFunction | None = None, dirichlet_rates=(0.0, 0.0),
               density=1.0, damping=(0.0, 0.0), points=None, **parameters):
        """``values[n] = step_term(u_n, t_n, *term_args)`` for ``n = 0..N``, ``(N + 1,)``;
        traced when an input is (one primitive for the whole run).

        Parameters
        ----------
        step_term : callable
            ``j(u, t, *term_args) -> float`` with ``u`` the displacement ``(n_dofs,)``, in
            the traced numpy subset; traced inputs come through ``term_args``.
        term_args : tuple
        u0, v0 : float or array_like
            Initial displacement and velocity, ``()`` or ``(n_dofs,)`` (zero at Dirichlet
            dofs); differentiable.
        loads : dict, optional
            Magnitude of each named load term (default 1); traced allowed.
        histories : dict, optional
            Time function of each load term: a callable ``t -> factor`` or a table
            ``(times, values)`` (values traced allowed); default constant 1.
        dirichlet : array_like, optional
            Prescribed displacements ``g`` ordered like ``model.constrained_dofs`` (default:
            the values given to ``fix``); differentiable.
        dirichlet_history : callable or (times, values), optional
            Time function ``φ`` of the prescribed motion ``u_c(t) = g φ(t)`` (default 1);
            a table's values differentiable.
        dirichlet_rates : (float, float)
            ``(φ̇(t_0), φ̈(t_0))``: the motion's initial velocity and acceleration factors
            (default 0: it starts from rest). Later levels take theirs from the scheme's
            update of ``φ``; give the true initial rates of a motion that does not start
            from rest, else its acceleration oscillates from step to step (average
            acceleration keeps that error undamped). Differentiable.
        density : float or array_like
            Mass density ``ρ``, ``()`` or per cell ``(n_cells,)``; differentiable.
        damping : (float, float)
            Rayleigh coefficients ``(c_M, c_K)``, ``C = c_M M + c_K K``, ``>= 0``;
            differentiable.
        points : array_like, optional
            Node coordinates ``(n_points, dim)`` (shape sensitivities).
        **parameters
            The model's stiffness parameters (``E``, ``nu``, ``scale``, ...).

        Returns
        -------
        array
            ``(N + 1,)``.
        """
        if not callable(step_term):
            raise TypeError(f"step_term must be a callable j(u, t, *term_args), got "
                            f"{type(step_term).__name__}")
        system = self._dynamic_system(u0, v0, loads, histories, dirichlet, dirichlet_history,
                                      dirichlet_rates, density, damping, points, parameters)
        run = Run(self, step_term)
        inputs = (*system, *term_args)
        run.keep = any(isinstance(x, Traced) for x in inputs)
        if run.keep:
            self.check_gradient_memory()
        return dynamic_integrate(run, DynamicInputs(*system, term_args=tuple(term_args)))

    def states(self, *, at=None, u0=0.0, v0=0.0, loads: dict | None = None,
               histories: dict | None = None, dirichlet=None,
               dirichlet_history: TimeFunction | None = None, dirichlet_rates=(0.0, 0.0),
               density=1.0, damping=(0.0, 0.0), points=None,
               **parameters) -> Iterator[tuple]:
        """The fields of a forward run, one level at a time (nothing is kept).

        Yields ``(n, t_n, u_n, v_n, a_n)``, each field ``(n_dofs,)`` (the prescribed motion
        at the constrained dofs), for the levels ``at`` (indices into :attr:`times`;
        default all). Other arguments as in :meth:`values` (plain values only).
        """
        wanted = None if at is None else {int(n) for n in np.atleast_1d(at)}
        system = self._dynamic_system(u0, v0, loads, histories, dirichlet, dirichlet_history,
                                      dirichlet_rates, density, damping, points, parameters)
        if any(isinstance(x, Traced) for x in system):
            raise TypeError("states runs plain values only; differentiate values() instead")
        stepper = NewmarkStepper(self, DynamicInputs(*system))
        self.stats.update(steps=0, kept=0, advanced=0, taped=0)
        with stepper.thread_limit():
            state = stepper.initial(*system[6:8])
            for n in range(self.n_steps + 1):
                if n > 0:
                    state = stepper.step(n, state)
                    self.stats["steps"] += 1
                if wanted is None or n in wanted:
                    yield (n, float(self.times[n]),
                           *(stepper.full(x, n, field) for field, x in enumerate(state)))

    # ------------------------------------------------------------ inputs
    def _dynamic_system(self, u0, v0, loads, histories, dirichlet, dirichlet_history,
                        dirichlet_rates, density, damping, points, parameters) -> tuple:
        """``(K_ff, M_ff, c_M, c_K, F, H, u0_f, v0_f, K_fc, M_fc, g, rates)``, traced where
        inputs are (the last four None without prescribed motion; ``rates`` ``(N + 1, 3)``
        of :data:`~fesens.fem.transient.dynamic_steps.newmark_rates`)."""
        model = self.model
        model.check_parameters(parameters)
        points = model.checked_points(points)
        free = model.free_dofs
        mass_damping, stiffness_damping = rayleigh_damping(damping)
        K_ff = model.stiffness("ff", points=points, **parameters)
        M_ff = model.mass(density, lumped=self.lumped, points=points)
        check_same_pattern(getval(K_ff), getval(M_ff))
        F, H = self._loads(loads, histories, points, parameters, free)
        initial = [self._initial_field(value, name)[free]
                   for name, value in (("u0", u0), ("v0", v0))]
        motion = self._prescribed_motion(dirichlet, dirichlet_history, dirichlet_rates,
                                         density, points, parameters)
        return (K_ff, M_ff, mass_damping, stiffness_damping, F, H, *initial, *motion)

    def _prescribed_motion(self, dirichlet, dirichlet_history, dirichlet_rates, density,
                           points, parameters) -> tuple:
        """``(K_fc, M_fc, g, rates)`` of a prescribed motion, or four None without one."""
        model = self.model
        constrained = model.constrained_dofs
        g = model.dirichlet_values(dirichlet)
        rates0 = np.asarray(getval(dirichlet_rates), dtype=float)
        if rates0.shape != (2,) or not np.all(np.isfinite(rates0)):
            raise ValueError(f"dirichlet_rates must be the finite pair (dphi/dt, d2phi/dt2) "
                             f"at t_start, got {dirichlet_rates!r}")
        prescribed = bool(constrained.size) and (dirichlet is not None
                                                 or bool(np.any(getval(g))))
        phi = dirichlet_factors(dirichlet_history, self.times, prescribed)
        if not prescribed:
            return None, None, None, None
        if self.coefficients.beta == 0.0:
            raise ValueError("a prescribed motion needs beta > 0: its acceleration comes "
                             "from the displacement through the term beta dt^2 a_n of the "
                             "update; give beta > 0 (e.g. 1/4) or fix the dofs at zero")
        rates = newmark_rates(phi, dirichlet_rates * np.ones(2), self.coefficients)
        K_fc = model.stiffness("fc", points=points, **parameters)
        M_fc = self._mass_matrix("fc", density, points)
        return K_fc, M_fc, g, rates

    def _initial_field(self, value, name: str):
        """``value`` on all dofs ``(n_dofs,)`` after its checks (traced if it is)."""
        n_dofs = self.model.dofmap.n_dofs
        raw = np.asarray(getval(value), dtype=float)
        if raw.shape not in ((), (n_dofs,)):
            raise ValueError(f"{name} must be a scalar or have shape ({n_dofs},) (n_dofs,), "
                             f"got {raw.shape}")
        if not np.all(np.isfinite(raw)):
            raise NonFiniteError(f"{name} contains NaN or infinity; give a finite field")
        return value * np.ones(n_dofs)


def __getattr__(name: str):
    """The names this module had before the scheme records, for one release."""
    if name == "newmark_coefficients":
        warnings.warn("dynamics.newmark_coefficients(times, scheme, gamma, beta, rho_inf) is "
                      "deprecated; use schemes.time_scheme(scheme, 2).coefficients(times, "
                      "gamma=..., beta=..., rho_inf=...)", DeprecationWarning, stacklevel=2)
        return lambda times, scheme, gamma=None, beta=None, rho_inf=None: time_scheme(
            scheme, 2).coefficients(times, gamma=gamma, beta=beta, rho_inf=rho_inf)
    if name == "DYNAMIC_SCHEMES":
        warnings.warn("dynamics.DYNAMIC_SCHEMES is deprecated; use "
                      "schemes.schemes_of_order(2)", DeprecationWarning, stacklevel=2)
        return tuple(s.name for s in schemes_of_order(2))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Transient linear problems ``M Ṫ + K T = f(t)`` and the exact gradient of their
time-discrete objectives (discrete adjoint, with checkpointing).

:class:`TransientProblem` integrates a :class:`~fesens.fem.model.linear.LinearModel` (heat
conduction: ``M`` the heat capacity matrix ``∫ ρ c N Nᵀ``, ``K`` the conductance) with one
of the first-order schemes of :mod:`fesens.fem.transient.schemes`.
:meth:`TransientProblem.values` is the traced program::

    K_ff, K_fc = assemble(c_k(θ), X)          as in LinearModel.solve
    M_ff, M_fc = assemble(ρ c t, X)           mass cell matrices (fesens.fem.integrals.mass)
    F = [m_L f_L(X)]_L, H = [φ_L(t_n)]_(n,L)  load terms and their time functions
    values = integrate(K, M, F, H, g, φ_g, T0, term_args)     one primitive

with ``values[n] = j(T_n, t_n, *term_args)`` for ``n = 0..N``. A time aggregate (a
trapezoidal sum, the final value, a KS peak) is ordinary traced code on ``values``, so the
primitive's cotangent is ``ḡ_n`` per level. Step ``n``'s residual on the free dofs is

    r_n = Σ_k α_(n,k)/Δt_n (M_ff T_(n−k) + M_fc g_(n−k))
          + Σ_k β_(n,k) (K_ff T_(n−k) + K_fc g_(n−k) − F H_(n−k)),    g_n = g φ_g(t_n)

and the VJP is the discrete adjoint, run backwards with the forward factorizations
(``A_n = α_(n,0)/Δt_n M_ff + β_(n,0) K_ff``):

    A_nᵀ λ_n = ḡ_n ∂j_n/∂T_n − Σ_(k≥1) (α_(n+k,k)/Δt_(n+k) M_ff + β_(n+k,k) K_ff)ᵀ λ_(n+k)
    K̄_ff = −Σ_n λ_n (Σ_k β_(n,k) T_(n−k))ᵀ,    M̄_ff = −Σ_n λ_n (Σ_k α_(n,k)/Δt_n T_(n−k))ᵀ
    F̄ = Σ_n λ_n (Σ_k β_(n,k) H_(n−k))ᵀ,          H̄_(n−k) += β_(n,k) Fᵀ λ_n
    T̄_0 = ḡ_0 ∂j_0/∂T_0 − Σ_(k≥1) (α_(k,k)/Δt_k M_ff + β_(k,k) K_ff)ᵀ λ_k

(and likewise for ``g``, ``φ_g`` and ``term_args``). The matrix cotangents are values on
the pattern (``O(nnz)`` memory whatever the number of steps), which the assembly
primitives pull back to every per-cell field (conductivity, density, heat capacity,
convection's ``h``, any interpolation before them) and to the node coordinates. The
states the adjoint reads are all stored (``max_states=None``) or recomputed from
snapshots on Griewank's binomial schedule (:mod:`fesens.fem.transient.checkpointing`);
both give the same bits.

A :class:`~fesens.fem.model.nonlinear.NonlinearModel` (conduction with ``k(T)``) runs
``M Ṫ + R_int(T) = f(t)`` through the same problem: the same inputs, time levels, schemes
and checkpointing, each step a Newton solve and the run one primitive whose discrete
adjoint is in :mod:`fesens.fem.transient.nonlinear_steps`.

Only first derivatives: the VJP runs on plain arrays (no Hessian-vector products
through the time integration).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from fesens.ad.numpy_wrapper import getval
from fesens.ad.sparse import PatternMatrix
from fesens.ad.traced import Traced
from fesens.errors import NonFiniteError
from fesens.fem.analysis.base import Analysis
from fesens.fem.assembly.assembler import Assembler
from fesens.fem.assembly.primitives import BlockOperator, assemble, assemble_at_points
from fesens.fem.integrals.mass import MassForm
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.fem.transient.checkpointing import (
    check_snapshots,
)
from fesens.fem.transient.nonlinear_steps import NonlinearStepper, nonlinear_values
from fesens.fem.transient.run_inputs import HeatInputs, NonlinearHeatInputs
from fesens.fem.transient.run_memory import (
    check_kept_states,
    kept_states,
    snapshot_vectors,
)
from fesens.fem.transient.schemes import DEFAULT_SCHEMES, StepCoefficients, time_scheme
from fesens.fem.transient.steps import Run, Stepper, StepTerm, check_same_pattern, integrate
from fesens.fem.transient.time_levels import (
    TimeFunction,
    dirichlet_factors,
    history_values,
    time_grid,
)
from fesens.readonly import freeze
from fesens.solvers import LinearSolver, make_solver


class TransientProblem(Analysis):
    """A transient run of a model: time levels, scheme, mass, checkpointing, solver.

    Parameters
    ----------
    model : LinearModel or NonlinearModel
        Its mesh, Dirichlet conditions, load terms and parameters (conduction: ``K`` is the
        conductance, ``M`` the heat capacity matrix; a nonlinear model's internal forces
        ``R_int(T)`` take the place of ``K T``, each step a Newton solve).
    times : array_like, optional
        Time levels ``(N + 1,)``, strictly increasing (variable steps); or
    t_end, dt : float, optional
        A constant step ``dt`` from ``t_start`` to ``t_end`` (``dt`` must divide it).
    t_start : float
    scheme : str
        A first-order scheme of :data:`~fesens.fem.transient.schemes.TIME_SCHEMES`
        (default BDF2, started by one backward Euler step).
    theta : float, optional
        θ in ``[1/2, 1]`` of the θ-method (its record's option).
    lumped : bool
        HRZ-lumped heat capacity matrix instead of the consistent one.
    max_states : int, optional
        Snapshots the gradient may keep (``>= 2``; a multistep scheme keeps the ``levels``
        vectors its step reads per snapshot):
        states between them are recomputed on Griewank's binomial schedule. None: every
        state is kept during a traced run.
    solver : str or (str, dict), optional
        Backend of the step matrices (default: the model's choice for its stiffness; a
        nonlinear model's: its tangent's); one instance, and one factorization, per
        distinct step matrix (a nonlinear model: one instance, one symbolic analysis, a
        factorization per Newton iteration).
    solver_options : dict, optional
    newton : dict, optional
        A nonlinear model's :class:`~fesens.fem.nonlinear.newton.NewtonOptions` of every
        step (as ``model.solve(newton=...)``; ``steps`` and ``max_cutbacks`` do not apply:
        a time step is never cut back, which would change the scheme).

    Notes
    -----
    A problem may be shared by threads: its runs (forward sweeps and adjoints) take
    :attr:`lock` in turn, since its step solvers hold one factorization each; each call
    returns what it returns alone. :attr:`stats` is then that of the last run to finish.

    Attributes
    ----------
    times : numpy.ndarray
        ``(N + 1,)``.
    lock : threading.RLock
        Held by each run (see the notes).
    stats : dict
        Of the last run: ``steps`` (forward steps of the sweep), ``kept`` (state vectors
        the sweep kept for the gradient), ``advanced`` (steps recomputed from snapshots by
        the gradient), ``taped`` (steps re-run just before their adjoint),
        ``factorizations`` (numeric factorizations, all runs); a nonlinear model's also
        ``newton_iterations`` (of the last forward sweep).

    Raises
    ------
    ValueError, NonFiniteError
        Bad time levels or step, unknown scheme, ``max_states < 2``, Newton options for
        a linear model.
    TooLargeError
        More time levels than the available memory holds; from :meth:`values` of traced
        inputs, more kept states than it holds (:meth:`check_gradient_memory`).
    """

    #: Vectors of one state the gradient keeps (``T``; a dynamic run's ``(u, v, a)``).
    state_vectors = 1

    def __init__(self, model, *, times=None, t_end: float | None = None,
                 dt: float | None = None, t_start: float = 0.0, scheme: str = DEFAULT_SCHEMES[1],
                 theta: float | None = None, lumped: bool = False,
                 max_states: int | None = None, solver=None,
                 solver_options: dict | None = None, newton: dict | None = None):
        self.model = model
        self.times = time_grid(t_end=t_end, dt=dt, t_start=t_start, times=times)
        self.scheme = scheme
        self.coefficients = self._scheme_coefficients(scheme, theta)
        self.lumped = bool(lumped)
        self.max_states = None if max_states is None else check_snapshots(max_states)
        self._solver_spec = solver
        self._solver_options = dict(solver_options or {})
        self._solvers: dict[tuple, LinearSolver] = {}
        self._mass_blocks: dict[str, tuple] = {}
        #: Held by each run, forward sweep or adjoint, of this problem: its step solvers
        #: hold one factorization each, which a run reads from its first step to its last.
        self.lock = threading.RLock()
        self.stats = {"steps": 0, "kept": 0, "advanced": 0, "taped": 0, "factorizations": 0}
        self.nonlinear = isinstance(model, NonlinearModel)
        if self.nonlinear:
            self.stats["newton_iterations"] = 0
            self.newton_options = replace(model._newton_options(newton, None), steps=1,
                                          max_cutbacks=0)
        elif newton is not None:
            raise ValueError(f"newton options apply to a nonlinear model; "
                             f"{type(model).__name__} is linear: remove newton=")

    def _scheme_coefficients(self, scheme: str, theta: float | None) -> StepCoefficients:
        """The coefficients of every step (a subclass with other schemes overrides it)."""
        return time_scheme(scheme, 1).coefficients(self.times, theta=theta)

    @property
    def n_steps(self) -> int:
        """``N``: the number of time steps."""
        return self.times.size - 1

    def check_gradient_memory(self) -> None:
        """Refuse a traced run whose kept states (every one without ``max_states``, else
        the snapshots, each with the earlier levels its scheme's step reads) and levels
        exceed the available memory (:mod:`fesens.fem.transient.run_memory`), before it
        steps.

        Raises
        ------
        TooLargeError
            Naming ``max_states``, the estimate, the available memory and the fix.
        """
        n_levels = self.times.size
        kept = kept_states(n_levels, self.max_states, snapshot_vectors(self.scheme))
        if self.max_states is None:
            what = f"max_states = None keeps every one of the {n_levels:,} time levels"
            fix = ("give max_states (e.g. 100): the states between its snapshots are "
                   "recomputed from them")
        else:
            what, fix = f"max_states = {self.max_states:,}", "give a smaller max_states"
        check_kept_states(kept, self.model.free_dofs.size, self.state_vectors, n_levels,
                          len(self.model.loads), what, fix)

    def run(self, step_term: StepTerm, **inputs):
        """The analyses' name of :meth:`values` (:mod:`fesens.fem.analysis.base`)."""
        return self.values(step_term, **inputs)

    # ------------------------------------------------------------ the traced run
    def values(self, step_term: StepTerm, *, term_args: tuple = (), T0=0.0,
               loads: dict | None = None, histories: dict | None = None, dirichlet=None,
               dirichlet_history: TimeFunction | None = None, density=1.0,
               heat_capacity=1.0, points=None, **parameters):
        """``values[n] = step_term(T_n, t_n, *term_args)`` for ``n = 0..N``, ``(N + 1,)``;
        traced when an input is (one primitive for the whole integration).

        Parameters
        ----------
        step_term : callable
            ``j(T, t, *term_args) -> float`` with ``T`` the nodal field ``(n_dofs,)``,
            written in the traced numpy subset (e.g. ``np.sum(T[nodes] ** 2)``). Its
            traced inputs must come through ``term_args``, not a closure.
        term_args : tuple
            Further (possibly traced) arguments of ``step_term``.
        T0 : float or array_like
            Initial field, ``()`` or ``(n_dofs,)`` (its Dirichlet dofs take ``g(t_0)``).
        loads : dict, optional
            Magnitude of each named load term (default 1); traced allowed.
        histories : dict, optional
            Time function of each named load term: a callable ``t -> factor`` or a table
            ``(times, values)`` interpolated linearly, constant beyond its ends (its
            values may be traced); default constant 1.
        dirichlet : array_like, optional
            Prescribed values ``g`` ordered like ``model.constrained_dofs`` (default: the
            values given to ``fix``).
        dirichlet_history : callable or (times, values), optional
            Time function ``φ_g`` multiplying every prescribed value (default 1).
        density, heat_capacity : float or array_like
            ``ρ`` and ``c``, ``()`` or per cell ``(n_cells,)``: the mass coefficient
            ``ρ c``; differentiable.
        points : array_like, optional
            Node coordinates ``(n_points, dim)`` (shape sensitivities).
        **parameters
            The model's parameters (``conductivity``, ``scale``, ``h``, ...).

        Returns
        -------
        array
            ``(N + 1,)``.
        """
        if not callable(step_term):
            raise TypeError(f"step_term must be a callable j(T, t, *term_args), got "
                            f"{type(step_term).__name__}")
        system = self._system(T0, loads, histories, dirichlet, dirichlet_history, density,
                              heat_capacity, points, parameters)
        if self.nonlinear:
            return nonlinear_values(self, step_term, system, tuple(term_args))
        run = Run(self, step_term)
        inputs = (*system, *term_args)
        run.keep = any(isinstance(x, Traced) for x in inputs)
        if run.keep:
            self.check_gradient_memory()
        return integrate(run, HeatInputs(*system, term_args=tuple(term_args)))

    def states(self, *, at=None, T0=0.0, loads: dict | None = None,
               histories: dict | None = None, dirichlet=None,
               dirichlet_history: TimeFunction | None = None, density=1.0,
               heat_capacity=1.0, points=None, **parameters) -> Iterator[tuple]:
        """The fields of a forward run, one level at a time (nothing is kept).

        Yields ``(n, t_n, T_n)`` with ``T_n`` ``(n_dofs,)`` for the levels ``at`` (indices
        into :attr:`times`; default all). Other arguments as in :meth:`values` (plain
        values only).
        """
        wanted = None if at is None else {int(n) for n in np.atleast_1d(at)}
        system = self._system(T0, loads, histories, dirichlet, dirichlet_history, density,
                              heat_capacity, points, parameters)
        if self.nonlinear:
            *system, fields = system
            system = (*system, *fields.values())
        if any(isinstance(x, Traced) for x in system if x is not None):
            raise TypeError("states runs plain values only; differentiate values() instead")
        if self.nonlinear:
            stepper = NonlinearStepper(self, NonlinearHeatInputs(*system[:8], fields))
        else:
            stepper = Stepper(self, HeatInputs(*system))
        state = stepper.start()
        if wanted is None or 0 in wanted:
            yield 0, float(self.times[0]), stepper.full(0, state[0])
        with self.lock, stepper.thread_limit():  # one run of the problem at a time
            self.stats.update(steps=0, kept=0, advanced=0, taped=0)
            for n in range(1, self.n_steps + 1):
                state = stepper.advance(n, state)
                self.stats["steps"] += 1
                if wanted is None or n in wanted:
                    yield n, float(self.times[n]), stepper.full(n, state[0])

    # ------------------------------------------------------------ inputs
    def _system(self, T0, loads, histories, dirichlet, dirichlet_history, density,
                heat_capacity, points, parameters) -> tuple:
        """``(K_ff, M_ff, K_fc, M_fc, F, H, g, φ_g, T0_f)``, traced where inputs are (the
        ``fc`` blocks, ``g`` and ``φ_g`` None without prescribed values); a nonlinear
        model's ``(M_ff, M_fc, F, H, g, φ_g, T0_f, points, fields)`` (``fields``: its
        material fields by name)."""
        model = self.model
        model.check_parameters(parameters)
        points = model.checked_points(points)
        free, constrained = model.free_dofs, model.constrained_dofs
        capacity = density * heat_capacity
        if self.nonlinear:
            M_ff = self._mass_matrix("ff", capacity, points)
        else:
            K_ff = model.stiffness("ff", points=points, **parameters)
            M_ff = model.mass(capacity, lumped=self.lumped, points=points)
            check_same_pattern(getval(K_ff), getval(M_ff))
        F, H = self._loads(loads, histories, points, parameters, free)
        g = model.dirichlet_values(dirichlet)
        prescribed = bool(constrained.size) and (dirichlet is not None
                                                 or bool(np.any(getval(g))))
        phi = dirichlet_factors(dirichlet_history, self.times, prescribed)
        K_fc = M_fc = None
        if prescribed:
            if not self.nonlinear:
                K_fc = model.stiffness("fc", points=points, **parameters)
            M_fc = self._mass_matrix("fc", capacity, points)
        else:
            g = None
        raw0 = np.asarray(getval(T0), dtype=float)
        if raw0.shape not in ((), (model.dofmap.n_dofs,)):
            raise ValueError(f"T0 must be a scalar or have shape ({model.dofmap.n_dofs},) "
                             f"(n_dofs,), got {raw0.shape}")
        if not np.all(np.isfinite(raw0)):
            raise NonFiniteError("T0 contains NaN or infinity; give a finite initial field")
        T0_free = (T0 * np.ones(model.dofmap.n_dofs))[free]
        if self.nonlinear:
            return (M_ff, M_fc, F, H, g, phi, T0_free, points,
                    model.material_fields(**parameters))
        return K_ff, M_ff, K_fc, M_fc, F, H, g, phi, T0_free

    def _loads(self, loads, histories, points, parameters, free) -> tuple:
        """``F`` ``(n_free, n_terms)`` and ``H`` ``(N + 1, n_terms)``: the free rows of each
        load term times its magnitude (and the physics' parameter load, constant in time)
        and their time functions."""
        model = self.model
        loads, histories = dict(loads or {}), dict(histories or {})
        for what, given in (("loads", loads), ("histories", histories)):
            unknown = set(given) - set(model.loads)
            if unknown:
                raise ValueError(f"{what} names unknown load term(s) {sorted(unknown)}; the "
                                 f"model's load terms: {sorted(model.loads)}")
        columns, factors = [], []
        for name in model.loads:
            one_hot = {other: 0.0 for other in model.loads}
            one_hot[name] = loads.get(name, 1.0)
            columns.append(model.load_vector(one_hot, points)[free])
            factors.append(np.ones(self.times.size) if name not in histories
                           else history_values(histories[name], self.times,
                                               f"history of load {name!r}"))
        # a nonlinear model's loads do not depend on its parameters
        extra = None if self.nonlinear else model.parameter_load(points, **parameters)
        if extra is not None:
            columns.append(extra[free])
            factors.append(np.ones(self.times.size))
        if not columns:
            return np.zeros((free.size, 0)), np.zeros((self.times.size, 0))
        return np.stack(columns, axis=1), np.stack(factors, axis=1)

    def _mass_matrix(self, block: str, capacity, points):
        """``M_fc`` (the coupling of the free to the prescribed dofs; a nonlinear model's
        ``M_ff`` too, which it does not assemble itself), traced like ``model.mass``; its
        operator kept while the set of Dirichlet dofs stays."""
        model = self.model
        dofs = model.constrained_dofs
        kept = self._mass_blocks.get(block)
        if kept is None or not np.array_equal(kept[0], dofs):
            # a linear model's form holds the reference cell matrices its mass uses
            form = (MassForm(model, self.lumped) if self.nonlinear
                    else model.mass_operator(self.lumped)[1])
            assembler = Assembler(model.dofmap.cell_dofs, model.dofmap.n_dofs, dofs,
                                  form.cell_matrices())
            kept = self._mass_blocks[block] = (dofs, BlockOperator(assembler, block), form)
        _, operator, form = kept
        coefficient = form.coefficient(capacity)
        if points is None:
            return assemble(operator, coefficient)
        return assemble_at_points(operator, form, None, points, coefficient)

    # ------------------------------------------------------------ factorizations
    def tangent_backend(self) -> LinearSolver:
        """A nonlinear model's solver of its step matrices ``a M_ff + b K_T``: its tangent
        solver for the problem's backend (one instance, one symbolic analysis)."""
        backend = self.model.tangent_solver(self._solver_spec, **self._solver_options)
        if backend.matrix_free:
            raise ValueError("a transient run needs assembled matrices: give a backend "
                             "that factorizes them, e.g. solver='lu'")
        return backend

    def step_solver(self, key: tuple[float, float], K: PatternMatrix, M: PatternMatrix
                    ) -> LinearSolver:
        """The solver holding the factorization of ``a M_ff + b K_ff`` for ``key = (a, b)``
        (one instance per key; refactorized only when ``K`` or ``M`` changed)."""
        backend = self._solvers.get(key)
        if backend is None:
            model_backend = self.model.solver(self._solver_spec)
            if model_backend.matrix_free:
                raise ValueError("a transient run needs assembled matrices: give a backend "
                                 "that factorizes them, e.g. solver='cholmod'")
            backend = make_solver(model_backend.name, **self._solver_options)
            needs = backend.model_needs
            if needs is not None and not needs.assembled:
                raise ValueError(f"a transient run solves the assembled step matrix a M + b K, "
                                 f"and {needs.purpose} solves the lattice operator of the "
                                 f"cells' stiffness only (solver_options="
                                 f"{self._solver_options!r}): {needs.instead_assembled}")
            self._solvers[key] = backend
            if backend.needs_grid:
                # geometric multigrid: a M_ff + b K_ff has the rows of K_ff, whose places
                # on the mesh's lattice the model gave its own instance
                backend.grid = model_backend.grid
        a, b = key
        data = freeze(a * M.data + b * K.data)  # frozen: the solver keeps it, not a copy
        before = backend.stats["n_numeric"]
        pattern = K.pattern
        backend.factorize_once(pattern, data, lambda: sp.csr_matrix(
            (data, pattern.indices, pattern.indptr), shape=pattern.shape))
        self.stats["factorizations"] += backend.stats["n_numeric"] - before
        return backend

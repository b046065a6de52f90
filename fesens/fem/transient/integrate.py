"""Transient linear problems ``M Ṫ + K T = f(t)`` and the exact gradient of their
time-discrete objectives (discrete adjoint, with checkpointing).

:class:`TransientProblem` integrates a :class:`~fesens.fem.model.linear.LinearModel` (heat
conduction: ``M`` the heat capacity matrix ``∫ ρ c N Nᵀ``, ``K`` the conductance) with one
of the schemes of :mod:`fesens.fem.transient.schemes`. :meth:`TransientProblem.values` is
the traced program::

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

Only first derivatives: the VJP runs on plain arrays (no Hessian-vector products
through the time integration).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import scipy.sparse as sp

from fesens.ad.api import vjp
from fesens.ad.numpy_wrapper import getval
from fesens.ad.registry import defvjp_joint
from fesens.ad.sparse import PatternMatrix
from fesens.ad.traced import Traced
from fesens.ad.tracer import primitive
from fesens.errors import NonFiniteError
from fesens.fem.assembly.assembler import Assembler
from fesens.fem.assembly.primitives import BlockOperator, assemble, assemble_at_points
from fesens.fem.transient.checkpointing import (
    check_snapshots,
    forward_snapshots,
    reverse_sweep,
)
from fesens.fem.transient.schemes import (
    StepCoefficients,
    TimeFunction,
    history_values,
    step_coefficients,
    time_grid,
)
from fesens.solvers import LinearSolver, make_solver

StepTerm = Callable[..., float]


class TransientProblem:
    """A transient run of a linear model: time levels, scheme, mass, checkpointing, solver.

    Parameters
    ----------
    model : LinearModel
        Its mesh, Dirichlet conditions, load terms and parameters (conduction: ``K`` is the
        conductance, ``M`` the heat capacity matrix).
    times : array_like, optional
        Time levels ``(N + 1,)``, strictly increasing (variable steps); or
    t_end, dt : float, optional
        A constant step ``dt`` from ``t_start`` to ``t_end`` (``dt`` must divide it).
    t_start : float
    scheme : {"bdf2", "crank_nicolson", "backward_euler", "theta"}
        BDF2 starts with one backward Euler step.
    theta : float, optional
        θ in ``[1/2, 1]`` of ``scheme="theta"``.
    lumped : bool
        HRZ-lumped heat capacity matrix instead of the consistent one.
    max_states : int, optional
        Snapshots the gradient may keep (``>= 2``; BDF2 keeps two vectors per snapshot):
        states between them are recomputed on Griewank's binomial schedule. None: every
        state is kept during a traced run.
    solver : str or (str, dict), optional
        Backend of the step matrices (default: the model's choice for its stiffness); one
        instance, and one factorization, per distinct step matrix.
    solver_options : dict, optional

    Attributes
    ----------
    times : numpy.ndarray
        ``(N + 1,)``.
    stats : dict
        Of the last run: ``steps`` (forward steps of the sweep), ``kept`` (state vectors
        the sweep kept for the gradient), ``advanced`` (steps recomputed from snapshots by
        the gradient), ``taped`` (steps re-run just before their adjoint),
        ``factorizations`` (numeric factorizations, all runs).

    Raises
    ------
    ValueError, NonFiniteError
        Bad time levels or step, unknown scheme, ``max_states < 2``.
    """

    def __init__(self, model, *, times=None, t_end: float | None = None,
                 dt: float | None = None, t_start: float = 0.0, scheme: str = "bdf2",
                 theta: float | None = None, lumped: bool = False,
                 max_states: int | None = None, solver=None,
                 solver_options: dict | None = None):
        self.model = model
        self.times = time_grid(t_end=t_end, dt=dt, t_start=t_start, times=times)
        self.scheme = scheme
        self.coefficients = self._scheme_coefficients(scheme, theta)
        self.lumped = bool(lumped)
        self.max_states = None if max_states is None else check_snapshots(max_states)
        self._solver_spec = solver
        self._solver_options = dict(solver_options or {})
        self._solvers: dict[tuple, LinearSolver] = {}
        self._mass_fc: tuple | None = None
        self.stats = {"steps": 0, "kept": 0, "advanced": 0, "taped": 0, "factorizations": 0}

    def _scheme_coefficients(self, scheme: str, theta: float | None) -> StepCoefficients:
        """The coefficients of every step (a subclass with other schemes overrides it)."""
        return step_coefficients(self.times, scheme, theta)

    @property
    def n_steps(self) -> int:
        """``N``: the number of time steps."""
        return self.times.size - 1

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
        run = _Run(self, step_term)
        inputs = (*system, *term_args)
        run.keep = any(isinstance(x, Traced) for x in inputs)
        return integrate(run, *inputs)

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
        if any(isinstance(x, Traced) for x in system if x is not None):
            raise TypeError("states runs plain values only; differentiate values() instead")
        stepper = _Stepper(self, *system[:8])
        state = (np.asarray(system[8], dtype=float), None)
        if wanted is None or 0 in wanted:
            yield 0, float(self.times[0]), stepper.full(0, state[0])
        self.stats.update(steps=0, kept=0, advanced=0, taped=0)
        with stepper.thread_limit():
            for n in range(1, self.n_steps + 1):
                state = (stepper.step(n, state), state[0])
                self.stats["steps"] += 1
                if wanted is None or n in wanted:
                    yield n, float(self.times[n]), stepper.full(n, state[0])

    # ------------------------------------------------------------ inputs
    def _system(self, T0, loads, histories, dirichlet, dirichlet_history, density,
                heat_capacity, points, parameters) -> tuple:
        """``(K_ff, M_ff, K_fc, M_fc, F, H, g, φ_g, T0_f)``, traced where inputs are (the
        ``fc`` blocks, ``g`` and ``φ_g`` None without prescribed values)."""
        model = self.model
        model.check_parameters(parameters)
        points = model.checked_points(points)
        free, constrained = model.free_dofs, model.constrained_dofs
        capacity = density * heat_capacity
        K_ff = model.stiffness("ff", points=points, **parameters)
        M_ff = model.mass(capacity, lumped=self.lumped, points=points)
        _check_same_pattern(getval(K_ff), getval(M_ff))
        F, H = self._loads(loads, histories, points, parameters, free)
        g = model.prescribed_values() if dirichlet is None else dirichlet
        if np.shape(getval(g)) != constrained.shape:
            raise ValueError(f"dirichlet values must have shape {constrained.shape} (one per "
                             f"constrained dof), got {np.shape(getval(g))}")
        if not np.all(np.isfinite(getval(g))):
            raise NonFiniteError("dirichlet values contain NaN or infinity")
        prescribed = bool(constrained.size) and (dirichlet is not None
                                                 or bool(np.any(getval(g))))
        K_fc = M_fc = phi = None
        if prescribed:
            K_fc = model.stiffness("fc", points=points, **parameters)
            M_fc = self._mass_fc_matrix(capacity, points)
            phi = (np.ones(self.times.size) if dirichlet_history is None
                   else history_values(dirichlet_history, self.times, "dirichlet_history"))
        else:
            g = None
        raw0 = np.asarray(getval(T0), dtype=float)
        if raw0.shape not in ((), (model.dofmap.n_dofs,)):
            raise ValueError(f"T0 must be a scalar or have shape ({model.dofmap.n_dofs},) "
                             f"(n_dofs,), got {raw0.shape}")
        if not np.all(np.isfinite(raw0)):
            raise NonFiniteError("T0 contains NaN or infinity; give a finite initial field")
        T0_free = (T0 * np.ones(model.dofmap.n_dofs))[free]
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
        extra = model.parameter_load(points, **parameters)
        if extra is not None:
            columns.append(extra[free])
            factors.append(np.ones(self.times.size))
        if not columns:
            return np.zeros((free.size, 0)), np.zeros((self.times.size, 0))
        return np.stack(columns, axis=1), np.stack(factors, axis=1)

    def _mass_fc_matrix(self, capacity, points):
        """``M_fc`` (the coupling of the free to the prescribed dofs), traced like
        ``model.mass``; its operator kept while the set of Dirichlet dofs stays."""
        model = self.model
        dofs = model.constrained_dofs
        if self._mass_fc is None or not np.array_equal(self._mass_fc[0], dofs):
            _, form = model.mass_operator(self.lumped)
            assembler = Assembler(model.dofmap.cell_dofs, model.dofmap.n_dofs, dofs,
                                  form.cell_matrices())
            self._mass_fc = (dofs, BlockOperator(assembler, "fc"), form)
        _, operator, form = self._mass_fc
        coefficient = form.coefficient(capacity)
        if points is None:
            return assemble(operator, coefficient)
        return assemble_at_points(operator, form, None, points, coefficient)

    # ------------------------------------------------------------ factorizations
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
            backend = self._solvers[key] = make_solver(model_backend.name,
                                                       **self._solver_options)
        a, b = key
        data = a * M.data + b * K.data
        before = backend.stats["n_numeric"]
        pattern = K.pattern
        backend.factorize_once(pattern, data, lambda: sp.csr_matrix(
            (data, pattern.indices, pattern.indptr), shape=pattern.shape))
        self.stats["factorizations"] += backend.stats["n_numeric"] - before
        return backend


def _check_same_pattern(K: PatternMatrix, M: PatternMatrix) -> None:
    """Step matrices add ``K`` and ``M`` values entry by entry: their patterns must agree."""
    if K.pattern is M.pattern:
        return
    if not (np.array_equal(K.pattern.indptr, M.pattern.indptr)
            and np.array_equal(K.pattern.indices, M.pattern.indices)):
        raise ValueError("the stiffness and mass matrices have different sparsity patterns; "
                         "a transient run needs both assembled over the same cells")


class _Run:
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


class _Stepper:
    """The time steps of one set of (plain) matrices, loads and prescribed values."""

    def __init__(self, problem: TransientProblem, K_ff, M_ff, K_fc, M_fc, F, H, g, phi):
        self.problem, self.c = problem, problem.coefficients
        self.K, self.M = K_ff, M_ff
        self.K_csr, self.M_csr = K_ff.tocsr(), M_ff.tocsr()
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


def _integrate(run: _Run, K_ff, M_ff, K_fc, M_fc, F, H, g, phi, T0_free, *term_args):
    """``values[n] = j(T_n, t_n, *term_args)``, ``(N + 1,)``: the forward sweep (keeping
    every state, or the snapshots of the binomial schedule, when traced)."""
    problem = run.problem
    stepper = _Stepper(problem, K_ff, M_ff, K_fc, M_fc, F, H, g, phi)
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
    with stepper.thread_limit():
        for n in range(1, N + 1):
            state = (stepper.step(n, state), state[0])
            values[n] = run.term(n, stepper.full(n, state[0]), term_args)
            if n in keep:
                run.stored[n] = state[0]
    problem.stats.update(steps=N, advanced=0, taped=0, kept=len(run.stored))
    return values


integrate = primitive(_integrate, "transient_integrate")


def term_pullback(run: _Run, n: int, full: np.ndarray, gbar_n: float, term_args,
                  positions) -> tuple[np.ndarray, list]:
    """``ḡ_n ∂j_n/∂T_n`` on all dofs ``(n_dofs,)`` and the cotangents of the traced
    ``term_args`` (at ``positions``) of level ``n``'s step term."""
    times = run.problem.times
    argnums = (0, *(p + 1 for p in positions))
    _, pull = vjp(lambda T, *a: run.step_term(T, float(times[n]), *a), full, *term_args,
                  argnums=argnums)
    cotangents = pull(gbar_n)
    return np.asarray(cotangents[0], dtype=float), list(cotangents[1:])


class _Adjoint:
    """The reverse sweep's accumulators: ``λ`` contributions owed to earlier levels and
    the cotangent of every input."""

    def __init__(self, run: _Run, stepper: _Stepper, gbar, term_args, argnums):
        self.run, self.s, self.term_args = run, stepper, term_args
        self.gbar = np.asarray(gbar, dtype=float)
        self.owed: dict[int, np.ndarray] = {}  # level -> −Σ (α M + β K)ᵀ λ of later steps
        n_free = stepper.free.size
        self.K_bar = np.zeros(stepper.K.pattern.nnz)
        self.M_bar = np.zeros(stepper.M.pattern.nnz)
        self.F_bar = np.zeros((n_free, stepper.F.shape[1]))
        self.H_bar = np.zeros_like(stepper.H)
        self.lam_K = np.zeros(n_free)  # Σ_n (Σ_k β φ_g) λ_n
        self.lam_M = np.zeros(n_free)
        self.g_bar = np.zeros(stepper.constrained.size) if stepper.prescribed else None
        self.phi_bar = np.zeros(stepper.phi.size) if stepper.prescribed else None
        # the traced step-term arguments (primitive arguments from 10 on)
        self.positions = [i - 10 for i in argnums if i >= 10]
        self.args_bar = [0.0] * len(self.positions)

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

    def step(self, n: int, state: tuple, T_n: np.ndarray) -> None:
        """The adjoint of step ``n``: ``λ_n``, what it owes earlier levels, and its part of
        every cotangent."""
        s = self.s
        a, b = s.weights(n)
        rhs = self.term_cotangent(n, T_n)
        owed = self.owed.pop(n, None)
        if owed is not None:
            rhs = rhs + owed
        lam = s.solver(n).solve_transpose(rhs)
        levels = (T_n, *state)
        for k in (1, 2):
            if a[k] != 0.0 or (k < 2 and b[k] != 0.0):
                push = a[k] * (s.M_csr.T @ lam)
                if k < 2 and b[k] != 0.0:
                    push = push + b[k] * (s.K_csr.T @ lam)
                self.owed[n - k] = self.owed[n - k] - push if n - k in self.owed else -push
        # on the pattern step by step: faster than blocks of steps (whose (nnz, block)
        # products stream more memory) and than contracting cell matrices per step
        T_K = b[0] * T_n + (b[1] * state[0] if b[1] != 0.0 else 0.0)
        T_M = sum(a[k] * levels[k] for k in range(3) if a[k] != 0.0)
        self.K_bar -= s.K.pattern.outer(lam, T_K)
        self.M_bar -= s.M.pattern.outer(lam, T_M)
        self.F_bar += np.outer(lam, b[0] * s.H[n] + b[1] * s.H[n - 1])
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

    def finish(self, T0_free: np.ndarray) -> np.ndarray:
        """``T̄_0`` on the free dofs (after the last step's adjoint)."""
        T0_bar = self.term_cotangent(0, T0_free)
        owed = self.owed.pop(0, None)
        return T0_bar if owed is None else T0_bar + owed


def _integrate_vjp(argnums, values, run, K_ff, M_ff, K_fc, M_fc, F, H, g, phi, T0_free,
                   *term_args):
    def pullback(gbar):
        if any(isinstance(x, Traced) for x in (gbar, K_ff, M_ff, K_fc, M_fc, F, H, g, phi,
                                              T0_free, *term_args)):
            raise NotImplementedError(
                "second derivatives through a transient run (grad of grad, hvp) are not "
                "available: its adjoint runs on plain arrays; differentiate once")
        problem = run.problem
        stepper = _Stepper(problem, K_ff, M_ff, K_fc, M_fc, F, H, g, phi)
        adjoint = _Adjoint(run, stepper, gbar, term_args, argnums)
        stored, N = run.stored, problem.n_steps
        T0 = np.asarray(T0_free, dtype=float)
        with stepper.thread_limit():
            if problem.max_states is None:
                for n in range(N, 0, -1):
                    adjoint.step(n, (stored[n - 1], stored.get(n - 2)), stored[n])
            else:
                stats = problem.stats

                def advance(n, state):
                    stats["advanced"] += 1
                    return (stepper.step(n, state), state[0])

                def adjoint_step(n, state):
                    stats["taped"] += 1
                    adjoint.step(n, state, stepper.step(n, state))

                snapshots = {n: (stored[n], stored.get(n - 1))
                             for n in forward_snapshots(N, problem.max_states)}
                reverse_sweep(N, problem.max_states, (T0, None), advance, adjoint_step, snapshots)
        T0_bar = adjoint.finish(T0)
        cotangents = {1: adjoint.K_bar, 2: adjoint.M_bar, 5: adjoint.F_bar, 6: adjoint.H_bar,
                      9: T0_bar}
        if stepper.prescribed:
            cotangents[3] = -K_fc.pattern.outer(adjoint.lam_K, stepper.g)
            cotangents[4] = -M_fc.pattern.outer(adjoint.lam_M, stepper.g)
            cotangents[7] = (adjoint.g_bar - K_fc.tocsr().T @ adjoint.lam_K
                             - M_fc.tocsr().T @ adjoint.lam_M)
            cotangents[8] = adjoint.phi_bar
        for p, c in zip(adjoint.positions, adjoint.args_bar, strict=True):
            cotangents[10 + p] = c
        return tuple(cotangents[i] for i in argnums)

    return pullback


defvjp_joint(integrate, _integrate_vjp)

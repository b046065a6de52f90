"""Models whose equations are nonlinear in the unknowns: a residual from a flux at the
quadrature points, Newton on the cached pattern, and a one-solve adjoint.

The residual of a :class:`NonlinearModel` is

    R_a(u, θ, X) = Σ_e Σ_q dΩ_q t P(u_q, ∇u_q; θ_e) : ∇N_a(x_q) − f_a(θ, X)

(``t``: the thickness in 2D; ``P``: the physics' flux, e.g. the first Piola–Kirchhoff
stress or a heat flux), assembled over all cells at once; its tangent
``K_ab = Σ_q dΩ_q t [∇N_a · ∂P/∂∇u · ∇N_b + ∇N_a · ∂P/∂u N_b]`` is assembled onto the
cached pattern of the free dofs, so every Newton iteration and load step shares one
symbolic analysis. The solve is one primitive
(:func:`~fesens.fem.nonlinear.implicit_solve.solve_residual`): the Newton iterations are
not taped, and the gradient costs one transposed solve with the converged tangent and one
traced evaluation of ``R``. The states at several load factors of one solve
(``solve(at_load_factors=...)``, :meth:`NonlinearSolution.at`) are one primitive too
(:func:`~fesens.fem.nonlinear.implicit_solve.solve_residual_at`), whose gradient costs one
transposed solve per state an objective reads.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import fields as dataclass_fields
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from fesens.ad.numpy_wrapper import getval, untake
from fesens.ad.sparse import PatternMatrix
from fesens.errors import NewtonError, NonFiniteError, SolverError
from fesens.fem.assembly.assembler import Assembler
from fesens.fem.assembly.primitives import BlockOperator
from fesens.fem.integrals.kernels import gradient_form, transposed_tangent_action
from fesens.fem.model.base import Model
from fesens.fem.model.follower_loads import FollowerLoad, FollowerLoads
from fesens.fem.model.nonlinear_solution import LoadStepStates, NonlinearSolution
from fesens.fem.model.solution import Solution
from fesens.fem.model.warm_start import ThreadWarmStart, WarmStart
from fesens.fem.nonlinear.implicit_solve import ResidualSolve, solve_residual, solve_residual_at
from fesens.fem.nonlinear.newton import NewtonOptions
from fesens.fem.post.fields import dof_gradients
from fesens.mesh.mesh import Mesh
from fesens.solvers.policy import is_auto, tangent_choice

_NEWTON_OPTIONS = tuple(f.name for f in dataclass_fields(NewtonOptions))


class NonlinearModel(FollowerLoads, WarmStart, Model):
    """Base class of every physics whose equations are nonlinear in the unknowns.

    Parameters
    ----------
    mesh : Mesh
    n_components : int
        Unknowns per node (``dim`` for displacements, 1 for a temperature).
    thickness : float
        Out-of-plane thickness (2D only; multiplies every integral).
    quadrature_order : int, optional
        Quadrature order of the cell integrals (default: the element's stiffness order;
        a flux of high polynomial degree may want more).

    Notes
    -----
    **A physics declares** (besides ``name``, ``field_name``, ``parameters``,
    ``solution_class`` (a :class:`NonlinearSolution` subclass) and ``config`` as for a
    linear physics), with ``n_cells, n_qp`` cells and quadrature points, ``n_comp``
    components and ``dim`` space dimensions:

    ``material_fields(**parameters) -> dict``
        The per-cell material fields ``(n_cells,)`` (or broadcastable, e.g. scalars) from
        the parameters, traced when a parameter is; checks the values (:meth:`checked`)
        and defaults to the model's. The density ``scale`` goes through here.
    ``flux(u_q, grad_q, fields)``
        ``P`` ``(n_cells, n_qp, n_comp, dim)`` (first Piola–Kirchhoff stress, heat flux
        ``k ∇T``) of the field ``u_q`` ``(n_cells, n_qp, n_comp)`` and its gradient
        ``grad_q`` ``(n_cells, n_qp, n_comp, dim)``, written in the traced numpy subset
        (plain ``numpy`` calls on possibly traced arrays); the fields arrive as
        ``material_fields`` gave them.
    ``flux_tangent(u_q, grad_q, fields) -> (dP_dgrad, dP_du)``
        Plain numpy, hand-derived: ``∂P/∂∇u`` ``(n_cells, n_qp, n_comp, dim, n_comp,
        dim)`` (for finite strain ``A_iJkL = ∂P_iJ/∂F_kL``) and ``∂P/∂u`` ``(n_cells,
        n_qp, n_comp, dim, n_comp)`` or None when ``P`` does not depend on ``u``.
    ``symmetric_tangent``, ``definite_tangent`` (class attributes)
        Whether the tangent is symmetric (a hyperelastic ``P = ∂W/∂F``: True; a
        conductivity ``k(T)``: False), and whether it stays positive definite at every
        Newton iterate (a hyperelastic body's need not: a compressed fibre, a slender
        beam's first predictor). ``auto`` is the model's choice for a symmetric, definite
        tangent; for a symmetric one that may be indefinite it is CHOLMOD with LU for each
        factorization found not positive definite (``cholmod_lu``, counted in the Newton
        report), and LU for a non-symmetric one
        (:func:`~fesens.solvers.policy.tangent_choice`); a non-symmetric tangent refuses a
        symmetric backend (Cholesky, CG).
    Optionally:
    ``energy(u_q, grad_q, fields)``
        The stored energy density ``W`` ``(n_cells, n_qp)`` (traced numpy), used by
        ``line_search="energy"`` and :meth:`stored_energy`; None (default): none.
    ``inadmissible(u_q, grad_q, fields) -> str | None``
        Plain numpy: why a state is outside the law's domain (``det F ≤ 0``, a
        conductivity ``≤ 0``), naming the cells; None where it is admissible. Newton then
        backtracks and cuts the load back.
    ``reference_state() -> (n_dofs,)``
        The unloaded state Newton starts from (default zeros).
    ``newton_defaults`` (class attribute)
        The physics' own defaults of the :class:`~fesens.fem.nonlinear.newton.NewtonOptions`
        (e.g. ``{"line_search": "energy"}``); the options given to :meth:`solve` and a
        config's ``[newton]`` override them key by key, and the options' own defaults fill
        the rest.

    **A user calls**: ``fix``, ``point_load``, ``surface_load``, ``volume_load``,
    ``follower_surface_load`` (a pressure on the deformed boundary, for a displacement
    field), ``solve``; ``internal_forces``, ``tangent``, ``residual``, ``describe``.

    **Threads**: a model may be shared by threads once its supports and loads are set.
    Each factorization of the tangent and the solves that read it hold the solver's lock;
    the adjoint factorizes Newton's last tangent again where another thread's solve
    replaced it; the warm start is each thread's own (:attr:`converged_state`). A
    thread's calls therefore return the bits they return alone.

    **Follower loads** (:meth:`follower_surface_load`, :meth:`follower_fields`,
    :meth:`fields_at`): see :class:`~fesens.fem.model.follower_loads.FollowerLoads`.
    """

    #: Whether ``∂R/∂u`` is symmetric, and positive definite at every iterate (together
    #: they decide what ``auto`` stands for).
    symmetric_tangent: ClassVar[bool] = True
    definite_tangent: ClassVar[bool] = True
    #: The largest relative change of the inputs for which a solve starts from the last
    #: converged state (an optimization loop) instead of the reference state.
    warm_start_tolerance: ClassVar[float] = 0.25
    #: The physics' defaults of the Newton options (read-only; see the class notes).
    newton_defaults: ClassVar[Mapping[str, object]] = MappingProxyType({})
    #: Whether the flux is a function of the current state only (no history, as in
    #: plasticity or damage), so that a converged state at a load factor is the solution
    #: of its own equilibrium, whatever path reached it: what the gradient of the states at
    #: several load factors (``solve(at_load_factors=...)``) relies on.
    path_independent: ClassVar[bool] = True
    solution_class: ClassVar[type[Solution]] = NonlinearSolution

    def __init__(self, mesh: Mesh, n_components: int, *, thickness: float = 1.0,
                 quadrature_order: int | None = None):
        super().__init__(mesh, n_components, thickness=thickness,
                         quadrature_order=quadrature_order)
        self._assembler: Assembler | None = None
        self._assembler_dofs: np.ndarray | None = None
        self._operators: dict[str, BlockOperator] = {}
        #: The follower loads by name (:meth:`follower_surface_load`).
        self.followers: dict[str, FollowerLoad] = {}
        self._warm = ThreadWarmStart()  # each thread's last converged solve

    # ------------------------------------------------------------ physics hooks
    @abstractmethod
    def material_fields(self, **parameters) -> dict:
        """The per-cell material fields from the parameters (see the class notes)."""

    @abstractmethod
    def flux(self, u_q, grad_q, fields):
        """``P`` ``(n_cells, n_qp, n_comp, dim)`` (traced numpy; see the class notes)."""

    @abstractmethod
    def flux_tangent(self, u_q, grad_q, fields) -> tuple:
        """``(∂P/∂∇u, ∂P/∂u or None)`` (plain numpy; see the class notes)."""

    def energy(self, u_q, grad_q, fields):
        """Optional: stored energy density ``(n_cells, n_qp)``; None (default): none."""
        return None

    def inadmissible(self, u_q, grad_q, fields) -> str | None:
        """Optional: why a state is outside the law's domain, or None (default)."""
        return None

    def reference_state(self) -> np.ndarray:
        """The unloaded state ``(n_dofs,)`` Newton starts from (default: zeros)."""
        return np.zeros(self.dofmap.n_dofs)

    # ------------------------------------------------------------ the pattern
    @property
    def assembler(self) -> Assembler:
        """The cached-pattern assembler for the current set of Dirichlet dofs (its cell
        matrices are placeholders: the tangent's cell matrices are new at every state)."""
        dofs = self.constrained_dofs
        if self._assembler is None or not np.array_equal(dofs, self._assembler_dofs):
            self._check_free_modes(dofs)
            nd = self.dofmap.cell_dofs.shape[1]
            self._assembler = Assembler(self.dofmap.cell_dofs, self.dofmap.n_dofs, dofs,
                                        [np.zeros((1, nd, nd))])
            self._assembler_dofs = dofs
            self._operators = {}
            self.converged_state = None  # another set of unknowns
        return self._assembler

    def operator(self, block: str = "ff") -> BlockOperator:
        """The block operator (``"ff"`` or ``"fc"``) of the current pattern; the solvers
        of its pattern keep their symbolic analysis across Newton iterations."""
        assembler = self.assembler
        if block not in self._operators:
            self._operators[block] = BlockOperator(assembler, block)
        return self._operators[block]

    def _matrix_free_refusal(self) -> str | None:
        return "a nonlinear model assembles its tangent at every Newton iteration"

    # ------------------------------------------------------------ residual and tangent
    def state(self, u_free, g):
        """The dof vector ``(n_dofs,)`` of free values ``(n_free,)`` and prescribed values
        ``g`` ``(n_constrained,)`` (traced when either is)."""
        return self._full_vector(u_free, g, bool(self.constrained_dofs.size), False)

    def _at_quadrature(self, u, points):
        """``(geometry, u_q (e, q, c), ∇u_q (e, q, c, k))`` of the state ``u`` (traced)."""
        geometry = self.geometry(points)
        mesh, n_comp = self.mesh, self.n_components
        u_cells = u[self.dofmap.cell_dofs]  # (n_cells, nd)
        if np.shape(geometry.dNdx)[0] > 1:
            nodal = np.reshape(u_cells, (mesh.n_cells, mesh.type_info.n_nodes, n_comp))
            return (geometry, np.matmul(geometry.N, nodal),
                    dof_gradients(geometry, u_cells, n_comp)[..., 0])
        # cells that share their shape functions' gradients: the values and gradients at
        # the points as one BLAS product (e·c, a) @ (a, q + q·k)
        n_qp, n_nodes, dim = np.shape(geometry.dNdx)[1:]
        by_component = np.reshape(np.swapaxes(np.reshape(
            u_cells, (mesh.n_cells, n_nodes, n_comp)), 1, 2), (mesh.n_cells * n_comp, n_nodes))
        shape = np.concatenate([np.transpose(geometry.N), np.reshape(
            np.transpose(geometry.dNdx[0], (1, 0, 2)), (n_nodes, n_qp * dim))], axis=1)
        at_points = np.reshape(by_component @ shape, (mesh.n_cells, n_comp, n_qp * (1 + dim)))
        u_q = np.swapaxes(at_points[:, :, :n_qp], 1, 2)
        grad_q = np.transpose(np.reshape(at_points[:, :, n_qp:], (mesh.n_cells, n_comp, n_qp,
                                                                   dim)), (0, 2, 1, 3))
        return geometry, u_q, grad_q

    def _weights(self, geometry):
        """``t dΩ`` ``(n_cells or 1, n_qp)``."""
        return geometry.dx * self._thickness()

    def _point_fluxes(self, geometry, u_q, grad_q, fields):
        """The flux the residual integrates at the quadrature points ``(n_cells, n_qp,
        n_comp, dim)``: the physics' :meth:`flux` (traced); a formulation whose flux
        couples a cell's points (a mean dilatation) overrides this with the geometry."""
        return self.flux(u_q, grad_q, fields)

    def internal_forces(self, u, fields: dict, points=None):
        """``F_a = Σ_q t dΩ_q P : ∇N_a`` over all dofs, ``(n_dofs,)``, minus the forces of
        the follower loads (their pressures among ``fields``: :meth:`follower_fields`);
        traced in ``u``, the fields and ``points``."""
        geometry, u_q, grad_q = self._at_quadrature(u, points)
        forces = self.flux_forces(geometry, self._point_fluxes(geometry, u_q, grad_q, fields))
        return self._subtract_follower_forces(forces, u, fields, points)

    def flux_forces(self, geometry, P):
        """``F_a = Σ_q t dΩ_q P : ∇N_a`` ``(n_dofs,)`` of fluxes ``P`` ``(n_cells, n_qp,
        n_comp, dim)`` at the quadrature points of ``geometry`` (traced)."""
        weighted = self._weights(geometry)[:, :, None, None] * P  # (e, q, c, k)
        n_cells, n_qp, n_comp, dim = np.shape(weighted)
        n_geom, _, n_nodes, _ = np.shape(geometry.dNdx)
        # Σ_qk (w P)_(e,c,qk) ∂N_a/∂x_(qk): one matrix product, a BLAS one where the cells
        # share their shape gradients (einsum's generic loop is several times slower)
        gradients = np.reshape(np.swapaxes(geometry.dNdx, 2, 3), (n_geom, n_qp * dim, n_nodes))
        weighted = np.transpose(weighted, (0, 2, 1, 3))  # (e, c, q, k)
        if n_geom == 1:
            cell_forces = np.reshape(np.reshape(weighted, (n_cells * n_comp, n_qp * dim))
                                     @ gradients[0], (n_cells, n_comp, n_nodes))
        else:
            cell_forces = np.matmul(np.reshape(weighted, (n_cells, n_comp, n_qp * dim)),
                                    gradients)
        return untake(np.reshape(np.swapaxes(cell_forces, 1, 2), (n_cells, -1)),
                      self.dofmap.cell_dofs, (self.dofmap.n_dofs,))

    def residual(self, u, fields: dict, f, points=None):
        """``R = F_int(u) − f`` on the free dofs, ``(n_free,)`` (traced)."""
        return (self.internal_forces(u, fields, points) - f)[self.free_dofs]

    def stored_energy(self, u, fields: dict, points=None):
        """``Σ_q t dΩ_q W`` (a float; traced when ``u``, a field or ``points`` is, so that it
        is an objective), or None when the physics declares no energy."""
        geometry, u_q, grad_q = self._at_quadrature(u, points)
        W = self.energy(u_q, grad_q, fields)
        if W is None:
            return None
        return np.sum(self._weights(geometry) * W)

    def inadmissibility(self, u, fields: dict, points=None) -> str | None:
        """Why the state ``u`` ``(n_dofs,)`` is inadmissible (plain), or None; a NaN in the
        state counts."""
        u = np.asarray(getval(u))
        if not np.all(np.isfinite(u)):
            return "the state contains NaN or infinity"
        _, u_q, grad_q = self._at_quadrature(u, points)
        return self.inadmissible(u_q, grad_q, _plain(fields))

    def tangent(self, u, fields: dict, points=None, block: str = "ff") -> PatternMatrix:
        """``∂R/∂u`` at the state ``u`` ``(n_dofs,)`` as the block (``"ff"``, ``"fc"``) of
        the cached pattern (plain arrays)."""
        K = self._cell_tangents(u, fields, points)
        self._add_follower_stiffness(K, u, _plain(fields), points)
        return self.operator(block).cell_matrix(K)

    def _cell_tangents(self, u, fields: dict, points) -> np.ndarray:
        """The cell matrices ``(n_cells, nd, nd)`` of ``∂R/∂u`` without the follower loads'
        stiffness, a new array (plain)."""
        geometry, _, dP_dgrad, dP_du = self._flux_tangent_at(u, fields, points)
        return self.cell_tangent_matrices(geometry, dP_dgrad, dP_du)

    def cell_tangent_matrices(self, geometry, dP_dgrad, dP_du=None) -> np.ndarray:
        """The cell matrices ``(n_cells, nd, nd)`` of flux tangents at the quadrature points
        of ``geometry`` (``∂P/∂∇u``, ``∂P/∂u`` of :meth:`flux_tangent`; plain)."""
        n_cells, n_qp = self.mesh.n_cells, np.shape(geometry.dx)[1]
        grad_shape = (n_cells, n_qp, self.n_components, self.mesh.dim)
        dNdx = np.broadcast_to(geometry.dNdx, (n_cells, *np.shape(geometry.dNdx)[1:]))
        weights = np.broadcast_to(self._weights(geometry), (n_cells, n_qp))
        dP_dgrad = np.broadcast_to(dP_dgrad, (*grad_shape, *grad_shape[2:]))
        K = gradient_form(weights, dNdx, dP_dgrad)
        if dP_du is not None:
            dP_du = np.broadcast_to(dP_du, (*grad_shape, self.n_components))
            K = K + np.einsum("eq,eqak,eqckd,qb->eacbd", weights, dNdx, dP_du, geometry.N,
                              optimize=True)
        nd = self.dofmap.cell_dofs.shape[1]
        return np.reshape(K, (n_cells, nd, nd))

    def transposed_tangent(self, u, fields: dict, points=None):
        """``v ↦ (∂R/∂u)ᵀ v`` at the state ``u`` ``(n_dofs,)`` for cell vectors ``v``
        ``(n_cells, n_nodes, n_comp)``, per cell (plain arrays): the tangent of
        :meth:`tangent` applied at the quadrature points, never formed (a product costs
        a small part of an assembly)."""
        geometry, _, dP_dgrad, dP_du = self._flux_tangent_at(u, fields, points)
        action = transposed_tangent_action(self._weights(geometry), geometry.dNdx, dP_dgrad,
                                           geometry.N, dP_du)
        points = None if points is None else np.asarray(getval(points))
        return self._with_follower_stiffness(action, np.asarray(getval(u)), _plain(fields),
                                             points)

    def _flux_tangent_at(self, u, fields: dict, points) -> tuple:
        """``(geometry, ∇u_q, ∂P/∂∇u, ∂P/∂u)`` at the state ``u`` (plain arrays)."""
        points = None if points is None else np.asarray(getval(points))
        geometry, u_q, grad_q = self._at_quadrature(np.asarray(getval(u)), points)
        return (geometry, grad_q, *self.flux_tangent(u_q, grad_q, _plain(fields)))

    # ------------------------------------------------------------ the solve
    def tangent_solver(self, solver=None, **options):
        """The solver instance of the tangent's pattern for ``solver`` (default
        :attr:`default_solver`; ``auto``: :func:`~fesens.solvers.policy.tangent_choice`,
        kept with its reason in :attr:`solver_choice`, unless the tangent is symmetric and
        definite, where it is the model's ``auto``).

        Raises
        ------
        SolverError
            A symmetric backend (Cholesky, CG, MINRES) for a non-symmetric tangent.
        """
        spec = solver or self.default_solver
        if isinstance(spec, str) and is_auto(spec):
            choice = tangent_choice(self.symmetric_tangent, self.definite_tangent)
            if choice is not None:
                self.solver_choice = choice
                spec = (str(choice), dict(choice.options))
        backend = self.solver(spec, **options)
        if backend.symmetric and not self.symmetric_tangent:
            raise SolverError(
                f"solver {backend.name!r} assumes a symmetric matrix, but the tangent of "
                f"{type(self).__name__} is not symmetric; use 'lu' (UMFPACK or SuperLU), "
                "'superlu' or 'gmres'")
        return backend

    def solve(self, *, solver=None, solver_options: dict | None = None,
              loads: dict | None = None, load_cases: list[dict] | None = None,
              dirichlet=None, points=None, steps: int | None = None, newton: dict | None = None,
              warm_start: bool = True, at_load_factors=None,
              **parameters) -> NonlinearSolution:
        """Solve ``R(u, θ) = 0`` by load-stepped Newton (traced when an input is).

        Parameters
        ----------
        solver : str, (str, dict) or LinearSolver, optional
            Backend of the tangent solves (default :attr:`default_solver`).
        solver_options : dict, optional
            Backend options.
        loads : dict, optional
            Magnitude of each named load term (default 1).
        load_cases : None
            Refused unless None: the states of several load cases are separate nonlinear
            solves (call :meth:`solve` once per case).
        dirichlet : array_like, optional
            Prescribed values ``g`` ordered like :attr:`constrained_dofs` (default: those
            given to :meth:`fix`).
        points : array_like, optional
            Node coordinates ``(n_points, dim)`` replacing the mesh's.
        steps : int, optional
            Equal load steps (default 1; the options' ``steps``).
        newton : dict, optional
            :class:`~fesens.fem.nonlinear.newton.NewtonOptions`: ``rtol``, ``atol``,
            ``max_iterations``, ``steps``, ``adaptive``, ``max_cutbacks``,
            ``line_search``, ``max_backtracks``; a key not given takes the physics'
            :attr:`newton_defaults`, then the options' default.
        warm_start : bool
            Start from this thread's last converged state (:attr:`converged_state`) when
            the inputs changed by at most :attr:`warm_start_tolerance` (relative): the
            answer then equals the one from :meth:`reference_state` to Newton's
            tolerance, not bit for bit (False: it depends on the inputs alone). Else
            from :meth:`reference_state`
            with the load applied by the load factor from 0 to 1 (external loads, follower
            pressures and prescribed values alike).
        at_load_factors : sequence of float, optional
            Load factors ``0 < t_1 < … < t_k ≤ 1`` whose converged states the solution
            keeps, differentiable (:meth:`NonlinearSolution.at`): the load steps end on
            each of them exactly, and the solve starts from :meth:`reference_state`
            (no warm start), the state at ``t_k`` being the equilibrium under ``t_k`` times
            the loads (follower pressures included) and prescribed values. The gradient
            of an objective costs one transposed solve per state it reads. Refused for a
            path-dependent physics (:attr:`path_independent` False).
        **parameters
            The physics' parameters.

        Returns
        -------
        NonlinearSolution
            Of the physics' :attr:`solution_class`; traced when an input is; its
            ``report`` holds the load steps, residual histories and cut-backs, and how
            many tangent factorizations fell back to LU and why.

        Raises
        ------
        NewtonError
            No convergence after the cut-backs: carries the residual history and the last
            converged load factor and state (``(n_dofs,)``).
        TypeError, ValueError, NonFiniteError, SolverError
            Unknown parameters or options, inputs of the wrong shape, NaN, a backend
            unfit for the tangent.
        """
        if load_cases is not None:
            raise ValueError(f"{type(self).__name__} solves one load case at a time: the "
                             "states of several load cases are separate nonlinear solves; "
                             "call solve(loads=...) once per case")
        self.check_parameters(parameters)
        options = self._newton_options(newton, steps)
        points = self.checked_points(points)
        fields = {**self.material_fields(**parameters), **self.follower_fields(loads)}
        if options.line_search == "energy" and type(self).energy is NonlinearModel.energy:
            raise ValueError(f"line_search='energy' needs a stored energy, which "
                             f"{type(self).__name__} does not declare; use 'residual'")
        f = self.load_vector(loads, points)
        g = self.prescribed_values() if dirichlet is None else dirichlet
        constrained = self.constrained_dofs
        if np.shape(getval(g)) != constrained.shape:
            raise ValueError(f"dirichlet values must have shape {constrained.shape}, "
                             f"got {np.shape(getval(g))}")
        if not np.all(np.isfinite(getval(g))):
            raise NonFiniteError("dirichlet values contain NaN or infinity")
        requested = self._load_factors(at_load_factors)
        stops = (*requested, 1.0) if requested and requested[-1] != 1.0 else requested
        backend = self.tangent_solver(solver, **(solver_options or {}))
        names = tuple(fields)
        problem = ResidualSolve(self, backend, options, names, warm_start, stops)
        inputs = (f, g, points, *(fields[k] for k in names))
        before = backend.stats
        try:
            if stops:
                states = solve_residual_at(problem, *inputs)
                u_free = states[-1]
            else:
                u_free = solve_residual(problem, *inputs)
        except (NewtonError, SolverError) as exc:
            exc.args = (f"{exc} (model: {self.describe()})", *exc.args[1:])
            raise
        problem.report.count_factorizations(before, backend.stats)
        u = self.state(u_free, g)
        g0 = np.asarray(problem.start_inputs[1], dtype=float)
        steps = LoadStepStates(requested, stops, states, g0, g) if stops else None
        return self.solution_class(
            self, u, f, [fields[k] for k in names], dict(parameters), loads, points,
            fields=fields, report=problem.report,
            prescribed=(g0, np.asarray(getval(g), dtype=float)), steps=steps)

    def _load_factors(self, at_load_factors) -> tuple[float, ...]:
        """The checked ``at_load_factors`` of :meth:`solve` (empty for None)."""
        if at_load_factors is None:
            return ()
        factors = np.asarray(at_load_factors, dtype=float)
        if (factors.ndim != 1 or factors.size == 0 or not np.all(np.isfinite(factors))
                or factors[0] <= 0 or factors[-1] > 1 or np.any(np.diff(factors) <= 0)):
            raise ValueError(f"at_load_factors must be increasing load factors in (0, 1], "
                             f"at least one, e.g. [0.5, 1.0]; got {at_load_factors!r}")
        if not self.path_independent:
            raise ValueError(
                f"{type(self).__name__} is path dependent (its flux carries history), so "
                "its state at a load factor is not the solution of that load's equilibrium "
                "alone and its gradient would need the adjoint of every step; solve "
                "without at_load_factors, once per load level")
        return tuple(float(t) for t in factors)

    def _newton_options(self, newton: dict | None, steps: int | None) -> NewtonOptions:
        given = {**self.newton_defaults, **(newton or {})}
        unknown = set(given) - set(_NEWTON_OPTIONS)
        if unknown:
            raise TypeError(f"unknown newton option(s) {sorted(unknown)}; options: "
                            f"{', '.join(_NEWTON_OPTIONS)}")
        if steps is not None:
            given["steps"] = steps
        if self.followers and given.get("line_search") == "energy":
            # the energy the search reads leaves out the follower loads' work, which has
            # no potential in general; a config's [newton] always names a line search (the
            # physics' default), so the search falls back to the residual, as documented
            given["line_search"] = "residual"
        return NewtonOptions(**given)


def _plain(fields: dict) -> dict:
    return {k: np.asarray(getval(v)) for k, v in fields.items()}

"""The common part of linear FEM models: Dirichlet conditions, loads, assembly, the solve.

A model owns a mesh, a dof map, named load terms and Dirichlet conditions, and everything
cached for them: the assembler (pattern + gather matrices, rebuilt only when the *set* of
constrained dofs changes), the cell matrices and geometry of the reference coordinates,
and, through the pattern, the solver instances (one symbolic analysis per pattern, shared
by plain and traced solves).

A physics (:mod:`fesens.physics`) subclasses :class:`LinearModel` and declares its
parameters, its cell matrices as functions of the node coordinates, and the per-cell
coefficients of those matrices.

**One solve path.** :meth:`LinearModel.solve` is the program :func:`fesens.ad.grad`
traces::

    c_k = coefficients(θ)                    per-cell, elementwise
    data(K_ff) = Σ_k G_k c_k                 gather matrices built once per mesh
                 or S vec(Σ_k c_k K⁽ᵏ⁾_e(X))  cell matrices of traced coordinates X
    rhs = f_f(m, X) − K_fc g                 Dirichlet lift
    u_f = solve(K_ff, rhs)                   factor once; adjoint reuses it
    u = P_fᵀ u_f + P_cᵀ g

On plain arrays every primitive runs its raw function, so a forward-only solve pays no
tracing; with traced inputs the backward pass is ``λ = K_ff⁻ᵀ ū_f``,
``K̄ = −λ u_fᵀ`` kept as outer factors (never formed), ``c̄_k = a_eᵀ K⁽ᵏ⁾_e b_e`` per cell.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from fesens.ad.lattice import lattice_solve
from fesens.ad.numpy_wrapper import getval
from fesens.ad.sparse import matvec, solve
from fesens.errors import (
    NonFiniteError,
    SolverError,
)
from fesens.fem.assembly.assembler import Assembler
from fesens.fem.assembly.primitives import BlockOperator, assemble, assemble_at_points, unfolded
from fesens.fem.model.base import Model
from fesens.fem.model.mass import MassMatrices
from fesens.fem.model.matrix_free import matrix_free_system
from fesens.fem.model.solution import Solution
from fesens.fem.model.springs import SpringSupports
from fesens.fem.post.fields import dof_gradients
from fesens.mesh.mesh import Mesh


class LinearModel(Model, SpringSupports, MassMatrices):
    """Base class of every physics whose equations are linear in the unknowns
    (:mod:`fesens.physics`): ``K(θ, X) u = f(θ, X)``.

    Parameters
    ----------
    mesh : Mesh
    n_components : int
        Unknowns per node.
    thickness : float
        Out-of-plane thickness (2D only; multiplies every integral).
    quadrature_order : int, optional
        Quadrature order of the stiffness integrals (default: exact for affine cells).

    Notes
    -----
    The public surface, by who uses it (``tests/fem/test_model_surface.py`` keeps this list
    equal to the class's public members):

    **A physics declares** (class attributes and hooks):
    ``name``, ``field_name``, ``field_unit``, ``parameters``, ``solution_class``,
    ``default_solver``, ``bars``; ``cell_matrices``, ``stiffness_fields``; optionally
    ``parameter_load``, ``integrand_values``, ``integrand_fluxes``. And ``config``, its
    configuration fragment (a ``fesens.physics.spec.PhysicsConfig``, required by the physics
    registry, which checks the declarations).

    **A user calls** (set up, solve, inspect):
    ``fix``, ``spring``, ``point_load``, ``surface_load``, ``volume_load``; ``solve``;
    ``modes`` (deprecated: :class:`~fesens.fem.analysis.modal.ModalAnalysis`, which
    attaches it for one release);
    ``stiffness``, ``mass``, ``load_vector``, ``describe``, ``solver``,
    ``parameter_names``, ``free_dofs``, ``constrained_dofs``, ``prescribed_values``,
    ``n_components``, ``check_supports``.

    **The layers above read** (objectives, filters, the optimizers, the config, MPI):
    ``assembler``, ``operator``, ``mass_operator``, ``coefficients``, ``cell_bilinear``,
    ``has_integrand``, ``geometry``, ``averaged_geometry``, ``cell_volumes``,
    ``scaled_thickness``, ``checked``, ``checked_points``, ``check_parameters``,
    ``dirichlet_values``,
    ``solver_choice``, ``auto_solver``, ``near_nullspace``, ``with_near_nullspace``,
    ``partition``, ``springs``, ``warm_start_arrays``, ``restore_warm_start``.

    Threads: a model may be shared by threads once its supports and loads are set:
    its solves and their gradients hold the solver instance's lock around each
    factorization and the solves that read it (the adjoint factorizes again where another
    thread's solve replaced it), so each call returns the bits it returns alone.

    What is common to every model (mesh, dofs, conditions, loads, geometry, solver choice)
    lives in :class:`~fesens.fem.model.base.Model`; the Dirichlet conditions, the load
    terms, the solver choice and the mass matrix are its mixins
    (:mod:`~fesens.fem.model.dirichlet`, :mod:`~fesens.fem.model.load_terms`,
    :mod:`~fesens.fem.model.solvers`, :mod:`~fesens.fem.model.mass`), and so are the
    spring supports (:mod:`~fesens.fem.model.springs`), added to every ``K_ff`` the model
    assembles (solves, modes, buckling). The analyses of a model (:mod:`fesens.fem.analysis`)
    import it, never the reverse.
    """

    def __init__(self, mesh: Mesh, n_components: int, *, thickness: float = 1.0,
                 quadrature_order: int | None = None):
        super().__init__(mesh, n_components, thickness=thickness,
                         quadrature_order=quadrature_order)
        self._assembler: Assembler | None = None
        self._assembler_dofs: np.ndarray | None = None
        self._operators: dict[str, BlockOperator] = {}
        self._cell_matrices: list[np.ndarray] | None = None
        self._springs: dict[int, float] = {}

    # ------------------------------------------------------------ physics hooks
    @abstractmethod
    def cell_matrices(self, points=None) -> list:
        """Component cell matrices ``K⁽ᵏ⁾``, each ``(n_cells or 1, nd, nd)``.

        ``points`` ``(n_points, dim)``, possibly traced: the node coordinates (default: the
        mesh's, whose matrices are computed once and kept).
        """

    @abstractmethod
    def stiffness_fields(self, **parameters) -> tuple[tuple[float, ...] | None, list]:
        """What the assembler needs: ``(w, [s])`` when ``c_k = w_k s`` with constant
        weights ``w`` (one gather per assembly), else ``(None, [c_k])``.

        Each field is ``(n_cells,)`` and traced when a parameter is; parameters are
        checked (:meth:`checked`) and default to the model's values.
        """

    def parameter_load(self, points=None, **parameters):
        """The part of the load vector that depends on the physics' parameters (e.g. a
        convection's ``h T∞ ∫ N``, a thermal strain's ``∫ Bᵀ D ε_th``): ``(n_dofs,)``, traced
        when a parameter or ``points`` is, added to every load case; None (default): none."""
        return None

    def coefficients(self, **parameters) -> list:
        """Per-cell coefficients ``c_k`` of the component matrices, each ``(n_cells,)``."""
        return unfolded(*self.stiffness_fields(**parameters))

    def cell_bilinear(self, points, a_cells, b_cells) -> list:
        """``a_eᵀ K⁽ᵏ⁾_e(X) b_e`` per component and cell, each ``(n_cells,)`` (traced in X).

        ``a_cells``, ``b_cells``: ``(n_cells, nd)`` or ``(n_cells, nd, n_cases)`` (summed
        over the cases). What shape sensitivities differentiate (see
        :func:`~fesens.fem.assembly.primitives.assemble_at_points`): ``Σ_q dΩ F_k`` with the
        physics'
        :meth:`integrand_values`, or, for a physics without one, from the cell matrices.
        """
        if not self.has_integrand():
            spec = "eic,eij,ejc->e" if np.ndim(a_cells) == 3 else "ei,eij,ej->e"
            return [np.einsum(spec, a_cells, Kk, b_cells) for Kk in self.cell_matrices(points)]
        geometry = self.geometry(points)
        values = self.integrand_values(dof_gradients(geometry, a_cells, self.n_components),
                                       dof_gradients(geometry, b_cells, self.n_components))
        return [np.sum(geometry.dx * v, axis=1) for v in values]

    def has_integrand(self) -> bool:
        """Whether the physics declares :meth:`integrand_values` and :meth:`integrand_fluxes`
        (then shape gradients use the hand-derived rule of :mod:`fesens.fem.integrals.shape`)."""
        return type(self).integrand_values is not LinearModel.integrand_values

    def integrand_values(self, grad_a, grad_b) -> list:
        """Optional: the integrands ``F_k`` of ``a_eᵀ K⁽ᵏ⁾_e b_e = Σ_q dΩ_q F_k``.

        Parameters
        ----------
        grad_a, grad_b : array
            Field gradients at the quadrature points, ``(n_cells, n_qp, n_comp, dim,
            n_cases)`` (:func:`~fesens.fem.post.fields.dof_gradients`).

        Returns
        -------
        list
            One ``(n_cells, n_qp)`` array per component (summed over the cases); written in
            the traced numpy subset.
        """
        raise NotImplementedError

    def integrand_fluxes(self, grad_a, grad_b, coefficients) -> tuple:
        """Optional, with :meth:`integrand_values`: ``∂F/∂∇a`` and ``∂F/∂∇b`` of
        ``F = Σ_k c_k F_k``, each shaped like ``grad_a``; ``coefficients``: ``c_k``
        ``(n_cells,)``."""
        raise NotImplementedError



    # ------------------------------------------------------------ geometry



    def _reference_cell_matrices(self) -> list[np.ndarray]:
        if self._cell_matrices is None:
            self._cell_matrices = self.cell_matrices()
        return self._cell_matrices

    # ------------------------------------------------------------ assembly
    @property
    def assembler(self) -> Assembler:
        """The cached-pattern assembler for the current set of Dirichlet dofs."""
        dofs = self.constrained_dofs
        if self._assembler is None or not np.array_equal(dofs, self._assembler_dofs):
            # a spring holds its dof against rigid motion as a support does
            self._check_free_modes(np.union1d(dofs, np.fromiter(self._springs, np.int64)))
            self._assembler = Assembler(
                self.dofmap.cell_dofs, self.dofmap.n_dofs, dofs, self._reference_cell_matrices()
            )
            self._assembler_dofs = dofs
            self._operators = {}
        return self._assembler

    def operator(self, block: str = "ff", weights=None) -> BlockOperator:
        """The traceable operator of a block (``"ff"`` or ``"fc"``) of the current assembler,
        folded for ``weights`` (see :meth:`BlockOperator.folded`)."""
        assembler = self.assembler
        key = block if weights is None else (block, tuple(float(w) for w in weights))
        if key not in self._operators:
            base = self._operators.get(block)
            if base is None:
                base = self._operators[block] = BlockOperator(assembler, block)
            self._operators[key] = base if weights is None else base.folded(weights)
        return self._operators[key]




    def stiffness(self, block: str = "ff", points=None, **parameters):
        """Traced block of ``K`` (``"ff"``: ``K_ff``, ``"fc"``: ``K_fc``) as a
        :class:`~fesens.ad.sparse.PatternMatrix`, for the parameters and coordinates."""
        weights, fields = self.stiffness_fields(**parameters)
        return self._block_matrix(block, weights, fields, points)

    def _block_matrix(self, block, weights, fields, points):
        if points is None:
            K = assemble(self.operator(block, weights), *fields)
        else:
            K = assemble_at_points(self.operator(block), self, weights, points, *fields)
        return self._with_springs(K) if block == "ff" else K

    # ------------------------------------------------------------ the solve
    def solve(
        self,
        *,
        solver=None,
        solver_options: dict | None = None,
        loads: dict | None = None,
        load_cases: list[dict] | None = None,
        dirichlet=None,
        points=None,
        **parameters,
    ) -> Solution:
        """Assemble and solve ``K_ff u_f = f_f − K_fc g`` (traced when an input is).

        Parameters
        ----------
        solver : str, (str, dict) or LinearSolver, optional
            Backend (default :attr:`default_solver`; see :meth:`solver`).
        solver_options : dict, optional
            Backend options (tolerances, preconditioner, ...).
        loads : dict, optional
            Magnitude of each named load term (default 1).
        load_cases : list of dict, optional
            Several load cases (each a ``loads`` dict) solved with one factorization;
            ``solution.u`` is then ``(n_dofs, n_cases)``.
        dirichlet : array_like, optional
            Prescribed values ``g`` ordered like :attr:`constrained_dofs` (default: the
            values given to :meth:`fix`).
        points : array_like, optional
            Node coordinates ``(n_points, dim)`` replacing the mesh's (shape
            sensitivities: differentiate with respect to them). Load densities and
            prescribed values given as functions are evaluated at the mesh's coordinates.
        **parameters
            The physics' parameters (:attr:`parameters`), overriding the model's values.

        Returns
        -------
        Solution
            Of the physics' :attr:`solution_class`; traced when an input is.

        Raises
        ------
        TypeError
            Unknown parameter names.
        ValueError, NonFiniteError
            Parameters, Dirichlet values or coordinates of the wrong shape, NaN.
        DegenerateElementError
            Coordinates that invert or collapse a cell (the cell ids are listed).
        SolverError
            From the backend (singular, not positive definite, not converged).
        """
        if loads is not None and load_cases is not None:
            raise TypeError("give either loads or load_cases, not both")
        self.check_parameters(parameters)
        points = self.checked_points(points)
        weights, fields = self.stiffness_fields(**parameters)
        backend = self.solver(solver, **(solver_options or {}))
        matrix_free = backend.matrix_free
        K = None if matrix_free else self._block_matrix("ff", weights, fields, points)
        if load_cases is None:
            f = self.load_vector(loads, points)
        else:
            f = np.stack([self.load_vector(case, points) for case in load_cases], axis=1)
        extra = self.parameter_load(points, **parameters)
        if extra is not None:  # in every load case
            f = f + (extra if load_cases is None else extra[:, None])
        constrained = self.constrained_dofs
        g = self.dirichlet_values(dirichlet)
        rhs = f[self.free_dofs]
        # Given (possibly traced) or non-zero Dirichlet values only: for the usual
        # homogeneous supports K_fc is not even assembled, and u is zero there already.
        prescribed = bool(constrained.size) and (dirichlet is not None or bool(np.any(g)))
        try:
            if matrix_free:
                system = matrix_free_system(self, weights, points=points,
                                            prescribed=prescribed)
                u_free = lattice_solve(system, fields[0], rhs, backend)
            else:
                if prescribed:
                    lift = matvec(self._block_matrix("fc", weights, fields, points), g)
                    rhs = rhs - (lift if load_cases is None else lift[:, None])
                u_free = solve(K, rhs, solver=backend)
        except SolverError as exc:
            exc.args = (f"{exc} (model: {self.describe()})", *exc.args[1:])
            raise
        u = self._full_vector(u_free, g, prescribed, load_cases is not None)
        if not np.all(np.isfinite(getval(u))):
            raise NonFiniteError("the solution contains NaN or infinity")
        coefficients = unfolded(weights, fields)
        return self.solution_class(self, u, f, coefficients, dict(parameters),
                                   loads if load_cases is None else load_cases, points)





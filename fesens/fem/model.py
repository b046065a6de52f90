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

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from fesens.ad.lattice import lattice_solve
from fesens.ad.numpy_wrapper import getval, untake
from fesens.ad.sparse import matvec, solve
from fesens.errors import (
    MeshError,
    NonFiniteError,
    SingularMatrixError,
    SolverError,
)
from fesens.fem.assemble import BlockOperator, assemble, assemble_at_points, unfolded
from fesens.fem.assembler import Assembler
from fesens.fem.dirichlet import DirichletConditions
from fesens.fem.dofs import DofMap
from fesens.fem.geometry import CellGeometry, cell_geometry
from fesens.fem.load_terms import LoadTerms
from fesens.fem.matrix_free import matrix_free_system
from fesens.fem.modal import ModalAnalysis
from fesens.fem.model_solvers import SolverChoice
from fesens.fem.parameters import SCALE, Parameter
from fesens.fem.postprocess import dof_gradients
from fesens.fem.rigid_modes import free_rigid_modes
from fesens.fem.shape import averaged_gradients, cell_volumes
from fesens.fem.solution import Solution
from fesens.mesh.cell_types import BAR_CELL_TYPES
from fesens.mesh.connectivity import node_parts
from fesens.mesh.mesh import Mesh
from fesens.readonly import snapshot, unchanged


class LinearModel(DirichletConditions, LoadTerms, SolverChoice, ModalAnalysis, ABC):
    """Base class of every physics (:mod:`fesens.physics`).

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
    A subclass declares, in one place:

    * :attr:`name` (the registry and config name), :attr:`field_name` and
      :attr:`field_unit` (output), :attr:`parameters` (what :meth:`solve` accepts besides
      ``scale``, ``loads``, ``dirichlet`` and ``points``);
    * :meth:`cell_matrices` (the component matrices ``K⁽ᵏ⁾``, traced functions of the node
      coordinates) and :meth:`stiffness_fields` (their per-cell coefficients);
    * :attr:`solution_class`, the physics' post-processing;
    * ``config``, its configuration fragment (a ``fesens.physics.spec.PhysicsConfig``,
      required by the physics registry): what a config file may say about it.
    """

    #: Registry name of the physics (config ``physics.type``).
    name: ClassVar[str] = ""
    #: Name and unit hint of the nodal field in output files.
    field_name: ClassVar[str] = "u"
    field_unit: ClassVar[str] = ""
    #: The parameters :meth:`solve` accepts (``scale`` is common to all models).
    parameters: ClassVar[Mapping[str, Parameter]] = {"scale": SCALE}
    #: Post-processing of this physics' solutions.
    solution_class: ClassVar[type[Solution]] = Solution
    #: Backend used when :meth:`solve` is given no solver.
    default_solver: ClassVar[str] = "auto"
    #: True: the physics discretises bars (1D cells in 2D/3D space, ``BAR_CELL_TYPES``);
    #: False: volume cells only.
    bars: ClassVar[bool] = False

    def __init__(
        self,
        mesh: Mesh,
        n_components: int,
        *,
        thickness: float = 1.0,
        quadrature_order: int | None = None,
    ):
        if not np.isfinite(thickness) or thickness <= 0:
            raise ValueError(f"thickness must be a positive number, got {thickness!r}")
        if mesh.dim == 3 and thickness != 1.0:
            raise ValueError("thickness applies to 2D models only")
        if (mesh.cell_type in BAR_CELL_TYPES) != self.bars:
            wanted = "bars (line2 cells)" if self.bars else "volume cells"
            raise MeshError(f"{type(self).__name__} needs a mesh of {wanted}, got "
                            f"{mesh.cell_type} cells")
        self.mesh = mesh
        self.dofmap = DofMap(mesh, n_components)
        self.thickness = float(thickness)
        self.quadrature_order = quadrature_order
        self._init_loads()
        self._dirichlet: dict[int, float] = {}
        self._assembler: Assembler | None = None
        self._assembler_dofs: np.ndarray | None = None
        self._operators: dict[str, BlockOperator] = {}
        self._cell_matrices: list[np.ndarray] | None = None
        self._geometry: dict[int | None, CellGeometry] = {}
        self._moved_geometry: dict[int | None, tuple] = {}
        self._averaged: tuple | None = None

    @classmethod
    def parameter_names(cls) -> tuple[str, ...]:
        """Names of the parameters :meth:`solve` accepts."""
        return tuple(cls.parameters)

    def _thickness(self) -> float:
        return self.thickness if self.mesh.dim == 2 else 1.0

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
        :func:`~fesens.fem.assemble.assemble_at_points`): ``Σ_q dΩ F_k`` with the physics'
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
        (then shape gradients use the hand-derived rule of :mod:`fesens.fem.shape`)."""
        return type(self).integrand_values is not LinearModel.integrand_values

    def integrand_values(self, grad_a, grad_b) -> list:
        """Optional: the integrands ``F_k`` of ``a_eᵀ K⁽ᵏ⁾_e b_e = Σ_q dΩ_q F_k``.

        Parameters
        ----------
        grad_a, grad_b : array
            Field gradients at the quadrature points, ``(n_cells, n_qp, n_comp, dim,
            n_cases)`` (:func:`~fesens.fem.postprocess.dof_gradients`).

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

    def checked(self, name: str, value):
        """``value`` of parameter ``name`` broadcast to ``(n_cells,)`` after its checks.

        Traced values stay traced; the checks read the raw values.
        """
        self.parameters[name].check(value, self.mesh.n_cells)
        return value * np.ones(self.mesh.n_cells)

    def scaled_thickness(self, scale=None):
        """``s t``: the density scale (checked; per cell, or 1) times the thickness."""
        if scale is None:
            return self._thickness()
        return self._thickness() * self.checked("scale", scale)

    # ------------------------------------------------------------ geometry
    def geometry(self, points=None, order: int | None = None) -> CellGeometry:
        """Quadrature data of all cells for ``points`` (default: the mesh's, kept).

        The geometry of the last plain ``points`` array is kept too (a solve at moved nodes
        and its shape gradient share it); traced points are always recomputed.
        """
        order = self.quadrature_order if order is None else order
        if points is not None:
            if type(points) is not np.ndarray:
                return cell_geometry(self.mesh, order, points=points)
            kept = self._moved_geometry.get(order)
            if kept is None or not unchanged(kept[0], points):
                kept = self._moved_geometry[order] = (snapshot(points),
                                                      cell_geometry(self.mesh, order, points))
            return kept[1]
        if order not in self._geometry:
            self._geometry[order] = cell_geometry(self.mesh, order)
        return self._geometry[order]

    def averaged_geometry(self, points=None) -> tuple:
        """Volume-averaged ``∂N_a/∂x_k`` per cell ``(n_geom, n_nodes, dim)`` and the cell
        volumes ``(n_cells,)`` (2D: areas, without the thickness), kept for the mesh's
        coordinates; traced for traced ``points``."""
        if points is not None:  # differentiable in the points (fesens.fem.shape's rules)
            return averaged_gradients(self, points), cell_volumes(self, points)
        if self._averaged is None:
            gbar, volumes = averaged_gradients(self, None), cell_volumes(self, None)
            self._averaged = (gbar, np.broadcast_to(volumes, (self.mesh.n_cells,)).copy())
        return self._averaged

    def cell_volumes(self, points=None):
        """Cell volumes (2D: areas), ``(n_cells,)``; traced for traced ``points``."""
        return self.averaged_geometry(points)[1]

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
            self._check_free_modes(dofs)
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

    def check_supports(self) -> None:
        """Refuse Dirichlet conditions that leave a rigid-body motion free.

        Raises
        ------
        SingularMatrixError
            Naming the free motions.
        """
        self._check_free_modes(self.constrained_dofs)

    def _check_free_modes(self, dofs: np.ndarray) -> None:
        if self.partition is not None and self.partition.size > 1:
            return  # a rank's part: the whole model's conditions were checked
        free = free_rigid_modes(self.mesh.points, dofs, self.n_components)
        if free:
            raise SingularMatrixError(
                "the stiffness matrix is singular: Dirichlet conditions are missing; "
                f"free rigid-body motion(s): {', '.join(free)}. Fix more nodes or components "
                "with model.fix(...)."
            )
        self._check_parts(dofs)

    def _check_parts(self, dofs: np.ndarray) -> None:
        """Refuse a part of the mesh, joined to the rest by no cell, that its own Dirichlet
        conditions leave free to move (its stiffness rows are singular on their own)."""
        n_parts, part = node_parts(self.mesh.cells, self.mesh.n_points)
        if n_parts == 1:
            return
        nc = self.n_components
        # each node's index within its part: the parts' nodes in order, numbered from 0
        order = np.argsort(part, kind="stable")
        starts = np.searchsorted(part[order], np.arange(n_parts))
        local = np.empty(self.mesh.n_points, dtype=np.int64)
        local[order] = np.arange(self.mesh.n_points) - starts[part[order]]
        cells_per_part = np.bincount(part[self.mesh.cells[:, 0]], minlength=n_parts)
        for p in np.flatnonzero(cells_per_part):  # nodes of no cell are not this check's
            nodes = order[starts[p]:starts[p] + np.count_nonzero(part == p)]
            mine = dofs[part[dofs // nc] == p]
            free = free_rigid_modes(self.mesh.points[nodes], local[mine // nc] * nc + mine % nc,
                                    nc)
            if free:
                n_cells = int(cells_per_part[p])
                centre = ", ".join(f"{c:.4g}" for c in self.mesh.points[nodes].mean(axis=0))
                raise SingularMatrixError(
                    f"the stiffness matrix is singular: part {p + 1} of the {n_parts} parts of "
                    f"the mesh ({n_cells} cells, {len(nodes)} nodes, around ({centre})) is "
                    "joined to the rest by no cell and its Dirichlet conditions leave free: "
                    f"{', '.join(free)}. Merge its nodes with the rest where they coincide "
                    "(e.g. Gmsh's Coherence, meshio's merge tolerance) or fix it")

    def stiffness(self, block: str = "ff", points=None, **parameters):
        """Traced block of ``K`` (``"ff"``: ``K_ff``, ``"fc"``: ``K_fc``) as a
        :class:`~fesens.ad.sparse.PatternMatrix`, for the parameters and coordinates."""
        weights, fields = self.stiffness_fields(**parameters)
        return self._block_matrix(block, weights, fields, points)

    def _block_matrix(self, block, weights, fields, points):
        if points is None:
            return assemble(self.operator(block, weights), *fields)
        return assemble_at_points(self.operator(block), self, weights, points, *fields)

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
        g = self.prescribed_values() if dirichlet is None else dirichlet
        if np.shape(getval(g)) != constrained.shape:
            raise ValueError(f"dirichlet values must have shape {constrained.shape}, "
                             f"got {np.shape(getval(g))}")
        if not np.all(np.isfinite(getval(g))):
            raise NonFiniteError("dirichlet values contain NaN or infinity")
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

    def _full_vector(self, u_free, g, prescribed: bool, several: bool):
        """``u = P_fᵀ u_f + P_cᵀ g``: ``(n_dofs,)``, or ``(n_dofs, n_cases)``."""
        n = self.dofmap.n_dofs
        shape = (n, np.shape(u_free)[1]) if several else (n,)
        u = untake(u_free, self.free_dofs, shape, unique=True)
        if prescribed:
            lifted = untake(g, self.constrained_dofs, (n,), unique=True)
            u = u + (lifted[:, None] if several else lifted)
        return u

    def checked_points(self, points):
        """``points`` (possibly traced) after checking shape and finiteness; None stays."""
        if points is None:
            return None
        raw = np.asarray(getval(points), dtype=float)
        expected = self.mesh.points.shape
        if raw.shape != expected:
            raise ValueError(f"points must have shape {expected} (n_points, dim) like "
                             f"mesh.points, got {raw.shape}")
        if not np.all(np.isfinite(raw)):
            bad = np.flatnonzero(~np.isfinite(raw).all(axis=1))
            raise NonFiniteError(f"points contain NaN or infinity at node(s) "
                                 f"{bad[:20].tolist()}{' ...' if bad.size > 20 else ''}")
        return raw if getval(points) is points else points  # lists and ints as float arrays

    def describe(self) -> str:
        """One line: physics, mesh and dof counts."""
        return (
            f"{type(self).__name__} on {self.mesh.n_cells} {self.mesh.cell_type} cells, "
            f"{self.dofmap.n_dofs} dofs, {len(self._dirichlet)} constrained"
        )

    @classmethod
    def check_parameters(cls, parameters) -> None:
        """Raise TypeError naming the unknown parameter names and the accepted ones."""
        unknown = set(parameters) - set(cls.parameters)
        if unknown:
            raise TypeError(
                f"unknown parameter(s) {sorted(unknown)}; {cls.__name__} accepts "
                f"{', '.join(cls.parameters)} (and loads, load_cases, dirichlet, points)"
            )

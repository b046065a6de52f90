"""The common part of linear FEM models: Dirichlet conditions, loads, assembly, solve.

A model owns a mesh, a dof map, named load terms and Dirichlet conditions. The assembler
(pattern + gather matrices) is built lazily and cached until the *set* of constrained dofs
changes; changing prescribed values, loads or material parameters never rebuilds it.

Inhomogeneous Dirichlet values ``g`` enter through the lift (DESIGN.md):
``K_ff u_f = f_f − K_fc g``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from fesens.errors import (
    BoundaryConditionError,
    NonFiniteError,
    SingularMatrixError,
    SolverError,
)
from fesens.fem.assembler import Assembler
from fesens.fem.dofs import DofMap
from fesens.fem.loads import (
    FieldSpec,
    evaluate_field,
    point_load_vector,
    surface_load_vector,
    volume_load_vector,
)
from fesens.fem.rigid_modes import free_rigid_modes, rigid_body_modes
from fesens.mesh.mesh import Mesh, Predicate
from fesens.solvers import IterativeSolver, LinearSolver, make_solver

Where = str | Predicate


class LinearModel(ABC):
    """Base class of :class:`~fesens.fem.elasticity.Elasticity` and
    :class:`~fesens.fem.conduction.HeatConduction`.

    Parameters
    ----------
    mesh : Mesh
    n_components : int
        Unknowns per node.
    thickness : float
        Out-of-plane thickness (2D only; multiplies every integral).
    quadrature_order : int, optional
        Quadrature order of the stiffness integrals (default: exact for affine cells).
    """

    #: Names of the cell-coefficient parameters accepted by :meth:`coefficients`.
    parameter_names: tuple[str, ...] = ()

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
        self.mesh = mesh
        self.dofmap = DofMap(mesh, n_components)
        self.thickness = float(thickness)
        self.quadrature_order = quadrature_order
        self.loads: dict[str, np.ndarray] = {}
        self._dirichlet: dict[int, float] = {}
        self._assembler: Assembler | None = None
        self._assembler_dofs: np.ndarray | None = None
        self._cell_matrices: list[np.ndarray] | None = None
        self._solvers: dict[str, LinearSolver] = {}

    # ------------------------------------------------------------ boundary conditions
    @property
    def n_components(self) -> int:
        return self.dofmap.n_components

    def fix(self, where: Where, components=None, value: FieldSpec = 0.0) -> LinearModel:
        """Prescribe values on the nodes of a named set or a coordinate predicate.

        Parameters
        ----------
        where : str or callable
            Node-set / facet-set name, or predicate ``f(points) -> bool mask``.
        components : int or list of int, optional
            Components to fix (default: all).
        value : float, sequence or callable
            Prescribed value(s): a scalar for every fixed component, one value per fixed
            component, or ``f(points (n, dim)) -> (n, n_fixed_components)``.

        Returns
        -------
        LinearModel
            ``self``, so calls can be chained.
        """
        nodes = self.mesh.nodes(where)
        if nodes.size == 0:
            raise BoundaryConditionError(f"Dirichlet condition on {where!r} selects no node")
        comps = self.dofmap.components(components)
        if np.ndim(value) == 0 and not callable(value):
            value = np.full(comps.size, float(value))
        values = evaluate_field(value, self.mesh.points[nodes], comps.size, "prescribed value")
        if not np.all(np.isfinite(values)):
            raise NonFiniteError(f"prescribed values on {where!r} contain NaN or infinity")
        dofs = self.dofmap.node_dofs(nodes, comps)
        self._dirichlet.update(zip(dofs.ravel().tolist(), values.ravel().tolist(), strict=True))
        return self

    @property
    def constrained_dofs(self) -> np.ndarray:
        """Sorted global ids of the Dirichlet dofs."""
        return np.array(sorted(self._dirichlet), dtype=np.int64)

    def prescribed_values(self) -> np.ndarray:
        """Prescribed values ``g``, ordered like :attr:`constrained_dofs`."""
        return np.array([self._dirichlet[d] for d in sorted(self._dirichlet)], dtype=float)

    # ------------------------------------------------------------ loads
    def _add_load(self, name: str | None, kind: str, vector: np.ndarray) -> str:
        name = name or f"{kind}{len(self.loads)}"
        if name in self.loads:
            raise BoundaryConditionError(f"a load named {name!r} exists already")
        if not np.all(np.isfinite(vector)):
            raise NonFiniteError(f"load {name!r} contains NaN or infinity")
        self.loads[name] = vector
        return name

    def point_load(self, at, value: FieldSpec, *, name: str | None = None) -> str:
        """Concentrated load(s).

        Parameters
        ----------
        at : str, callable or coordinates
            A node-set name or predicate (``value`` is applied at *each* selected node), or
            the coordinates of a point (applied at the nearest node).
        value : float, sequence or callable
            Force vector (elasticity) or heat input (conduction) per node.
        name : str, optional
            Name of the load term (default: generated); returned.
        """
        if isinstance(at, str) or callable(at):
            nodes = self.mesh.nodes(at)
        else:
            nodes = np.array([self.mesh.nearest_node(at)])
        vector = point_load_vector(self.mesh, self.dofmap, nodes, value)
        return self._add_load(name, "point", vector)

    def surface_load(self, where: Where, value: FieldSpec, *, name: str | None = None) -> str:
        """Distributed load per unit area (2D: per unit length, times thickness) on facets."""
        facets = self.mesh.facets(where)
        vector = surface_load_vector(
            self.mesh, self.dofmap, facets, value, thickness=self._thickness()
        )
        return self._add_load(name, "surface", vector)

    def volume_load(self, value: FieldSpec, *, cells: Where | None = None,
                    name: str | None = None) -> str:
        """Load per unit volume over all cells or a named/predicate cell subset."""
        cell_ids = None if cells is None else self.mesh.cell_ids(cells)
        vector = volume_load_vector(
            self.mesh, self.dofmap, value, cells=cell_ids, thickness=self._thickness()
        )
        return self._add_load(name, "volume", vector)

    def _thickness(self) -> float:
        return self.thickness if self.mesh.dim == 2 else 1.0

    def _scale(self, scale=None):
        """``s t``: the density scale (checked; per cell, or 1) times the thickness."""
        return self._thickness() * (
            1.0 if scale is None else self.cell_field(scale, self.mesh.n_cells, "scale")
        )

    def load_vector(self, magnitudes: dict[str, float] | None = None) -> np.ndarray:
        """``f = Σ_L m_L f_L`` over the load terms, ``(n_dofs,)`` (magnitudes default to 1)."""
        magnitudes = magnitudes or {}
        unknown = set(magnitudes) - set(self.loads)
        if unknown:
            raise BoundaryConditionError(
                f"unknown load name(s) {sorted(unknown)}; loads: {sorted(self.loads)}"
            )
        f = np.zeros(self.dofmap.n_dofs)
        for name, vector in self.loads.items():
            f += magnitudes.get(name, 1.0) * vector
        return f

    # ------------------------------------------------------------ assembly
    @abstractmethod
    def cell_matrices(self) -> list[np.ndarray]:
        """Component cell matrices ``K⁽ᵏ⁾``, each ``(n_cells or 1, nd, nd)``."""

    @abstractmethod
    def coefficients(self, **parameters) -> list[np.ndarray]:
        """Per-cell coefficients ``c_k`` of the component matrices, each ``(n_cells,)``."""

    def stiffness_fields(self, **parameters) -> tuple[tuple[float, ...] | None, list]:
        """What the assembler needs: ``(w, [s])`` when ``c_k = w_k s``, else ``(None, c)``.

        Constant weights ``w`` fold the components into one (one gather per assembly, see
        :meth:`~fesens.fem.assembler.Assembler.stiffness`); by default there are none.
        """
        return None, self.coefficients(**parameters)

    @property
    def assembler(self) -> Assembler:
        """The cached-pattern assembler for the current set of Dirichlet dofs."""
        dofs = self.constrained_dofs
        if self._assembler is None or not np.array_equal(dofs, self._assembler_dofs):
            if self._cell_matrices is None:
                self._cell_matrices = self.cell_matrices()
            self._assembler = Assembler(
                self.dofmap.cell_dofs, self.dofmap.n_dofs, dofs, self._cell_matrices
            )
            self._assembler_dofs = dofs
            self._check_free_modes(dofs)
        return self._assembler

    def _check_free_modes(self, dofs: np.ndarray) -> None:
        free = free_rigid_modes(self.mesh.points, dofs, self.n_components)
        if free:
            raise SingularMatrixError(
                "the stiffness matrix is singular: Dirichlet conditions are missing; "
                f"free rigid-body motion(s): {', '.join(free)}. Fix more nodes or components "
                "with model.fix(...)."
            )

    def solver(self, name: str = "auto", **options) -> LinearSolver:
        """The model's solver instance for ``name`` (kept, so symbolic analysis is reused).

        A Krylov backend with the AMG preconditioner gets :meth:`near_nullspace` as its
        ``near_nullspace`` (a callable, evaluated at each factorization, so it follows
        changes of the Dirichlet set) unless ``options`` has one; ``near_nullspace=None``
        keeps pyamg's constant vectors.
        """
        key = name + repr(sorted(options.items()))
        if key not in self._solvers:
            backend = make_solver(name, **options)
            if self._needs_near_nullspace(backend, options):
                backend.near_nullspace = self.near_nullspace
            self._solvers[key] = backend
        return self._solvers[key]

    def with_near_nullspace(self, solver="auto"):
        """``solver`` for matrices ``K_ff`` of the current Dirichlet set, given the model's
        near-null space when it needs one.

        Parameters
        ----------
        solver : str, (str, dict) or LinearSolver
            Backend name, with options, or an instance.

        Returns
        -------
        str, (str, dict) or LinearSolver
            For a Krylov backend with the AMG preconditioner whose options do not give
            ``near_nullspace``, in an elasticity model: a new instance holding
            :meth:`near_nullspace` of the current free dofs, ``(n_free, 3 or 6)``.
            Otherwise ``solver`` itself (instances are used as given).
        """
        if isinstance(solver, LinearSolver):
            return solver
        name, options = (solver, {}) if isinstance(solver, str) else solver
        backend = make_solver(name, **options)
        if not self._needs_near_nullspace(backend, options):
            return solver
        backend.near_nullspace = self.near_nullspace()
        return backend

    def near_nullspace(self) -> np.ndarray | None:
        """The near-null space of ``K_ff`` for AMG: the rigid-body modes on the free dofs.

        Returns
        -------
        numpy.ndarray or None
            ``(n_free, 3)`` in 2D, ``(n_free, 6)`` in 3D for elasticity (rotations about the
            centroid of the points); None for a scalar field, whose near-null space (the
            constants) is pyamg's default.
        """
        if self.n_components == 1:
            return None
        points = self.mesh.points
        return rigid_body_modes(points, points.mean(axis=0))[0][self.assembler.free]

    def _needs_near_nullspace(self, backend: LinearSolver, options: dict) -> bool:
        """Whether ``backend`` builds AMG for this vector field without a given near-null space."""
        return (
            self.n_components > 1
            and isinstance(backend, IterativeSolver)
            and backend.preconditioner == "amg"
            and "near_nullspace" not in options
        )

    def solve(
        self,
        *,
        solver: str = "auto",
        solver_options: dict | None = None,
        loads: dict[str, float] | None = None,
        **parameters,
    ):
        """Assemble and solve ``K_ff u_f = f_f − K_fc g``.

        Parameters
        ----------
        solver : str
            Solver backend name (see :func:`fesens.solvers.available_solvers`).
        solver_options : dict, optional
            Backend options (tolerances, preconditioner, ...).
        loads : dict, optional
            Magnitude of each named load term (default 1).
        **parameters
            Material / density parameters overriding the model's defaults
            (see :attr:`parameter_names`).

        Returns
        -------
        Solution
        """
        from fesens.fem.solution import Solution

        self.check_parameters(parameters)
        assembler = self.assembler
        weights, fields = self.stiffness_fields(**parameters)
        K = assembler.stiffness(fields, weights)
        rhs = self.load_vector(loads)[assembler.free]
        g = self.prescribed_values()
        if assembler.fc is not None and np.any(g):
            rhs = rhs - assembler.coupling(fields, weights) @ g
        backend = self.solver(solver, **(solver_options or {}))
        try:
            backend.factorize(K)
            u_free = backend.solve(rhs)
        except SolverError as exc:
            exc.args = (f"{exc} (model: {self.describe()})", *exc.args[1:])
            raise
        u = np.empty(self.dofmap.n_dofs)
        u[assembler.free] = u_free
        u[assembler.constrained] = g
        if not np.all(np.isfinite(u)):
            raise NonFiniteError("the solution contains NaN or infinity")
        return Solution(self, u, self.coefficients(**parameters), dict(parameters), loads)

    def describe(self) -> str:
        """One line: physics, mesh and dof counts."""
        return (
            f"{type(self).__name__} on {self.mesh.n_cells} {self.mesh.cell_type} cells, "
            f"{self.dofmap.n_dofs} dofs, {len(self._dirichlet)} constrained"
        )

    @staticmethod
    def cell_field(value, n_cells: int, name: str) -> np.ndarray:
        """Broadcast a scalar or per-cell parameter to ``(n_cells,)``, checking it."""
        array = np.asarray(value, dtype=float)
        if array.ndim > 1 or (array.ndim == 1 and array.shape[0] != n_cells):
            raise ValueError(
                f"parameter {name!r} must be a scalar or have one value per cell "
                f"({n_cells}), got shape {array.shape}"
            )
        if not np.all(np.isfinite(array)):
            raise NonFiniteError(f"parameter {name!r} contains NaN or infinity")
        return np.broadcast_to(array, (n_cells,))

    def check_parameters(self, parameters: Sequence[str]) -> None:
        unknown = set(parameters) - set(self.parameter_names)
        if unknown:
            raise TypeError(
                f"unknown parameter(s) {sorted(unknown)}; {type(self).__name__} accepts "
                f"{', '.join(self.parameter_names)}"
            )

"""What every model has, whatever its equations: a mesh, a dof map, Dirichlet conditions,
named load terms, declared parameters, the geometry of its cells and the choice of its solver.

:class:`Model` is the base of :class:`~fesens.fem.model.linear.LinearModel`, whose equations
are linear in the unknowns (``K(θ) u = f``, assembled from per-cell matrices and their
coefficients); a physics whose equations are nonlinear in the unknowns derives from it
another way (a residual ``R(u, θ)`` from an energy or a weak form at the quadrature points,
assembled on the same cached pattern), and shares all of this.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from fesens.ad.numpy_wrapper import getval, untake
from fesens.errors import MeshError, NonFiniteError, SingularMatrixError
from fesens.fem.assembly.dofs import DofMap
from fesens.fem.integrals.geometry import CellGeometry, cell_geometry
from fesens.fem.integrals.shape import averaged_gradients, cell_volumes
from fesens.fem.model.dirichlet import DirichletConditions
from fesens.fem.model.load_terms import LoadTerms
from fesens.fem.model.parameters import SCALE, Parameter
from fesens.fem.model.rigid_modes import free_rigid_modes
from fesens.fem.model.solution import Solution
from fesens.fem.model.solvers import SolverChoice
from fesens.mesh.cell_types import BAR_CELL_TYPES
from fesens.mesh.connectivity import node_parts
from fesens.mesh.mesh import Mesh
from fesens.readonly import snapshot, unchanged


class Model(DirichletConditions, LoadTerms, SolverChoice, ABC):
    """Base class of every model: what does not depend on the form of its equations.

    Parameters
    ----------
    mesh : Mesh
    n_components : int
        Unknowns per node.
    thickness : float
        Out-of-plane thickness (2D only; multiplies every integral).
    quadrature_order : int, optional
        Quadrature order of the cell integrals (default: exact for affine cells).
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
        self._geometry: dict[int | None, CellGeometry] = {}
        self._moved_geometry: dict[int | None, tuple] = {}
        self._averaged: tuple | None = None

    @classmethod
    def parameter_names(cls) -> tuple[str, ...]:
        """Names of the parameters :meth:`solve` accepts."""
        return tuple(cls.parameters)

    def _thickness(self) -> float:
        return self.thickness if self.mesh.dim == 2 else 1.0

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
        if points is not None:  # differentiable in the points (fesens.fem.integrals.shape's rules)
            return averaged_gradients(self, points), cell_volumes(self, points)
        if self._averaged is None:
            gbar, volumes = averaged_gradients(self, None), cell_volumes(self, None)
            self._averaged = (gbar, np.broadcast_to(volumes, (self.mesh.n_cells,)).copy())
        return self._averaged

    def cell_volumes(self, points=None):
        """Cell volumes (2D: areas), ``(n_cells,)``; traced for traced ``points``."""
        return self.averaged_geometry(points)[1]

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

    def warm_start_arrays(self) -> dict[str, np.ndarray]:
        """Where this thread's next solve starts, as named arrays (what an optimization's
        checkpoint keeps); empty here: a linear model's solve depends on its inputs only
        (a nonlinear model's Newton warm start overrides it)."""
        return {}

    def restore_warm_start(self, arrays: dict[str, np.ndarray]) -> None:
        """Put back what :meth:`warm_start_arrays` gave (nothing to do here)."""

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

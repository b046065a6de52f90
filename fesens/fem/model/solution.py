"""A solved model: the nodal field, its gradients, reactions and output.

:class:`Solution` is what :meth:`LinearModel.solve <fesens.fem.model.linear.LinearModel.solve>`
returns, traced or not: objectives (:mod:`fesens.objectives`) read it inside
:func:`fesens.ad.grad`, and post-processing reads it after a plain solve. A physics
subclasses it for its own quantities (stresses, fluxes; :mod:`fesens.physics`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.fem.elements import reference_element
from fesens.fem.post import fields, probe, recovery

#: Nodal recoveries of :meth:`Solution.recovered` (the first is the default).
RECOVERY_METHODS = ("spr", "extrapolation", "average")


class Solution:
    """Result of :meth:`LinearModel.solve`.

    Attributes
    ----------
    model : LinearModel
    u : numpy.ndarray or traced
        Global dof vector ``(n_dofs,)``, or ``(n_dofs, n_cases)`` for several load cases.
    f : numpy.ndarray or traced
        The applied load vector(s), same shape as ``u``.
    coefficients : list
        Per-cell coefficients ``c_k`` of the stiffness, each ``(n_cells,)``.
    parameters : dict
        The parameters of the solve (traced values included).
    load_magnitudes : dict or list of dict or None
        The load magnitudes (or load cases) of the solve.
    points : numpy.ndarray, traced or None
        The node coordinates of the solve (None: the mesh's).
    """

    def __init__(self, model, u, f, coefficients, parameters, loads=None, points=None):
        self.model = model
        self.u = u
        self.f = f
        self.coefficients = coefficients
        self.parameters = parameters
        self.load_magnitudes = loads
        self.points = points

    @property
    def problem(self):
        """The model (the name objectives used for it before models solved traced)."""
        return self.model

    def detached(self) -> Solution:
        """The same solution with every traced value replaced by its value."""
        return type(self)(self.model, getval(self.u), getval(self.f),
                          [getval(c) for c in self.coefficients],
                          {k: getval(v) for k, v in self.parameters.items()},
                          self.load_magnitudes,
                          None if self.points is None else getval(self.points))

    # ------------------------------------------------------------ primary field
    @property
    def field(self):
        """Nodal values, ``(n_points, n_components)`` (single load case)."""
        return np.reshape(self.u, (self.model.mesh.n_points, self.model.n_components))

    def cell_gradient(self):
        """Cell-averaged gradient ``∂u_c/∂x_k``, ``(n_cells, n_components, dim)``.

        The volume average over each cell of the gradient at the quadrature points, from
        the cell-averaged shape-function gradients (traced in ``u`` and the coordinates).
        """
        mesh = self.model.mesh
        gbar, _ = self.model.averaged_geometry(self.points)
        u_cells = np.reshape(self.u[self.model.dofmap.cell_dofs],
                             (mesh.n_cells, mesh.type_info.n_nodes, self.model.n_components))
        if np.shape(gbar)[0] == 1:
            return np.einsum("ak,eac->eck", gbar[0], u_cells)
        return np.einsum("eak,eac->eck", gbar, u_cells)

    @property
    def gradient_at_quadrature(self) -> np.ndarray:
        """``∇u`` at quadrature points, ``(n_cells, n_qp, n_comp, dim)`` (plain arrays)."""
        geometry = self.model.geometry(None if self.points is None else getval(self.points))
        cell_values = np.asarray(self.field)[self.model.mesh.cells]
        return fields.gradients_at_quadrature(geometry, cell_values)

    @property
    def cell_volumes(self):
        """Cell volumes (2D: areas), ``(n_cells,)``."""
        return self.model.cell_volumes(self.points)

    def nodal(self, cell_values) -> np.ndarray:
        """Volume-weighted nodal average of a cell field ``(n_cells, ...)`` (plain arrays)."""
        mesh = self.model.mesh
        return fields.nodal_average(mesh.cells, np.asarray(getval(cell_values)),
                                         np.asarray(getval(self.cell_volumes)), mesh.n_points)

    def recovered(self, values_at_quadrature, method: str = "spr") -> np.ndarray:
        """Nodal values ``(n_points, ...)`` of a quantity known at the quadrature points
        ``(n_cells, n_qp, ...)`` of the model's rule (plain arrays).

        ``method``: ``"spr"`` (default), superconvergent patch recovery: least-squares fit
        of a complete polynomial of the element's degree to the quadrature-point values of
        the cells around each vertex, evaluated at the nodes of those cells, boundary nodes
        from interior patches, averaged over the patches reaching a node (Zienkiewicz & Zhu,
        IJNME 33, 1992; :mod:`fesens.fem.post.recovery`); ``"extrapolation"``, a polynomial
        through each cell's quadrature values evaluated at its nodes, averaged over the
        cells at a node; ``"average"``, the volume-weighted nodal average of the cell means
        (smooths peaks away: least accurate).
        """
        if method not in RECOVERY_METHODS:
            raise ValueError(f"unknown recovery method {method!r}; choose one of "
                             f"{', '.join(RECOVERY_METHODS)}")
        model, mesh = self.model, self.model.mesh
        values = np.asarray(getval(values_at_quadrature), dtype=float)
        geometry = model.geometry(None if self.points is None else getval(self.points))
        if method == "average":
            return self.nodal(fields.cell_average(geometry, values))
        element = reference_element(mesh.cell_type)
        xi, _ = element.quadrature(model.quadrature_order)
        extrapolated = recovery.nodal_mean(
            mesh.cells, recovery.extrapolated_cell_values(element, xi, values), mesh.n_points)
        if method == "extrapolation":
            return extrapolated
        return recovery.patch_recovery(mesh, np.asarray(getval(geometry.x)), values,
                                       extrapolated, None if self.points is None
                                       else np.asarray(getval(self.points)))

    # ------------------------------------------------------------ probes
    def nodal_fields(self) -> dict[str, Callable[[], np.ndarray]]:
        """The nodal fields :meth:`probe` evaluates, by name, each computed on demand
        ``(n_points, ...)``; a physics adds its own (recovered stresses, fluxes)."""
        return {self.model.field_name: lambda: np.asarray(getval(self.field))}

    def probe(self, points, field: str | np.ndarray | None = None) -> np.ndarray:
        """A nodal field at arbitrary points, ``(n, ...)``.

        Each point is located in its cell (KD-tree on the cell centroids, then the inverse
        isoparametric map by Newton's method; :mod:`fesens.fem.post.probe`) and the field is
        interpolated with that cell's shape functions.

        Parameters
        ----------
        points : array_like
            ``(n, dim)`` (or one point ``(dim,)``).
        field : str or numpy.ndarray, optional
            A name of :meth:`nodal_fields` (default: the primary field, e.g.
            ``"displacement"``, ``"temperature"``), or nodal values ``(n_points, ...)``.

        Raises
        ------
        PointOutsideMeshError
            Points in no cell (listed in the message).
        ValueError
            An unknown field name (the message lists the names).
        """
        if field is None or isinstance(field, str):
            fields = self.nodal_fields()
            name = self.model.field_name if field is None else field
            if name not in fields:
                raise ValueError(f"unknown field {name!r} to probe; choose one of "
                                 f"{', '.join(fields)} or pass nodal values")
            values = fields[name]()
        else:
            values = np.asarray(getval(field))
            if values.shape[:1] != (self.model.mesh.n_points,):
                raise ValueError(f"nodal values to probe must have shape (n_points = "
                                 f"{self.model.mesh.n_points}, ...), got {values.shape}")
        return probe.interpolate(self.model.mesh, values, points)

    # ------------------------------------------------------------ balance
    def reactions(self) -> np.ndarray:
        """Reaction forces (heat flows) ``K u − f`` at the constrained dofs, zero elsewhere.

        Returns ``(n_points, n_components)`` (plain arrays).
        """
        model = self.model
        u = np.asarray(getval(self.u))
        coefficients = [np.asarray(getval(c)) for c in self.coefficients]
        components = None if self.points is None else model.cell_matrices(getval(self.points))
        residual = model.assembler.apply(coefficients, u, components)
        residual -= np.asarray(getval(self.f))
        out = np.zeros_like(residual)
        out[model.assembler.constrained] = residual[model.assembler.constrained]
        return out.reshape(model.mesh.n_points, model.n_components)

    def reaction_force(self, where) -> np.ndarray:
        """Total reaction on a named node set / predicate, ``(n_components,)``."""
        return self.reactions()[self.model.mesh.nodes(where)].sum(axis=0)

    def compliance(self) -> float:
        """``fᵀ u`` (external work, twice the strain energy when ``g = 0``)."""
        return float(np.sum(getval(self.f) * getval(self.u)))

    # ------------------------------------------------------------ output
    def point_data(self) -> dict[str, np.ndarray]:
        """Nodal output fields for VTU/XDMF: the field under the physics' name."""
        return {self.model.field_name: np.asarray(getval(self.field))}

    def cell_data(self) -> dict[str, np.ndarray]:
        """Cell output fields for VTU/XDMF (a physics adds its own)."""
        return {}

    def write(self, path) -> None:
        """Write the mesh with :meth:`point_data` and :meth:`cell_data` (VTU, XDMF, ...)."""
        from fesens.mesh import write_mesh

        write_mesh(path, self.model.mesh, point_data=self.point_data(),
                   cell_data={k: np.asarray(getval(v)) for k, v in self.cell_data().items()})

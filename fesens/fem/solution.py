"""A solved model: the nodal field and its post-processing."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from fesens.fem import postprocess
from fesens.fem.geometry import cell_geometry


class Solution:
    """Result of :meth:`LinearModel.solve`.

    Attributes
    ----------
    model : LinearModel
    u : numpy.ndarray
        Global dof vector ``(n_dofs,)``.
    coefficients : list of numpy.ndarray
        Cell coefficients used for the solve.
    parameters : dict
        Parameter overrides used for the solve.
    """

    def __init__(self, model, u, coefficients, parameters, loads):
        self.model = model
        self.u = u
        self.coefficients = coefficients
        self.parameters = parameters
        self.load_magnitudes = loads

    # ------------------------------------------------------------ primary field
    @property
    def field(self) -> np.ndarray:
        """Nodal values, ``(n_points, n_components)``."""
        return self.u.reshape(self.model.mesh.n_points, self.model.n_components)

    @property
    def displacement(self) -> np.ndarray:
        """Alias of :attr:`field` for elasticity, ``(n_points, dim)``."""
        return self.field

    @property
    def temperature(self) -> np.ndarray:
        """Nodal temperatures for heat conduction, ``(n_points,)``."""
        return self.field[:, 0]

    @cached_property
    def _geometry(self):
        return cell_geometry(self.model.mesh, self.model.quadrature_order)

    @cached_property
    def gradient_at_quadrature(self) -> np.ndarray:
        """``∇u`` at quadrature points, ``(n_cells, n_qp, n_comp, dim)``."""
        cell_values = self.field[self.model.mesh.cells]
        return postprocess.gradients_at_quadrature(self._geometry, cell_values)

    @property
    def cell_volumes(self) -> np.ndarray:
        """Cell volumes (2D: areas), ``(n_cells,)``."""
        return np.broadcast_to(self._geometry.volumes, (self.model.mesh.n_cells,))

    def nodal(self, cell_values: np.ndarray) -> np.ndarray:
        """Volume-weighted nodal average of a cell field ``(n_cells, ...)``."""
        mesh = self.model.mesh
        return postprocess.nodal_average(mesh.cells, cell_values, self.cell_volumes,
                                         mesh.n_points)

    # ------------------------------------------------------------ elasticity
    def strain(self) -> np.ndarray:
        """Cell-averaged small strain tensor, ``(n_cells, dim, dim)``."""
        eps = postprocess.small_strain(self.gradient_at_quadrature)
        return postprocess.cell_average(self._geometry, eps)

    def _lame(self):
        return self.model.lame(self.parameters.get("E"), self.parameters.get("nu"))

    def _scale(self) -> np.ndarray:
        scale = self.parameters.get("scale")
        return np.ones(self.model.mesh.n_cells) if scale is None else np.asarray(scale)

    def stress(self) -> np.ndarray:
        """Cell-averaged Cauchy stress, ``(n_cells, dim, dim)`` (in-plane part in 2D).

        The density ``scale`` multiplies the stiffness and so the stress.
        """
        lam, mu = self._lame()
        s = self._scale()
        return postprocess.isotropic_stress(self.strain(), s * lam, s * mu)

    def stress_3d(self) -> np.ndarray:
        """Full 3x3 stress per cell; in plane strain ``σ_zz = λ (ε_xx + ε_yy)``."""
        stress = self.stress()
        if self.model.mesh.dim == 3 or self.model.plane == "stress":
            return postprocess.to_3d(stress)
        lam, _ = self._lame()
        eps = self.strain()
        return postprocess.to_3d(stress, self._scale() * lam * np.trace(eps, axis1=1, axis2=2))

    def von_mises(self) -> np.ndarray:
        """Cell von Mises stress, ``(n_cells,)``."""
        return postprocess.von_mises(self.stress_3d())

    def nodal_stress(self) -> np.ndarray:
        """Volume-weighted nodal average of the cell stress, ``(n_points, dim, dim)``."""
        return self.nodal(self.stress())

    # ------------------------------------------------------------ conduction
    def heat_flux(self) -> np.ndarray:
        """Cell-averaged heat flux ``q = −κ ∇T``, ``(n_cells, dim)``."""
        grad = postprocess.cell_average(self._geometry, self.gradient_at_quadrature[:, :, 0, :])
        kappa = self.coefficients[0] / self.model._thickness()
        return -kappa[:, None] * grad

    # ------------------------------------------------------------ balance
    def reactions(self) -> np.ndarray:
        """Reaction forces (heat flows) ``K u − f`` at the constrained dofs, zero elsewhere.

        Returns ``(n_points, n_components)``.
        """
        model = self.model
        residual = model.assembler.apply(self.coefficients, self.u)
        residual -= model.load_vector(self.load_magnitudes)
        out = np.zeros_like(residual)
        out[model.assembler.constrained] = residual[model.assembler.constrained]
        return out.reshape(model.mesh.n_points, model.n_components)

    def reaction_force(self, where) -> np.ndarray:
        """Total reaction on a named node set / predicate, ``(n_components,)``."""
        return self.reactions()[self.model.mesh.nodes(where)].sum(axis=0)

    def compliance(self) -> float:
        """``fᵀ u`` (external work, twice the strain energy when ``g = 0``)."""
        return float(self.model.load_vector(self.load_magnitudes) @ self.u)

    # ------------------------------------------------------------ output
    def point_data(self) -> dict[str, np.ndarray]:
        """Nodal output fields for VTU/XDMF."""
        name = "temperature" if self.model.n_components == 1 else "displacement"
        data = {name: self.field if self.model.n_components > 1 else self.temperature}
        return data

    def cell_data(self) -> dict[str, np.ndarray]:
        """Cell output fields for VTU/XDMF."""
        if self.model.n_components == 1:
            return {"heat_flux": self.heat_flux()}
        return {"von_mises": self.von_mises(),
                "stress": self.stress().reshape(self.model.mesh.n_cells, -1)}

    def write(self, path) -> None:
        """Write the mesh with :meth:`point_data` and :meth:`cell_data` (VTU, XDMF, ...)."""
        from fesens.mesh import write_mesh

        write_mesh(path, self.model.mesh, point_data=self.point_data(),
                   cell_data=self.cell_data())

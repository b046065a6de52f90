"""What a finite-strain elasticity solve returns: the deformed configuration, the first
Piola–Kirchhoff and Cauchy stresses, von Mises, their nodal recovery and the stored energy.

The model (:class:`~fesens.physics.hyperelasticity.FiniteStrainElasticity`) declares the
physics and its loads; this solution computes its outputs through the model's law and its
quadrature-point hooks (``flux``, ``stored_energy``), so the stress of the residual and the
stress reported are the same code.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.fem.model.nonlinear_solution import NonlinearSolution
from fesens.fem.post import fields as post
from fesens.physics.elastic_law import von_mises, von_mises_squared
from fesens.physics.hyperelastic_law import jacobian


class FiniteStrainSolution(NonlinearSolution):
    """A solved :class:`~fesens.physics.hyperelasticity.FiniteStrainElasticity` model:
    displacements, the deformed configuration, stresses and the stored energy.

    The stresses at the quadrature points are functions of the traced state, so on a traced
    solution (inside :func:`fesens.ad.grad`) :meth:`first_piola` and :meth:`cauchy` are
    traced too; the nodal recoveries and the output fields are plain arrays.
    """

    @property
    def displacement(self):
        """Nodal displacements, ``(n_points, dim)``."""
        return self.field

    def deformed_points(self):
        """Node coordinates in the deformed configuration ``x = X + u``, ``(n_points, dim)``."""
        reference = self.model.mesh.points if self.points is None else self.points
        return reference + self.displacement

    def _law_inputs(self) -> tuple:
        """``(geometry, H)``: the displacement gradients the law sees ``(n_cells, n_qp,
        dim, dim)`` (``γ ∇u`` under the energy interpolation, so that a void cell's
        deformation stays near ``I`` and its stresses finite)."""
        geometry, _, grad_q = self.model._at_quadrature(self.u, self.points)
        return geometry, self.model._law_gradient(grad_q, self.fields)

    def _cell_mean(self, geometry, values):
        """Reference-volume average over each cell's quadrature points, ``(n_cells, ...)``
        (:func:`fesens.fem.post.fields.cell_average` written with the traced operations)."""
        weights = geometry.dx / np.sum(geometry.dx, axis=1, keepdims=True)
        extra = (1,) * (np.ndim(values) - 2)
        return np.sum(np.reshape(weights, np.shape(weights) + extra) * values, axis=1)

    def deformation_gradient_at_quadrature(self):
        """``F = I + ∇_X u`` at the quadrature points, ``(n_cells, n_qp, dim, dim)``
        (``I + γ ∇_X u`` under the energy interpolation: the deformation the law sees)."""
        _, H = self._law_inputs()
        return H + np.eye(self.model.mesh.dim)

    def jacobian(self):
        """Cell mean of ``J = det F`` (volume ratio; of :meth:`deformation_gradient_at_
        quadrature`), ``(n_cells,)``."""
        geometry, H = self._law_inputs()
        return self._cell_mean(geometry, jacobian(H))

    def first_piola_at_quadrature(self):
        """First Piola–Kirchhoff stress ``P = s ∂W/∂F`` at the quadrature points, the
        stress the residual balances
        (:meth:`~fesens.physics.hyperelasticity.FiniteStrainElasticity.flux`), ``(n_cells,
        n_qp, dim, dim)`` (in-plane part in 2D)."""
        _, grad_q = self._piola_inputs()
        return self.model.flux(None, grad_q, self.fields)

    def first_piola(self):
        """Cell mean (over the reference volume) of ``P``, ``(n_cells, dim, dim)``."""
        geometry, grad_q = self._piola_inputs()
        return self._cell_mean(geometry, self.model.flux(None, grad_q, self.fields))

    def _piola_inputs(self) -> tuple:
        geometry, _, grad_q = self.model._at_quadrature(self.u, self.points)
        return geometry, grad_q

    def cauchy_at_quadrature(self, full: bool = False):
        """Cauchy stress ``σ = J⁻¹ P Fᵀ`` at the quadrature points, ``(n_cells, n_qp, dim,
        dim)``, or with ``full`` ``(n_cells, n_qp, 3, 3)`` (in 2D with the plane-strain
        ``σ_zz``; plain arrays then)."""
        _, H = self._law_inputs()
        return _full_tensor(*self.model.law_cauchy(H, self.fields), full)

    def cauchy(self, full: bool = False):
        """Cell mean (over the reference volume) of the Cauchy stress, ``(n_cells, dim,
        dim)``, or ``(n_cells, 3, 3)`` with ``full`` (2D: with ``σ_zz``; plain arrays)."""
        geometry, H = self._law_inputs()
        sigma, sigma_zz = self.model.law_cauchy(H, self.fields)
        mean_zz = None if sigma_zz is None else self._cell_mean(geometry, sigma_zz)
        return _full_tensor(self._cell_mean(geometry, sigma), mean_zz, full)

    def stress(self):
        """The Cauchy stress per cell (:meth:`cauchy`), ``(n_cells, dim, dim)``."""
        return self.cauchy()

    def von_mises_squared(self, stress_scale=None):
        """``σ_vm²`` ``(n_cells,)`` of the cell-mean Cauchy stress (with ``σ_zz`` in 2D),
        traced on a traced solution: what the stress aggregates
        (:func:`fesens.objectives.stress_pnorm`, ``stress_ks``) read.

        ``stress_scale`` (scalar or ``(n_cells,)``) replaces the density scale of the
        stress (e.g. a relaxed ``x^q``) at the same deformation: the laws of ``E`` and
        ``nu`` are linear in the Lamé constants, so it scales those alone; any other law's
        stress is scaled by it.
        """
        geometry, H = self._law_inputs()
        fields = self.fields
        if stress_scale is not None and self.model.constants:
            fields = self.model.material_fields(
                **{k: v for k, v in self.parameters.items() if k != "scale"},
                scale=stress_scale)
        elif stress_scale is not None:
            lam, mu = self.model.lame(self.parameters.get("E"), self.parameters.get("nu"))
            scale = stress_scale * np.ones(self.model.mesh.n_cells)
            fields = {"lam": scale * lam, "mu": scale * mu}
        sigma, sigma_zz = self.model.law_cauchy(H, fields)
        out_of_plane = None if sigma_zz is None else self._cell_mean(geometry, sigma_zz)
        return von_mises_squared(self._cell_mean(geometry, sigma), out_of_plane)

    def von_mises(self) -> np.ndarray:
        """von Mises stress of the cell-mean Cauchy stress (with ``σ_zz`` in 2D),
        ``(n_cells,)`` (plain arrays)."""
        return von_mises(self.cauchy(full=True))

    def nodal_stress(self, method: str = "spr", full: bool = False) -> np.ndarray:
        """Recovered nodal Cauchy stress ``(n_points, dim, dim)`` (``full``: ``(n_points, 3,
        3)``) from the quadrature-point values, by ``method`` as in
        :meth:`Solution.recovered <fesens.fem.model.solution.Solution.recovered>` (in the
        reference configuration's coordinates)."""
        return self.recovered(np.asarray(getval(self.cauchy_at_quadrature(full))), method)

    def nodal_von_mises(self, method: str = "spr") -> np.ndarray:
        """von Mises stress of the recovered nodal Cauchy stress, ``(n_points,)``."""
        return von_mises(self.nodal_stress(method, full=True))

    def strain_energy(self):
        """Stored energy ``Σ_q t dΩ_q s W(F_q)`` of the state (a float; traced on a traced
        solution: the objective :func:`fesens.objectives.strain_energy`)."""
        return self.model.stored_energy(self.u, self.fields, self.points)

    def nodal_fields(self) -> dict:
        """:meth:`probe` fields: ``displacement``, the recovered (SPR) Cauchy ``stress`` and
        ``von_mises``."""
        return {**super().nodal_fields(), "stress": self.nodal_stress,
                "von_mises": self.nodal_von_mises}

    def cell_data(self) -> dict[str, np.ndarray]:
        """Cell output: ``von_mises`` and ``jacobian`` ``(n_cells,)``, the Cauchy ``stress``
        ``(n_cells, 6)`` (XX, YY, ZZ, XY, YZ, XZ; 2D with ``σ_zz``)."""
        return {"von_mises": self.von_mises(),
                "jacobian": np.asarray(getval(self.jacobian())),
                "stress": post.symmetric_tensor_components(self.cauchy(full=True))}

    def point_data(self) -> dict[str, np.ndarray]:
        """Nodal output: ``displacement``, the recovered (SPR) Cauchy ``nodal_stress``
        ``(n_points, 6)`` and ``nodal_von_mises`` ``(n_points,)``."""
        stress = self.nodal_stress(full=True)
        return {**super().point_data(),
                "nodal_stress": post.symmetric_tensor_components(stress),
                "nodal_von_mises": von_mises(stress)}


def _full_tensor(sigma, sigma_zz, full: bool):
    """``σ`` as given, or (``full``) 3 x 3 with ``σ_zz`` in 2D (plain arrays)."""
    if not full or sigma_zz is None:
        return sigma if not full else np.asarray(getval(sigma))
    sigma = np.asarray(getval(sigma))
    out = np.zeros((*sigma.shape[:-2], 3, 3))
    out[..., :2, :2] = sigma
    out[..., 2, 2] = np.asarray(getval(sigma_zz))
    return out

"""Steady heat conduction ``−∇·(κ ∇T) = Q`` with per-cell conductivity ``κ_e``.

Conductance per cell: ``K_e = s_e t κ_e Kκ_e`` (density scale ``s_e``, thickness ``t`` in 2D)
with ``Kκ_ab = ∫ ∇N_a · ∇N_b dΩ`` (:func:`~fesens.fem.kernels.gradient_matrices`, traced in
the node coordinates). Fluxes ``q`` on facets are heat *into* the body per unit area.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.fem.kernels import gradient_matrices
from fesens.fem.loads import FieldSpec
from fesens.fem.model import LinearModel, Where
from fesens.fem.parameters import SCALE, Parameter
from fesens.fem.solution import Solution
from fesens.mesh.mesh import Mesh
from fesens.physics.spec import LoadKind, Option, PhysicsConfig, Plot, Reported


class HeatSolution(Solution):
    """A solved :class:`HeatConduction` model: temperatures and heat fluxes."""

    @property
    def temperature(self):
        """Nodal temperatures, ``(n_points,)``."""
        return self.field[:, 0]

    def heat_flux(self):
        """Cell-averaged heat flux ``q = −s κ ∇T`` (density scale ``s``), ``(n_cells, dim)``."""
        kappa = self.coefficients[0] / self.model.scaled_thickness()  # s κ
        return -kappa[:, None] * self.cell_gradient()[:, 0, :]

    def nodal_heat_flux(self, method: str = "spr") -> np.ndarray:
        """Recovered nodal heat flux ``q = −s κ ∇T``, ``(n_points, dim)``, from its values at
        the quadrature points (``method``: see :meth:`Solution.recovered
        <fesens.fem.solution.Solution.recovered>`; default: patch recovery)."""
        kappa = np.asarray(getval(self.coefficients[0])) / self.model.scaled_thickness()
        gradient = self.gradient_at_quadrature[:, :, 0, :]
        return self.recovered(-np.broadcast_to(kappa, gradient.shape[:1])[:, None, None]
                              * gradient, method)

    def nodal_fields(self) -> dict:
        """:meth:`probe` fields: ``temperature`` and the recovered ``heat_flux``."""
        return {"temperature": lambda: np.asarray(getval(self.temperature)),
                "heat_flux": self.nodal_heat_flux}

    def point_data(self) -> dict[str, np.ndarray]:
        """Nodal output: ``temperature`` ``(n_points,)``."""
        return {"temperature": np.asarray(self.temperature)}

    def cell_data(self) -> dict[str, np.ndarray]:
        """Cell output: ``heat_flux`` ``(n_cells, dim)``."""
        return {"heat_flux": self.heat_flux()}


class HeatConduction(LinearModel):
    """Steady linear heat conduction.

    Parameters
    ----------
    mesh : Mesh
    conductivity : float or array_like
        Thermal conductivity ``κ > 0``, scalar or per cell ``(n_cells,)``.
    thickness : float
        Out-of-plane thickness (2D).
    quadrature_order : int, optional
    """

    name = "heat"
    field_name = "temperature"
    parameters = {
        "conductivity": Parameter("conductivity", "thermal conductivity", lower=0.0),
        "scale": SCALE,
    }
    solution_class = HeatSolution
    config = PhysicsConfig(
        options=(Option("thickness", "2D only: out-of-plane thickness", 1.0, dims=(2,)),),
        material=("conductivity",),
        loads=(
            LoadKind("point", "point_load", "nodes", False, "heat per node"),
            LoadKind("flux", "flux", "facets", False, "heat per unit area"),
            LoadKind("heat_source", "heat_source", "cells", False, "heat per unit volume"),
        ),
        responses={"compliance": "compliance", "thermal_compliance": "compliance",
                   "temperature": "value"},
        compliance_name="thermal compliance",
        plot=Plot("temperature", "temperature", "temperature"),
        reported=(Reported("min_temperature", "temperature", "min", "min temperature"),
                  Reported("max_temperature", "temperature", "max", "max temperature")),
    )

    def __init__(
        self,
        mesh: Mesh,
        conductivity=1.0,
        *,
        thickness: float = 1.0,
        quadrature_order: int | None = None,
    ):
        super().__init__(mesh, 1, thickness=thickness, quadrature_order=quadrature_order)
        self.conductivity = np.asarray(self.checked("conductivity", conductivity), dtype=float)

    def cell_matrices(self, points=None) -> list:
        """``[Kκ]`` for ``points`` (default: the mesh's)."""
        return [gradient_matrices(self.geometry(points))]

    def integrand_values(self, grad_a, grad_b) -> list:
        """``[∇a · ∇b]`` at the quadrature points, ``(n_cells, n_qp)``: the integrand of
        ``aᵀKκb``."""
        n_cells, n_qp = np.shape(grad_a)[:2]
        return [np.sum(np.reshape(grad_a * grad_b, (n_cells, n_qp, -1)), axis=2)]

    def integrand_fluxes(self, grad_a, grad_b, coefficients) -> tuple:
        """``∂F/∂∇a = c ∇b`` and ``∂F/∂∇b = c ∇a`` for ``F = c ∇a · ∇b``."""
        c = coefficients[0][:, None, None, None, None]
        return c * grad_b, c * grad_a

    def stiffness_fields(self, conductivity=None, scale=None) -> tuple:
        """``(None, [s t κ])``, ``(n_cells,)``."""
        kappa = (self.conductivity if conductivity is None
                 else self.checked("conductivity", conductivity))
        return None, [self.scaled_thickness(scale) * kappa]

    def flux(self, where: Where, q: FieldSpec, *, name: str | None = None) -> str:
        """Heat flux into the body per unit area on a facet set."""
        return self.surface_load(where, q, name=name)

    def heat_source(self, Q: FieldSpec, *, cells: Where | None = None,
                    name: str | None = None) -> str:
        """Heat generated per unit volume."""
        return self.volume_load(Q, cells=cells, name=name)

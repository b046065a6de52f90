"""Steady heat conduction ``−∇·(κ ∇T) = Q`` with per-cell conductivity ``κ_e``.

Conductance per cell: ``K_e = s_e t κ_e Kκ_e`` (density scale ``s_e``, thickness ``t`` in 2D).
Fluxes ``q`` on facets are heat *into* the body per unit area.
"""

from __future__ import annotations

import numpy as np

from fesens.fem.geometry import cell_geometry
from fesens.fem.kernels import conduction_matrices
from fesens.fem.loads import FieldSpec
from fesens.fem.model import LinearModel, Where
from fesens.mesh.mesh import Mesh


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

    parameter_names = ("conductivity", "scale")

    def __init__(
        self,
        mesh: Mesh,
        conductivity=1.0,
        *,
        thickness: float = 1.0,
        quadrature_order: int | None = None,
    ):
        super().__init__(mesh, 1, thickness=thickness, quadrature_order=quadrature_order)
        self.conductivity = self._checked_conductivity(conductivity)

    def _checked_conductivity(self, value) -> np.ndarray:
        kappa = self.cell_field(value, self.mesh.n_cells, "conductivity")
        if np.any(kappa <= 0):
            raise ValueError(f"conductivity must be > 0; got min = {kappa.min():g}")
        return kappa

    def cell_matrices(self) -> list[np.ndarray]:
        """``[Kκ]`` (see :mod:`fesens.fem.kernels`)."""
        return [conduction_matrices(cell_geometry(self.mesh, self.quadrature_order))]

    def coefficients(self, conductivity=None, scale=None) -> list[np.ndarray]:
        """``[s t κ]`` per cell, ``(n_cells,)``."""
        kappa = (
            self.conductivity if conductivity is None
            else self._checked_conductivity(conductivity)
        )
        return [self._scale(scale) * kappa]

    def flux(self, where: Where, q: FieldSpec, *, name: str | None = None) -> str:
        """Heat flux into the body per unit area on a facet set."""
        return self.surface_load(where, q, name=name)

    def heat_source(self, Q: FieldSpec, *, cells: Where | None = None,
                    name: str | None = None) -> str:
        """Heat generated per unit volume."""
        return self.volume_load(Q, cells=cells, name=name)

"""What a load history of :class:`~fesens.physics.elastoplasticity.Elastoplasticity`
returns: the states of every increment with the internal variables by their names, and
the per-cell fields a VTU output writes."""

from __future__ import annotations

import numpy as np

from fesens.fem.analysis.incremental import IncrementalSolution


class PlasticHistory(IncrementalSolution):
    """The increments of an elastoplastic run (plain arrays; ``N + 1`` states, the first
    unloaded)."""

    @property
    def plastic_strain(self) -> np.ndarray:
        """``(N + 1, n_cells, n_qp, 3, 3)`` the plastic strain ``εᵖ``."""
        return self.history["plastic_strain"]

    @property
    def equivalent_plastic_strain(self) -> np.ndarray:
        """``(N + 1, n_cells, n_qp)`` the equivalent plastic strain ``ᾱ``."""
        return self.history["equivalent_plastic_strain"]

    @property
    def back_stress(self) -> np.ndarray:
        """``(N + 1, n_cells, n_qp, 3, 3)`` the back stress ``β``."""
        return self.history["back_stress"]

    @property
    def stress(self) -> np.ndarray:
        """``(N + 1, n_cells, n_qp, 3, 3)`` the stress ``σ`` (plane strain: ``σ_zz`` too)."""
        return self.outputs["stress"]

    @property
    def plastic_work(self) -> np.ndarray:
        """``(N + 1,)`` the cumulative plastic work ``Σ_n Σ_q t dΩ_q σ_n : Δεᵖ_n``."""
        return self.dissipation

    def cell_fields(self, n: int) -> dict[str, np.ndarray]:
        """Per-cell averages (over the quadrature points, weighted by ``dΩ``) at increment
        ``n``, ``(n_cells,)`` each: ``equivalent_plastic_strain``, ``von_mises`` (the stress's
        ``√(3/2) ‖dev σ‖``) and ``back_stress_norm`` (``√(3/2) ‖β‖``, the uniaxial
        equivalent)."""
        if not -self.factors.size <= n < self.factors.size:
            raise IndexError(f"increment {n} out of range: the run holds 0..{self.n_increments}")
        weights = np.broadcast_to(np.asarray(self.model.geometry().dx),
                                  self.equivalent_plastic_strain.shape[1:])
        stress = self.stress[n]
        deviator = stress - np.trace(stress, axis1=2, axis2=3)[..., None, None] * np.eye(3) / 3

        def average(values):
            return np.sum(weights * values, axis=1) / np.sum(weights, axis=1)

        def uniaxial(tensor):
            return np.sqrt(1.5 * np.einsum("eqij,eqij->eq", tensor, tensor))

        return {"equivalent_plastic_strain": average(self.equivalent_plastic_strain[n]),
                "von_mises": average(uniaxial(deviator)),
                "back_stress_norm": average(uniaxial(self.back_stress[n]))}

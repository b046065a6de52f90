"""A toy physics, defined outside fesens: scalar reaction–diffusion ``−∇·(k ∇u) + c u = f``.

It shows what adding a physics costs: this module, and one line that registers it
(``register_physics(ReactionDiffusion)``, in the ``toy_physics`` fixture of ``conftest.py``).
Nothing in ``fesens/`` names it; config validation, model building, ``fesens solve`` and
``fesens sensitivity`` (with ``--wrt k`` and ``--wrt c``) read it from the registry.

Per cell: ``K_e = s_e t (k_e Kk_e + c_e M_e)`` (density scale ``s_e``, thickness ``t`` in 2D)
with the diffusion matrix ``Kk_ab = ∫ ∇N_a · ∇N_b dΩ`` and the mass matrix
``M_ab = ∫ N_a N_b dΩ``, integrated with the element's mass quadrature order.
"""

from __future__ import annotations

import numpy as np

from fesens.fem.elements import reference_element
from fesens.fem.integrals.kernels import gradient_matrices, mass_matrices
from fesens.fem.model.linear import LinearModel
from fesens.fem.model.parameters import SCALE, Parameter
from fesens.physics.spec import LoadKind, Option, PhysicsConfig, Plot, Reported


class ReactionDiffusion(LinearModel):
    """Steady scalar reaction–diffusion with per-cell diffusivity ``k`` and reaction ``c``.

    Parameters
    ----------
    mesh : Mesh
    k : float or array_like
        Diffusivity ``k > 0``, scalar or per cell ``(n_cells,)``.
    c : float or array_like
        Reaction coefficient ``c ≥ 0``, scalar or per cell ``(n_cells,)``.
    thickness : float
        Out-of-plane thickness (2D).
    """

    name = "reaction_diffusion"
    field_name = "u"
    parameters = {
        "k": Parameter("k", "diffusivity", lower=0.0),
        "c": Parameter("c", "reaction coefficient", lower=0.0, lower_open=False),
        "scale": SCALE,
    }
    config = PhysicsConfig(
        options=(Option("thickness", "2D only: out-of-plane thickness", 1.0, dims=(2,)),),
        material=("k", "c"),
        loads=(
            LoadKind("source", "source", "cells", False, "source per unit volume"),
            LoadKind("flux", "flux", "facets", False, "flux into the body per unit area"),
        ),
        responses={"compliance": "compliance", "mean_u": "value"},
        plot=Plot("u", "u", "u"),
        reported=(Reported("max_u", "u", "max", "max u"),),
    )

    def __init__(self, mesh, k=1.0, c=0.0, *, thickness: float = 1.0):
        super().__init__(mesh, 1, thickness=thickness)
        self.k = np.asarray(self.checked("k", k), dtype=float)
        self.c = np.asarray(self.checked("c", c), dtype=float)

    def cell_matrices(self, points=None) -> list:
        """``[Kk, M]``, each ``(n_geom, n_nodes, n_nodes)``, for ``points`` (default: the
        mesh's)."""
        mass_order = reference_element(self.mesh.cell_type).mass_order
        return [gradient_matrices(self.geometry(points)),
                mass_matrices(self.geometry(points, order=mass_order))]

    def stiffness_fields(self, k=None, c=None, scale=None) -> tuple:
        """``(None, [s t k, s t c])``, each ``(n_cells,)``."""
        k = self.k if k is None else self.checked("k", k)
        c = self.c if c is None else self.checked("c", c)
        st = self.scaled_thickness(scale)
        return None, [st * k, st * c]

    def source(self, f, *, cells=None, name: str | None = None) -> str:
        """Source ``f`` per unit volume (over all cells or a cell subset)."""
        return self.volume_load(f, cells=cells, name=name)

    def flux(self, where, q, *, name: str | None = None) -> str:
        """Flux ``q = k ∂u/∂n`` into the body per unit area on a facet set."""
        return self.surface_load(where, q, name=name)

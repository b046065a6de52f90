"""Linear elasticity: plane stress, plane strain (2D, with thickness) and 3D.

Stiffness per cell: ``K_e = s_e t (λ_e Kλ_e + μ_e Kμ_e)`` with the density scale ``s_e``,
thickness ``t`` (2D) and Lamé parameters from ``(E_e, ν_e)``
(:func:`~fesens.fem.materials.lame_parameters`; plane stress uses ``λ* = Eν/(1−ν²)``).
"""

from __future__ import annotations

import numpy as np

from fesens.fem.geometry import cell_geometry
from fesens.fem.kernels import elasticity_matrices
from fesens.fem.loads import FieldSpec, surface_load_vector
from fesens.fem.materials import (
    PLANE_ASSUMPTIONS,
    check_elastic_constants,
    lame_parameters,
    lame_weights,
)
from fesens.fem.model import LinearModel, Where
from fesens.mesh.mesh import Mesh


class Elasticity(LinearModel):
    """Small-strain isotropic linear elasticity.

    Parameters
    ----------
    mesh : Mesh
    E : float or array_like
        Young's modulus, scalar or per cell ``(n_cells,)``.
    nu : float or array_like
        Poisson's ratio, scalar or per cell.
    plane : {"stress", "strain"}, optional
        2D assumption (required for 2D meshes, not allowed in 3D).
    thickness : float
        Out-of-plane thickness (2D).
    quadrature_order : int, optional

    Examples
    --------
    >>> from fesens.mesh import rectangle
    >>> model = Elasticity(rectangle(40, 10, 4.0, 1.0), E=210e9, nu=0.3, plane="stress")
    >>> model.fix("left").traction("right", (0.0, -1e6))
    'surface0'
    >>> u = model.solve().displacement   # (n_points, 2)
    """

    parameter_names = ("E", "nu", "scale")

    def __init__(
        self,
        mesh: Mesh,
        E=1.0,
        nu=0.3,
        *,
        plane: str | None = None,
        thickness: float = 1.0,
        quadrature_order: int | None = None,
    ):
        if mesh.dim == 2 and plane not in PLANE_ASSUMPTIONS:
            raise ValueError(
                f"2D elasticity needs plane='stress' or plane='strain', got {plane!r}"
            )
        if mesh.dim == 3 and plane is not None:
            raise ValueError(f"plane={plane!r} applies to 2D meshes only; this mesh is 3D")
        super().__init__(mesh, mesh.dim, thickness=thickness, quadrature_order=quadrature_order)
        self.plane = plane
        self.E = self.cell_field(E, mesh.n_cells, "E")
        self.nu = self.cell_field(nu, mesh.n_cells, "nu")
        check_elastic_constants(self.E, self.nu)

    def cell_matrices(self) -> list[np.ndarray]:
        """``[Kλ, Kμ]`` (see :mod:`fesens.fem.kernels`)."""
        return list(elasticity_matrices(cell_geometry(self.mesh, self.quadrature_order)))

    def lame(self, E=None, nu=None) -> tuple[np.ndarray, np.ndarray]:
        """Per-cell ``(λ, μ)`` for the given (or the model's) ``E`` and ``nu``."""
        E = self.E if E is None else self.cell_field(E, self.mesh.n_cells, "E")
        nu = self.nu if nu is None else self.cell_field(nu, self.mesh.n_cells, "nu")
        check_elastic_constants(E, nu)
        return lame_parameters(E, nu, self.plane)

    def coefficients(self, E=None, nu=None, scale=None) -> list[np.ndarray]:
        """``[s t λ, s t μ]`` per cell, each ``(n_cells,)``."""
        lam, mu = self.lame(E, nu)
        s = self._scale(scale)
        return [s * lam, s * mu]

    def stiffness_fields(self, E=None, nu=None, scale=None) -> tuple[tuple[float, ...] | None,
                                                                     list]:
        """``((w_λ, w_μ), [s t E])`` when the model's ``ν`` (``nu`` not given) is the same in
        every cell (see :func:`~fesens.fem.materials.lame_weights`), else
        ``(None, coefficients)``.

        A ``nu`` passed here is a parameter (traced, in :mod:`fesens.adjoint`): it is never
        folded, so traced and untraced evaluations assemble the very same matrix.
        """
        weights = None if nu is not None else lame_weights(self.nu, self.plane)
        if weights is None:
            return None, self.coefficients(E, nu, scale)
        if E is not None:
            E = self.cell_field(E, self.mesh.n_cells, "E")
            check_elastic_constants(E, self.nu)
        return weights, [self._scale(scale) * (self.E if E is None else E)]

    # ------------------------------------------------------------ loads (named for the physics)
    def traction(self, where: Where, vector: FieldSpec, *, name: str | None = None) -> str:
        """Traction vector per unit area (2D: per unit length) on a facet set."""
        return self.surface_load(where, vector, name=name)

    def pressure(self, where: Where, p: FieldSpec, *, name: str | None = None) -> str:
        """Normal pressure on a facet set; positive pushes into the body (``t = −p n``)."""
        vector = surface_load_vector(
            self.mesh, self.dofmap, self.mesh.facets(where), pressure=p,
            thickness=self._thickness(),
        )
        return self._add_load(name, "pressure", vector)

    def body_force(self, vector: FieldSpec, *, cells: Where | None = None,
                   name: str | None = None) -> str:
        """Body force per unit volume (e.g. ``(0, -ρ g)``)."""
        return self.volume_load(vector, cells=cells, name=name)

"""Mass matrices: consistent and lumped, for every element type, traced in the coordinates.

For a field with ``n_c`` components the mass couples equal components only:

    M_e = ρ_e t ∫ N Nᵀ dΩ ⊗ I_(n_c)          (dofs node-major, like the stiffness)

with the reference element's shape functions ``N`` and its ``mass_order`` quadrature
(exact for ``N_a N_b`` on affine cells). ``t`` is the thickness in 2D. The scalar case
(``n_c = 1``) is the heat capacity matrix of conduction (``ρ_e = ρ c``).

**Lumped** mass is HRZ lumping (Hinton, Rock & Zienkiewicz, *Earthquake Eng. Struct. Dyn.*
4, 1976): the diagonal of the consistent matrix scaled to keep the cell's mass,
``m_a = M_aa · Σ_b Σ_c M_bc / Σ_b M_bb``. Unlike row sums it is positive for quadratic
elements (tri6, tet10, quad8, hex20), and it equals the row sums for tri3 and tet4.

Bars (line2 cells of a truss, :attr:`LinearModel.bars`) take the bar formula
``M_e = ρ_e A_e L_e / 6 [[2, 1], [1, 2]] ⊗ I`` (lumped: ``ρ_e A_e L_e / 2 I``) with the
model's material volumes ``A_e L_e`` (:meth:`cell_volumes`).

:class:`MassForm` gives :func:`~fesens.fem.assembly.primitives.assemble_at_points` what it asks a
model (``cell_matrices``, ``cell_bilinear``, ``has_integrand``), so a mass matrix is
assembled and differentiated (per cell, no matrix cotangent) by the stiffness's primitives.
"""

from __future__ import annotations

import numpy as np

from fesens.fem.elements import reference_element


def scalar_mass(geometry, lumped: bool = False):
    """``∫ N_a N_b dΩ`` per cell, ``(n_geom, n_nodes, n_nodes)`` (traced with the geometry).

    ``geometry``: a :class:`~fesens.fem.integrals.geometry.CellGeometry` of the element's
    ``mass_order``. ``lumped``: HRZ lumping (a diagonal matrix keeping the cell's mass).
    """
    N, dx = geometry.N, geometry.dx  # (n_qp, n), (n_geom, n_qp)
    n = N.shape[1]
    if not lumped:
        return np.einsum("eq,qa,qb->eab", dx, N, N)
    diagonal = dx @ (N * N)  # (n_geom, n): M_aa
    cell_mass = np.sum(dx, axis=1)  # Σ_ab M_ab = ∫ dΩ (the N_a sum to one)
    masses = diagonal * (cell_mass / np.sum(diagonal, axis=1))[:, None]
    return masses[:, :, None] * np.eye(n)[None]


def bar_mass(volumes, dim: int, lumped: bool = False):
    """``V_e / 6 [[2, 1], [1, 2]] ⊗ I_dim`` (lumped ``V_e / 2 I``), ``(n_bars, 2 dim, 2 dim)``."""
    pattern = np.eye(2) / 2 if lumped else np.array([[2.0, 1.0], [1.0, 2.0]]) / 6
    return volumes[:, None, None] * np.kron(pattern, np.eye(dim))[None]


def expand_components(scalar, n_components: int):
    """``M ⊗ I_(n_c)`` in the node-major dof order: ``(n, a, b) -> (n, a n_c, b n_c)``."""
    if n_components == 1:
        return scalar
    n_geom, n, _ = np.shape(scalar)
    identity = np.eye(n_components)[None, None, :, None, :]
    blocks = scalar[:, :, None, :, None] * identity
    return np.reshape(blocks, (n_geom, n * n_components, n * n_components))


class MassForm:
    """The mass bilinear form of a model, shaped like a model for the assembly primitives.

    Parameters
    ----------
    model : LinearModel
        Its mesh, components, thickness, geometry (volume cells) or material volumes (bars).
    lumped : bool
        HRZ-lumped instead of consistent.
    """

    def __init__(self, model, lumped: bool = False):
        self.model = model
        self.lumped = bool(lumped)
        self.mesh = model.mesh
        self.n_components = model.n_components
        self._reference: list | None = None

    def has_integrand(self) -> bool:
        """False: shape gradients trace :meth:`cell_bilinear`."""
        return False

    def cell_matrices(self, points=None) -> list:
        """``[M_e / ρ_e]``, ``(n_cells or 1, nd, nd)`` for ``points`` (default: the mesh's,
        computed once); the thickness is in the coefficient (:meth:`coefficient`)."""
        if points is None and self._reference is not None:
            return self._reference
        model = self.model
        if model.bars:
            matrices = bar_mass(model.cell_volumes(points), self.mesh.dim, self.lumped)
        else:
            order = reference_element(self.mesh.cell_type).mass_order
            scalar = scalar_mass(model.geometry(points, order=order), self.lumped)
            matrices = expand_components(scalar, self.n_components)
        if points is None:
            self._reference = [np.asarray(matrices)]
            return self._reference
        return [matrices]

    def cell_bilinear(self, points, a_cells, b_cells) -> list:
        """``a_eᵀ (M_e / ρ_e) b_e`` per cell, ``[(n_cells,)]`` (traced in ``points``)."""
        spec = "eic,eij,ejc->e" if np.ndim(a_cells) == 3 else "ei,eij,ej->e"
        (Me,) = self.cell_matrices(points)
        return [np.einsum(spec, a_cells, Me, b_cells)]

    def coefficient(self, density):
        """The per-cell coefficient ``ρ_e t`` ``(n_cells,)`` (2D: times the thickness)."""
        return density * self.model._thickness() * np.ones(self.mesh.n_cells)

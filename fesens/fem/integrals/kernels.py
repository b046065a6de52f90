"""Cell matrices of physics-independent bilinear forms, vectorised over all cells (einsum).

With ``G = ∂N/∂x`` at the quadrature points and ``dΩ`` the physical weights
(:class:`~fesens.fem.integrals.geometry.CellGeometry`):

* gradient     ``K_ab = ∫ ∇N_a · ∇N_b dΩ``
* mass         ``M_ab = ∫ N_a N_b dΩ``

Written in the traced numpy subset: with a geometry of traced coordinates the matrices are
traced too. A physics builds its own kernels from these and the geometry
(:mod:`fesens.physics`).
"""

from __future__ import annotations

import numpy as np

from fesens.fem.integrals.geometry import CellGeometry


def gradient_matrices(geometry: CellGeometry) -> np.ndarray:
    """``∫ ∇N_a · ∇N_b dΩ``, ``(n_geom, n_nodes, n_nodes)`` (traced with the geometry)."""
    G, dx = geometry.dNdx, geometry.dx
    n_geom, n_qp, n_nodes, dim = np.shape(G)
    # one batched product: (n_geom, n_nodes, n_qp·dim) @ (n_geom, n_qp·dim, n_nodes)
    rows = np.reshape(np.transpose(G * dx[:, :, None, None], (0, 2, 1, 3)),
                      (n_geom, n_nodes, n_qp * dim))
    columns = np.reshape(np.transpose(G, (0, 1, 3, 2)), (n_geom, n_qp * dim, n_nodes))
    return np.matmul(rows, columns)


def mass_matrices(geometry: CellGeometry) -> np.ndarray:
    """``M``, shape ``(n_geom, n_nodes, n_nodes)`` (use a geometry built with the mass order)."""
    return np.einsum("eq,qa,qb->eab", geometry.dx, geometry.N, geometry.N, optimize=True)

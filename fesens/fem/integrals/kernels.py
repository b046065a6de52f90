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


#: Cells per block of :func:`gradient_form` (bounds its temporaries to some 50 MB in 3D).
_FORM_BLOCK = 4096


def gradient_form(weights, dNdx, A) -> np.ndarray:
    """``K_(e,a,c,b,d) = Σ_q w_eq Σ_kl ∂N_a/∂x_k A_(ckdl) ∂N_b/∂x_l`` ``(n_cells, n, nc, n,
    nc)`` as ``Σ_q Bᵀ (w A) B`` with the strain-displacement matrix ``B_(ck, bd) = δ_cd
    ∂N_b/∂x_k``: batched matrix products, several times faster than the same contraction
    by ``einsum``, in blocks of cells.

    ``weights`` ``(n_cells, n_qp)``, ``dNdx`` ``(n_cells, n_qp, n, dim)``, ``A``
    ``(n_cells, n_qp, nc, dim, nc, dim)``.
    """
    n_cells, n_qp, n, dim = np.shape(dNdx)
    nc = np.shape(A)[2]
    K = np.empty((n_cells, n * nc, n * nc))
    for start in range(0, n_cells, _FORM_BLOCK):
        cells = slice(start, min(start + _FORM_BLOCK, n_cells))
        G = np.swapaxes(dNdx[cells], -1, -2)  # (e, q, dim, n)
        B = np.zeros((G.shape[0], n_qp, nc, dim, n, nc))
        for c in range(nc):
            B[:, :, c, :, :, c] = G
        B = B.reshape(G.shape[0], n_qp, nc * dim, n * nc)
        WA = np.reshape(A[cells], (G.shape[0], n_qp, nc * dim, nc * dim)) \
            * weights[cells][:, :, None, None]
        K[cells] = np.matmul(np.swapaxes(B, -1, -2), np.matmul(WA, B)).sum(axis=1)
    return K.reshape(n_cells, n, nc, n, nc)

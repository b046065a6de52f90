"""Cell matrices of physics-independent bilinear forms, vectorised over all cells (matrix
products, einsum).

With ``G = ∂N/∂x`` at the quadrature points and ``dΩ`` the physical weights
(:class:`~fesens.fem.integrals.geometry.CellGeometry`):

* gradient     ``K_ab = ∫ ∇N_a · ∇N_b dΩ``
* mass         ``M_ab = ∫ N_a N_b dΩ``
* the tangent of a flux ``P(u, ∇u)`` at the quadrature points, ``Σ_q Bᵀ (w A) B`` with
  ``A = ∂P/∂∇u`` (:func:`gradient_form`), and its transposed action on cell vectors with
  an optional ``∂P/∂u`` term, without forming the cell matrices
  (:func:`transposed_tangent_action`)

Written in the traced numpy subset: with a geometry of traced coordinates the matrices are
traced too. A physics builds its own kernels from these and the geometry
(:mod:`fesens.physics`).
"""

from __future__ import annotations

from collections.abc import Callable

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


#: Bytes of the temporaries of one block of cells of :func:`gradient_form`.
_FORM_BLOCK_BYTES = 48 * 2**20


def _shared(array: np.ndarray) -> bool:
    """Whether ``array`` holds one entry for every cell: a first axis of 1, or a broadcast
    one (stride 0)."""
    return array.shape[0] == 1 or array.strides[0] == 0


def gradient_form(weights, dNdx, A) -> np.ndarray:
    """``K_(e,a,c,b,d) = Σ_q w_eq Σ_kl ∂N_a/∂x_k A_(ckdl) ∂N_b/∂x_l`` ``(n_cells, n, nc, n,
    nc)``, i.e. ``Σ_q Bᵀ (w A) B`` with the strain-displacement matrix ``B_(ck, bd) = δ_cd
    ∂N_b/∂x_k``, by matrix products in blocks of cells (several times faster than the same
    contraction by ``einsum``).

    Where every cell has the same shape gradients (a structured grid: ``dNdx`` of one cell,
    or broadcast to all), one BLAS product per block, the sum over the points inside it:
    with ``GG_(qkl, ab) = ∂N_a/∂x_k ∂N_b/∂x_l``, ``K_(e, cd, ab) = Σ_(qkl) (w A)_(e, cd,
    qkl) GG_(qkl, ab)``, a ``(cells·nc², n_qp·dim²) @ (n_qp·dim², n²)`` product (``w`` is
    applied in the copy that reorders ``A``). Else ``Bᵀ ((w A) B)`` per cell and point.

    ``weights`` ``(n_cells or 1, n_qp)``, ``dNdx`` ``(n_cells or 1, n_qp, n, dim)``, ``A``
    broadcastable to ``(n_cells, n_qp, nc, dim, nc, dim)``.
    """
    weights, dNdx = np.asarray(weights), np.asarray(dNdx)
    n_qp, n, dim = dNdx.shape[1:]
    nc = np.shape(A)[2]
    n_cells = max(np.shape(A)[0], weights.shape[0], dNdx.shape[0])
    A = np.broadcast_to(A, (n_cells, n_qp, nc, dim, nc, dim))
    weights = np.broadcast_to(weights, (n_cells, n_qp))[:, :, None, None, None, None]
    shared = _shared(dNdx)
    G = np.swapaxes(dNdx[:1] if shared else np.broadcast_to(dNdx, (n_cells, n_qp, n, dim)),
                    -1, -2)  # (1 or n_cells, q, dim, n)
    if shared:
        GG = np.reshape(G[0, :, :, None, :, None] * G[0, :, None, :, None, :],
                        (n_qp * dim * dim, n * n))
        floats = nc * nc * (n_qp * dim * dim + n * n)
    else:
        floats = n_qp * (nc * dim) * (2 * n * nc + nc * dim) + (n * nc) ** 2
    block = max(1, _FORM_BLOCK_BYTES // (8 * floats))
    K = np.empty((n_cells, n, nc, n, nc))
    for start in range(0, n_cells, block):
        cells = slice(start, min(start + block, n_cells))
        m = cells.stop - start
        if shared:
            WA = np.empty((m, nc, nc, n_qp, dim, dim))  # w A as (cell, c, d, q, k, l)
            np.multiply(A[cells], weights[cells], out=WA.transpose(0, 3, 1, 4, 2, 5))
            products = np.reshape(WA.reshape(m * nc * nc, -1) @ GG, (m, nc, nc, n, n))
            K[cells] = products.transpose(0, 3, 1, 4, 2)
            continue
        B = np.zeros((m, n_qp, nc, dim, n, nc))
        for c in range(nc):
            B[:, :, c, :, :, c] = G[cells]
        B = B.reshape(m, n_qp, nc * dim, n * nc)
        WA = np.reshape(A[cells] * weights[cells], (m, n_qp, nc * dim, nc * dim))
        K[cells] = np.reshape(np.matmul(np.swapaxes(B, -1, -2), np.matmul(WA, B)).sum(axis=1),
                              (m, n, nc, n, nc))
    return K


def transposed_tangent_action(weights, dNdx, A, N=None, D=None
                              ) -> Callable[[np.ndarray], np.ndarray]:
    """``v ↦ Kᵀ v`` cell by cell for the tangent
    ``K_(e,a,c,b,d) = Σ_q w_eq ∂N_a/∂x_k [A_(ckdl) ∂N_b/∂x_l + D_(ckd) N_b]`` (summed over
    ``k, l``; the cell matrices of :func:`gradient_form` plus the term of a flux that
    depends on the field itself), without forming ``K``: with the gradient
    ``g_(ck) = Σ_a v_(a,c) ∂N_a/∂x_k`` of ``v`` at the quadrature points,
    ``(Kᵀ v)_(b,d) = Σ_q w_q [Σ_l ∂N_b/∂x_l Σ_ck g_ck A_(ckdl) + N_b Σ_ck g_ck D_(ckd)]``.

    One product costs a few passes over the quadrature points, far less than the cell
    matrices (``n_qp (nc·dim)²`` against ``n_qp (n·nc)² nc·dim`` multiplications a cell),
    so a few products of the same tangent are cheaper than its assembly.

    Parameters
    ----------
    weights : numpy.ndarray
        ``w`` ``(n_cells or 1, n_qp)``.
    dNdx : numpy.ndarray
        ``(n_cells or 1, n_qp, n, dim)`` (1: the same for every cell).
    A : numpy.ndarray
        ``∂P/∂∇u`` broadcastable to ``(n_cells, n_qp, nc, dim, nc, dim)``.
    N : numpy.ndarray, optional
        Shape functions ``(n_qp, n)``, needed with ``D``.
    D : numpy.ndarray, optional
        ``∂P/∂u`` broadcastable to ``(n_cells, n_qp, nc, dim, nc)``, or None.

    Returns
    -------
    callable
        Cell vectors ``(n_cells, n, nc)`` to ``(Kᵀ v)`` per cell ``(n_cells, n, nc)``.
    """
    n_qp, n, dim = np.shape(dNdx)[1:]
    nc = np.shape(A)[2]
    m = nc * dim
    n_cells = max(np.shape(A)[0], np.shape(weights)[0], np.shape(dNdx)[0])
    # (n_cells, n_qp, m, m): one batched (1 x m)(m x m) product per point
    A = np.reshape(np.broadcast_to(A, (n_cells, n_qp, nc, dim, nc, dim)), (n_cells, n_qp, m, m))
    w = np.asarray(weights)[:, :, None, None]
    uniform = np.shape(dNdx)[0] == 1
    G = dNdx[0] if uniform else dNdx
    # einsum's default path copies its operands per call; the optimized one is 5-10x faster
    to_points = "qak,eac->eqck" if uniform else "eqak,eac->eqck"
    to_nodes = "qbl,eqdl->ebd" if uniform else "eqbl,eqdl->ebd"
    if D is not None:
        D = np.broadcast_to(D, (n_cells, n_qp, nc, dim, nc)) * w[..., None]

    def transposed(v: np.ndarray) -> np.ndarray:
        g = np.einsum(to_points, G, v, optimize=True)  # (e, q, nc, dim)
        flux = np.matmul(np.reshape(g, (n_cells, n_qp, 1, m)), A)
        flux = np.reshape(flux, (n_cells, n_qp, nc, dim)) * w
        out = np.einsum(to_nodes, G, flux, optimize=True)
        if D is not None:
            out = out + np.einsum("qb,eqd->ebd", N, np.einsum("eqck,eqckd->eqd", g, D))
        return out

    return transposed

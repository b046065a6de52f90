"""The shape derivative of a cell bilinear form: a hand-derived adjoint rule.

For a form ``s(X) = Σ_e Σ_q dΩ_q F(∇a, ∇b)`` whose integrand depends on the node
coordinates ``X`` only through the physical gradients ``G_n = ∂N_n/∂x = J⁻ᵀ ∂N_n/∂ξ`` and
the weight ``dΩ = w det J`` (every stiffness form), with ``∇a = Σ_n a_n ⊗ G_n``:

* ``δ(det J) = det J Σ_n G_n · δX_n``
* ``δG_m = −Σ_n G_n (G_m · δX_n)``, so ``δ(∇a)_ck = −Σ_n G_nk Σ_j (∇a)_cj δX_nj``

hence, with ``P^a = ∂F/∂∇a``, ``P^b = ∂F/∂∇b`` and ``E_kj = Σ_c P^a_ck (∇a)_cj +
P^b_ck (∇b)_cj``,

    ∂s/∂X_nj = Σ_q dΩ_q Σ_k G_nk (F δ_kj − E_kj)

(the discrete form of the energy-momentum tensor ``F I − ∇aᵀ P^a − ∇bᵀ P^b`` of shape
sensitivity analysis; Haug, Choi & Komkov, *Design Sensitivity Analysis of Structural
Systems*, 1986, §3.3). It costs a few products of ``(n_cells, n_qp, dim, dim)`` arrays,
against the traced kernel's ``(n_cells, n_cell_dofs, n_cell_dofs)``.
"""

from __future__ import annotations

import numpy as np

from fesens.fem.geometry import CellGeometry


def form_shape_cotangent(geometry: CellGeometry, cells: np.ndarray, n_points: int,
                         density: np.ndarray, flux_a: np.ndarray, flux_b: np.ndarray,
                         grad_a: np.ndarray, grad_b: np.ndarray) -> np.ndarray:
    """``∂s/∂X`` ``(n_points, dim)`` of ``s = Σ_e Σ_q dΩ_q F`` (see the module docstring).

    Parameters
    ----------
    geometry : CellGeometry
        Of the coordinates ``X``, one geometry per cell (``dNdx`` ``(n_cells, n_qp,
        n_nodes, dim)``).
    cells : numpy.ndarray
        Connectivity ``(n_cells, n_nodes)``.
    n_points : int
    density : numpy.ndarray
        ``F`` at the quadrature points, ``(n_cells, n_qp)``.
    flux_a, flux_b : numpy.ndarray
        ``∂F/∂∇a`` and ``∂F/∂∇b``, ``(n_cells, n_qp, n_comp, dim, n_cases)``.
    grad_a, grad_b : numpy.ndarray
        ``∇a`` and ``∇b``, same shape (:func:`~fesens.fem.postprocess.dof_gradients`).
    """
    G, dx = geometry.dNdx, geometry.dx
    dim = G.shape[-1]
    E = (np.einsum("eqckz,eqcjz->eqkj", flux_a, grad_a, optimize=True)
         + np.einsum("eqckz,eqcjz->eqkj", flux_b, grad_b, optimize=True))
    tensor = density[:, :, None, None] * np.eye(dim) - E  # (n_cells, n_qp, dim, dim)
    cell_bar = np.einsum("eqak,eqkj->eaj", G * dx[:, :, None, None], tensor, optimize=True)
    flat = (cells[..., None] * dim + np.arange(dim)).ravel()
    return np.bincount(flat, weights=cell_bar.ravel(),
                       minlength=n_points * dim).reshape(n_points, dim)

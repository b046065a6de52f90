"""Field recovery from a solution: gradients, strains, stresses, von Mises, nodal averages.

All functions are vectorised over cells. Cell values are volume-weighted averages over the
quadrature points: ``ā_e = Σ_q a_(e,q) dΩ_q / Σ_q dΩ_q``.
"""

from __future__ import annotations

import numpy as np

from fesens.fem.geometry import CellGeometry


def gradients_at_quadrature(geometry: CellGeometry, cell_values: np.ndarray) -> np.ndarray:
    """``∂u_c/∂x_k`` at every quadrature point, ``(n_cells, n_qp, n_comp, dim)``.

    ``cell_values`` is ``(n_cells, n_nodes, n_comp)``.
    """
    if geometry.uniform:
        return np.einsum("qak,eac->eqck", geometry.dNdx[0], cell_values)
    return np.einsum("eqak,eac->eqck", geometry.dNdx, cell_values)


def cell_average(geometry: CellGeometry, values_at_qp: np.ndarray) -> np.ndarray:
    """Volume-weighted average over each cell's quadrature points: ``(n_cells, ...)``."""
    weights = geometry.dx / geometry.dx.sum(axis=1, keepdims=True)
    weights = np.broadcast_to(weights, values_at_qp.shape[:2])
    return np.einsum("eq,eq...->e...", weights, values_at_qp)


def small_strain(displacement_gradient: np.ndarray) -> np.ndarray:
    """``ε = (∇u + ∇uᵀ)/2`` for any leading shape ``(..., dim, dim)``."""
    return 0.5 * (displacement_gradient + np.swapaxes(displacement_gradient, -1, -2))


def isotropic_stress(strain: np.ndarray, lam: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``σ = λ tr(ε) I + 2 μ ε``; ``strain (n_cells, ..., dim, dim)``, ``lam, mu (n_cells,)``."""
    dim = strain.shape[-1]
    extra = (1,) * (strain.ndim - 1)
    trace = np.trace(strain, axis1=-2, axis2=-1)[..., None, None]
    return (lam.reshape(-1, *extra) * trace * np.eye(dim)
            + 2.0 * mu.reshape(-1, *extra) * strain)


def to_3d(stress: np.ndarray, out_of_plane: np.ndarray | float = 0.0) -> np.ndarray:
    """Embed a 2D stress tensor ``(..., 2, 2)`` in 3D with ``σ_zz = out_of_plane``."""
    if stress.shape[-1] == 3:
        return stress
    full = np.zeros((*stress.shape[:-2], 3, 3))
    full[..., :2, :2] = stress
    full[..., 2, 2] = out_of_plane
    return full


def von_mises(stress3d: np.ndarray) -> np.ndarray:
    """``σ_vm = sqrt(3/2 s:s)`` with the deviator ``s = σ − tr(σ)/3 I``; ``(..., 3, 3) → (...)``."""
    deviator = stress3d - np.trace(stress3d, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) / 3
    return np.sqrt(1.5 * np.einsum("...ij,...ij->...", deviator, deviator))


def nodal_average(cells: np.ndarray, cell_values: np.ndarray, weights: np.ndarray,
                  n_points: int) -> np.ndarray:
    """Average cell values at the nodes, weighted by cell volume: ``(n_points, ...)``.

    Parameters
    ----------
    cells : numpy.ndarray
        Connectivity ``(n_cells, n_nodes)``.
    cell_values : numpy.ndarray
        ``(n_cells, ...)``.
    weights : numpy.ndarray
        ``(n_cells,)`` (cell volumes).
    """
    n_cells, n_nodes = cells.shape
    flat = cell_values.reshape(n_cells, -1)
    node_ids = cells.ravel()
    w = np.repeat(weights, n_nodes)
    total = np.bincount(node_ids, weights=w, minlength=n_points)
    out = np.stack(
        [np.bincount(node_ids, weights=w * np.repeat(col, n_nodes), minlength=n_points)
         for col in flat.T],
        axis=1,
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        out = out / total[:, None]
    return out.reshape(n_points, *cell_values.shape[1:])

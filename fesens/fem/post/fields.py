"""Field recovery from a solution: gradients at quadrature points, cell and nodal averages.

All functions are vectorised over cells. Cell values are volume-weighted averages over the
quadrature points: ``ā_e = Σ_q a_(e,q) dΩ_q / Σ_q dΩ_q``.
"""

from __future__ import annotations

import numpy as np

from fesens.fem.integrals.geometry import CellGeometry


def gradients_at_quadrature(geometry: CellGeometry, cell_values: np.ndarray) -> np.ndarray:
    """``∂u_c/∂x_k`` at every quadrature point, ``(n_cells, n_qp, n_comp, dim)``.

    ``cell_values`` is ``(n_cells, n_nodes, n_comp)``.
    """
    if geometry.uniform:
        return np.einsum("qak,eac->eqck", geometry.dNdx[0], cell_values)
    return np.einsum("eqak,eac->eqck", geometry.dNdx, cell_values)


def dof_gradients(geometry: CellGeometry, cell_dof_values, n_components: int):
    """Gradients of cell dof vectors at the quadrature points, ``(n_cells, n_qp, n_comp,
    dim, n_cases)``, traced with the geometry.

    ``cell_dof_values`` is ``(n_cells, n_nodes · n_comp)`` (interleaved dofs) or
    ``(n_cells, n_nodes · n_comp, n_cases)``; a single vector gets ``n_cases = 1``.
    """
    n_cells, n_cell_dofs = np.shape(cell_dof_values)[:2]
    n_nodes = n_cell_dofs // n_components
    values = np.reshape(cell_dof_values, (n_cells, 1, n_nodes, -1))  # (e, 1, a, c·z)
    # (e, q, k, a) @ (e, 1, a, c·z): one batched product (faster than einsum's copies)
    grads = np.matmul(np.swapaxes(geometry.dNdx, -1, -2), values)
    n_qp, dim = np.shape(grads)[1:3]
    return np.transpose(np.reshape(grads, (n_cells, n_qp, dim, n_components, -1)),
                        (0, 1, 3, 2, 4))


def cell_average(geometry: CellGeometry, values_at_qp: np.ndarray) -> np.ndarray:
    """Volume-weighted average over each cell's quadrature points: ``(n_cells, ...)``."""
    weights = geometry.dx / geometry.dx.sum(axis=1, keepdims=True)
    weights = np.broadcast_to(weights, values_at_qp.shape[:2])
    return np.einsum("eq,eq...->e...", weights, values_at_qp)


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


def symmetric_tensor_components(tensors: np.ndarray) -> np.ndarray:
    """Symmetric tensors ``(..., d, d)`` (``d`` = 2 or 3; 2D ones padded with zeros) as
    ``(..., 6)`` in the order XX, YY, ZZ, XY, YZ, XZ, which ParaView reads as a symmetric
    tensor (with those component names) from a 6-component VTU/XDMF array."""
    tensors = np.asarray(tensors)
    d = tensors.shape[-1]
    full = np.zeros((*tensors.shape[:-2], 3, 3))
    full[..., :d, :d] = tensors
    rows, cols = (0, 1, 2, 0, 1, 0), (0, 1, 2, 1, 2, 2)
    return full[..., rows, cols]

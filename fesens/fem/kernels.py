"""Cell matrices of the bilinear forms, vectorised over all cells (einsum, no loops).

With ``G = ∂N/∂x`` at the quadrature points and ``dΩ`` the physical weights
(:class:`~fesens.fem.geometry.CellGeometry`), index ``(a, i)`` = node ``a``, component ``i``:

* conduction   ``Kκ_ab       = ∫ ∇N_a · ∇N_b dΩ``
* elasticity   ``Kλ_(ai)(bj) = ∫ ∂_i N_a ∂_j N_b dΩ``                      (``div u div v``)
               ``Kμ_(ai)(bj) = ∫ (δ_ij ∇N_a·∇N_b + ∂_j N_a ∂_i N_b) dΩ``   (``2 ε(u):ε(v)``)

so that the isotropic stiffness is ``K_e = λ_e Kλ_e + μ_e Kμ_e`` (Hughes, *The Finite Element
Method*, 2000, §2.7 with ``D = λ m mᵀ + μ diag(2,2,2,1,1,1)``).
* mass         ``M_ab        = ∫ N_a N_b dΩ``
"""

from __future__ import annotations

import numpy as np

from fesens.fem.geometry import CellGeometry


def _interleave(K: np.ndarray) -> np.ndarray:
    """``(e, a, i, b, j)`` → ``(e, a*dim + i, b*dim + j)``."""
    n, a, i, b, j = K.shape
    return K.reshape(n, a * i, b * j)


def conduction_matrices(geometry: CellGeometry) -> np.ndarray:
    """``Kκ``, shape ``(n_geom, n_nodes, n_nodes)``."""
    G, dx = geometry.dNdx, geometry.dx
    return np.einsum("eq,eqak,eqbk->eab", dx, G, G, optimize=True)


def elasticity_matrices(geometry: CellGeometry) -> tuple[np.ndarray, np.ndarray]:
    """``(Kλ, Kμ)``, each shape ``(n_geom, n_nodes*dim, n_nodes*dim)``."""
    G, dx = geometry.dNdx, geometry.dx
    dim = G.shape[-1]
    K_lambda = np.einsum("eq,eqai,eqbj->eaibj", dx, G, G, optimize=True)
    K_grad = conduction_matrices(geometry)
    K_mu = np.einsum("eab,ij->eaibj", K_grad, np.eye(dim)) + K_lambda.transpose(0, 1, 4, 3, 2)
    return _interleave(K_lambda), _interleave(K_mu)


def mass_matrices(geometry: CellGeometry) -> np.ndarray:
    """``M``, shape ``(n_geom, n_nodes, n_nodes)`` (use a geometry built with the mass order)."""
    return np.einsum("eq,qa,qb->eab", geometry.dx, geometry.N, geometry.N, optimize=True)

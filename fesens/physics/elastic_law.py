"""The material law and element kernels of linear elasticity (:mod:`fesens.physics.elasticity`
builds its model, solution and configuration on them).

Lamé parameters of ``(E, ν)`` for 3D, plane strain and plane stress; the two element
matrices ``Kλ`` and ``Kμ`` whose weighted sum is every cell's stiffness (Hughes, *The
Finite Element Method*, 2000, §2.7); the von Mises stress. All are written in the traced
numpy subset, so they are differentiable in their inputs and in the node coordinates.
"""

from __future__ import annotations

import numpy as np

from fesens.fem.integrals.geometry import CellGeometry

#: Allowed values of the 2D kinematic assumption (None: full 3D).
PLANE_ASSUMPTIONS = ("stress", "strain")


# ------------------------------------------------------------------ material law
def lame_parameters(E, nu, plane: str | None = None) -> tuple:
    """Lamé parameters ``(λ, μ)`` such that ``σ = λ tr(ε) I + 2μ ε``.

    ``μ = E / (2(1+ν))``; 3D and plane strain: ``λ = Eν / ((1+ν)(1−2ν))``;
    plane stress (σ_zz = 0 eliminated): ``λ* = Eν / (1−ν²)``.

    Parameters
    ----------
    E, nu : float or numpy.ndarray
        Young's modulus and Poisson's ratio (scalars or per-cell arrays ``(n_cells,)``).
        Only arithmetic is applied, so traced values (:mod:`fesens.ad`) work too.
    plane : {"stress", "strain"} or None
    """
    mu = E / (2.0 * (1.0 + nu))
    if plane == "stress":
        lam = E * nu / (1.0 - nu**2)
    else:
        lam = E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))
    return lam, mu


def lame_weights(nu: np.ndarray, plane: str | None = None) -> tuple[float, float] | None:
    """``(λ, μ)`` at ``E = 1`` when ``nu`` holds one value (in every cell), else None.

    λ and μ are linear in ``E``: with the same ``ν`` in every cell, ``(λ_e, μ_e) = E_e w``,
    so the stiffness ``Σ_e s_e (λ_e Kλ_e + μ_e Kμ_e)`` has the single component
    ``w_λ Kλ + w_μ Kμ`` with coefficients ``s_e E_e`` (assembled with one gather).
    """
    if nu.size == 0 or np.ptp(nu) != 0:
        return None
    lam, mu = lame_parameters(1.0, float(nu.flat[0]), plane)
    return float(lam), float(mu)


# ------------------------------------------------------------------ element kernels
def elasticity_matrices(geometry: CellGeometry) -> tuple:
    """``(Kλ, Kμ)``, each ``(n_geom, n_nodes*dim, n_nodes*dim)`` (traced with the geometry).

    With ``G`` ``(n_geom, n_qp, n_nodes*dim)`` holding ``∂_i N_a`` at column ``a*dim + i``:
    ``Kλ = Gᵀ diag(dΩ) G`` (one batched product, already in the interleaved dof order) and
    ``Kμ = δ_ij (∇N_a·∇N_b) + Kλ`` with ``i`` and ``j`` swapped in each node block, where
    ``∇N_a·∇N_b = Σ_i Kλ_(ai)(bi)``.
    """
    G, dx = geometry.dNdx, geometry.dx
    n_geom, n_qp, n_nodes, dim = np.shape(G)
    nd = n_nodes * dim
    flat = np.reshape(G, (n_geom, n_qp, nd))
    K_lambda = np.matmul(np.transpose(flat * dx[:, :, None], (0, 2, 1)), flat)
    blocks = np.reshape(K_lambda, (n_geom, n_nodes, dim, n_nodes, dim))
    K_grad = sum(blocks[:, :, i, :, i] for i in range(dim))
    swapped = np.transpose(blocks, (0, 1, 4, 3, 2))
    if type(swapped) is np.ndarray:  # plain arrays: add the diagonal blocks in place
        K_mu = np.ascontiguousarray(swapped)
        for i in range(dim):
            K_mu[:, :, i, :, i] += K_grad
    else:
        K_mu = swapped + K_grad[:, :, None, :, None] * np.reshape(np.eye(dim),
                                                                    (1, 1, dim, 1, dim))
    return K_lambda, np.reshape(K_mu, (n_geom, nd, nd))


def _divergence(gradients):
    """``div a`` ``(n_cells, n_qp, n_cases)`` from ``(n_cells, n_qp, dim, dim, n_cases)``"""
    return sum(gradients[:, :, i, i] for i in range(np.shape(gradients)[2]))


# ------------------------------------------------------------------ post-processing
def von_mises_squared(stress, out_of_plane=None):
    """``σ_vm² = 3/2 s:s = 3/2 σ:σ − 1/2 (tr σ)²`` for stress tensors ``(..., dim, dim)``.

    ``out_of_plane``: ``σ_zz`` ``(...)`` of 2D tensors (None: the tensors are complete).
    Traced values work.
    """
    dim = np.shape(stress)[-1]
    squares = np.sum(np.sum(stress * stress, axis=-1), axis=-1)
    trace = sum(stress[..., i, i] for i in range(dim))
    if out_of_plane is not None:
        squares = squares + out_of_plane * out_of_plane
        trace = trace + out_of_plane
    return 1.5 * squares - 0.5 * trace * trace


def von_mises(stress, out_of_plane=None):
    """``σ_vm`` of stress tensors ``(..., dim, dim)`` → ``(...)`` (:func:`von_mises_squared`)."""
    return np.sqrt(np.maximum(von_mises_squared(stress, out_of_plane), 0.0))

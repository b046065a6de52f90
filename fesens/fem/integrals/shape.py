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

The same two variations give the rules of the cell averages that stress recovery and the
volume use (:func:`averaged_gradients`, :func:`cell_volumes`): with ``W = Σ_q dΩ_q`` and
``Ḡ = Σ_q dΩ_q G_q / W``, for cotangents ``ḡ`` of ``Ḡ`` and ``v̄`` of ``W``,

    ∂/∂X_nj = Σ_q dΩ_q [G_qnj ((s_q − s̄)/W + v̄) − Σ_k G_qnk H_qkj / W],
    s_q = ḡ:G_q,  s̄ = ḡ:Ḡ,  H_qkj = Σ_m ḡ_mk G_qmj.

Each rule falls back to tracing the geometry when a value is traced twice (nested
derivatives), so higher derivatives stay exact.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.registry import defvjp
from fesens.ad.tracer import Box, primitive
from fesens.fem.integrals.geometry import CellGeometry


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
        ``∇a`` and ``∇b``, same shape (:func:`~fesens.fem.post.fields.dof_gradients`).
    """
    G, dx = geometry.dNdx, geometry.dx
    dim = G.shape[-1]
    E = (np.einsum("eqckz,eqcjz->eqkj", flux_a, grad_a, optimize=True)
         + np.einsum("eqckz,eqcjz->eqkj", flux_b, grad_b, optimize=True))
    tensor = density[:, :, None, None] * np.eye(dim) - E  # (n_cells, n_qp, dim, dim)
    cell_bar = np.einsum("eqak,eqkj->eaj", G * dx[:, :, None, None], tensor, optimize=True)
    return _on_nodes(cell_bar, cells, n_points)


def _on_nodes(cell_bar: np.ndarray, cells: np.ndarray, n_points: int) -> np.ndarray:
    """Sum per-cell node cotangents ``(n_cells, n_nodes, dim)`` at the nodes."""
    dim = cell_bar.shape[-1]
    flat = (cells[..., None] * dim + np.arange(dim)).ravel()
    return np.bincount(flat, weights=cell_bar.ravel(),
                       minlength=n_points * dim).reshape(n_points, dim)


def _averages(geometry: CellGeometry) -> tuple:
    """``(Ḡ, W)``: ``(n_geom, n_nodes, dim)`` and ``(n_geom,)`` (traced with the geometry)."""
    W = np.sum(geometry.dx, axis=1)
    return np.einsum("eq,eqak->eak", geometry.dx / W[:, None], geometry.dNdx), W


@primitive
def averaged_gradients(model, points):
    """Volume-averaged ``∂N_a/∂x_k`` per cell, ``(n_cells, n_nodes, dim)``, at ``points``."""
    return _averages(model.geometry(points))[0]


@primitive
def cell_volumes(model, points):
    """Cell volumes ``W`` (2D: areas) at ``points``, ``(n_cells,)``."""
    return _averages(model.geometry(points))[1]


def _averages_vjp(which: int):
    def maker(ans, model, points):
        def vjp(g):
            if type(g) is Box or type(points) is Box:  # nested: trace the geometry
                from fesens.ad.api import vjp as pullback_of

                return pullback_of(lambda X: _averages(model.geometry(X))[which], points)[1](g)
            geometry = model.geometry(points)
            n_cells = geometry.dx.shape[0]
            g_bar = g if which == 0 else np.zeros((n_cells, *geometry.dNdx.shape[2:]))
            volume_bar = np.zeros(n_cells) if which == 0 else g
            return _averages_cotangent(geometry, model.mesh.cells, model.mesh.n_points,
                                       g_bar, volume_bar)

        return vjp

    return maker


def _averages_cotangent(geometry: CellGeometry, cells, n_points, g_bar, volume_bar):
    """``∂/∂X`` of ``⟨ḡ, Ḡ⟩ + ⟨v̄, W⟩`` (the module docstring's rule), ``(n_points, dim)``."""
    G, dx = geometry.dNdx, geometry.dx
    gbar, W = _averages(geometry)
    s_q = np.einsum("eak,eqak->eq", g_bar, G, optimize=True)
    s_bar = np.einsum("eak,eak->e", g_bar, gbar)
    H = np.einsum("emk,eqmj->eqkj", g_bar, G, optimize=True)
    weight = dx * ((s_q - s_bar[:, None]) / W[:, None] + volume_bar[:, None])
    cell_bar = (np.einsum("eq,eqnj->enj", weight, G, optimize=True)
                - np.einsum("eqnk,eqkj->enj", G * (dx / W[:, None])[:, :, None, None], H,
                            optimize=True))
    return _on_nodes(cell_bar, cells, n_points)


defvjp(averaged_gradients, None, _averages_vjp(0))
defvjp(cell_volumes, None, _averages_vjp(1))

"""The energy interpolation of nearly void cells (Wang, Lazarov, Sigmund & Jensen 2014): where a
design's density scale is small, the stored energy moves from the law's ``W`` towards linear
elasticity's ``W_L`` by the smooth step ``γ(s)``, ``W_s = W(γ H) + (1 − γ²) W_L(H)``, so that
a void cell's large distortions do not stop Newton. The helpers here are that step and the
linear law (traced where their arguments are).
"""

from __future__ import annotations

import numpy as np

#: How the nearly void cells of a design are modelled: by the law, or by the energy
#: interpolation towards linear elasticity (see the module docstring).
VOID_TREATMENTS = ("none", "energy_interpolation")
#: β (sharpness) and η (threshold on the scale) of the smooth step γ(s): Wang et al. 2014
#: use 500 and 0.01.
DEFAULT_VOID_BETA = 500.0
DEFAULT_VOID_ETA = 0.01


def void_step(scale, beta: float = DEFAULT_VOID_BETA, eta: float = DEFAULT_VOID_ETA):
    """The smooth step ``γ(s) = (tanh(βη) + tanh(β(s − η))) / (tanh(βη) + tanh(β(1 −
    η)))`` of the energy interpolation, ``γ(0) = 0``, ``γ(1) = 1``; same shape as ``scale``
    (traced when it is)."""
    low = np.tanh(beta * eta)
    return (low + np.tanh(beta * (scale - eta))) / (low + np.tanh(beta * (1.0 - eta)))


def _small_strain(H):
    """``ε = (H + Hᵀ)/2`` ``(..., d, d)`` (traced)."""
    return 0.5 * (H + np.swapaxes(H, -1, -2))


def _trace(T):
    return sum(T[..., i, i] for i in range(np.shape(T)[-1]))


def linear_energy(H, lam, mu):
    """``W_L = λ/2 (tr ε)² + μ ε:ε`` ``(...)`` (traced; constants broadcast to
    ``H.shape[:-2]``)."""
    eps = _small_strain(H)
    tr = _trace(eps)
    return 0.5 * lam * tr * tr + mu * np.sum(np.sum(eps * eps, axis=-1), axis=-1)


def linear_stress(H, lam, mu):
    """``P_L = λ tr ε I + 2μ ε`` ``(..., d, d)`` (traced)."""
    eps = _small_strain(H)
    return ((lam * _trace(eps))[..., None, None] * np.eye(np.shape(H)[-1])
            + 2.0 * mu[..., None, None] * eps)


def linear_tangent(lam, mu, d: int) -> np.ndarray:
    """``C_iJkL = λ δ_iJ δ_kL + μ (δ_ik δ_JL + δ_iL δ_Jk)`` ``(..., d, d, d, d)`` of plain
    constants ``(...)``."""
    eye = np.eye(d)
    return (np.einsum("...,iJ,kL->...iJkL", lam, eye, eye)
            + np.einsum("...,ik,JL->...iJkL", mu, eye, eye)
            + np.einsum("...,iL,Jk->...iJkL", mu, eye, eye))


# ------------------------------------------------------------------ the model

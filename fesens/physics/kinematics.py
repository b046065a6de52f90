"""Kinematics of finite strain: ``F``, ``J``, ``C − I``, the invariants of ``C`` and their
derivatives in ``F``, vectorized over the points ``(..., d, d)``.

The functions of ``H = F − I`` are written in the traced numpy subset (differentiable by
:mod:`fesens.ad`) and keep their relative precision at small strains. An isotropic energy
``W(I₁, I₂, J)`` of the invariants of ``C = FᵀF`` (``I₁ = tr C``, ``I₂ = ((tr C)² − tr C²)/2``,
``J = det F``; plane strain adds ``C_zz = 1``) has, with the partials ``W_a = ∂W/∂I_a`` and
``W_ab = ∂²W/∂I_a∂I_b`` (Holzapfel, *Nonlinear Solid Mechanics*, Wiley 2000, §6.2):

* ``∂I₁/∂F = 2F``, ``∂I₂/∂F = 2(I₁ F − F C)``, ``∂J/∂F = J F⁻ᵀ``, so that
  ``P = 2 W₁ F + 2 W₂ (I₁ F − F C) + W_J J F⁻ᵀ``;
* ``∂²I₁/∂F_iJ∂F_kL = 2 δ_ik δ_JL``,
  ``∂²I₂/∂F_iJ∂F_kL = 4 F_iJ F_kL + 2 I₁ δ_ik δ_JL − 2 δ_ik C_JL − 2 F_iL F_kJ −
  2 b_ik δ_JL`` (``b = F Fᵀ``), ``∂²J/∂F_iJ∂F_kL = J (G_iJ G_kL − G_iL G_kJ)``
  (``G = F⁻ᵀ``), so that ``A = Σ_ab W_ab ∂I_a/∂F ⊗ ∂I_b/∂F + Σ_a W_a ∂²I_a/∂F²``.

:func:`invariant_first_piola`, :func:`invariant_tangent` and
:func:`invariant_out_of_plane` take ``W_a`` and ``W_ab`` from :mod:`fesens.ad.pointwise`
(a function of 3 numbers per point: a few passes over ``(...)`` arrays) and assemble ``P``
and ``A`` from these closed forms: ``A`` as a few outer and crossed products of
``(..., d, d)`` stacks, the terms whose partials vanish at every point skipped
(neo-Hookean: one outer and one crossed product, as its hand kernel).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens.ad.numpy_wrapper import det, getval, inv
from fesens.ad.pointwise import point_blocks, scalar_partials, scalar_partials_hessian

#: Bytes of ``A`` per block of points of :func:`invariant_tangent` (its temporaries, a few
#: times a block's ``A``, then stay small beside the whole ``A``).
_TANGENT_BLOCK_BYTES = 2**22


# ------------------------------------------------------------------ kinematics (traced)
def deformation_gradient(H):
    """``F = I + H`` ``(..., d, d)`` of displacement gradients ``H`` ``(..., d, d)``."""
    return H + np.eye(np.shape(H)[-1])


def jacobian(H):
    """``J = det F`` ``(...)`` of displacement gradients ``H`` ``(..., d, d)`` (traced)."""
    return det(deformation_gradient(H))


def swap(F):
    """``Fᵀ`` of a stack ``(..., d, d)``."""
    return np.swapaxes(F, -1, -2)


def trace(T):
    """``tr T`` ``(...)`` of a stack ``(..., d, d)``."""
    return sum(T[..., i, i] for i in range(np.shape(T)[-1]))


def double_contraction(A, B):
    """``A:B`` ``(...)`` of stacks ``(..., d, d)``."""
    return np.sum(np.sum(A * B, axis=-1), axis=-1)


def volume_change(H):
    """``J − 1 = det(I + H) − 1`` ``(...)`` from the invariants of ``H``:
    ``tr H + det H`` in 2D, ``tr H + I₂(H) + det H`` in 3D with
    ``I₂ = ((tr H)² − tr H²)/2``. Forming ``det F − 1`` would lose ``ε/|H|`` of its
    relative precision at small strains."""
    tr_H = trace(H)
    if np.shape(H)[-1] == 2:
        return tr_H + det(H)
    second = 0.5 * (tr_H * tr_H - double_contraction(H, swap(H)))  # tr H² = H:Hᵀ
    return tr_H + second + det(H)


def log_jacobian(H):
    """``ln J`` ``(...)`` without cancellation at small strains."""
    return np.log1p(volume_change(H))


def strain_part(H):
    """``C − I = H + Hᵀ + HᵀH`` ``(..., d, d)``, without forming ``FᵀF − I``."""
    return H + swap(H) + np.matmul(swap(H), H)


def per_point(constant):
    """A constant broadcastable to ``H.shape[:-2]`` as one broadcastable to ``H``."""
    if np.ndim(constant) == 0:
        return constant
    return np.reshape(constant, np.shape(constant) + (1, 1))


_IN_PLANE = np.eye(3)[:, :2]  # (3, 2): embeds a 2D H as the 3D one with zero third row/column


def embedded(H):
    """The 3D ``H`` ``(..., 3, 3)`` of a plane-strain ``H`` ``(..., 2, 2)`` (``F_zz = 1``)."""
    return np.matmul(np.matmul(_IN_PLANE, H), _IN_PLANE.T)



# ------------------------------------------------------------------ products of (..., d, d) stacks
def outer(a, b, out: np.ndarray | None = None) -> np.ndarray:
    """``a_iJ b_kL`` ``(..., d, d, d, d)`` of plain ``(..., d, d)``, C-ordered (so that
    :func:`add_pairs` writes into it through views), in ``out`` if given."""
    a, b = a[..., :, :, None, None], b[..., None, None, :, :]
    return np.multiply(a, b, out=np.empty(np.broadcast_shapes(a.shape, b.shape))
                       if out is None else out)


def crossed(a, b) -> np.ndarray:
    """``a_iL b_kJ`` ``(..., d, d, d, d)`` of plain ``(..., d, d)``."""
    return a[..., :, None, None, :] * swap(b)[..., None, :, :, None]


def add_pairs(A: np.ndarray, T, delta: str) -> None:
    """``A_iJkL += δ_ik T_JL`` (``delta="ik"``) or ``δ_JL T_ik`` (``"JL"``) in place, one
    ``(..., d, d)`` slice per value of the repeated index instead of a product with the
    identity."""
    for i in range(A.shape[-1]):
        if delta == "ik":
            A[..., i, :, i, :] += T
        else:
            A[..., :, i, :, i] += T


# ------------------------------------------------------------------ invariants of C
def _squared_norm(T):
    """``T:T`` ``(...)`` of a stack ``(..., d, d)``, one reduction over ``d²`` entries."""
    return np.sum(np.reshape(T * T, np.shape(T)[:-2] + (-1,)), axis=-1)


def _invariants(H, G) -> tuple:
    """``(I₁, I₂, J)`` of ``H`` and ``G = F⁻ᵀ`` (3D only: plane strain needs none)."""
    I1 = 3.0 + 2.0 * trace(H) + _squared_norm(H)  # tr C = tr(I + H + Hᵀ + HᵀH) (+ C_zz)
    J = 1.0 + volume_change(H)
    if np.shape(H)[-1] == 2:
        return I1, I1 - 1.0 + J * J, J   # I₂ = det C₂ + tr C₂ with C_zz = 1
    return I1, J * J * _squared_norm(G), J  # I₂ = tr cof C = |cof F|², cof F = J F⁻ᵀ


def principal_invariants(H) -> tuple:
    """``(I₁, I₂, J)`` ``(...)`` each of ``C = FᵀF`` (plane strain: with ``C_zz = 1``):
    ``I₁ = 3 + 2 tr H + H:H``, ``J = 1 +`` :func:`volume_change`, ``I₂ = I₁ − 1 + J²`` in
    plane strain and ``|cof F|² = J² F⁻ᵀ:F⁻ᵀ`` in 3D. Traced."""
    G = swap(inv(deformation_gradient(H))) if np.shape(H)[-1] == 3 else None
    return _invariants(H, G)


def _vanishes(value) -> bool:
    """Whether ``value`` is plain (not traced) and 0 at every point: its term is skipped."""
    return getval(value) is value and not np.any(value)


def invariant_first_piola(energy: Callable, H, *constants):
    """``P = 2 W₁ F + 2 W₂ (I₁ F − F C) + W_J J F⁻ᵀ`` ``(..., d, d)`` of
    ``W = energy(I₁, I₂, J, *constants)`` (traced in ``H`` and the constants)."""
    F = deformation_gradient(H)
    G = swap(inv(F))
    I1, I2, J = _invariants(H, G)
    W1, W2, WJ = scalar_partials(energy, (I1, I2, J), *constants)
    P = 2.0 * per_point(W1) * F + per_point(WJ * J) * G
    if _vanishes(W2):
        return P
    return P + 2.0 * per_point(W2) * (per_point(I1) * F - np.matmul(F, np.matmul(swap(F), F)))


def invariant_out_of_plane(energy: Callable, H, *constants):
    """Plane strain's ``P_zz = 2 W₁ + 2 W₂ (I₁ − 1) + W_J J`` ``(...)`` (``F_zz = C_zz =
    (F⁻ᵀ)_zz = 1``; traced)."""
    I1, I2, J = principal_invariants(H)
    W1, W2, WJ = scalar_partials(energy, (I1, I2, J), *constants)
    return 2.0 * W1 + 2.0 * W2 * (I1 - 1.0) + WJ * J


def _outer_coefficients(partials, second, J) -> dict:
    """The entries ``M_ab`` ``(...)``, ``a ≤ b``, of the outer part of
    :func:`invariant_tangent` that are not 0 at every point."""
    _, W2, WJ = partials
    forms = {(0, 0): lambda: 4.0 * (second[0, 0] + W2),
             (1, 1): lambda: 4.0 * second[1, 1],
             (0, 1): lambda: 4.0 * second[0, 1],
             (0, 2): lambda: 2.0 * J * second[0, 2],
             (1, 2): lambda: 2.0 * J * second[1, 2],
             (2, 2): lambda: J * (J * second[2, 2] + WJ)}
    needed = {(0, 0): np.any(second[0, 0]) or np.any(W2), (2, 2): True}
    M = {pair: form() for pair, form in forms.items()
         if needed.get(pair, np.any(second[pair]))}
    return {pair: value for pair, value in M.items() if np.any(value)}


def add_identity(A: np.ndarray, c) -> None:
    """``A_iJkL += c δ_ik δ_JL`` in place, ``c`` ``(...)``: one strided pass over the
    diagonal of ``A`` as ``(..., d², d²)`` (C-ordered ``A``)."""
    m = A.shape[-1] * A.shape[-2]
    diagonal = np.reshape(A, (-1, m * m), copy=False)[:, ::m + 1]
    diagonal += np.reshape(np.broadcast_to(c, A.shape[:-4]), (-1, 1))


def invariant_tangent(energy: Callable, H, *constants) -> np.ndarray:
    """``A_iJkL = ∂P_iJ/∂F_kL`` ``(..., d, d, d, d)`` (plain) of ``W = energy(I₁, I₂, J,
    *constants)``.

    With ``u = (F, I₁ F − F C, G)`` the outer part is ``Σ_ab M_ab u_a ⊗ u_b``, ``M₁₁ = 4
    W₁₁ + 4 W₂``, ``M₂₂ = 4 W₂₂``, ``M₁₂ = 4 W₁₂``, ``M₁₃ = 2 J W₁J``, ``M₂₃ = 2 J W₂J``,
    ``M₃₃ = J² W_JJ + J W_J`` (the ``G ⊗ G`` of ``∂²J`` included); then the crossed terms
    ``−J W_J G_iL G_kJ − 2 W₂ F_iL F_kJ`` and the identity pairs ``δ_ik ((2 W₁ + 2 W₂ I₁)
    δ_JL − 2 W₂ C_JL) − 2 W₂ b_ik δ_JL``. The entries of ``M`` that vanish at every point,
    and the ``W₂`` terms where ``W₂ = 0``, are skipped. In blocks of points of
    :data:`_TANGENT_BLOCK_BYTES` of ``A``: the temporaries are a block's.
    """
    H = np.asarray(getval(H), dtype=float)
    A = np.empty(H.shape + H.shape[-2:])
    for index, block_constants in point_blocks(H.shape[:-2], H.shape[-1] ** 4,
                                               tuple(getval(c) for c in constants),
                                               _TANGENT_BLOCK_BYTES):
        _tangent_block(energy, H[index], block_constants, A[index])
    return A


def _tangent_block(energy: Callable, H: np.ndarray, constants: tuple, A: np.ndarray) -> None:
    """:func:`invariant_tangent` of plain ``H`` written into ``A`` (C-ordered)."""
    F = deformation_gradient(H)
    G = swap(inv(F))
    I1, I2, J = _invariants(H, G)
    partials, second = scalar_partials_hessian(energy, (I1, I2, J), *constants)
    W1, W2, WJ = (partial[..., None, None] for partial in partials)
    M = _outer_coefficients(partials, second, J)
    has_W2 = bool(np.any(W2))
    rows = sorted({a for pair in M for a in pair})
    C = np.matmul(swap(F), F) if has_W2 or 1 in rows else None
    basis = {0: F, 1: None if C is None else I1[..., None, None] * F - np.matmul(F, C), 2: G}
    if not rows:
        A[...] = 0.0
    for a in rows:
        paired = sum(M[min(a, b), max(a, b)][..., None, None] * basis[b]
                     for b in range(3) if (min(a, b), max(a, b)) in M)
        if a == rows[0]:
            outer(basis[a], paired, out=A)
        else:
            A += outer(basis[a], paired)
    A += crossed(-J[..., None, None] * WJ * G, G)
    if not has_W2:
        add_identity(A, 2.0 * partials[0])
        return
    A += crossed(-2.0 * W2 * F, F)
    add_pairs(A, 2.0 * (W1 + W2 * I1[..., None, None]) * np.eye(F.shape[-1]) - 2.0 * W2 * C,
              "ik")
    add_pairs(A, -2.0 * W2 * np.matmul(F, swap(F)), "JL")

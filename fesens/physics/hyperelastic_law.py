"""Finite-strain hyperelastic material laws at the quadrature points.

Each law gives, for the displacement gradient ``H = ∇u`` (deformation gradient
``F = I + H``) and the Lamé constants ``λ, μ``, the stored energy density ``W``, the
first Piola–Kirchhoff stress ``P = ∂W/∂F`` and its tangent ``A = ∂P/∂F``
(``A_iJkL = ∂P_iJ/∂F_kL``), vectorised over every cell and quadrature point:

* compressible neo-Hookean (Bonet & Wood, *Nonlinear Continuum Mechanics for Finite
  Element Analysis*, 2nd ed., 2008, §6.4.3, eq. 6.27):
  ``W = μ/2 (I_C − 3) − μ ln J + λ/2 (ln J)²``, ``P = μ (F − F⁻ᵀ) + λ ln J F⁻ᵀ``;
* St. Venant–Kirchhoff (Bonet & Wood, ch. 6): ``W = λ/2 (tr E)² + μ E:E`` with
  ``E = (FᵀF − I)/2``, ``S = λ tr E I + 2μ E``, ``P = F S``.

2D is plane strain: the out-of-plane stretch is 1, so ``I_C = tr C + 1`` and ``ln J`` is
that of the in-plane ``F``; the out-of-plane stress ``P_zz`` (``= σ_zz J`` since
``F_zz = 1``) is reported by each law for the Cauchy and von Mises stresses.

A law is its energy (:meth:`~fesens.physics.energy_law.HyperelasticLaw.from_energy`
derives ``P`` and ``A``); the hand-derived ``first_piola`` (traced) and ``tangent`` (plain
numpy) below are faster overrides, checked against the derived ones by the tests. The laws
are registered by name in :data:`HYPERELASTIC_LAWS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

# det and inv by their closed forms for 2x2 and 3x3 stacks, several times faster than
# LAPACK's per-matrix loop, on plain and traced arrays alike
from fesens.ad.numpy_wrapper import det, getval, inv
from fesens.physics.elastic_law import lame_parameters
from fesens.physics.energy_law import (  # noqa: F401 - deformation_gradient, jacobian re-exported
    HyperelasticLaw,
    deformation_gradient,
    double_contraction,
    jacobian,
    log_jacobian,
    per_point,
    strain_part,
    swap,
    trace,
)
from fesens.physics.kinematics import add_pairs as _add_pairs
from fesens.physics.kinematics import crossed as _crossed
from fesens.physics.kinematics import outer as _outer
from fesens.physics.rubber_laws import RUBBER_LAWS

#: The 2D kinematic assumptions a finite-strain law supports (None: 3D). Plane stress
#: would need the out-of-plane stretch solved at every point, which no law here does.
FINITE_STRAIN_PLANES = (None, "strain")


def inverted_points(H) -> np.ndarray:
    """Mask ``(...)`` of the points whose deformation is inverted or degenerate (``J ≤ 0``).

    Neither law is defined there (``ln J``, ``F⁻¹``); a model refuses such a state and
    names the cells (its job, not the law's).
    """
    return ~(det(deformation_gradient(np.asarray(getval(H), dtype=float))) > 0.0)


def _plain(H, lam, mu) -> tuple:
    """``(F, λ, μ)`` as plain arrays, the constants broadcast to ``H.shape[:-2]``."""
    F = deformation_gradient(np.asarray(getval(H), dtype=float))
    batch = F.shape[:-2]
    return (F, np.broadcast_to(np.asarray(getval(lam), dtype=float), batch),
            np.broadcast_to(np.asarray(getval(mu), dtype=float), batch))


# ------------------------------------------------------------------ compressible neo-Hookean
def _neo_hookean_energy(H, lam, mu):
    log_J = log_jacobian(H)
    # I_C − 3 = tr(C − I): plane strain's out-of-plane stretch² = 1 adds nothing to it
    return 0.5 * mu * trace(strain_part(H)) - mu * log_J + 0.5 * lam * log_J * log_J


def neo_hookean_of_invariants(I1, I2, J, lam, mu):
    """The same energy of the invariants of ``C`` (for
    :meth:`~fesens.physics.energy_law.HyperelasticLaw.from_invariants`):
    ``W = μ/2 (I₁ − 3) − μ ln J + λ/2 (ln J)²``."""
    log_J = np.log(J)
    return 0.5 * mu * (I1 - 3.0) - mu * log_J + 0.5 * lam * log_J * log_J


def _neo_hookean_first_piola(H, lam, mu):
    # F − F⁻ᵀ = F⁻ᵀ (C − I): the same stress without the cancellation of F against F⁻ᵀ
    F_inv_T = swap(inv(deformation_gradient(H)))
    return (per_point(mu) * np.matmul(F_inv_T, strain_part(H))
            + per_point(lam * log_jacobian(H)) * F_inv_T)


def _neo_hookean_tangent(H, lam, mu):
    # ∂F⁻ᵀ_iJ/∂F_kL = −F⁻¹_Jk F⁻¹_Li and ∂ln J/∂F_kL = F⁻¹_Lk give, with G = F⁻ᵀ,
    # A_iJkL = μ δ_ik δ_JL + (μ − λ ln J) G_iL G_kJ + λ G_iJ G_kL
    F, lam, mu = _plain(H, lam, mu)
    G = swap(inv(F))
    A = _outer(lam[..., None, None] * G, G)
    A += _crossed((mu - lam * log_jacobian(F - np.eye(F.shape[-1])))[..., None, None] * G, G)
    _add_pairs(A, mu[..., None, None] * np.eye(F.shape[-1]), "ik")
    return A


def _neo_hookean_out_of_plane(H, lam, mu):
    # F_zz = 1 and (F⁻ᵀ)_zz = 1: P_zz = μ (1 − 1) + λ ln J
    return lam * log_jacobian(H)


# ------------------------------------------------------------------ St. Venant–Kirchhoff
def _green_lagrange(H):
    """``E = (FᵀF − I)/2 = (H + Hᵀ + HᵀH)/2`` ``(..., d, d)`` (the second form keeps full
    relative precision at small strains)."""
    return 0.5 * strain_part(H)


def _svk_energy(H, lam, mu):
    E = _green_lagrange(H)
    tr_E = trace(E)
    return 0.5 * lam * tr_E * tr_E + mu * double_contraction(E, E)


def _svk_first_piola(H, lam, mu):
    E = _green_lagrange(H)
    S = per_point(lam * trace(E)) * np.eye(np.shape(H)[-1]) + 2.0 * per_point(mu) * E
    return np.matmul(deformation_gradient(H), S)


def _svk_tangent(H, lam, mu):
    # P = F S(E): A_iJkL = δ_ik S_JL + F_iI F_kK C_IJKL with
    # C_IJKL = λ δ_IJ δ_KL + μ (δ_IK δ_JL + δ_IL δ_JK), i.e.
    # A_iJkL = δ_ik S_JL + λ F_iJ F_kL + μ (F_iM F_kM δ_JL + F_iL F_kJ)
    F, lam, mu = _plain(H, lam, mu)
    eye = np.eye(F.shape[-1])
    E = _green_lagrange(F - eye)
    S = (lam * trace(E))[..., None, None] * eye + 2.0 * mu[..., None, None] * E
    A = _outer(lam[..., None, None] * F, F)
    A += _crossed(mu[..., None, None] * F, F)
    _add_pairs(A, S, "ik")
    _add_pairs(A, np.matmul(mu[..., None, None] * F, swap(F)), "JL")
    return A


def _svk_out_of_plane(H, lam, mu):
    # E_zz = 0 in plane strain, so S_zz = λ tr E, and P_zz = F_zz S_zz = S_zz
    return lam * trace(_green_lagrange(H))


# ------------------------------------------------------------------ checks
def check_constants(lam, mu) -> None:
    """Refuse Lamé constants for which the laws are not stable at ``F = I``.

    Raises
    ------
    ValueError
        ``μ ≤ 0`` or a bulk modulus ``κ = λ + 2μ/3 ≤ 0``, naming the constant and its range.
    """
    lam = np.asarray(getval(lam), dtype=float)
    mu = np.asarray(getval(mu), dtype=float)
    if not np.all(np.isfinite(lam)) or not np.all(np.isfinite(mu)):
        raise ValueError("the Lamé constants λ (lam) and μ (mu) must be finite numbers")
    if np.any(mu <= 0.0):
        raise ValueError(f"the shear modulus mu must be > 0; got min {float(np.min(mu))!r}")
    kappa = lam + 2.0 * mu / 3.0
    if np.any(kappa <= 0.0):
        raise ValueError("lam must be > -2 mu / 3 (a positive bulk modulus κ = λ + 2μ/3); got "
                         f"min κ = {float(np.min(kappa))!r}")


def lame_constants(E, nu, plane: str | None = None) -> tuple:
    """``(λ, μ)`` of Young's modulus and Poisson's ratio for 3D or plane strain.

    Parameters
    ----------
    E, nu : float or numpy.ndarray
        Scalars or per-cell arrays ``(n_cells,)`` (traced values work: only arithmetic).
    plane : {None, "strain"}
        The 2D assumption; plane stress is refused (see :data:`FINITE_STRAIN_PLANES`).

    Raises
    ------
    ValueError
        ``E ≤ 0``, ``ν`` outside ``(−1, 0.5)`` or an unsupported ``plane``.
    """
    if plane not in FINITE_STRAIN_PLANES:
        raise ValueError(f"finite-strain laws support plane in {FINITE_STRAIN_PLANES} (3D or "
                         f"plane strain); got {plane!r}")
    E_value, nu_value = np.asarray(getval(E), dtype=float), np.asarray(getval(nu), dtype=float)
    if not np.all(E_value > 0.0):
        raise ValueError(f"Young's modulus E must be > 0; got min {float(np.min(E_value))!r}")
    if not np.all((nu_value > -1.0) & (nu_value < 0.5)):
        raise ValueError("Poisson's ratio nu must lie in (-1, 0.5) (0.5: incompressible, "
                         f"which these laws cannot represent); got {nu_value.ravel()[:5]}")
    return lame_parameters(E, nu, plane)


#: The finite-strain laws by name (read-only): config and command line read their choices
#: here.
HYPERELASTIC_LAWS: Mapping[str, HyperelasticLaw] = MappingProxyType({
    law.name: law for law in (
        HyperelasticLaw.from_energy(
            "neo-hookean",
            "compressible neo-Hookean, W = μ/2 (I_C − 3) − μ ln J + λ/2 (ln J)² "
            "(Bonet & Wood 2008, eq. 6.27)",
            _neo_hookean_energy, first_piola=_neo_hookean_first_piola,
            tangent=_neo_hookean_tangent, out_of_plane=_neo_hookean_out_of_plane,
            check_constants=check_constants, check_points=False),
        HyperelasticLaw.from_energy(
            "saint-venant-kirchhoff",
            "St. Venant–Kirchhoff, W = λ/2 (tr E)² + μ E:E (Bonet & Wood 2008, ch. 6)",
            _svk_energy, first_piola=_svk_first_piola, tangent=_svk_tangent,
            out_of_plane=_svk_out_of_plane, check_constants=check_constants,
            check_points=False),
        *RUBBER_LAWS,  # the rubber and fibre laws' energies and records: rubber_laws.py
    )
})

#: The law of a finite-strain model that names none.
DEFAULT_LAW = "neo-hookean"


def hyperelastic_law(name: str) -> HyperelasticLaw:
    """The law registered as ``name`` in :data:`HYPERELASTIC_LAWS`.

    Raises
    ------
    ValueError
        An unknown name (the message lists the known ones).
    """
    try:
        return HYPERELASTIC_LAWS[name]
    except KeyError:
        raise ValueError(f"unknown hyperelastic law {name!r}; choose one of "
                         f"{sorted(HYPERELASTIC_LAWS)}") from None

"""Stored energies of rubber and soft-tissue laws, in the traced numpy subset.

Each energy is ``W(H, *constants)`` ``(...)`` per unit reference volume, of the
displacement gradients ``H = F − I`` ``(..., d, d)`` (d = 2: plane strain, the
out-of-plane stretch 1; or 3) and constants broadcastable to ``H.shape[:-2]`` (scalars or
per cell ``(n_cells, 1)``). :mod:`fesens.ad` derives the stress and the tangent. All are
written in the isochoric invariants ``Ī₁ = J^{-2/3} I₁``, ``Ī₂ = J^{-4/3} I₂`` (and
``Ī₄ = J^{-2/3} a·Ca``) of ``C = FᵀF`` plus the volumetric energy ``U(J) = κ/2 (J − 1)²``:
Abaqus's form ``U = (J − 1)²/D₁`` with ``κ = 2/D₁`` (Abaqus Theory Guide, §4.6.1,
"Hyperelastic behavior of rubberlike materials"). At ``F = I`` each is stress free with
the tangent of linear elasticity of shear modulus ``μ₀`` (given per law) and bulk
modulus ``κ``.

The invariants are formed from ``C − I = H + Hᵀ + HᵀH`` and ``J − 1`` from the invariants
of ``H``, so ``Ī₁ − 3`` and the others keep their relative precision at small strains.

Ogden's ``Σ λ̄ᵢ^α = tr C̄^{α/2}`` is :func:`~fesens.ad.spectral.power_trace`, from the
eigenvalues of ``C̄``: its rules (``∂ tr C̄^β/∂C̄ = β C̄^{β−1}``, and the Daleckii–Krein
formula for the derivative of ``C̄^{β−1}``) do not differentiate the eigenvectors, so the
stress and the tangent exist at equal stretches (``F = I`` included).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from math import comb
from types import MappingProxyType

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.ad.spectral import power_trace
from fesens.fem.model.parameters import Parameter
from fesens.physics.energy_law import (
    HyperelasticLaw,
    check_finite_constants,
    double_contraction,
    strain_part,
    trace,
    volume_change,
)
from fesens.physics.kinematics import (
    invariant_first_piola,
    invariant_out_of_plane,
    invariant_tangent,
)

#: Coefficients ``α₁…α₅`` of the Arruda–Boyce series (Arruda & Boyce 1993, the
#: five-term series of the inverse Langevin function, as in the Abaqus Theory Guide §4.6.1).
ARRUDA_BOYCE_SERIES = (1 / 2, 1 / 20, 11 / 1050, 19 / 7000, 519 / 673750)


# ------------------------------------------------------------------ invariants
def _isochoric_factor(H, power: float):
    """``J^{-2 power/3} − 1`` ``(...)``."""
    return np.expm1(-2.0 * power / 3.0 * np.log1p(volume_change(H)))


def isochoric_first(H):
    """``Ī₁ − 3`` ``(...)`` (plane strain: ``C_zz = 1``)."""
    j = _isochoric_factor(H, 1.0)
    return (1.0 + j) * trace(strain_part(H)) + 3.0 * j


def isochoric_second(H):
    """``Ī₂ − 3`` ``(...)``, with ``I₂ − 3 = 2 tr D + ((tr D)² − D:D)/2``, ``D = C − I``
    (the same in plane strain: ``D_zz = 0``)."""
    D = strain_part(H)
    tr_D = trace(D)
    j = _isochoric_factor(H, 2.0)
    return (1.0 + j) * (2.0 * tr_D + 0.5 * (tr_D * tr_D - double_contraction(D, D))) + 3.0 * j


def volumetric(H, kappa):
    """``U = κ/2 (J − 1)²`` ``(...)``."""
    change = volume_change(H)
    return 0.5 * kappa * change * change


# ------------------------------------------------------------------ the energies
# Each isotropic energy is written once, of the isochoric excesses ``x₁ = Ī₁ − 3``, ``x₂ =
# Ī₂ − 3`` and ``J − 1``: of ``H`` with full relative precision (the law's ``W``), and of
# the invariants of ``C`` (:func:`of_invariants`: the law's ``P`` and ``A``).
def _mooney_rivlin(x1, x2, change, c10, c01, kappa):
    return c10 * x1 + c01 * x2 + 0.5 * kappa * change * change


def _yeoh(x1, x2, change, c10, c20, c30, kappa):
    return x1 * (c10 + x1 * (c20 + x1 * c30)) + 0.5 * kappa * change * change


def _gent(x1, x2, change, mu, Jm, kappa):
    return -0.5 * mu * Jm * np.log1p(-x1 / Jm) + 0.5 * kappa * change * change


def _arruda_boyce(x1, x2, change, mu, lambda_m, kappa):
    total = 0.0
    for i, alpha in enumerate(ARRUDA_BOYCE_SERIES, start=1):
        power = sum(comb(i, k) * 3.0 ** (i - k) * x1 ** k for k in range(1, i + 1))
        total = total + alpha * lambda_m ** (2.0 - 2.0 * i) * power
    return mu * total + 0.5 * kappa * change * change


def of_invariants(body: Callable) -> Callable:
    """The energy ``W(I₁, I₂, J, *constants)`` of a body of the excesses ``(Ī₁ − 3, Ī₂ −
    3, J − 1, *constants)``, ``Ī₁ = J^{-2/3} I₁``, ``Ī₂ = J^{-4/3} I₂``
    (for :meth:`~fesens.physics.energy_law.HyperelasticLaw.from_invariants`)."""
    def energy(I1, I2, J, *constants):
        j = J ** (-2.0 / 3.0)
        return body(j * I1 - 3.0, j * j * I2 - 3.0, J - 1.0, *constants)

    return energy


def mooney_rivlin(H, c10, c01, kappa):
    """``W = c₁₀ (Ī₁ − 3) + c₀₁ (Ī₂ − 3) + U`` (Mooney 1940, J. Appl. Phys. 11, 582;
    Rivlin 1948, Phil. Trans. R. Soc. A 241, 379); ``μ₀ = 2 (c₁₀ + c₀₁)``."""
    return _mooney_rivlin(isochoric_first(H), isochoric_second(H), volume_change(H), c10, c01,
                          kappa)


def yeoh(H, c10, c20, c30, kappa):
    """``W = Σᵢ cᵢ₀ (Ī₁ − 3)ⁱ + U``, ``i = 1…3`` (Yeoh 1993, Rubber Chem. Technol. 66,
    754); ``μ₀ = 2 c₁₀``."""
    return _yeoh(isochoric_first(H), None, volume_change(H), c10, c20, c30, kappa)


def gent(H, mu, Jm, kappa):
    """``W = −μ J_m/2 ln(1 − (Ī₁ − 3)/J_m) + U`` (Gent 1996, Rubber Chem. Technol. 69, 59);
    ``μ₀ = μ``; defined while ``Ī₁ − 3 < J_m``."""
    return _gent(isochoric_first(H), None, volume_change(H), mu, Jm, kappa)


def arruda_boyce(H, mu, lambda_m, kappa):
    """``W = μ Σᵢ αᵢ λ_m^{2−2i} (Ī₁ⁱ − 3ⁱ) + U``, ``i = 1…5``, the series of the
    eight-chain model (Arruda & Boyce 1993, J. Mech. Phys. Solids 41, 389), ``Ī₁ⁱ −
    3ⁱ`` as a polynomial in ``Ī₁ − 3``; ``μ₀ = μ (1 + 3/(5λ_m²) + 99/(175λ_m⁴) + …)``."""
    return _arruda_boyce(isochoric_first(H), None, volume_change(H), mu, lambda_m, kappa)


def _ogden_sum(H, pairs):
    """``Σ_p μ_p/α_p (λ̄₁^{α_p} + λ̄₂^{α_p} + λ̄₃^{α_p} − 3)`` of ``pairs`` ``((μ_p,
    α_p), …)`` with ``λ̄ᵢ^α = `` eigenvalues of ``C̄^{α/2}``; plane strain adds ``λ̄₃^α =
    J^{-α/3}``."""
    j = 1.0 + _isochoric_factor(H, 1.0)
    C_bar = j[..., None, None] * (np.eye(np.shape(H)[-1]) + strain_part(H))
    total = 0.0
    for mu, alpha in pairs:
        excess = power_trace(C_bar, 0.5 * alpha)
        if np.shape(H)[-1] == 2:
            excess = excess + _isochoric_factor(H, 0.5 * alpha)
        total = total + mu / alpha * excess
    return total


def ogden(H, mu1, alpha1, kappa):
    """``W = μ₁/α₁ (λ̄₁^{α₁} + λ̄₂^{α₁} + λ̄₃^{α₁} − 3) + U`` (Ogden 1972, Proc. R. Soc.
    Lond. A 326, 565, one term, with the isochoric stretches
    ``λ̄ᵢ = J^{-1/3} λᵢ``); ``μ₀ = μ₁ α₁/2``."""
    return _ogden_sum(H, ((mu1, alpha1),)) + volumetric(H, kappa)


def ogden2(H, mu1, alpha1, mu2, alpha2, kappa):
    """Ogden's energy (:func:`ogden`) with two terms; ``μ₀ = (μ₁ α₁ + μ₂ α₂)/2``."""
    return _ogden_sum(H, ((mu1, alpha1), (mu2, alpha2))) + volumetric(H, kappa)


def ogden3(H, mu1, alpha1, mu2, alpha2, mu3, alpha3, kappa):
    """Ogden's energy (:func:`ogden`) with three terms (Ogden 1972's fit to Treloar's data
    has three); ``μ₀ = Σ μ_p α_p/2``."""
    return (_ogden_sum(H, ((mu1, alpha1), (mu2, alpha2), (mu3, alpha3)))
            + volumetric(H, kappa))


def fibre_directions(theta, dim: int) -> tuple:
    """The two fibre families ``a = (cos θ, ±sin θ[, 0])`` ``(..., dim)`` of the reference
    configuration, at ``±θ`` (radians) from the x axis in the x–y plane."""
    cos, sin = np.cos(theta), np.sin(theta)
    zero = (0.0 * cos,) if dim == 3 else ()
    return (np.stack([cos, sin, *zero], axis=-1), np.stack([cos, -sin, *zero], axis=-1))


def holzapfel_gasser_ogden(H, mu, k1, k2, kappa, fibre_angle):
    """``W = μ/2 (Ī₁ − 3) + k₁/(2k₂) Σ_{a} (exp(k₂ (Ī₄ₐ − 1)²) − 1) + U`` with ``Ī₄ₐ =
    J^{-2/3} a·Ca`` for two fibre families at ``±θ``, ``θ = fibre_angle``
    (:func:`fibre_directions`)
    (Holzapfel, Gasser & Ogden 2000, J. Elasticity 61, 1, §4; the fibres here act
    in compression too, with no switch at ``Ī₄ = 1``, so that ``W`` is smooth); ``μ₀ =
    μ`` plus the fibres' ``4 k₁ N⊗N``, ``N = a⊗a − I/3``, at ``F = I``."""
    D = strain_part(H)
    j = _isochoric_factor(H, 1.0)
    fibres = 0.0
    for a in fibre_directions(fibre_angle, np.shape(H)[-1]):
        stretch = (1.0 + j) * np.sum(a * np.sum(D * a[..., None, :], axis=-1), axis=-1) + j
        fibres = fibres + np.expm1(k2 * stretch * stretch)
    return 0.5 * mu * isochoric_first(H) + 0.5 * k1 / k2 * fibres + volumetric(H, kappa)


# ------------------------------------------------------------------ records
def _parameter(name: str, description: str, lower: float | None = None) -> Parameter:
    return Parameter(name, description, per_cell=True, lower=lower)


#: The constants of the laws below as model parameters (scalar or per cell, differentiable
#: like ``E``): the ``[material]`` keys of a config that names the law.
LAW_CONSTANTS: Mapping[str, Parameter] = MappingProxyType({p.name: p for p in (
    _parameter("c10", "coefficient of Ī₁ − 3 (Mooney–Rivlin, Yeoh)"),
    _parameter("c01", "coefficient of Ī₂ − 3 (Mooney–Rivlin)"),
    _parameter("c20", "coefficient of (Ī₁ − 3)² (Yeoh)"),
    _parameter("c30", "coefficient of (Ī₁ − 3)³ (Yeoh)"),
    _parameter("kappa", "bulk modulus κ of U = κ/2 (J − 1)²", 0.0),
    _parameter("mu", "shear modulus μ", 0.0),
    _parameter("Jm", "Gent's limit J_m of Ī₁ − 3", 0.0),
    _parameter("lambda_m", "Arruda–Boyce locking stretch λ_m", 0.0),
    *(_parameter(f"{key}{p}", f"Ogden's {what} of term {p}")
      for p in (1, 2, 3) for key, what in (("mu", "modulus μ"), ("alpha", "exponent α"))),
    _parameter("k1", "fibre stiffness k₁ (Holzapfel–Gasser–Ogden)", 0.0),
    _parameter("k2", "fibre exponent k₂ (Holzapfel–Gasser–Ogden)", 0.0),
    _parameter("fibre_angle", "fibre angle θ (radians) from the x axis of the families ±θ"),
)})


def law_parameters(law: HyperelasticLaw) -> dict[str, Parameter]:
    """The model parameters of a law's constants: those of :data:`LAW_CONSTANTS`, and for
    a constant it does not know (a user's law) a scalar or per-cell number of any value."""
    return {name: LAW_CONSTANTS.get(name) or _parameter(name, f"constant {name} of law "
                                                              f"{law.name!r}")
            for name in law.constants}


def _checks(name: str, constants: tuple, shear_modulus: Callable, nonzero=()) -> Callable:
    """``check_constants`` of a law: finite, in the ranges of :data:`LAW_CONSTANTS`, the
    ``nonzero`` ones not 0, and the initial shear modulus ``μ₀ = shear_modulus(...)`` > 0."""
    def check(*values):
        check_finite_constants(*values)
        named = {key: np.asarray(getval(v), dtype=float)
                 for key, v in zip(constants, values, strict=True)}
        for key, value in named.items():
            parameter = LAW_CONSTANTS[key]
            if parameter.lower is not None and np.any(value <= parameter.lower):
                raise ValueError(f"law {name!r}: {key} {parameter.requirement()}; got min "
                                 f"{float(np.min(value))!r}")
            if key in nonzero and np.any(value == 0.0):
                raise ValueError(f"law {name!r}: {key} must not be 0")
        if np.any(shear_modulus(**named) <= 0.0):
            raise ValueError(f"law {name!r}: the initial shear modulus μ₀ must be > 0; got "
                             f"min {float(np.min(shear_modulus(**named)))!r} of {named}")
    return check


def _record(name: str, description: str, energy: Callable, shear_modulus: Callable,
            nonzero=(), body: Callable | None = None) -> HyperelasticLaw:
    """The law of ``energy(H, *constants)``; with the ``body`` of an isotropic energy
    (:func:`of_invariants`), its ``P``, ``A`` and ``P_zz`` from the invariants."""
    constants = tuple(inspect.signature(energy).parameters)[1:]  # after H
    fast = {} if body is None else {
        "first_piola": partial(invariant_first_piola, of_invariants(body)),
        "tangent": partial(invariant_tangent, of_invariants(body)),
        "out_of_plane": partial(invariant_out_of_plane, of_invariants(body))}
    return HyperelasticLaw.from_energy(
        name, description, energy, constants,
        check_constants=_checks(name, constants, shear_modulus, nonzero), check_points=False,
        **fast)


def arruda_boyce_shear_modulus(mu, lambda_m):
    """``μ₀ = μ Σᵢ 2i αᵢ 3^{i−1} λ_m^{2−2i}`` ``= μ (1 + 3/(5λ_m²) + 99/(175λ_m⁴) + …)``."""
    return mu * sum(2 * i * a * 3.0 ** (i - 1) * lambda_m ** (2.0 - 2.0 * i)
                    for i, a in enumerate(ARRUDA_BOYCE_SERIES, start=1))


_GENT = _record("gent", "Gent, W = −μ J_m/2 ln(1 − (Ī₁ − 3)/J_m) + κ/2 (J − 1)² (Gent 1996)",
                gent, lambda mu, Jm, kappa: mu, body=_gent)

_OGDEN = "Ogden, W = Σ_p μ_p/α_p (λ̄₁^α_p + λ̄₂^α_p + λ̄₃^α_p − 3) + κ/2 (J − 1)² (Ogden 1972)"

#: The rubber and fibre laws, registered in
#: :data:`~fesens.physics.hyperelastic_law.HYPERELASTIC_LAWS`.
RUBBER_LAWS: tuple[HyperelasticLaw, ...] = (
    _record("mooney-rivlin", "Mooney–Rivlin, W = c10 (Ī₁ − 3) + c01 (Ī₂ − 3) + κ/2 (J − 1)² "
            "(Mooney 1940, Rivlin 1948)", mooney_rivlin,
            lambda c10, c01, kappa: 2.0 * (c10 + c01), body=_mooney_rivlin),
    _record("yeoh", "Yeoh, W = Σ_i c_i0 (Ī₁ − 3)^i + κ/2 (J − 1)² (Yeoh 1993)", yeoh,
            lambda c10, c20, c30, kappa: 2.0 * c10, body=_yeoh),
    _GENT,
    _record("arruda-boyce", "Arruda–Boyce eight-chain, five-term series in Ī₁ + κ/2 (J − 1)² "
            "(Arruda & Boyce 1993)", arruda_boyce,
            lambda mu, lambda_m, kappa: arruda_boyce_shear_modulus(mu, lambda_m),
            body=_arruda_boyce),
    _record("ogden", _OGDEN + ", one term", ogden,
            lambda mu1, alpha1, kappa: mu1 * alpha1 / 2.0, nonzero=("alpha1",)),
    _record("ogden-2", _OGDEN + ", two terms", ogden2,
            lambda mu1, alpha1, mu2, alpha2, kappa: (mu1 * alpha1 + mu2 * alpha2) / 2.0,
            nonzero=("alpha1", "alpha2")),
    _record("ogden-3", _OGDEN + ", three terms", ogden3,
            lambda mu1, alpha1, mu2, alpha2, mu3, alpha3, kappa:
            (mu1 * alpha1 + mu2 * alpha2 + mu3 * alpha3) / 2.0,
            nonzero=("alpha1", "alpha2", "alpha3")),
    _record("holzapfel-gasser-ogden", "Holzapfel–Gasser–Ogden, W = μ/2 (Ī₁ − 3) + k1/(2 k2) "
            "Σ_a (exp(k2 (Ī₄a − 1)²) − 1) + κ/2 (J − 1)², fibres at ±θ in the x–y plane "
            "(Holzapfel, Gasser & Ogden 2000)", holzapfel_gasser_ogden,
            lambda mu, k1, k2, kappa, fibre_angle: mu),
)


# ------------------------------------------------------------------ domain limits
@dataclass(frozen=True)
class DomainLimit:
    """A bound of a law's domain besides ``J > 0``: its energy is defined where
    ``value(H, *constants) < bound(*constants)`` (plain numpy, ``(...)`` each).

    Of the laws above only Gent's has one (``Ī₁ − 3 < J_m``, where its logarithm ends).
    Arruda–Boyce's five-term series is a polynomial in ``Ī₁``, Ogden's terms ``λ̄^α``
    (``α < 0`` too) and the fibres' exponentials are defined at every ``J > 0``.
    """

    law: HyperelasticLaw
    #: the limit, as an error names it
    statement: str
    value: Callable
    bound: Callable

    def beyond(self, H, *constants) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The mask ``(...)`` of the points of ``H`` ``(..., d, d)`` at or beyond the limit,
        and the value and the bound there, broadcast to ``H.shape[:-2]``."""
        shape = np.shape(H)[:-2]
        value = np.broadcast_to(self.value(H, *constants), shape)
        bound = np.broadcast_to(self.bound(*constants), shape)
        return ~(value < bound), value, bound


#: The limits of the laws whose energy has one, by the law's name.
DOMAIN_LIMITS: Mapping[str, DomainLimit] = MappingProxyType({limit.law.name: limit for limit in (
    DomainLimit(_GENT, "Ī₁ − 3 < J_m", lambda H, mu, Jm, kappa: isochoric_first(H),
                lambda mu, Jm, kappa: Jm),
)})


def domain_limit(law: HyperelasticLaw) -> DomainLimit | None:
    """The limit of ``law``'s domain besides ``J > 0`` (:data:`DOMAIN_LIMITS`), or None."""
    limit = DOMAIN_LIMITS.get(law.name)
    return limit if limit is not None and limit.law is law else None

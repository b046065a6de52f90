"""The constants of J2 plasticity and its hardening laws (the uniaxial yield stress of the
equivalent plastic strain), checked once where they are given.

Isotropic hardening, linear plus Voce's saturation (de Souza Neto, Perić & Owen 2008,
*Computational Methods for Plasticity*, §6.6 and §7.3.6):
``σ_y(ᾱ) = σ_y0 + H ᾱ + (σ_∞ − σ_y0)(1 − e^{−δ ᾱ})``; without ``σ_∞`` it is linear.
Kinematic hardening is linear, ``β̇ = (2/3) H_k γ n`` (Simo & Hughes 1998, §3.3), or with
Armstrong & Frederick's dynamic recovery ``β̇ = (2/3) H_k ε̇ᵖ − b β ᾱ̇`` (de Souza Neto,
Perić & Owen 2008, §6.7.2): the back stress saturates at a uniaxial ``H_k / b``.
The functions here take the constants by name (:data:`CONSTANT_NAMES`, arrays ``(n,)``) and
are written in the traced numpy subset, so that the return map's pullback reaches them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fesens.errors import MaterialError

#: The constants of :class:`J2Material`, in the order of its fields: the keys of
#: :meth:`J2Material.constants` and of the constants' cotangents of the return map.
CONSTANT_NAMES = ("E", "nu", "yield_stress", "isotropic_modulus", "kinematic_modulus",
                  "saturation_stress", "saturation_rate", "kinematic_recovery")


@dataclass(frozen=True)
class J2Material:
    """Small-strain J2 plasticity: isotropic elasticity, a von Mises yield surface, isotropic
    (linear and Voce) and kinematic (linear or Armstrong–Frederick) hardening.

    Every constant is a number or one value per material point ``(n,)``.

    Parameters
    ----------
    E, nu : float or numpy.ndarray
        Young's modulus (> 0) and Poisson's ratio (in (−1, 0.5)).
    yield_stress : float or numpy.ndarray
        The initial uniaxial yield stress ``σ_y0`` (> 0).
    isotropic_modulus : float or numpy.ndarray
        The linear isotropic hardening modulus ``H`` (≥ 0).
    kinematic_modulus : float or numpy.ndarray
        The linear kinematic hardening modulus ``H_k`` (≥ 0).
    saturation_stress : float, numpy.ndarray or None
        Voce's saturation stress ``σ_∞`` (≥ ``σ_y0``); ``None``: no Voce term.
    saturation_rate : float or numpy.ndarray
        Voce's rate ``δ`` (> 0 with a saturation stress).
    kinematic_recovery : float or numpy.ndarray
        Armstrong & Frederick's dynamic recovery ``b`` (≥ 0; 0: linear kinematic hardening).

    Raises
    ------
    MaterialError
        A constant out of its range (a ``ValueError``); softening (a negative hardening
        modulus, or a saturation stress below the yield stress) is refused, since without
        a regularization its solutions depend on the mesh.
    """

    E: float | np.ndarray
    nu: float | np.ndarray
    yield_stress: float | np.ndarray
    isotropic_modulus: float | np.ndarray = 0.0
    kinematic_modulus: float | np.ndarray = 0.0
    saturation_stress: float | np.ndarray | None = None
    saturation_rate: float | np.ndarray = 0.0
    kinematic_recovery: float | np.ndarray = 0.0

    def __post_init__(self) -> None:
        for name in CONSTANT_NAMES:
            value = getattr(self, name)
            if value is not None and not np.all(np.isfinite(np.asarray(value, dtype=float))):
                raise MaterialError(f"the J2 plasticity constant {name} must be finite")
        if np.min(self.E) <= 0.0:
            raise MaterialError(f"Young's modulus E must be > 0; got min {float(np.min(self.E))!r}")
        if np.min(self.nu) <= -1.0 or np.max(self.nu) >= 0.5:
            raise MaterialError("Poisson's ratio nu must lie in (-1, 0.5) (small-strain "
                             "plasticity is compressible elastically)")
        if np.min(self.yield_stress) <= 0.0:
            raise MaterialError("the yield stress must be > 0 (no elastic range otherwise); got "
                             f"min {float(np.min(self.yield_stress))!r}")
        if np.min(self.kinematic_recovery) < 0.0:
            raise MaterialError("Armstrong-Frederick's kinematic_recovery b must be >= 0 (a "
                             "negative one makes the back stress grow without bound); got "
                             f"min {float(np.min(self.kinematic_recovery))!r}")
        _refuse_softening(self)

    def constants(self, n_points: int) -> dict[str, np.ndarray]:
        """The constants by name (:data:`CONSTANT_NAMES`), each ``(n_points,)``; without
        a saturation stress ``σ_∞ = σ_y0`` and ``δ = 0`` (no Voce term)."""
        values = {name: getattr(self, name) for name in CONSTANT_NAMES}
        if self.saturation_stress is None:
            values["saturation_stress"] = self.yield_stress
        constants = {}
        for name, value in values.items():
            array = np.asarray(value, dtype=float)
            if array.ndim > 1 or array.size not in (1, n_points):
                raise MaterialError(f"the J2 plasticity constant {name} must be a number or one "
                                 f"value per point ({n_points},); got shape {array.shape}")
            constants[name] = np.array(np.broadcast_to(array.reshape(-1), (n_points,)))
        return constants


def _refuse_softening(material: J2Material) -> None:
    """One clear error for each kind of softening (a hardening slope that can be < 0)."""
    why = " (softening without a regularization makes the solutions depend on the mesh)"
    for name, symbol in (("isotropic_modulus", "H"), ("kinematic_modulus", "H_k")):
        if np.min(getattr(material, name)) < 0.0:
            raise MaterialError(f"softening is refused: the {name} {symbol} must be >= 0; got "
                             f"min {float(np.min(getattr(material, name)))!r}{why}")
    if material.saturation_stress is None:
        if np.any(np.asarray(material.saturation_rate) != 0.0):
            raise MaterialError("saturation_rate is Voce's; give it with a saturation_stress")
        return
    if np.min(material.saturation_rate) <= 0.0:
        raise MaterialError("Voce's saturation_rate δ must be > 0 with a saturation_stress; got "
                         f"min {float(np.min(material.saturation_rate))!r}")
    below = np.asarray(material.saturation_stress) - np.asarray(material.yield_stress)
    if np.min(below) < 0.0:
        raise MaterialError("softening is refused: Voce's saturation_stress σ_∞ must be >= the "
                         f"yield_stress σ_y0; it is lower by up to {float(-np.min(below))!r}"
                         f"{why}")


def uniaxial_yield_stress(constants: dict, alpha):
    """``σ_y(ᾱ)`` ``(n,)`` of the equivalent plastic strain ``ᾱ`` ``(n,)`` (traced)."""
    initial = constants["yield_stress"]
    saturation = (constants["saturation_stress"] - initial) * -np.expm1(
        -constants["saturation_rate"] * alpha)
    return initial + constants["isotropic_modulus"] * alpha + saturation


def uniaxial_yield_slope(constants: dict, alpha):
    """``σ_y'(ᾱ)`` ``(n,)``, the isotropic hardening slope (≥ 0 for accepted constants)."""
    rate = constants["saturation_rate"]
    return (constants["isotropic_modulus"]
            + (constants["saturation_stress"] - constants["yield_stress"]) * rate
            * np.exp(-rate * alpha))

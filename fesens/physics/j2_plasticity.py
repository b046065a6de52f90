"""Small-strain J2 (von Mises) plasticity at material points: the radial return, its
consistent tangent and the partial derivatives an adjoint over load increments needs.

The model (Simo & Hughes 1998, *Computational Inelasticity*, §3.3 and Box 3.2; de Souza
Neto, Perić & Owen 2008, *Computational Methods for Plasticity*, §7.3): additive strains
``ε = εᵉ + εᵖ``, stress ``σ = κ tr ε 1 + 2μ (dev ε − εᵖ)``, yield function
``f = ‖ξ‖ − √(2/3) σ_y(ᾱ)`` of the relative stress ``ξ = dev σ − β``, with

* isotropic hardening by the uniaxial yield stress of the equivalent plastic strain ``ᾱ``,
  linear plus Voce's saturation (:func:`~fesens.physics.j2_hardening.uniaxial_yield_stress`):
  ``σ_y(ᾱ) = σ_y0 + H ᾱ + (σ_∞ − σ_y0)(1 − e^{−δ ᾱ})``;
* linear kinematic hardening of the back stress, ``β̇ = (2/3) H_k γ n``.

One increment from the state ``(εᵖ_n, ᾱ_n, β_n)`` at the total strain ``ε_{n+1}``: the trial
``ξ_tr = 2μ (dev ε − εᵖ_n) − β_n``; where ``f_tr > 0`` the plastic multiplier ``Δγ`` solves
the scalar equation ``g(Δγ) = ‖ξ_tr‖ − (2μ + 2H_k/3) Δγ − √(2/3) σ_y(ᾱ_n + √(2/3) Δγ) = 0``
(a Newton iteration per point, vectorized: ``g`` is convex and decreasing, so Newton from
``Δγ = 0`` increases monotonically to the root), then with ``n = ξ_tr/‖ξ_tr‖``
``εᵖ = εᵖ_n + Δγ n``, ``ᾱ = ᾱ_n + √(2/3) Δγ``, ``β = β_n + (2/3) H_k Δγ n``.
In uniaxial stress ``ᾱ = |εᵖ_11|`` and ``H``, ``H_k`` are the plastic moduli of the
stress–plastic-strain curve.

Design for the adjoint: which points yield is decided on values; on each branch the update
is smooth. It is written as an explicit traced function of ``Δγ`` and the inputs (strain,
previous state, material constants), and ``Δγ``'s derivative comes from the implicit
function theorem on ``g``: ``dΔγ/dx = −g_x / g'``. So :func:`update_vjp` is two
``fesens.ad`` pullbacks (the explicit update and ``g``) and one division per point: no
hand-written derivative of a constant or of the state that could drift from the update.
The consistent tangent (:func:`consistent_tangent`, Box 3.2) is the closed form, the speed
path a global Newton uses; the tests check both against central differences.

Plane strain is 3D with ``ε_zz = 0`` (:func:`plane_strain`): the out-of-plane plastic
strain and stress are kept in the state. Softening (a negative hardening slope) is refused:
without a regularization its solutions depend on the mesh.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fesens.ad import vjp
from fesens.ad.numpy_wrapper import getval
from fesens.errors import ConvergenceError
from fesens.physics.j2_hardening import (
    CONSTANT_NAMES,
    J2Material,
    uniaxial_yield_slope,
    uniaxial_yield_stress,
)

__all__ = [
    "J2Material",
    "J2State",
    "J2Update",
    "consistent_tangent",
    "plane_strain",
    "return_map",
    "update_vjp",
]

_SQRT23 = np.sqrt(2.0 / 3.0)
_EYE = np.eye(3)
_MAX_NEWTON = 50


class J2State(NamedTuple):
    """The internal variables of ``n`` material points."""

    plastic_strain: np.ndarray
    """``(n, 3, 3)`` the plastic strain ``εᵖ`` (symmetric, traceless)."""
    equivalent_plastic_strain: np.ndarray
    """``(n,)`` the equivalent plastic strain ``ᾱ = ∫ √(2/3) ‖ε̇ᵖ‖ dt``."""
    back_stress: np.ndarray
    """``(n, 3, 3)`` the back stress ``β`` (symmetric, traceless)."""

    @classmethod
    def virgin(cls, n_points: int) -> J2State:
        """The state of ``n_points`` points that never yielded."""
        return cls(np.zeros((n_points, 3, 3)), np.zeros(n_points), np.zeros((n_points, 3, 3)))


class J2Update(NamedTuple):
    """One increment of ``n`` points: the stress and state at ``n + 1`` and how it got there."""

    stress: np.ndarray
    """``(n, 3, 3)`` the stress ``σ_{n+1}``."""
    state: J2State
    """The internal variables at ``n + 1``."""
    plastic: np.ndarray
    """``(n,)`` bool: the points that yielded in this increment."""
    multiplier: np.ndarray
    """``(n,)`` the plastic multiplier ``Δγ`` (0 where elastic)."""
    trial_norm: np.ndarray
    """``(n,)`` ``‖ξ_tr‖``, the norm of the trial relative stress."""


def plane_strain(strain: np.ndarray) -> np.ndarray:
    """The 3D strains ``(n, 3, 3)`` of in-plane strains ``(n, 2, 2)`` with ``ε_zz = 0``."""
    strain = np.asarray(strain, dtype=float)
    full = np.zeros((strain.shape[0], 3, 3))
    full[:, :2, :2] = strain
    return full


def _trace(a):
    return a[:, 0, 0] + a[:, 1, 1] + a[:, 2, 2]


def _elastic_moduli(c):
    """Bulk and shear moduli ``(κ, μ)`` of Young's modulus and Poisson's ratio."""
    return c["E"] / (3.0 * (1.0 - 2.0 * c["nu"])), c["E"] / (2.0 * (1.0 + c["nu"]))


def _trial(x, c):
    """The trial relative stress ``ξ_tr`` ``(n, 3, 3)`` (traced in ``x`` and ``c``)."""
    strain = x["strain"]
    deviator = strain - (_trace(strain) / 3.0)[:, None, None] * _EYE
    _, mu = _elastic_moduli(c)
    return 2.0 * mu[:, None, None] * (deviator - x["plastic_strain"]) - x["back_stress"]


def _norm(xi):
    """``‖ξ‖`` per point; 1 where ``ξ = 0`` (an elastic point with a zero trial deviator),
    so that its derivative stays finite there (it is multiplied by ``Δγ = 0``)."""
    squared = np.einsum("nij,nij->n", xi, xi)
    return np.sqrt(squared + (getval(squared) == 0.0))


def _explicit_update(dgamma, x, c):
    """Stress and state of the multiplier ``Δγ`` ``(n,)``, the inputs ``x`` (strain and
    previous state by name) and the constants ``c``: the smooth map of one branch."""
    xi = _trial(x, c)
    flow = xi / _norm(xi)[:, None, None]
    kappa, mu = _elastic_moduli(c)
    plastic_strain = x["plastic_strain"] + dgamma[:, None, None] * flow
    strain = x["strain"]
    deviator = strain - (_trace(strain) / 3.0)[:, None, None] * _EYE
    stress = ((kappa * _trace(strain))[:, None, None] * _EYE
              + 2.0 * mu[:, None, None] * (deviator - plastic_strain))
    back_stress = x["back_stress"] + ((2.0 / 3.0) * c["kinematic_modulus"] * dgamma)[:, None,
                                                                                     None] * flow
    return {"stress": stress, "plastic_strain": plastic_strain,
            "equivalent_plastic_strain": x["equivalent_plastic_strain"] + _SQRT23 * dgamma,
            "back_stress": back_stress}


def _consistency(dgamma, x, c):
    """``g(Δγ)`` ``(n,)``: the yield function after the return (0 at the solution)."""
    _, mu = _elastic_moduli(c)
    alpha = x["equivalent_plastic_strain"] + _SQRT23 * dgamma
    return (_norm(_trial(x, c)) - (2.0 * mu + (2.0 / 3.0) * c["kinematic_modulus"]) * dgamma
            - _SQRT23 * uniaxial_yield_stress(c, alpha))


def _consistency_slope(dgamma, x, c):
    """``g'(Δγ)`` ``(n,)``, negative: ``−2μ − (2/3)(H_k + σ_y'(ᾱ))``."""
    _, mu = _elastic_moduli(c)
    alpha = x["equivalent_plastic_strain"] + _SQRT23 * dgamma
    return -2.0 * mu - (2.0 / 3.0) * (c["kinematic_modulus"] + uniaxial_yield_slope(c, alpha))


def _inputs(strain, state: J2State) -> dict:
    strain = np.asarray(strain, dtype=float)
    if strain.ndim != 3 or strain.shape[1:] != (3, 3):
        raise ValueError(f"strains must be shaped (n, 3, 3); got {strain.shape} "
                         "(plane_strain embeds (n, 2, 2) ones)")
    return {"strain": strain, **state._asdict()}


def _multiplier(x, c) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Δγ, plastic, ‖ξ_tr‖)`` per point: Newton on ``g`` at the points whose trial
    state lies outside the yield surface (a relative 1e-12 margin: round-off of an exactly
    elastic step does not yield)."""
    trial_norm = _norm(_trial(x, c))
    radius = _SQRT23 * uniaxial_yield_stress(c, x["equivalent_plastic_strain"])
    plastic = trial_norm - radius > 1e-12 * radius
    dgamma = np.zeros_like(trial_norm)
    active = {k: v[plastic] for k, v in x.items()}
    active_c = {k: v[plastic] for k, v in c.items()}
    step = np.zeros(int(plastic.sum()))
    scale = radius[plastic]
    for _ in range(_MAX_NEWTON):
        residual = _consistency(step, active, active_c)
        if np.all(np.abs(residual) <= 1e-13 * scale):
            break
        step = step - residual / _consistency_slope(step, active, active_c)
    else:
        worst = float(np.max(np.abs(residual) / scale))
        raise ConvergenceError(f"the radial return did not converge in {_MAX_NEWTON} Newton "
                               f"iterations (relative residual {worst:.2e})", _MAX_NEWTON,
                               worst, 1e-13)
    dgamma[plastic] = step
    return dgamma, plastic, np.where(plastic, trial_norm, 0.0)


def _update_record(values: dict, plastic, dgamma, trial_norm) -> J2Update:
    state = J2State(values["plastic_strain"], values["equivalent_plastic_strain"],
                    values["back_stress"])
    return J2Update(values["stress"], state, plastic, dgamma, trial_norm)


def return_map(material: J2Material, strain: np.ndarray, state: J2State) -> J2Update:
    """The radial return of ``n`` points (Simo & Hughes 1998, Box 3.2).

    Parameters
    ----------
    material : J2Material
        The constants, numbers or one value per point ``(n,)``.
    strain : numpy.ndarray
        ``(n, 3, 3)`` the total strains ``ε_{n+1}`` (symmetric).
    state : J2State
        The internal variables at ``n``.

    Returns
    -------
    J2Update
        Stress ``(n, 3, 3)``, state at ``n + 1``, and the plastic points with their multiplier.
    """
    x = _inputs(strain, state)
    c = material.constants(x["strain"].shape[0])
    dgamma, plastic, trial_norm = _multiplier(x, c)
    return _update_record(_explicit_update(dgamma, x, c), plastic, dgamma, trial_norm)


def consistent_tangent(material: J2Material, update: J2Update) -> np.ndarray:
    """The algorithmic tangent ``∂σ_{n+1}/∂ε_{n+1}`` ``(n, 3, 3, 3, 3)`` of an increment.

    ``C = κ 1⊗1 + 2μθ I_dev − 2μθ̄ n⊗n`` with ``θ = 1 − 2μΔγ/‖ξ_tr‖`` and
    ``θ̄ = 1/(1 + (σ_y' + H_k)/(3μ)) − (1 − θ)`` at the plastic points (``θ = 1``,
    ``θ̄ = 0`` where elastic): Simo & Hughes 1998, Box 3.2, with the isotropic slope
    ``σ_y'`` taken at ``ᾱ_{n+1}`` (Voce's). It has the major and minor symmetries.
    """
    n_points = update.stress.shape[0]
    c = material.constants(n_points)
    kappa, mu = _elastic_moduli(c)
    plastic = update.plastic
    safe_norm = np.where(plastic, update.trial_norm, 1.0)
    theta = np.where(plastic, 1.0 - 2.0 * mu * update.multiplier / safe_norm, 1.0)
    alpha = update.state.equivalent_plastic_strain
    hardening = uniaxial_yield_slope(c, alpha) + c["kinematic_modulus"]
    theta_bar = np.where(plastic, 1.0 / (1.0 + hardening / (3.0 * mu)) - (1.0 - theta), 0.0)
    # n = ξ_{n+1}/‖ξ_{n+1}‖ = ξ_tr/‖ξ_tr‖: the radial return keeps the direction
    relative = update.stress - (_trace(update.stress) / 3.0)[:, None, None] * _EYE
    relative = relative - update.state.back_stress
    size = np.sqrt(np.einsum("nij,nij->n", relative, relative))
    flow = relative / np.where(size > 0.0, size, 1.0)[:, None, None]
    identity = 0.5 * (np.einsum("ik,jl->ijkl", _EYE, _EYE) + np.einsum("il,jk->ijkl", _EYE, _EYE))
    volumetric = np.einsum("ij,kl->ijkl", _EYE, _EYE)
    deviatoric = identity - volumetric / 3.0
    return (kappa[:, None, None, None, None] * volumetric
            + (2.0 * mu * theta)[:, None, None, None, None] * deviatoric
            - (2.0 * mu * theta_bar)[:, None, None, None, None]
            * np.einsum("nij,nkl->nijkl", flow, flow))


def update_vjp(material: J2Material, strain: np.ndarray, state: J2State):
    """The increment of :func:`return_map` and its pullback (vector–Jacobian products).

    Returns
    -------
    update : J2Update
    pullback : callable
        ``pullback(stress_bar (n, 3, 3), state_bar: J2State) -> (strain_bar (n, 3, 3),
        state_bar_n: J2State, constants_bar)``: the cotangents of the strain, of the previous
        state and of the constants (``{name: (n,)}`` per point, names of
        :data:`~fesens.physics.j2_hardening.CONSTANT_NAMES`; a uniform constant's cotangent
        is their sum). The branch (elastic or plastic per point) is that of the values.
    """
    x = _inputs(strain, state)
    c = material.constants(x["strain"].shape[0])
    dgamma, plastic, trial_norm = _multiplier(x, c)
    values, pull_update = vjp(_explicit_update, dgamma, x, c, argnums=(0, 1, 2))
    _, pull_consistency = vjp(_consistency, dgamma, x, c, argnums=(1, 2))
    slope = _consistency_slope(dgamma, x, c)

    def pullback(stress_bar, state_bar: J2State):
        bars = {"stress": np.asarray(stress_bar, dtype=float),
                **{k: np.asarray(v, dtype=float) for k, v in state_bar._asdict().items()}}
        dgamma_bar, x_bar, c_bar = pull_update(bars)
        # dΔγ/dx = −g_x/g' at the plastic points; Δγ = 0 does not move where elastic
        weight = np.where(plastic, -dgamma_bar / slope, 0.0)
        x_implicit, c_implicit = pull_consistency(weight)
        x_bar = {k: x_bar[k] + x_implicit[k] for k in x_bar}
        c_bar = {k: c_bar[k] + c_implicit[k] for k in CONSTANT_NAMES}
        previous = J2State(x_bar["plastic_strain"], x_bar["equivalent_plastic_strain"],
                           x_bar["back_stress"])
        return x_bar["strain"], previous, c_bar

    return _update_record(values, plastic, dgamma, trial_norm), pullback

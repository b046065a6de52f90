"""Small-strain J2 (von Mises) plasticity at material points: the radial return, its
consistent tangent and the partial derivatives an adjoint over load increments needs.

The model (Simo & Hughes 1998, *Computational Inelasticity*, §3.3 and Box 3.2; de Souza
Neto, Perić & Owen 2008, *Computational Methods for Plasticity*, §7.3): additive strains
``ε = εᵉ + εᵖ``, stress ``σ = κ tr ε 1 + 2μ (dev ε − εᵖ)``, yield function
``f = ‖ξ‖ − √(2/3) σ_y(ᾱ)`` of the relative stress ``ξ = dev σ − β``, with

* isotropic hardening by the uniaxial yield stress of the equivalent plastic strain ``ᾱ``,
  linear plus Voce's saturation (:func:`~fesens.physics.j2_hardening.uniaxial_yield_stress`):
  ``σ_y(ᾱ) = σ_y0 + H ᾱ + (σ_∞ − σ_y0)(1 − e^{−δ ᾱ})``;
* kinematic hardening of the back stress, ``β̇ = (2/3) H_k ε̇ᵖ − b β ᾱ̇`` (linear for
  ``b = 0``, Armstrong & Frederick's dynamic recovery for ``b > 0``).

One increment (backward Euler) from the state ``(εᵖ_n, ᾱ_n, β_n)`` at the total strain
``ε_{n+1}``: the trial deviator ``s_tr = 2μ (dev ε − εᵖ_n)`` and ``ξ_tr = s_tr − β_n``; where
``f_tr > 0`` the plastic multiplier ``Δγ`` (``Δεᵖ = Δγ n``, ``Δᾱ = √(2/3) Δγ``) solves one
scalar equation per point. With ``r = 1 + b Δᾱ``, ``β_{n+1} = (β_n + (2/3) H_k Δγ n) / r``,
and ``ξ_{n+1} ∥ n`` gives ``n = z/‖z‖`` with ``z = r s_tr − β_n`` (``= ξ_tr`` for ``b = 0``:
the radial return), so the consistency condition reads
``g(Δγ) = ‖z‖/r − 2μ Δγ − (2/3) H_k Δγ / r − √(2/3) σ_y(ᾱ_n + Δᾱ) = 0``.
It is solved by Newton per point, vectorized, its slope by forward mode (for ``b = 0`` ``g`` is
convex and decreasing, and Newton from ``Δγ = 0`` increases monotonically to the root).
In uniaxial stress ``ᾱ = |εᵖ_11|``, ``H`` and ``H_k`` are the plastic moduli of the
stress–plastic-strain curve and the uniaxial back stress saturates at ``H_k / b``.

Design for the adjoint: which points yield is decided on values; on each branch the update
is smooth. It is written as an explicit traced function of ``Δγ`` and the inputs (strain,
previous state, material constants), and ``Δγ``'s derivative comes from the implicit
function theorem on ``g``: ``dΔγ/dx = −g_x / g'``. So :func:`update_vjp` is two
``fesens.ad`` pullbacks (the explicit update and ``g``) and one division per point, and the
tangent ``∂σ/∂ε`` the same in forward mode (six directions): no hand-written derivative of
a constant or of the state that could drift from the update. For linear kinematic
hardening (the radial return) the tangent is Box 3.2's closed form and the pullback is
closed-form too (:func:`_radial_return_pullback`), speed-ups checked against the derived
ones.

Plane strain is 3D with ``ε_zz = 0`` (:func:`plane_strain`): the out-of-plane plastic
strain and stress are kept in the state. Softening (a negative hardening slope) is refused:
without a regularization its solutions depend on the mesh.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fesens.ad import jvp, vjp
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
    """``(n,)`` ``‖ξ_tr‖``, the norm of the trial relative stress (0 where elastic)."""
    tangent: np.ndarray | None = None
    """``(n, 3, 3, 3, 3)`` the consistent tangent ``∂σ_{n+1}/∂ε_{n+1}``, if asked for."""


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


def _deviator(a):
    return a - (_trace(a) / 3.0)[:, None, None] * _EYE


def _trial_deviator(x, c):
    """The trial stress deviator ``s_tr = 2μ (dev ε − εᵖ_n)`` ``(n, 3, 3)`` (traced)."""
    _, mu = _elastic_moduli(c)
    return 2.0 * mu[:, None, None] * (_deviator(x["strain"]) - x["plastic_strain"])


def _norm(xi):
    """``‖ξ‖`` per point; 1 where ``ξ = 0`` (an elastic point with a zero trial deviator),
    so that its derivative stays finite there (it is multiplied by ``Δγ = 0``)."""
    squared = np.einsum("nij,nij->n", xi, xi)
    return np.sqrt(squared + (getval(squared) == 0.0))


def _flow(dgamma, x, c):
    """``(r, n, ‖z‖)``: the recovery factor ``r = 1 + b Δᾱ`` ``(n,)``, the flow direction
    ``n = z/‖z‖`` ``(n, 3, 3)`` of ``z = r s_tr − β_n`` and ``‖z‖`` ``(n,)``."""
    recovery = 1.0 + c["kinematic_recovery"] * _SQRT23 * dgamma
    z = recovery[:, None, None] * _trial_deviator(x, c) - x["back_stress"]
    size = _norm(z)
    return recovery, z / size[:, None, None], size


def _explicit_update(dgamma, x, c):
    """Stress and state of the multiplier ``Δγ`` ``(n,)``, the inputs ``x`` (strain and
    previous state by name) and the constants ``c``: the smooth map of one branch."""
    recovery, flow, _ = _flow(dgamma, x, c)
    kappa, mu = _elastic_moduli(c)
    plastic_strain = x["plastic_strain"] + dgamma[:, None, None] * flow
    strain = x["strain"]
    stress = ((kappa * _trace(strain))[:, None, None] * _EYE
              + 2.0 * mu[:, None, None] * (_deviator(strain) - plastic_strain))
    back_increment = ((2.0 / 3.0) * c["kinematic_modulus"] * dgamma)[:, None, None] * flow
    back_stress = (x["back_stress"] + back_increment) / recovery[:, None, None]
    return {"stress": stress, "plastic_strain": plastic_strain,
            "equivalent_plastic_strain": x["equivalent_plastic_strain"] + _SQRT23 * dgamma,
            "back_stress": back_stress}


def _consistency(dgamma, x, c):
    """``g(Δγ)`` ``(n,)``: the yield function after the return (0 at the solution)."""
    _, mu = _elastic_moduli(c)
    recovery, _, size = _flow(dgamma, x, c)
    alpha = x["equivalent_plastic_strain"] + _SQRT23 * dgamma
    return ((size - (2.0 / 3.0) * c["kinematic_modulus"] * dgamma) / recovery
            - 2.0 * mu * dgamma - _SQRT23 * uniaxial_yield_stress(c, alpha))


def _consistency_and_slope(dgamma, x, c):
    """``(g, g')`` ``(n,)`` each: ``g`` is pointwise in ``Δγ``, so one forward-mode pass
    along ``Δγ̇ = 1`` gives its slope; without recovery (``b = 0``, the flow direction
    fixed) the slope is ``g' = −2μ − (2/3) (H_k + σ_y'(ᾱ))`` in closed form, several times
    cheaper (the tests check both agree)."""
    if not np.any(c["kinematic_recovery"]):
        _, mu = _elastic_moduli(c)
        alpha = x["equivalent_plastic_strain"] + _SQRT23 * dgamma
        slope = -2.0 * mu - (2.0 / 3.0) * (c["kinematic_modulus"]
                                           + uniaxial_yield_slope(c, alpha))
        return _consistency(dgamma, x, c), slope
    return _forward_slope(dgamma, x, c)


def _forward_slope(dgamma, x, c):
    """``(g, g')`` by one forward-mode pass along ``Δγ̇ = 1`` (any recovery)."""
    zeros = ({k: np.zeros_like(v) for k, v in x.items()},
             {k: np.zeros_like(v) for k, v in c.items()})
    return jvp(_consistency, (dgamma, x, c), (np.ones_like(dgamma), *zeros))


def _inputs(strain, state: J2State) -> dict:
    strain = np.asarray(strain, dtype=float)
    if strain.ndim != 3 or strain.shape[1:] != (3, 3):
        raise ValueError(f"strains must be shaped (n, 3, 3); got {strain.shape} "
                         "(plane_strain embeds (n, 2, 2) ones)")
    return {"strain": strain, **state._asdict()}


def _multiplier(x, c) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Δγ, plastic, ‖ξ_tr‖)`` per point: Newton on ``g`` at the points whose trial
    state lies outside the yield surface (a relative 1e-12 margin: round-off of an exactly
    elastic step does not yield), decided on the true norm (a zero trial deviator is
    elastic however small the yield stress: a nearly void cell's). Newton stops at a
    residual of 1e-13 of the larger of the radius and ``‖ξ_tr‖``: ``g`` is a difference of
    terms of the trial's size, whose round-off a trial far outside a small yield surface
    (a nearly void cell, a limit load) would keep above 1e-13 of the radius alone."""
    relative = _trial_deviator(x, c) - x["back_stress"]
    true_norm = np.sqrt(np.einsum("nij,nij->n", relative, relative))
    trial_norm = _norm(relative)
    radius = _SQRT23 * uniaxial_yield_stress(c, x["equivalent_plastic_strain"])
    plastic = true_norm - radius > 1e-12 * radius
    dgamma = np.zeros_like(trial_norm)
    active = {k: v[plastic] for k, v in x.items()}
    active_c = {k: v[plastic] for k, v in c.items()}
    step = np.zeros(int(plastic.sum()))
    scale = np.maximum(radius[plastic], true_norm[plastic])
    for _ in range(_MAX_NEWTON):
        residual, slope = _consistency_and_slope(step, active, active_c)
        if np.all(np.abs(residual) <= 1e-13 * scale):
            break
        step = step - residual / slope
    else:
        worst = float(np.max(np.abs(residual) / scale))
        raise ConvergenceError(f"the return map did not converge in {_MAX_NEWTON} Newton "
                               f"iterations (relative residual {worst:.2e})", _MAX_NEWTON,
                               worst, 1e-13)
    dgamma[plastic] = step
    return dgamma, plastic, np.where(plastic, trial_norm, 0.0)


def _update_record(values: dict, plastic, dgamma, trial_norm, tangent=None) -> J2Update:
    state = J2State(values["plastic_strain"], values["equivalent_plastic_strain"],
                    values["back_stress"])
    return J2Update(values["stress"], state, plastic, dgamma, trial_norm, tangent)


def _closed_form_tangent(c, update: J2Update) -> np.ndarray:
    """Box 3.2 of Simo & Hughes 1998, linear kinematic hardening (``b = 0``):
    ``C = κ 1⊗1 + 2μθ I_dev − 2μθ̄ n⊗n`` with ``θ = 1 − 2μΔγ/‖ξ_tr‖`` and
    ``θ̄ = 1/(1 + (σ_y' + H_k)/(3μ)) − (1 − θ)`` at the plastic points (``θ = 1``,
    ``θ̄ = 0`` where elastic), the isotropic slope ``σ_y'`` at ``ᾱ_{n+1}`` (Voce's)."""
    kappa, mu = _elastic_moduli(c)
    plastic = update.plastic
    safe_norm = np.where(plastic, update.trial_norm, 1.0)
    theta = np.where(plastic, 1.0 - 2.0 * mu * update.multiplier / safe_norm, 1.0)
    alpha = update.state.equivalent_plastic_strain
    hardening = uniaxial_yield_slope(c, alpha) + c["kinematic_modulus"]
    theta_bar = np.where(plastic, 1.0 / (1.0 + hardening / (3.0 * mu)) - (1.0 - theta), 0.0)
    # n = ξ_{n+1}/‖ξ_{n+1}‖ = ξ_tr/‖ξ_tr‖: the radial return keeps the direction
    relative = _deviator(update.stress) - update.state.back_stress
    size = np.sqrt(np.einsum("nij,nij->n", relative, relative))
    flow = relative / np.where(size > 0.0, size, 1.0)[:, None, None]
    identity = 0.5 * (np.einsum("ik,jl->ijkl", _EYE, _EYE) + np.einsum("il,jk->ijkl", _EYE, _EYE))
    volumetric = np.einsum("ij,kl->ijkl", _EYE, _EYE)
    deviatoric = identity - volumetric / 3.0
    return (kappa[:, None, None, None, None] * volumetric
            + (2.0 * mu * theta)[:, None, None, None, None] * deviatoric
            - (2.0 * mu * theta_bar)[:, None, None, None, None]
            * np.einsum("nij,nkl->nijkl", flow, flow))


def _derived_tangent(dgamma, plastic, x, c) -> np.ndarray:
    """``∂σ/∂ε`` ``(n, 3, 3, 3, 3)`` by forward mode along the six symmetric unit strains,
    ``Δγ̇ = −g_ε[ε̇]/g'`` at the plastic points (the implicit function theorem on ``g``)."""
    zero_x = {k: np.zeros_like(v) for k, v in x.items()}
    zero_c = {k: np.zeros_like(v) for k, v in c.items()}
    _, slope = _consistency_and_slope(dgamma, x, c)
    tangent = np.empty(x["strain"].shape + (3, 3))
    for k, m in ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)):
        direction = np.zeros_like(x["strain"])
        direction[:, k, m] += 0.5
        direction[:, m, k] += 0.5
        x_dot = {**zero_x, "strain": direction}
        _, g_dot = jvp(_consistency, (dgamma, x, c), (np.zeros_like(dgamma), x_dot, zero_c))
        dgamma_dot = np.where(plastic, -g_dot / slope, 0.0)
        _, values_dot = jvp(_explicit_update, (dgamma, x, c), (dgamma_dot, x_dot, zero_c))
        tangent[..., k, m] = tangent[..., m, k] = values_dot["stress"]
    return tangent


def _subset(values: dict, points: np.ndarray) -> dict:
    return {k: v[points] for k, v in values.items()}


def _merge(values: dict, points: np.ndarray, part: dict) -> None:
    """``values[k][points] = part[k]`` for every key (in place)."""
    for k, v in part.items():
        values[k][points] = v


def _elastic_values(x, c) -> dict:
    """The update of points that stay elastic (plain, new arrays): ``σ = κ tr ε 1 +
    2μ (dev ε − εᵖ_n)``, the internal variables unchanged. The plastic points' values are
    merged in (:func:`_explicit_update` of them alone: most points of a body are elastic
    in an increment)."""
    kappa, mu = _elastic_moduli(c)
    strain = x["strain"]
    stress = ((kappa * _trace(strain))[:, None, None] * _EYE
              + 2.0 * mu[:, None, None] * (_deviator(strain) - x["plastic_strain"]))
    return {"stress": stress, "plastic_strain": x["plastic_strain"].copy(),
            "equivalent_plastic_strain": x["equivalent_plastic_strain"].copy(),
            "back_stress": x["back_stress"].copy()}


def _elastic_pullback(bars: dict, x, c) -> tuple[dict, dict]:
    """The cotangents of :func:`_elastic_values` (plain, new arrays): ``ε̄ = κ tr σ̄ 1 +
    2μ dev σ̄``, ``ε̄ᵖ_n = ε̄ᵖ − 2μ σ̄`` and the state's passed through; ``E`` and ``ν``
    through ``κ̄ = tr ε tr σ̄`` and ``μ̄ = 2 σ̄ : (dev ε − εᵖ_n)``, no other constant."""
    kappa, mu = _elastic_moduli(c)
    E, nu = c["E"], c["nu"]
    stress_bar, strain = bars["stress"], x["strain"]
    x_bar = {"strain": (kappa * _trace(stress_bar))[:, None, None] * _EYE
             + 2.0 * mu[:, None, None] * _deviator(stress_bar),
             "plastic_strain": bars["plastic_strain"] - 2.0 * mu[:, None, None] * stress_bar,
             "equivalent_plastic_strain": bars["equivalent_plastic_strain"].copy(),
             "back_stress": bars["back_stress"].copy()}
    kappa_bar = _trace(strain) * _trace(stress_bar)
    mu_bar = 2.0 * np.einsum("nij,nij->n", stress_bar,
                             _deviator(strain) - x["plastic_strain"])
    c_bar = {k: np.zeros_like(E) for k in CONSTANT_NAMES}
    c_bar["E"] = kappa_bar / (3.0 * (1.0 - 2.0 * nu)) + mu_bar / (2.0 * (1.0 + nu))
    c_bar["nu"] = (kappa_bar * 2.0 * E / (3.0 * (1.0 - 2.0 * nu) ** 2)
                   - mu_bar * E / (2.0 * (1.0 + nu) ** 2))
    return x_bar, c_bar


def return_map(material: J2Material, strain: np.ndarray, state: J2State, *,
               tangent: bool = False) -> J2Update:
    """One increment of ``n`` points (Simo & Hughes 1998, Box 3.2; with Armstrong &
    Frederick's recovery the return of the module docstring).

    Parameters
    ----------
    material : J2Material
        The constants, numbers or one value per point ``(n,)``.
    strain : numpy.ndarray
        ``(n, 3, 3)`` the total strains ``ε_{n+1}`` (symmetric).
    state : J2State
        The internal variables at ``n``.
    tangent : bool
        Also the consistent (algorithmic) tangent ``∂σ_{n+1}/∂ε_{n+1}``
        ``(n, 3, 3, 3, 3)``: Box 3.2's closed form for linear kinematic hardening (major
        and minor symmetries), forward mode through the return otherwise (Armstrong &
        Frederick's recovery turns the flow direction with ``β_n``: minor symmetries only).

    Returns
    -------
    J2Update
        Stress ``(n, 3, 3)``, state at ``n + 1``, the plastic points with their
        multiplier, and the tangent if asked for.
    """
    x = _inputs(strain, state)
    c = material.constants(x["strain"].shape[0])
    dgamma, plastic, trial_norm = _multiplier(x, c)
    values = _elastic_values(x, c)
    if plastic.any():
        _merge(values, plastic, _explicit_update(dgamma[plastic], _subset(x, plastic),
                                                 _subset(c, plastic)))
    update = _update_record(values, plastic, dgamma, trial_norm)
    if not tangent:
        return update
    if np.any(c["kinematic_recovery"] != 0.0):
        return update._replace(tangent=_derived_tangent(dgamma, plastic, x, c))
    return update._replace(tangent=_closed_form_tangent(c, update))


def _radial_return_pullback(bars: dict, x: dict, c: dict, dgamma) -> tuple[dict, dict]:
    """The cotangents of the radial return (``b = 0``) at its plastic points in closed form
    (plain, new arrays), the same as the pullback derived through
    :func:`_explicit_update` and :func:`_consistency` (the tests compare them).

    With ``ξ_tr = s_tr − β_n``, ``N = ‖ξ_tr‖``, ``n = ξ_tr/N``, ``εᵖ = εᵖ_n + Δγ n``,
    ``β = β_n + (2/3) H_k Δγ n``, ``σ = κ tr ε 1 + 2μ (dev ε − εᵖ)``: the explicit update
    sends ``q = ε̄ᵖ − 2μ σ̄ + (2/3) H_k β̄`` to ``Δγ̄ = q : n + √(2/3) ᾱ̄`` and
    ``n̄ = Δγ q``; the implicit function theorem on ``g`` adds ``w ∂g/∂x`` with
    ``w = −Δγ̄/g'``, and ``ξ̄_tr = Δγ (q − (q : n) n)/N + w n`` reaches the strain
    (``2μ dev ξ̄_tr``), ``εᵖ_n`` (``−2μ ξ̄_tr``) and ``β_n`` (``−ξ̄_tr``). Armstrong &
    Frederick's ``b`` enters at ``b = 0`` through ``r = 1 + b √(2/3) Δγ`` alone:
    ``b̄ = √(2/3) Δγ (ξ̄_tr : s_tr − β̄ : β − w N + (2/3) w H_k Δγ)``."""
    kappa, mu = _elastic_moduli(c)
    hk, strain = c["kinematic_modulus"], x["strain"]
    stress_bar, plastic_bar = bars["stress"], bars["plastic_strain"]
    back_bar, alpha_bar = bars["back_stress"], bars["equivalent_plastic_strain"]
    elastic_strain = _deviator(strain) - x["plastic_strain"]  # dev ε − εᵖ_n
    trial = 2.0 * mu[:, None, None] * elastic_strain
    relative = trial - x["back_stress"]
    size = np.sqrt(np.einsum("nij,nij->n", relative, relative))
    flow = relative / size[:, None, None]
    alpha = x["equivalent_plastic_strain"] + _SQRT23 * dgamma
    slope = -2.0 * mu - (2.0 / 3.0) * (hk + uniaxial_yield_slope(c, alpha))
    q = plastic_bar - 2.0 * mu[:, None, None] * stress_bar \
        + ((2.0 / 3.0) * hk)[:, None, None] * back_bar
    q_flow = np.einsum("nij,nij->n", q, flow)
    w = -(q_flow + _SQRT23 * alpha_bar) / slope
    relative_bar = ((dgamma / size)[:, None, None] * (q - q_flow[:, None, None] * flow)
                    + w[:, None, None] * flow)
    x_bar = {"strain": (kappa * _trace(stress_bar))[:, None, None] * _EYE
             + 2.0 * mu[:, None, None] * _deviator(stress_bar + relative_bar),
             "plastic_strain": plastic_bar
             - 2.0 * mu[:, None, None] * (stress_bar + relative_bar),
             "equivalent_plastic_strain": alpha_bar
             - w * _SQRT23 * uniaxial_yield_slope(c, alpha),
             "back_stress": back_bar - relative_bar}
    kappa_bar = _trace(strain) * _trace(stress_bar)
    mu_bar = (2.0 * np.einsum("nij,nij->n", stress_bar,
                              elastic_strain - dgamma[:, None, None] * flow)
              + 2.0 * np.einsum("nij,nij->n", relative_bar, elastic_strain)
              - 2.0 * w * dgamma)
    E, nu = c["E"], c["nu"]
    back = x["back_stress"] + ((2.0 / 3.0) * hk * dgamma)[:, None, None] * flow
    decay = np.exp(-c["saturation_rate"] * alpha)
    yield_weight = -w * _SQRT23  # ∂g/∂σ_y = −√(2/3)
    c_bar = {
        "E": kappa_bar / (3.0 * (1.0 - 2.0 * nu)) + mu_bar / (2.0 * (1.0 + nu)),
        "nu": (kappa_bar * 2.0 * E / (3.0 * (1.0 - 2.0 * nu) ** 2)
               - mu_bar * E / (2.0 * (1.0 + nu) ** 2)),
        "yield_stress": yield_weight * decay,
        "isotropic_modulus": yield_weight * alpha,
        "kinematic_modulus": (2.0 / 3.0) * dgamma * (np.einsum("nij,nij->n", back_bar, flow)
                                                     - w),
        "saturation_stress": yield_weight * -np.expm1(-c["saturation_rate"] * alpha),
        "saturation_rate": yield_weight * (c["saturation_stress"] - c["yield_stress"])
        * alpha * decay,
        "kinematic_recovery": _SQRT23 * dgamma * (
            np.einsum("nij,nij->n", relative_bar, trial)
            - np.einsum("nij,nij->n", back_bar, back) - w * size
            + (2.0 / 3.0) * w * hk * dgamma),
    }
    return x_bar, c_bar


def update_vjp(material: J2Material, strain: np.ndarray, state: J2State, *,
               multiplier: tuple | None = None, derived: bool = False,
               with_values: bool = True):
    """The increment of :func:`return_map` and its pullback (vector–Jacobian products).

    Parameters
    ----------
    material, strain, state
        As for :func:`return_map`.
    multiplier : tuple, optional
        ``(Δγ, plastic, ‖ξ_tr‖)`` ``(n,)`` each of :func:`return_map` at these inputs
        (its :class:`J2Update`'s ``multiplier``, ``plastic``, ``trial_norm``), which then
        is not solved for again.
    derived : bool
        The pullback derived by ``fesens.ad`` through the explicit update even for the
        radial return (``b = 0`` at every plastic point), whose closed form
        (:func:`_radial_return_pullback`) is the default there.
    with_values : bool
        False: the pullback alone (``update`` is None), for a caller that has the values
        (a tape's node); the radial return then computes no stress or state at all.

    Returns
    -------
    update : J2Update or None
    pullback : callable
        ``pullback(stress_bar (n, 3, 3), state_bar: J2State) -> (strain_bar (n, 3, 3),
        state_bar_n: J2State, constants_bar)``: the cotangents of the strain, of the previous
        state and of the constants (``{name: (n,)}`` per point, names of
        :data:`~fesens.physics.j2_hardening.CONSTANT_NAMES`; a uniform constant's cotangent
        is their sum). The branch (elastic or plastic per point) is that of the values.
    """
    x = _inputs(strain, state)
    c = material.constants(x["strain"].shape[0])
    dgamma, plastic, trial_norm = (_multiplier(x, c) if multiplier is None else
                                   (np.asarray(m) for m in multiplier))
    values = _elastic_values(x, c) if with_values else None
    radial = not derived and not np.any(c["kinematic_recovery"][plastic])
    if plastic.any():
        xp, cp, dp = _subset(x, plastic), _subset(c, plastic), dgamma[plastic]
        if radial:  # the closed form needs no tape
            plastic_values = _explicit_update(dp, xp, cp) if with_values else None
        else:  # the tapes of the plastic points only
            plastic_values, pull_update = vjp(_explicit_update, dp, xp, cp,
                                              argnums=(0, 1, 2))
            _, pull_consistency = vjp(_consistency, dp, xp, cp, argnums=(1, 2))
            _, slope = _consistency_and_slope(dp, xp, cp)
        if with_values:
            _merge(values, plastic, plastic_values)

    def pullback(stress_bar, state_bar: J2State):
        bars = {"stress": np.asarray(stress_bar, dtype=float),
                **{k: np.asarray(v, dtype=float) for k, v in state_bar._asdict().items()}}
        x_bar, c_bar = _elastic_pullback(bars, x, c)
        if plastic.any() and radial:
            xp_bar, cp_bar = _radial_return_pullback(_subset(bars, plastic), xp, cp, dp)
            _merge(x_bar, plastic, xp_bar)
            _merge(c_bar, plastic, cp_bar)
        elif plastic.any():
            dgamma_bar, xp_bar, cp_bar = pull_update(_subset(bars, plastic))
            # dΔγ/dx = −g_x/g' at the plastic points
            x_implicit, c_implicit = pull_consistency(-dgamma_bar / slope)
            for k in x_bar:
                x_bar[k][plastic] = xp_bar[k] + x_implicit[k]
            for k in CONSTANT_NAMES:
                c_bar[k][plastic] = cp_bar[k] + c_implicit[k]
        previous = J2State(x_bar["plastic_strain"], x_bar["equivalent_plastic_strain"],
                           x_bar["back_stress"])
        return x_bar["strain"], previous, c_bar

    if not with_values:
        return None, pullback
    return _update_record(values, plastic, dgamma, trial_norm), pullback

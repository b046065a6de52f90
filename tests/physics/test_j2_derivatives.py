"""Derivatives of the J2 return map against central differences of the return map itself:
the consistent tangent (Simo & Hughes 1998, *Computational Inelasticity*, Box 3.2) and its
symmetries, and the pullback of one increment to the strain, the previous state and every
material constant, on each branch (elastic, and plastic with each hardening)."""

import dataclasses

import numpy as np
import pytest

from fesens.physics.j2_hardening import CONSTANT_NAMES
from fesens.physics.j2_plasticity import (
    J2Material,
    J2State,
    _derived_tangent,
    return_map,
    update_vjp,
)

N = 6
LINEAR = {"E": 200e3, "nu": 0.3, "yield_stress": 250.0}
MATERIALS = {
    "perfect": J2Material(**LINEAR),
    "isotropic": J2Material(**LINEAR, isotropic_modulus=20e3),
    "voce": J2Material(**LINEAR, isotropic_modulus=2e3, saturation_stress=400.0,
                       saturation_rate=40.0),
    "kinematic": J2Material(**LINEAR, kinematic_modulus=15e3),
    "linear mixed": J2Material(**LINEAR, isotropic_modulus=5e3, kinematic_modulus=10e3),
    "mixed": J2Material(**LINEAR, isotropic_modulus=3e3, kinematic_modulus=8e3,
                        saturation_stress=350.0, saturation_rate=25.0),
    "armstrong-frederick": J2Material(**LINEAR, isotropic_modulus=2e3, kinematic_modulus=30e3,
                                      kinematic_recovery=200.0, saturation_stress=300.0,
                                      saturation_rate=30.0),
}


#: each constant's size in these tests: the step of its finite difference is 1e-6 of it
SCALES = {"E": 2e5, "nu": 0.3, "yield_stress": 250.0, "isotropic_modulus": 1e4,
          "kinematic_modulus": 1e4, "saturation_stress": 300.0, "saturation_rate": 30.0,
          "kinematic_recovery": 100.0}


def _symmetric(rng, scale, shape=(N, 3, 3)):
    a = rng.normal(size=shape) * scale
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def _deviator(a):
    return a - np.trace(a, axis1=-2, axis2=-1)[..., None, None] / 3 * np.eye(3)


def _points(plastic: bool, seed: int = 0):
    """``N`` strains and a previous state (already yielded once); each point's trial lies
    far on one side of the yield surface, so a small perturbation keeps its branch."""
    rng = np.random.default_rng(seed)
    state = J2State(_deviator(_symmetric(rng, 1e-3)), rng.uniform(1e-3, 5e-3, N),
                    _deviator(_symmetric(rng, 20.0)))
    strain = state.plastic_strain + _symmetric(rng, 4e-3 if plastic else 1e-4)
    return strain, state


@pytest.mark.parametrize("name", sorted(MATERIALS))
@pytest.mark.parametrize("plastic", [False, True], ids=["elastic", "plastic"])
def test_consistent_tangent_is_the_derivative_of_the_return_map(name, plastic):
    material = MATERIALS[name]
    strain, state = _points(plastic)
    update = return_map(material, strain, state, tangent=True)
    assert update.plastic.all() if plastic else not update.plastic.any()
    tangent = update.tangent
    h = 1e-8
    for k, m in [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]:
        direction = np.zeros((3, 3))
        direction[k, m] += 0.5
        direction[m, k] += 0.5
        difference = (return_map(material, strain + h * direction, state).stress
                      - return_map(material, strain - h * direction, state).stress) / (2 * h)
        np.testing.assert_allclose(np.einsum("nijkl,kl->nij", tangent, direction), difference,
                                   rtol=0, atol=1e-6 * np.abs(difference).max())
    # minor symmetries always; the major one where the return is radial (b = 0): with
    # Armstrong-Frederick's recovery the flow direction also turns with β_n
    np.testing.assert_allclose(tangent, np.einsum("nijkl->njikl", tangent), rtol=0, atol=1e-9)
    transposed = np.einsum("nijkl->nklij", tangent)
    if material.kinematic_recovery == 0.0 or not plastic:
        np.testing.assert_allclose(tangent, transposed, rtol=0, atol=1e-9)
    else:
        assert np.abs(tangent - transposed).max() > 1e-6 * np.abs(tangent).max()


def _inner(update, bars) -> float:
    """``⟨(σ̄, state̅), (σ, state)⟩`` summed over the points."""
    stress_bar, state_bar = bars
    return float(np.sum(stress_bar * update.stress) + sum(
        np.sum(b * v) for b, v in zip(state_bar, update.state, strict=True)))


def _random_bars(rng):
    return _symmetric(rng, 1.0), J2State(_symmetric(rng, 1e5), rng.normal(size=N) * 1e3,
                                         _symmetric(rng, 1.0))


@pytest.mark.parametrize("name", ["linear mixed", "mixed", "armstrong-frederick"])
@pytest.mark.parametrize("plastic", [False, True], ids=["elastic", "plastic"])
def test_pullback_of_one_increment_against_central_differences(name, plastic):
    """Every input of an increment: strain, the previous state's three variables, each
    constant per point; ⟨pullback(w), d⟩ against the central difference of ⟨w, update⟩."""
    material = MATERIALS[name]
    strain, state = _points(plastic, seed=1)
    rng = np.random.default_rng(2)
    bars = _random_bars(rng)
    update, pullback = update_vjp(material, strain, state)
    np.testing.assert_array_equal(update.stress, return_map(material, strain, state).stress)
    strain_bar, state_bar, constants_bar = pullback(*bars)

    def directional(shift, scale, one_sided=False) -> float:
        """Central difference; one-sided of second order at a constant's bound 0."""
        h = 1e-6 * scale
        if one_sided:
            values = [_inner(return_map(*shift(t * h)), bars) for t in (0, 1, 2)]
            return (-3 * values[0] + 4 * values[1] - values[2]) / (2 * h)
        up, down = (_inner(return_map(*shift(sign * h)), bars) for sign in (1, -1))
        return (up - down) / (2 * h)

    checks = []
    d = _symmetric(rng, 1.0)
    checks.append((np.sum(strain_bar * d),
                   directional(lambda t: (material, strain + t * d, state), 1e-3)))
    for i, scale in enumerate((1e-3, 1e-3, 20.0)):
        d = rng.normal(size=state[i].shape)

        def shifted(t, i=i, d=d):
            return material, strain, state._replace(**{state._fields[i]: state[i] + t * d})

        checks.append((np.sum(state_bar[i] * d), directional(shifted, scale)))
    constants = material.constants(N)
    for constant in CONSTANT_NAMES:
        d = rng.uniform(0.5, 1.5, N)
        scale = SCALES[constant]

        def with_constant(t, constant=constant, d=d):
            changed = {constant: constants[constant] + t * d}
            if constant == "yield_stress":  # keep σ_∞ − σ_y0 fixed where Voce is off
                changed["saturation_stress"] = material.saturation_stress
            return dataclasses.replace(material, **changed), strain, state

        if material.saturation_stress is None and constant.startswith("saturation"):
            # no Voce term: σ_∞ = σ_y0 and δ = 0 move nothing
            np.testing.assert_array_equal(constants_bar[constant], 0.0)
            continue
        at_bound = not np.any(constants[constant])  # linear kinematic hardening: b = 0
        checks.append((np.sum(constants_bar[constant] * d),
                       directional(with_constant, scale, one_sided=at_bound)))
    for exact, difference in checks:
        assert exact == pytest.approx(difference, rel=1e-6, abs=1e-7 * abs(exact) + 1e-9)


@pytest.mark.parametrize("name", ["mixed", "armstrong-frederick"])
def test_pullback_to_the_strain_is_the_tangent_contracted(name):
    """The reverse-mode pullback and the tangent (closed form, or forward mode): two routes
    to ``∂σ/∂ε``."""
    material = MATERIALS[name]
    strain, state = _points(True, seed=3)
    update, pullback = update_vjp(material, strain, state)
    stress_bar = _symmetric(np.random.default_rng(4), 1.0)
    zero = J2State(*(np.zeros_like(v) for v in update.state))
    strain_bar, _, _ = pullback(stress_bar, zero)
    tangent = return_map(material, strain, state, tangent=True).tangent
    np.testing.assert_allclose(strain_bar, np.einsum("nijkl,nij->nkl", tangent, stress_bar),
                               rtol=1e-10, atol=1e-10 * np.abs(strain_bar).max())


@pytest.mark.parametrize("name", ["isotropic", "voce", "mixed"])
def test_closed_form_tangent_equals_the_derived_one(name):
    """Box 3.2's closed form is a speed-up of the tangent forward mode derives."""
    material = MATERIALS[name]
    strain, state = _points(True, seed=5)
    x = {"strain": strain, **state._asdict()}
    c = material.constants(N)
    update = return_map(material, strain, state, tangent=True)
    derived = _derived_tangent(update.multiplier, update.plastic, x, c)
    np.testing.assert_allclose(update.tangent, derived, rtol=0,
                               atol=1e-12 * np.abs(derived).max())


@pytest.mark.parametrize("name", ["perfect", "isotropic", "voce", "kinematic", "linear mixed",
                                  "mixed"])
def test_closed_form_pullback_equals_the_derived_one(name):
    """The radial return's pullback in closed form (b = 0) is a speed-up of the one
    fesens.ad derives through the explicit update and the implicit function theorem:
    every cotangent (strain, previous state, each constant, Armstrong-Frederick's b at
    b = 0 included) agrees to round-off."""
    material = MATERIALS[name]
    strain, state = _points(True, seed=6)
    bars = _random_bars(np.random.default_rng(7))
    update, closed = update_vjp(material, strain, state)
    assert update.plastic.all()
    derived_update, derived = update_vjp(material, strain, state, derived=True)
    np.testing.assert_array_equal(update.stress, derived_update.stress)
    fast, slow = closed(*bars), derived(*bars)
    for got, want in [(fast[0], slow[0]), *zip(fast[1], slow[1], strict=True),
                      *((fast[2][k], slow[2][k]) for k in CONSTANT_NAMES)]:
        np.testing.assert_allclose(got, want, rtol=0,
                                   atol=1e-11 * max(np.abs(want).max(), 1e-300))

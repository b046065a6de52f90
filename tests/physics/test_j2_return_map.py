"""The J2 material point against closed-form elastic–plastic responses.

Strain-controlled cycles 0 → ε_max → −ε_max of one point in uniaxial stress and in uniaxial
strain, against the piecewise-linear response of linear hardening (loading, elastic
unloading, reverse yielding at ``σ_max − 2(σ_y0 + H ᾱ_max)``: ``σ_max − 2σ_y0`` for kinematic
hardening, the Bauschinger effect, and ``−σ_max`` for isotropic hardening): Simo & Hughes
1998, *Computational Inelasticity*, §1.2–1.4 (the one-dimensional models) and §3.3; Voce's
saturated stress (de Souza Neto, Perić & Owen 2008, §6.6).
"""

import numpy as np
import pytest

from fesens.physics.j2_plasticity import (
    J2Material,
    J2State,
    plane_strain,
    return_map,
)

E, NU, SIGMA_Y = 200e3, 0.3, 250.0
MU, KAPPA = E / (2 * (1 + NU)), E / (3 * (1 - 2 * NU))
HARDENINGS = {"isotropic": (20e3, 0.0), "kinematic": (0.0, 20e3), "mixed": (8e3, 12e3)}


def _uniaxial_stress_point(material, strains):
    """Stresses ``σ_11`` of one point driven by ``ε_11`` with ``σ_22 = σ_33 = 0``: the
    lateral strain found by Newton with the consistent tangent. Returns stresses, flags."""
    state, lateral, stresses, plastic = J2State.virgin(1), 0.0, [], []
    for strain in strains:
        for _ in range(30):
            update = return_map(material, np.diag([strain, lateral, lateral])[None], state,
                                tangent=True)
            residual = update.stress[0, 1, 1]
            if abs(residual) < 1e-10 * SIGMA_Y:
                break
            tangent = update.tangent[0]
            lateral -= residual / (tangent[1, 1, 1, 1] + tangent[1, 1, 2, 2])
        else:
            pytest.fail("the lateral strain of uniaxial stress did not converge")
        state = update.state
        stresses.append(update.stress[0, 0, 0])
        plastic.append(update.plastic[0])
    return np.array(stresses), np.array(plastic)


def _closed_form_cycle(loading, unloading, elastic, tangent, isotropic, total):
    """The bilinear response of a loading leg 0 → ε_max then an unloading leg (Simo & Hughes
    1998, §1.2–1.4): returns the values on both legs, the reverse yield value and strain."""
    on_loading = np.minimum(elastic * loading,
                            SIGMA_Y + tangent * (loading - SIGMA_Y / elastic))
    peak_strain, peak = loading[-1], on_loading[-1]
    alpha_peak = (peak - SIGMA_Y) / total
    reverse = peak - 2.0 * (SIGMA_Y + isotropic * alpha_peak)
    reverse_strain = peak_strain - (peak - reverse) / elastic
    on_unloading = np.maximum(peak - elastic * (peak_strain - unloading),
                              reverse + tangent * (unloading - reverse_strain))
    return on_loading, on_unloading, reverse, reverse_strain


LOADING = np.linspace(0.0, 0.005, 26)[1:]
# the unloading grid misses the reverse-yield strains, so each flag is decided by a margin
UNLOADING = np.linspace(0.0049, -0.005, 37)


@pytest.mark.parametrize("kind", sorted(HARDENINGS))
def test_uniaxial_stress_cycle_against_closed_form(kind):
    isotropic, kinematic = HARDENINGS[kind]
    material = J2Material(E, NU, SIGMA_Y, isotropic, kinematic)
    stresses, plastic = _uniaxial_stress_point(material, np.concatenate([LOADING, UNLOADING]))
    total = isotropic + kinematic
    on_loading, on_unloading, reverse, reverse_strain = _closed_form_cycle(
        LOADING, UNLOADING, E, E * total / (E + total), isotropic, total)
    np.testing.assert_allclose(stresses, np.concatenate([on_loading, on_unloading]),
                               rtol=0, atol=1e-8 * SIGMA_Y)
    # loading yields at σ_y0 / E, unloading is elastic down to the reverse yield
    np.testing.assert_array_equal(plastic[:LOADING.size], LOADING > SIGMA_Y / E)
    np.testing.assert_array_equal(plastic[LOADING.size:], reverse_strain > UNLOADING)
    peak = stresses[LOADING.size - 1]
    if kind == "kinematic":  # the Bauschinger effect
        assert reverse == pytest.approx(peak - 2 * SIGMA_Y, rel=1e-12)
    if kind == "isotropic":
        assert reverse == pytest.approx(-peak, rel=1e-12)


@pytest.mark.parametrize("kind", sorted(HARDENINGS))
def test_uniaxial_strain_cycle_against_closed_form(kind):
    """ε = diag(ε, 0, 0): the von Mises stress ``q = σ_11 − σ_22`` follows the bilinear law
    of slopes 2μ and ``2μ H_t/(3μ + H_t)``; ``σ_11 = κε + 2q/3``, ``σ_22 = κε − q/3``."""
    isotropic, kinematic = HARDENINGS[kind]
    material = J2Material(E, NU, SIGMA_Y, isotropic, kinematic)
    strains = np.concatenate([LOADING, UNLOADING])
    state, stresses = J2State.virgin(1), []
    for strain in strains:
        update = return_map(material, np.diag([strain, 0.0, 0.0])[None], state)
        state = update.state
        stresses.append(update.stress[0])
    stresses = np.array(stresses)
    total = isotropic + kinematic
    on_loading, on_unloading, _, _ = _closed_form_cycle(
        LOADING, UNLOADING, 2 * MU, 2 * MU * total / (3 * MU + total), isotropic, total)
    q = np.concatenate([on_loading, on_unloading])
    np.testing.assert_allclose(stresses[:, 0, 0], KAPPA * strains + 2 * q / 3, atol=1e-8 * SIGMA_Y,
                               rtol=0)
    np.testing.assert_allclose(stresses[:, 1, 1], KAPPA * strains - q / 3, atol=1e-8 * SIGMA_Y,
                               rtol=0)
    np.testing.assert_allclose(stresses[:, 2, 2], stresses[:, 1, 1], rtol=1e-13)


def test_voce_saturates():
    """Uniaxial stress with Voce's law alone: σ = σ_y(ε − σ/E) at every plastic point, and
    σ → σ_∞ (de Souza Neto, Perić & Owen 2008, §6.6)."""
    saturation, rate = 400.0, 60.0
    material = J2Material(E, NU, SIGMA_Y, saturation_stress=saturation, saturation_rate=rate)
    strains = np.linspace(0.0, 0.2, 41)[1:]
    stresses, plastic = _uniaxial_stress_point(material, strains)
    alpha = strains[plastic] - stresses[plastic] / E
    voce = saturation - (saturation - SIGMA_Y) * np.exp(-rate * alpha)
    np.testing.assert_allclose(stresses[plastic], voce, rtol=1e-10)
    assert 0.0 < saturation - stresses[-1] < 1e-2


def _uniaxial_strain_path(material, strains):
    """``(q, εᵖ_11, plastic)`` along ε = diag(ε, 0, 0): von Mises stress ``σ_11 − σ_22``."""
    state, rows = J2State.virgin(1), []
    for strain in strains:
        update = return_map(material, np.diag([strain, 0.0, 0.0])[None], state)
        state = update.state
        stress = update.stress[0]
        rows.append((stress[0, 0] - stress[1, 1], state.plastic_strain[0, 0, 0],
                     update.plastic[0]))
    q, plastic_strain, plastic = map(np.array, zip(*rows, strict=True))
    return q, plastic_strain, plastic


def test_armstrong_frederick_against_its_closed_form():
    """Uniaxial strain with Armstrong-Frederick kinematic hardening alone: while loading,
    ``q = σ_y0 + (H_k/b)(1 − e^{−b εᵖ})`` (de Souza Neto, Perić & Owen 2008, §6.7.2), which
    backward Euler meets to first order in the step; saturation at ``σ_y0 + H_k/b``; then
    elastic unloading down to the reverse yield ``q_max − 2σ_y0`` (the Bauschinger effect)."""
    modulus, recovery = 20e3, 100.0
    material = J2Material(E, NU, SIGMA_Y, kinematic_modulus=modulus,
                          kinematic_recovery=recovery)

    def loading_error(n_steps):
        q, plastic_strain, _ = _uniaxial_strain_path(material, np.linspace(0, 0.02, n_steps))
        closed_form = SIGMA_Y + modulus / recovery * -np.expm1(-recovery * plastic_strain)
        return np.max(np.abs(q - closed_form)[plastic_strain > 0])

    coarse, fine = loading_error(41), loading_error(81)
    assert fine < 1e-2 * modulus / recovery
    assert 1.8 < coarse / fine < 2.2
    peak_strain = 0.2
    unloading = np.linspace(peak_strain, peak_strain - 0.01, 24)[1:]
    q, _, plastic = _uniaxial_strain_path(
        material, np.concatenate([np.linspace(0, peak_strain, 101)[1:], unloading]))
    peak = q[99]
    assert peak == pytest.approx(SIGMA_Y + modulus / recovery, abs=0.05)
    elastic = peak - 2 * MU * (peak_strain - unloading)
    np.testing.assert_array_equal(plastic[100:], elastic < peak - 2 * SIGMA_Y)
    np.testing.assert_allclose(q[100:][~plastic[100:]], elastic[~plastic[100:]], rtol=1e-10)
    assert q[-1] < peak - 2 * SIGMA_Y < q[100:][~plastic[100:]].min()


def test_plane_strain_keeps_the_out_of_plane_plastic_strain():
    """Plane strain: σ_zz = ν(σ_xx + σ_yy) while elastic (Timoshenko & Goodier, §2.17);
    once plastic, εᵖ_zz = −(εᵖ_xx + εᵖ_yy) ≠ 0 (plastic incompressibility) stays in the state."""
    material = J2Material(E, NU, SIGMA_Y, 10e3, 5e3)
    strains = plane_strain(np.array([[[4e-4, 1e-4], [1e-4, -1e-4]], [[4e-3, 1e-3], [1e-3, 0.0]]]))
    update = return_map(material, strains, J2State.virgin(2))
    assert update.plastic.tolist() == [False, True]
    sigma = update.stress
    assert sigma[0, 2, 2] == pytest.approx(NU * (sigma[0, 0, 0] + sigma[0, 1, 1]), rel=1e-12)
    plastic_strain = update.state.plastic_strain[1]
    assert abs(plastic_strain[2, 2]) > 1e-4
    assert np.trace(plastic_strain) == pytest.approx(0.0, abs=1e-16)


@pytest.mark.parametrize(("constants", "message"), [
    ({"yield_stress": 0.0}, "yield stress must be > 0"),
    ({"yield_stress": -5.0}, "yield stress must be > 0"),
    ({"isotropic_modulus": -1e3}, "softening is refused: the isotropic_modulus"),
    ({"kinematic_modulus": -1e3}, "softening is refused: the kinematic_modulus"),
    ({"saturation_stress": 200.0, "saturation_rate": 10.0}, "softening is refused: Voce"),
    ({"kinematic_recovery": -1.0}, "kinematic_recovery b must be >= 0"),
])
def test_refused_constants(constants, message):
    with pytest.raises(ValueError, match=message):
        J2Material(**{"E": E, "nu": NU, "yield_stress": SIGMA_Y, **constants})

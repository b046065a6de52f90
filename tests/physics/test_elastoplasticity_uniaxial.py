"""One element of J2 elastoplasticity in strain-controlled cycles against the closed-form
elastic–plastic response with linear hardening (loading, unloading, reverse yielding).

Uniaxial stress (one hex8, rollers on three faces): the 3D model with linear isotropic and
kinematic moduli ``H``, ``H_k`` reduces to the 1D model of Simo & Hughes 1998,
*Computational Inelasticity*, §1.4 (Box 1.5), whose response to a piecewise-linear strain
path is exact whatever the step, and which the test writes out: ``σ = E (ε − εᵖ)``,
``|σ − q| ≤ σ_y0 + H α``, ``Δγ = f_trial / (E + H + H_k)``. With kinematic hardening the
reverse yield comes at ``σ_max − 2 σ_y0`` (the Bauschinger effect, de Souza Neto, Perić &
Owen 2008, §6.7, Fig. 6.13), checked by itself.

Uniaxial strain (one quad4 in plane strain, every lateral displacement held): with
``εᵖ = e (1, −½, −½)`` the stress difference ``D = σ_xx − σ_yy = 3μ (2ε/3 − e)`` follows
the same 1D model with modulus ``3μ`` on the strain ``2ε/3`` and ``ᾱ = |e|``, and
``σ_xx = κ ε + 2D/3`` (de Souza Neto, Perić & Owen 2008, §7.3: the J2 return in this state).
"""

import numpy as np
import pytest

from fesens.fem.analysis.incremental import IncrementalAnalysis
from fesens.mesh import box, rectangle
from fesens.physics.elastoplasticity import Elastoplasticity

E, NU, SY = 200e3, 0.3, 250.0
EPS_Y = SY / E
# loading to 4 ε_y, unloading and reversing to −4 ε_y, back to 2 ε_y
FACTORS = np.array([0, 0.5, 1, 2, 3, 4, 3, 2, 1, 0, -1, -2, -3, -4, -2, 0, 2]) / 4.0
STRAIN = 4.0 * EPS_Y  # the prescribed strain at factor 1


def one_d(strains, modulus, yield_stress, H, Hk):
    """Simo & Hughes 1998, Box 1.5: the 1D return map with linear isotropic and kinematic
    hardening, stresses along a strain path (exact for piecewise-linear paths)."""
    plastic = alpha = back = 0.0
    stresses = []
    for strain in strains:
        trial = modulus * (strain - plastic)
        relative = trial - back
        f = abs(relative) - (yield_stress + H * alpha)
        if f > 0:
            dgamma = f / (modulus + H + Hk)
            sign = np.sign(relative)
            plastic += dgamma * sign
            alpha += dgamma
            back += Hk * dgamma * sign
        stresses.append(modulus * (strain - plastic))
    return np.array(stresses)


def _hex_model(H, Hk):
    mesh = box(1, 1, 1, cell_type="hex8")
    model = Elastoplasticity(mesh, E=E, nu=NU, yield_stress=SY, isotropic_modulus=H,
                             kinematic_modulus=Hk)
    model.fix("left", components=[0]).fix("bottom", components=[1])
    model.fix("back", components=[2]).fix("right", components=[0], value=STRAIN)
    return model


@pytest.mark.parametrize("H, Hk", [(10e3, 0.0), (0.0, 10e3), (4e3, 6e3)])
def test_hex8_uniaxial_stress_cycle(H, Hk):
    """Simo & Hughes 1998, Box 1.5 (uniaxial stress)."""
    model = _hex_model(H, Hk)
    sol = IncrementalAnalysis(model, FACTORS).solve()
    expected = one_d(FACTORS * STRAIN, E, SY, H, Hk)
    stress = sol.stress[:, 0]  # (N + 1, n_qp, 3, 3)
    np.testing.assert_allclose(stress[..., 0, 0], expected[:, None] * np.ones(8),
                               rtol=1e-9, atol=1e-9 * SY)
    others = stress.copy()
    others[..., 0, 0] = 0.0
    np.testing.assert_allclose(others, 0.0, atol=1e-9 * SY)
    # the reactions on the right face carry the stress (unit area)
    right = 3 * np.asarray(model.mesh.node_sets["right"])  # their x components
    np.testing.assert_allclose(sol.curve(right)[:, 1], expected, rtol=1e-9, atol=1e-9 * SY)
    np.testing.assert_allclose(sol.curve(right)[:, 0], FACTORS * STRAIN, atol=1e-15)


def test_bauschinger_reverse_yield_at_max_minus_twice_yield():
    """de Souza Neto, Perić & Owen 2008, §6.7: with linear kinematic hardening a bar loaded
    to σ_max yields again in reverse at σ_max − 2 σ_y0."""
    Hk = 20e3
    model = _hex_model(0.0, Hk)
    tangent = E * Hk / (E + Hk)
    strain_max = 4.0 * EPS_Y
    sigma_max = SY + tangent * (strain_max - EPS_Y)
    # unload by 3 ε_y: elastic would be σ_max − 3 σ_y0, past the reverse yield
    factors = np.array([0.0, 1.0, 0.25])
    sol = IncrementalAnalysis(model, factors).solve()
    stress = sol.stress[:, 0, 0, 0, 0]
    assert stress[1] == pytest.approx(sigma_max, rel=1e-12)
    reverse = sigma_max - 2.0 * SY
    expected = reverse - tangent * (3.0 * EPS_Y - 2.0 * SY / E)
    assert stress[2] == pytest.approx(expected, rel=1e-12)
    # the elastic range kept its size 2 σ_y0: the back stress moved by H_k εᵖ
    back = sol.back_stress[2, 0, 0]
    assert 1.5 * back[0, 0] == pytest.approx(stress[2] + SY, rel=1e-10)


@pytest.mark.parametrize("H, Hk", [(10e3, 0.0), (0.0, 10e3)])
def test_quad4_uniaxial_strain_cycle(H, Hk):
    """de Souza Neto, Perić & Owen 2008, §7.3 (the J2 return in uniaxial strain)."""
    mesh = rectangle(1, 1, cell_type="quad4")
    model = Elastoplasticity(mesh, E=E, nu=NU, yield_stress=SY, isotropic_modulus=H,
                             kinematic_modulus=Hk)
    model.fix("left", components=[0]).fix("bottom", components=[1])
    model.fix("top", components=[1]).fix("right", components=[0], value=STRAIN)
    sol = IncrementalAnalysis(model, FACTORS).solve()
    kappa, mu = E / (3 * (1 - 2 * NU)), E / (2 * (1 + NU))
    strains = FACTORS * STRAIN
    difference = one_d(2.0 * strains / 3.0, 3.0 * mu, SY, H, Hk)
    stress = sol.stress[:, 0]
    np.testing.assert_allclose(stress[..., 0, 0],
                               (kappa * strains + 2.0 * difference / 3.0)[:, None]
                               * np.ones(4), rtol=1e-9, atol=1e-9 * SY)
    np.testing.assert_allclose(stress[..., 0, 0] - stress[..., 1, 1],
                               difference[:, None] * np.ones(4), rtol=1e-9, atol=1e-9 * SY)
    # plane strain: σ_zz = σ_yy in this state
    np.testing.assert_allclose(stress[..., 2, 2], stress[..., 1, 1], rtol=1e-9,
                               atol=1e-9 * SY)


@pytest.mark.parametrize("cell_type", ["tri3", "tri6", "quad4", "quad8", "quad9", "tet4",
                                       "tet10", "hex8", "hex20", "hex27"])
def test_every_cell_type_reproduces_a_homogeneous_uniaxial_strain_cycle(cell_type):
    """A patch test: the boundary moved as ``u = (ε x, 0, 0)`` strains every cell alike
    (interior nodes free), and every quadrature point follows the uniaxial-strain closed
    form above (de Souza Neto, Perić & Owen 2008, §7.3), with kinematic hardening."""
    three_d = cell_type[:3] in ("tet", "hex")
    mesh = (box(2, 2, 2, cell_type=cell_type) if three_d
            else rectangle(3, 3, cell_type=cell_type))
    Hk = 10e3
    model = Elastoplasticity(mesh, E=E, nu=NU, yield_stress=SY, kinematic_modulus=Hk)
    dim = mesh.dim

    def moved(points):
        values = np.zeros((len(points), dim))
        values[:, 0] = STRAIN * points[:, 0]
        return values

    for side in ("left", "right", "bottom", "top", *(("back", "front") if three_d else ())):
        model.fix(side, value=moved)
    factors = np.array([0, 0.5, 1, 0.25, -0.5, -1, 0.5])
    sol = IncrementalAnalysis(model, factors).solve()
    kappa, mu = E / (3 * (1 - 2 * NU)), E / (2 * (1 + NU))
    strains = factors * STRAIN
    difference = one_d(2.0 * strains / 3.0, 3.0 * mu, SY, 0.0, Hk)
    expected = kappa * strains + 2.0 * difference / 3.0
    stress = sol.stress[..., 0, 0]
    np.testing.assert_allclose(stress, expected[:, None, None] * np.ones(stress.shape[1:]),
                               rtol=1e-8, atol=1e-8 * SY)

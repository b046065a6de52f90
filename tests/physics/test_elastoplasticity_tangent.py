"""The consistent tangent of the elastoplastic residual against central differences of the
residual itself, on small meshes in a plastic state (a Newton iterate returns from the
previous increment's internal variables, which stay fixed): quad4, tri6 (plane strain),
hex8, tet4 (3D); linear isotropic + kinematic, Voce, and Armstrong–Frederick (the derived
tangent). The closed form is Simo & Hughes 1998, *Computational Inelasticity*, Box 3.2."""

import numpy as np
import pytest

from fesens.fem.analysis.incremental import IncrementalAnalysis
from fesens.mesh import box, rectangle
from fesens.physics.elastoplasticity import Elastoplasticity

LAWS = {
    "linear": {"isotropic_modulus": 5e3, "kinematic_modulus": 8e3},
    "voce": {"isotropic_modulus": 1e3, "saturation_stress": 400.0, "saturation_rate": 30.0},
    "armstrong_frederick": {"kinematic_modulus": 2e4, "kinematic_recovery": 100.0},
}


def _model(cell_type, law):
    if cell_type in ("hex8", "tet4"):
        mesh = box(2, 1, 1, 2.0, 1.0, 1.0, cell_type)
    else:
        mesh = rectangle(2, 1, 2.0, 1.0, cell_type)
    model = Elastoplasticity(mesh, E=200e3, nu=0.3, yield_stress=250.0, **LAWS[law])
    model.fix("left").fix("right", components=[0], value=0.01)
    return model


@pytest.mark.parametrize("cell_type", ["quad4", "tri6", "hex8", "tet4"])
@pytest.mark.parametrize("law", list(LAWS))
def test_tangent_against_differences_of_the_residual(cell_type, law):
    model = _model(cell_type, law)
    sol = IncrementalAnalysis(model, [0.0, 0.5, 1.0, 0.2]).solve()
    # the previous increment's internal variables (plastic), a state beyond it
    previous = {name: values[1] for name, values in sol.history.items()}
    assert previous["equivalent_plastic_strain"].max() > 0.0
    fields = model.with_history(model.material_fields(), previous)
    u = sol.displacements[2]
    K = model.tangent(u, fields).tocsr()
    free = model.free_dofs
    rng = np.random.default_rng(3)
    for _ in range(3):
        v = np.zeros_like(u)
        v[free] = rng.standard_normal(free.size)
        h = 1e-7 * np.abs(u).max() / np.abs(v).max()
        difference = (model.internal_forces(u + h * v, fields)
                      - model.internal_forces(u - h * v, fields))[free] / (2 * h)
        exact = K @ v[free]
        np.testing.assert_allclose(exact, difference, rtol=0,
                                   atol=2e-5 * np.abs(exact).max())
    if law != "armstrong_frederick":  # an associative law's tangent is symmetric
        assert abs(K - K.T).max() <= 1e-10 * abs(K).max()


def test_closed_form_consistency_slope_matches_forward_mode():
    """The closed-form slope of the consistency condition (no recovery) against the
    forward-mode one it replaces."""
    from fesens.physics.j2_plasticity import _consistency_and_slope, _forward_slope
    rng = np.random.default_rng(4)
    n = 6
    strain = rng.standard_normal((n, 3, 3)) * 1e-2
    x = {"strain": strain + np.swapaxes(strain, 1, 2), "plastic_strain": np.zeros((n, 3, 3)),
         "equivalent_plastic_strain": rng.uniform(0, 0.01, n),
         "back_stress": np.zeros((n, 3, 3))}
    c = {"E": np.full(n, 200e3), "nu": np.full(n, 0.3), "yield_stress": np.full(n, 250.0),
         "isotropic_modulus": np.full(n, 1e3), "kinematic_modulus": np.full(n, 5e3),
         "saturation_stress": np.full(n, 400.0), "saturation_rate": np.full(n, 30.0),
         "kinematic_recovery": np.zeros(n)}
    dgamma = rng.uniform(0, 1e-3, n)
    closed, forward = _consistency_and_slope(dgamma, x, c), _forward_slope(dgamma, x, c)
    np.testing.assert_allclose(closed[0], forward[0], rtol=1e-14)
    np.testing.assert_allclose(closed[1], forward[1], rtol=1e-12)


def test_zero_strain_is_elastic_whatever_the_yield_stress():
    """A zero trial deviator is elastic even under a yield stress below 1 (a nearly void
    cell's, ρ^q σ_y): nothing to return."""
    from fesens.physics.j2_hardening import J2Material
    from fesens.physics.j2_plasticity import J2State, return_map
    for material in (J2Material(E=1.0, nu=0.3, yield_stress=0.5),
                     J2Material(E=6e-3, nu=0.3, yield_stress=1.34e-4, isotropic_modulus=1e-3)):
        update = return_map(material, np.zeros((1, 3, 3)), J2State.virgin(1))
        assert not update.plastic.any()
        assert update.state.equivalent_plastic_strain[0] == 0.0


def test_return_far_outside_a_small_yield_surface_converges():
    """A trial stress 1e6 times the yield stress (a void cell strained like a solid one):
    the multiplier's Newton stops at the round-off of the trial's size, and the returned
    stress lies on the yield surface (perfect plasticity: von Mises = σ_y)."""
    from fesens.physics.j2_hardening import J2Material
    from fesens.physics.j2_plasticity import J2State, return_map
    material = J2Material(E=200e3, nu=0.3, yield_stress=2.5e-4)
    strain = np.zeros((1, 3, 3))
    strain[0, 0, 1] = strain[0, 1, 0] = 1e-3
    update = return_map(material, strain, J2State.virgin(1))
    deviator = update.stress[0] - np.trace(update.stress[0]) / 3 * np.eye(3)
    assert np.sqrt(1.5 * np.sum(deviator ** 2)) == pytest.approx(2.5e-4, rel=1e-9)

"""The hand-derived shape rule (fesens/fem/integrals/shape.py) against the traced kernel it
replaces.

Both differentiate the same ``a_eᵀ K_e(X) b_e``: the rule from the physics' integrand and its
fluxes, the fallback by tracing the cell matrices. They must agree to round-off, for every
physics with an integrand, several load cases and the coefficient fields too.
"""

import numpy as np
import pytest

from fesens.ad import grad
from fesens.mesh import box, rectangle
from fesens.objectives import compliance, displacement_norm, volume
from fesens.physics import Elasticity, HeatConduction


def models():
    plane = Elasticity(rectangle(6, 3, 2.0, 1.0, cell_type="quad4"), nu=0.3, plane="strain")
    plane.fix("left").traction("right", (0.2, -1.0))
    solid = Elasticity(box(3, 2, 2, 2.0, 1.0, 1.0, cell_type="tet4"))
    solid.fix("left").traction("right", (0.0, -1.0, 0.5), name="side")
    solid.body_force((0.0, 0.0, -1.0), name="weight")
    heat = HeatConduction(rectangle(5, 4, 1.0, 1.0, cell_type="tri6"), conductivity=2.0)
    heat.fix("left", value=1.0).flux("right", 3.0)
    return {"plane strain": plane, "tet4": solid, "heat": heat}


def perturbed(mesh, seed: int) -> np.ndarray:
    h = np.ptp(mesh.points, axis=0).min() / 100
    return mesh.points + h * np.random.default_rng(seed).uniform(-1, 1, mesh.points.shape)


def gradients(model, objective, monkeypatch, hand: bool):
    if not hand:
        monkeypatch.setattr(type(model), "has_integrand", lambda self: False)
    x = np.random.default_rng(1).uniform(0.3, 1.0, model.mesh.n_cells)
    X = perturbed(model.mesh, 2)
    cases = [{}, {name: 0.5 for name in model.loads}] if len(model.loads) > 1 else None
    return grad(lambda X, x: objective(model.solve(points=X, scale=x**3, load_cases=cases)),
                argnums=(0, 1))(X, x)


@pytest.mark.parametrize("name", ["plane strain", "tet4", "heat"])
@pytest.mark.parametrize("objective", [compliance, displacement_norm])
def test_the_hand_derived_rule_matches_the_traced_kernel(name, objective, monkeypatch):
    model = models()[name]
    assert model.has_integrand()
    hand = gradients(model, objective, monkeypatch, hand=True)
    traced = gradients(model, objective, monkeypatch, hand=False)
    for h, t in zip(hand, traced, strict=True):
        np.testing.assert_allclose(h, t, rtol=1e-9, atol=1e-12 * np.abs(t).max())


def test_the_kept_geometry_of_moved_points_follows_changes_made_in_place():
    model = models()["plane strain"]
    X = perturbed(model.mesh, 3)
    first = model.solve(points=X).u
    X *= 1.5  # the same array, new values: a kept geometry must not be reused
    np.testing.assert_allclose(model.solve(points=X).u,
                               model.solve(points=X.copy()).u, rtol=1e-12)
    assert not np.allclose(model.solve(points=X).u, first)


def test_second_derivatives_in_the_points_trace_the_geometry():
    # The rules of fesens/fem/integrals/shape.py are first order; nested differentiation falls back
    # to the traced geometry: d/dt ∇J(X + t v) against central differences of ∇J.
    model = models()["plane strain"]
    X, v = perturbed(model.mesh, 4), perturbed(model.mesh, 5) - model.mesh.points
    x = np.full(model.mesh.n_cells, 0.7)

    def J(X):
        return volume(model, x, points=X) + np.sum(model.cell_volumes(X) ** 2)

    gradient = grad(J)
    directional = grad(lambda X: np.sum(gradient(X) * v))(X)
    step = 1e-6
    fd = (np.sum(gradient(X + step * v) * v, axis=None) - np.sum(gradient(X - step * v) * v))
    assert np.sum(directional * v) == pytest.approx(fd / (2 * step), rel=1e-6)

"""Convection (Robin) conditions of heat conduction: closed forms, Taylor tests, bad input.

Closed forms from Incropera, DeWitt, Bergman & Lavine, *Fundamentals of Heat and Mass
Transfer*, 6th ed., ch. 3: the plane wall with a fixed temperature on one face and convection
on the other (§3.1, thermal resistances in series), and the straight fin of uniform cross
section with an adiabatic tip (§3.6.2, Table 3.4 case B).
"""

import numpy as np
import pytest

from fesens.ad import taylor_test
from fesens.errors import BoundaryConditionError, NonFiniteError
from fesens.mesh import box, rectangle
from fesens.physics import HeatConduction


@pytest.mark.parametrize("cell_type", ["quad4", "tri3", "quad8", "tri6"])
def test_slab_with_convection_matches_closed_form(cell_type):
    """Slab 0 < x < L, T(0) = T0, convection h to T∞ at x = L (Incropera §3.1):
    T(x) = T0 + (T∞ − T0) h x / (k + h L). Linear, so exact to round-off."""
    L, k, h, ambient, T0 = 2.0, 3.0, 5.0, 20.0, 100.0
    mesh = rectangle(20, 2, L, 0.2, cell_type=cell_type)
    model = HeatConduction(mesh, conductivity=k)
    model.fix("left", value=T0)
    model.convection("right", h=h, ambient=ambient)
    x = mesh.points[:, 0]
    exact = T0 + (ambient - T0) * h * x / (k + h * L)
    assert np.max(np.abs(model.solve().temperature - exact)) < 1e-9 * T0


@pytest.mark.parametrize("cell_type", ["hex8", "tet4", "tet10", "hex20"])
def test_slab_with_convection_in_3d(cell_type):
    """The same slab as a 3D box: convection on triangle and quadrilateral faces."""
    L, k, h, ambient, T0 = 2.0, 3.0, 5.0, 20.0, 100.0
    mesh = box(6, 2, 2, L, 0.5, 0.5, cell_type=cell_type)
    model = HeatConduction(mesh, conductivity=k)
    model.fix("left", value=T0)
    model.convection("right", h=h, ambient=ambient)
    exact = T0 + (ambient - T0) * h * mesh.points[:, 0] / (k + h * L)
    assert np.max(np.abs(model.solve().temperature - exact)) < 1e-9 * T0


@pytest.mark.parametrize("cell_type", ["quad4", "quad8"])
def test_thin_fin_matches_closed_form(cell_type):
    """Fin of half-thickness b (symmetry at y = 0), base at T0, convection on its face,
    adiabatic tip (Incropera §3.6.2, Table 3.4 B): θ/θ_b = cosh(m(L−x))/cosh(mL), m² =
    hP/(kA) = h/(k b) per unit depth. Biot number h b/k = 2e-4, so the 1D fin theory holds
    to about Bi/3 ≈ 1e-4 of θ_b."""
    L, b, k, h, ambient, T0 = 1.0, 0.01, 200.0, 4.5, 20.0, 100.0
    m = np.sqrt(h / (k * b))
    mesh = rectangle(50, 2, L, b, cell_type=cell_type)
    model = HeatConduction(mesh, conductivity=k)
    model.fix("left", value=T0)
    model.convection("top", h=h, ambient=ambient)
    x = mesh.points[:, 0]
    exact = ambient + (T0 - ambient) * np.cosh(m * (L - x)) / np.cosh(m * L)
    error = np.max(np.abs(model.solve().temperature - exact)) / (T0 - ambient)
    assert error < 2e-4


def convective_plate():
    mesh = rectangle(8, 6, 1.0, 0.7, cell_type="tri3")
    model = HeatConduction(mesh, conductivity=2.0)
    model.fix("left", value=lambda x: 10 + x[:, 1])
    model.convection("top", h=3.0, ambient=5.0, name="top")
    model.convection("right", h=1.0, ambient=-2.0, name="right")
    model.heat_source(1.0)
    return model


def test_taylor_film_coefficients_and_ambient_temperatures():
    model = convective_plate()

    def objective(p):
        return np.sum(model.solve(h=p["h"], ambient=p["ambient"]).temperature ** 2)

    result = taylor_test(objective, {"h": np.array([3.0, 1.0]),
                                     "ambient": np.array([5.0, -2.0])}, verbose=False)
    assert abs(result.rate - 2) < 0.1


def test_taylor_one_film_coefficient_for_all_conditions():
    model = convective_plate()
    result = taylor_test(lambda h: np.sum(model.solve(h=h).temperature ** 2), 2.0,
                         verbose=False)
    assert abs(result.rate - 2) < 0.1


def test_taylor_node_coordinates_with_convection():
    """Shape sensitivities include the facet terms (the facets' lengths change)."""
    model = convective_plate()
    result = taylor_test(lambda X: np.sum(model.solve(points=X).temperature ** 2),
                         model.mesh.points.copy(), step=1e-3, verbose=False)
    assert abs(result.rate - 2) < 0.1


def test_convection_alone_fixes_the_temperature_level():
    """No Dirichlet condition: convection makes the problem definite; the heat generated
    leaves through the convective side, ∫ h (T − T∞) dS = Q."""
    model = HeatConduction(rectangle(6, 6))
    model.convection("left", h=2.0, ambient=1.0)
    model.heat_source(1.0)
    T = model.solve().temperature
    left = np.flatnonzero(model.mesh.points[:, 0] == 0)
    y = model.mesh.points[left, 1]
    order = np.argsort(y)
    heat_out = 2.0 * np.trapezoid(T[left][order] - 1.0, y[order])  # T is linear on each edge
    assert heat_out == pytest.approx(1.0, rel=1e-10)


@pytest.mark.parametrize("h, error, words", [
    (-1.0, BoundaryConditionError, "convection 'cool': the film coefficient h must be >= 0"),
    (float("nan"), NonFiniteError, "convection 'cool': h is nan"),
])
def test_bad_film_coefficient_names_the_condition(h, error, words):
    model = HeatConduction(rectangle(4, 4))
    with pytest.raises(error, match=words):
        model.convection("top", h=h, ambient=0.0, name="cool")


def test_bad_film_coefficient_in_solve_names_the_condition():
    model = convective_plate()
    with pytest.raises(BoundaryConditionError, match="convection 'right'.*>= 0; got -1"):
        model.solve(h=[3.0, -1.0])
    with pytest.raises(NonFiniteError, match="convection 'top': ambient is nan"):
        model.solve(ambient=float("nan"))
    with pytest.raises(ValueError, match="one value per convection condition \\(2\\)"):
        model.solve(h=[1.0, 2.0, 3.0])


def test_convection_on_interior_facets_is_refused():
    mesh = rectangle(4, 4)
    boundary = mesh.boundary_facets()
    facets, _ = mesh.all_facets()
    interior = facets[np.isclose(mesh.points[facets].mean(axis=1)[:, 0], 0.5)
                      & np.isclose(mesh.points[facets][:, :, 0], 0.5).all(axis=1)]
    mesh.facet_sets["middle"] = type(boundary)(boundary.facet_type, interior)
    model = HeatConduction(mesh)
    with pytest.raises(BoundaryConditionError,
                       match="convection 'convection0': .* not on the boundary"):
        model.convection("middle", h=1.0, ambient=0.0)


def test_convection_load_is_in_every_load_case_and_reactions_balance():
    model = convective_plate()
    both = model.solve(load_cases=[{}, {"volume0": 0.0}]).u
    assert np.allclose(both[:, 0], model.solve().u)
    assert np.allclose(both[:, 1], model.solve(loads={"volume0": 0.0}).u)
    # Heat balance: source + convection in = heat out at the fixed edge (reactions K T − f).
    solution = model.solve()
    T = solution.temperature
    convected = 0.0
    for c in model.convections.values():
        facets = c.owned.facets.facets
        ends = model.mesh.points[facets]
        lengths = np.linalg.norm(ends[:, 1] - ends[:, 0], axis=1)
        convected += c.h * np.sum(lengths * (c.ambient - T[facets].mean(axis=1)))
    source = 1.0 * 0.7  # heat_source(1.0) over the 1 x 0.7 plate
    assert solution.reaction_force("left")[0] == pytest.approx(-(source + convected), rel=1e-10)

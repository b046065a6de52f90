"""Thermal strains of elasticity: exact states, Taylor tests of α and the temperature, bad input.

Exact states (Timoshenko & Goodier, *Theory of Elasticity*, 3rd ed., §150; any thermoelasticity
text): a free body heated uniformly by ΔT is stress-free with strain α ΔT I; a fully
clamped one has σ = −E α ΔT/(1−2ν) I (3D and plane strain, in-plane; plane strain σ_zz the
same) and σ = −E α ΔT/(1−ν) I in plane stress. A free plane-strain body has in-plane
strain (1+ν) α ΔT and σ_zz = −E α ΔT.
"""

import numpy as np
import pytest

from fesens.ad import taylor_test
from fesens.errors import NonFiniteError
from fesens.mesh import box, rectangle
from fesens.physics import Elasticity, HeatConduction

E, NU, ALPHA, DT = 200.0, 0.3, 1e-3, 50.0


def free_2d(plane, cell_type):
    mesh = rectangle(6, 3, 2.0, 1.0, cell_type=cell_type)
    model = Elasticity(mesh, E, NU, plane=plane, alpha=ALPHA)
    model.fix(lambda x: (x[:, 0] == 0) & (x[:, 1] == 0))
    model.fix(lambda x: (x[:, 0] == 2) & (x[:, 1] == 0), components="y")
    return model.thermal_strain(20.0 + DT, reference=20.0)


@pytest.mark.parametrize("cell_type", ["quad4", "tri3", "tri6", "quad8"])
@pytest.mark.parametrize("plane", ["stress", "strain"])
def test_free_plate_heated_uniformly_is_stress_free(plane, cell_type):
    solution = free_2d(plane, cell_type).solve()
    strain = ALPHA * DT * (1 + NU if plane == "strain" else 1)
    assert np.allclose(solution.strain(), strain * np.eye(2), rtol=1e-10, atol=1e-14)
    assert np.abs(solution.stress()).max() < 1e-10 * E * ALPHA * DT
    at_points = solution.stress_at_quadrature(full=True)
    assert np.abs(at_points[..., :2, :2]).max() < 1e-10 * E * ALPHA * DT
    sigma_zz = -E * ALPHA * DT if plane == "strain" else 0.0
    assert np.allclose(at_points[..., 2, 2], sigma_zz, atol=1e-10)
    assert np.allclose(solution.out_of_plane_stress(), sigma_zz, atol=1e-10)
    # ε_zz: α ΔT in plane stress (free in z), 0 in plane strain; cell data and recovery.
    eps_zz = ALPHA * DT if plane == "stress" else 0.0
    assert np.allclose(solution.strain_at_quadrature(full=True)[..., 2, 2], eps_zz, atol=1e-14)
    assert np.allclose(solution.nodal_strain(full=True)[:, 2, 2], eps_zz, atol=1e-14)
    assert np.allclose(solution.cell_data()["strain"][:, 2], eps_zz, atol=1e-14)


def test_free_box_heated_uniformly_is_stress_free():
    model = Elasticity(box(2, 2, 2, cell_type="hex8"), E, NU, alpha=ALPHA)
    model.fix(lambda x: np.all(x == 0, axis=1))
    model.fix(lambda x: (x[:, 0] == 1) & (x[:, 1] == 0) & (x[:, 2] == 0), components=["y", "z"])
    model.fix(lambda x: (x[:, 0] == 0) & (x[:, 1] == 1) & (x[:, 2] == 0), components="z")
    solution = model.thermal_strain(DT).solve()
    assert np.allclose(solution.strain(), ALPHA * DT * np.eye(3), rtol=1e-10)
    assert np.abs(solution.nodal_stress()).max() < 1e-10 * E * ALPHA * DT


@pytest.mark.parametrize("plane, expected", [
    ("stress", -E * ALPHA * DT / (1 - NU)),
    ("strain", -E * ALPHA * DT / (1 - 2 * NU)),
    (None, -E * ALPHA * DT / (1 - 2 * NU)),
])
def test_clamped_body_heated_uniformly(plane, expected):
    mesh = box(2, 2, 2) if plane is None else rectangle(4, 3, cell_type="tri3")
    model = Elasticity(mesh, E, NU, plane=plane, alpha=ALPHA)
    model.fix(lambda x: np.ones(len(x), dtype=bool)).thermal_strain(DT)
    solution = model.solve()
    dim = mesh.dim
    assert np.allclose(solution.stress(), expected * np.eye(dim), rtol=1e-12)
    assert np.allclose(solution.nodal_stress()[:, :dim, :dim], expected * np.eye(dim),
                       rtol=1e-10)
    if plane == "strain":
        assert np.allclose(solution.out_of_plane_stress(), expected, rtol=1e-12)


def test_temperature_from_a_heat_solve_and_from_a_function_agree():
    mesh = rectangle(8, 4, 2.0, 1.0)
    heat = HeatConduction(mesh).fix("left", value=10.0).fix("right", value=30.0)
    from_solve = Elasticity(mesh, E, NU, plane="stress", alpha=ALPHA).fix("left")
    from_solve.thermal_strain(heat.solve(), reference=10.0)
    from_function = Elasticity(mesh, E, NU, plane="stress", alpha=ALPHA).fix("left")
    from_function.thermal_strain(lambda x: 10.0 + 10.0 * x[:, 0], reference=10.0)
    u1, u2 = from_solve.solve().displacement, from_function.solve().displacement
    assert np.abs(u1).max() > 0
    assert np.allclose(u1, u2, rtol=1e-10, atol=1e-14)


def loaded_plate():
    mesh = rectangle(6, 4, 2.0, 1.0, cell_type="tri3")
    model = Elasticity(mesh, 100.0, 0.3, plane="strain", alpha=1e-2).fix("left")
    model.thermal_strain(10 + 5 * mesh.points[:, 0] * mesh.points[:, 1], reference=2.0)
    model.traction("right", (0.0, -0.1))
    return model


def objective(solution):
    u = solution.displacement
    return np.sum(u * u) + 1e-3 * np.sum(solution.von_mises_squared())


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("name", ["alpha", "temperature", "E", "nu", "points"])
def test_taylor_thermal_parameters(name):
    model = loaded_plate()
    at = {"alpha": RNG.uniform(0.5e-2, 2e-2, model.mesh.n_cells),
          "temperature": model.temperature + RNG.normal(size=model.mesh.n_points),
          "E": 100.0, "nu": 0.25, "points": model.mesh.points.copy()}[name]
    result = taylor_test(lambda v: objective(model.solve(**{name: v})), at,
                         step=1e-3 if name == "points" else None, verbose=False)
    assert abs(result.rate - 2) < 0.1


@pytest.mark.parametrize("alpha, error, words", [
    (-1e-5, ValueError, "thermal expansion coefficient alpha must be >= 0; got -1e-05"),
    (float("nan"), NonFiniteError, "parameter 'alpha' contains NaN"),
])
def test_bad_expansion_coefficient(alpha, error, words):
    mesh = rectangle(2, 2)
    with pytest.raises(error, match=words):
        Elasticity(mesh, plane="stress", alpha=alpha)
    model = Elasticity(mesh, plane="stress").fix("left")
    with pytest.raises(error, match=words):
        model.thermal_strain(1.0, alpha=alpha)
    model.thermal_strain(1.0, alpha=1e-5)
    with pytest.raises(error, match=words):
        model.solve(alpha=alpha)


def test_bad_temperature_field():
    model = Elasticity(rectangle(2, 2), plane="stress", alpha=1e-5).fix("left")
    with pytest.raises(ValueError, match="one value per node \\(9,\\), got shape \\(4,\\)"):
        model.thermal_strain(np.ones(4))
    with pytest.raises(NonFiniteError, match="NaN or infinite at node 3"):
        model.thermal_strain(np.where(np.arange(9) == 3, np.nan, 1.0))
    model.thermal_strain(np.ones(9))
    with pytest.raises(ValueError, match="one value per node"):
        model.solve(temperature=np.ones(3))


def test_bar_between_walls_reactions_and_uniaxial_stress():
    """A plane-stress bar held in x at both ends, free in y: σ_xx = −E α ΔT, σ_yy = 0, and
    each wall pushes back with E α ΔT h t (reactions K u − f: the thermal load is in f)."""
    height, thickness = 0.5, 2.0
    mesh = rectangle(8, 2, 3.0, height, cell_type="quad8")
    model = Elasticity(mesh, E, NU, plane="stress", thickness=thickness, alpha=ALPHA)
    model.fix("left", "x").fix("right", "x").fix(lambda x: np.all(x == 0, axis=1), "y")
    solution = model.thermal_strain(DT).solve()
    stress = solution.stress_at_quadrature()
    assert np.allclose(stress[..., 0, 0], -E * ALPHA * DT, rtol=1e-10)
    assert np.allclose(stress[..., 1, 1], 0.0, atol=1e-10)
    wall = E * ALPHA * DT * height * thickness
    assert solution.reaction_force("right")[0] == pytest.approx(-wall, rel=1e-10)
    assert solution.reaction_force("left")[0] == pytest.approx(wall, rel=1e-10)


def test_thermal_load_is_in_every_load_case():
    model = loaded_plate()
    both = model.solve(load_cases=[{"surface0": 1.0}, {"surface0": 0.0}]).u
    assert np.allclose(both[:, 0], model.solve().u)
    assert np.allclose(both[:, 1], model.solve(loads={"surface0": 0.0}).u)
    assert np.abs(both[:, 1]).max() > 0  # the thermal strain alone

"""Patch tests: every element type reproduces a constant-strain (linear) field to round-off.

Displacement patch test: a linear field imposed on the boundary of a distorted patch must be
reproduced at every interior node, with the exact constant stress in every cell.
Traction patch test: a uniaxial traction on a block supported against rigid motion only
produces the uniform stress ``σ_xx = t`` everywhere.
"""

import numpy as np
import pytest
from fem_helpers import ALL_CELL_TYPES, distorted, unit_mesh

from fesens.physics import Elasticity, HeatConduction
from fesens.physics.elasticity import lame_parameters

E, NU = 200.0, 0.25


def linear_field(points):
    dim = points.shape[1]
    grad = np.array([[1e-3, 2e-3, -1e-3], [0.5e-3, -2e-3, 1.5e-3], [1e-3, 0.3e-3, 2e-3]])
    return 1e-3 + points @ grad[:dim, :dim].T, grad[:dim, :dim]


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_displacement_patch_test(cell_type):
    mesh = distorted(unit_mesh(cell_type), amount=0.2)
    plane = "strain" if mesh.dim == 2 else None
    model = Elasticity(mesh, E=E, nu=NU, plane=plane)
    boundary = np.unique(mesh.boundary_facets().facets)
    on_boundary = np.zeros(mesh.n_points, dtype=bool)
    on_boundary[boundary] = True
    model.fix(lambda p: on_boundary, value=lambda p: linear_field(p)[0])
    sol = model.solve()
    exact, grad = linear_field(mesh.points)
    assert np.abs(sol.displacement - exact).max() < 1e-12
    strain = 0.5 * (grad + grad.T)
    lam, mu = lame_parameters(E, NU, plane)
    stress = lam * np.trace(strain) * np.eye(mesh.dim) + 2 * mu * strain
    assert np.abs(sol.stress() - stress).max() < 1e-9 * np.abs(stress).max()
    assert np.abs(sol.strain() - strain).max() < 1e-12


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_traction_patch_test(cell_type):
    mesh = distorted(unit_mesh(cell_type), amount=0.2)
    model = Elasticity(mesh, E=E, nu=NU, plane="stress" if mesh.dim == 2 else None)
    model.fix("left", components=0)
    origin = mesh.nearest_node(np.zeros(mesh.dim))
    model.fix(lambda p: np.arange(len(p)) == origin)
    if mesh.dim == 3:  # stop the rotation about x
        corner = mesh.nearest_node((0.0, 1.0, 0.0))
        model.fix(lambda p: np.arange(len(p)) == corner, components=2)
    t = 3.0
    model.traction("right", np.eye(mesh.dim)[0] * t)
    sol = model.solve()
    expected = np.zeros((mesh.dim, mesh.dim))
    expected[0, 0] = t
    assert np.abs(sol.stress() - expected).max() < 1e-9
    # Reactions balance the applied load.
    assert sol.reaction_force("left")[0] == pytest.approx(-t * 1.0, rel=1e-10)


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_linear_temperature_in_slab(cell_type):
    mesh = distorted(unit_mesh(cell_type))
    model = HeatConduction(mesh, conductivity=4.0)
    model.fix("left", value=10.0).fix("right", value=30.0)
    sol = model.solve()
    assert np.abs(sol.temperature - (10.0 + 20.0 * mesh.points[:, 0])).max() < 1e-11
    flux = sol.heat_flux()
    expected = np.zeros(mesh.dim)
    expected[0] = -4.0 * 20.0
    assert np.abs(flux - expected).max() < 1e-9
    # Heat flowing in on the left equals heat flowing out on the right (area 1).
    assert sol.reaction_force("right")[0] == pytest.approx(80.0, rel=1e-9)


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_flux_boundary_condition_gives_linear_profile(cell_type):
    mesh = unit_mesh(cell_type)
    model = HeatConduction(mesh, conductivity=2.0)
    model.fix("left", value=0.0)
    model.flux("right", 6.0)
    sol = model.solve()
    assert np.abs(sol.temperature - 3.0 * mesh.points[:, 0]).max() < 1e-11

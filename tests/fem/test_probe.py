"""Probes: fields at arbitrary points (:mod:`fesens.fem.post.probe`, ``Solution.probe``)."""

import numpy as np
import pytest
from fem_helpers import ALL_CELL_TYPES, distorted, unit_mesh
from test_recovery import linear_displacement_solution

from fesens.errors import MeshError, PointOutsideMeshError
from fesens.fem.post.probe import locate
from fesens.mesh import plate_with_hole
from fesens.physics import HeatConduction

GRAD = np.array([[1e-3, 2e-3, -1e-3], [0.5e-3, -2e-3, 1e-3], [1e-3, 0.3e-3, 2e-3]])


def random_points_inside(dim: int, n: int = 40, seed: int = 3) -> np.ndarray:
    """Points of the unit square/cube, away from its boundary (the distorted mesh keeps
    its outline)."""
    return np.random.default_rng(seed).uniform(0.02, 0.98, size=(n, dim))


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_probe_interpolates_a_linear_field_exactly_at_arbitrary_points(cell_type):
    sol, _ = linear_displacement_solution(cell_type)
    dim = sol.model.mesh.dim
    points = random_points_inside(dim)
    np.testing.assert_allclose(sol.probe(points), points @ GRAD[:dim, :dim].T, atol=1e-14)
    stress = sol.probe(points, "stress")
    assert stress.shape == (len(points), dim, dim)
    np.testing.assert_allclose(stress, np.broadcast_to(sol.stress()[0], stress.shape),
                               rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(sol.probe(points, "von_mises"), sol.von_mises()[0], rtol=1e-8)


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_located_reference_coordinates_map_back_to_the_points(cell_type):
    from fesens.fem.elements import reference_element

    mesh = distorted(unit_mesh(cell_type, n=3), amount=0.15)
    points = np.vstack([random_points_inside(mesh.dim), mesh.points[::5]])
    cells, xi = locate(mesh, points)
    N = reference_element(mesh.cell_type).shape(xi)
    mapped = np.einsum("pa,pai->pi", N, mesh.points[mesh.cells[cells]])
    np.testing.assert_allclose(mapped, points, atol=1e-12)


def test_probe_at_nodes_gives_the_nodal_values_on_curved_quadratic_cells():
    mesh = plate_with_hole(4, 8, 1.0, 3.0, cell_type="tri6")
    model = HeatConduction(mesh, conductivity=2.0)
    model.fix("hole", value=1.0).fix("right", value=0.0)
    sol = model.solve()
    np.testing.assert_allclose(sol.probe(mesh.points), sol.temperature, atol=1e-12)
    on_arc = np.array([[np.cos(t), np.sin(t)] for t in np.linspace(0.05, 1.5, 7)])
    np.testing.assert_allclose(sol.probe(on_arc), 1.0, atol=1e-3)  # T = 1 on the hole
    assert sol.probe(on_arc * 1.5, "heat_flux").shape == (7, 2)


def test_heat_probe_of_a_linear_temperature_and_its_flux():
    mesh = distorted(unit_mesh("quad4", n=4), amount=0.15)
    model = HeatConduction(mesh, conductivity=3.0)
    boundary = np.zeros(mesh.n_points, dtype=bool)
    boundary[mesh.boundary_facets().nodes] = True
    model.fix(lambda p: boundary, value=lambda p: 2 * p[:, 0] - p[:, 1])
    sol = model.solve()
    points = random_points_inside(2)
    np.testing.assert_allclose(sol.probe(points), 2 * points[:, 0] - points[:, 1], atol=1e-12)
    np.testing.assert_allclose(sol.probe(points, "heat_flux"),
                               np.broadcast_to([-6.0, 3.0], (len(points), 2)), atol=1e-10)


def test_points_outside_the_mesh_are_named():
    sol, _ = linear_displacement_solution("tri3")
    points = np.array([[0.5, 0.5], [1.5, 0.2], [0.3, 0.3], [-0.1, 2.0]])
    with pytest.raises(PointOutsideMeshError,
                       match=r"2 of 4 probe points lie outside the mesh .*#1 \[1.5, 0.2\]; "
                             r"#3 \[-0.1, 2.0\]"):
        sol.probe(points)


def test_a_hole_is_outside():
    mesh = plate_with_hole(4, 8, 1.0, 3.0, cell_type="quad4")
    with pytest.raises(PointOutsideMeshError, match=r"#0 \[0.5, 0.5\]"):
        locate(mesh, [[0.5, 0.5]])


def test_bad_probe_input_is_refused():
    sol, _ = linear_displacement_solution("quad4")
    with pytest.raises(MeshError, match=r"shape \(n, 2\).*got shape \(2, 3\)"):
        sol.probe(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="unknown field 'pressure'.*displacement, stress"):
        sol.probe([0.5, 0.5], "pressure")
    with pytest.raises(ValueError, match=r"shape \(n_points = \d+, \.\.\.\)"):
        sol.probe([0.5, 0.5], np.zeros(3))

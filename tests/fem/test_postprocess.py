"""Post-processing against closed forms: von Mises, out-of-plane stress, nodal averages,
reactions (global equilibrium), compliance, heat flux and VTU output.
"""

import meshio
import numpy as np
import pytest
from fem_helpers import CELL_TYPES_2D, distorted, unit_mesh

from fesens.fem.post.fields import nodal_average
from fesens.mesh import box, rectangle
from fesens.physics import Elasticity, HeatConduction
from fesens.physics.elasticity import von_mises

E, NU = 200.0, 0.3


def von_mises_by_components(s: np.ndarray) -> np.ndarray:
    """The textbook component form, ``(..., 3, 3) -> (...)``."""
    normal = ((s[..., 0, 0] - s[..., 1, 1]) ** 2 + (s[..., 1, 1] - s[..., 2, 2]) ** 2
              + (s[..., 2, 2] - s[..., 0, 0]) ** 2)
    shear = s[..., 0, 1] ** 2 + s[..., 1, 2] ** 2 + s[..., 2, 0] ** 2
    return np.sqrt(normal / 2 + 3 * shear)


def rotation(angle: float) -> np.ndarray:
    """Rotation by ``angle`` about the z axis, ``(3, 3)``."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


# ------------------------------------------------------------------ von Mises
def test_von_mises_of_known_stress_states():
    sigma, tau, p = 7.0, 3.0, 5.0
    uniaxial = np.diag([sigma, 0.0, 0.0])
    shear = np.array([[0.0, tau, 0.0], [tau, 0.0, 0.0], [0.0, 0.0, 0.0]])
    hydrostatic = -p * np.eye(3)
    states = np.stack([uniaxial, -uniaxial, np.roll(uniaxial, (2, 2), axis=(0, 1)),
                       shear, np.diag([tau, -tau, 0.0]), hydrostatic, uniaxial + hydrostatic])
    expected = [sigma, sigma, sigma, np.sqrt(3) * tau, np.sqrt(3) * tau, 0.0, sigma]
    np.testing.assert_allclose(von_mises(states), expected, rtol=1e-14, atol=1e-14)


def test_von_mises_is_invariant_under_rotation_and_matches_the_component_form():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(4, 5, 3, 3))
    stress = a + np.swapaxes(a, -1, -2)
    vm = von_mises(stress)
    assert vm.shape == (4, 5)
    np.testing.assert_allclose(vm, von_mises_by_components(stress), rtol=1e-13)
    R = rotation(0.7)
    np.testing.assert_allclose(von_mises(R @ stress @ R.T), vm, rtol=1e-13)


# ------------------------------------------------------------------ uniform strain solves
def uniform_strain_solution(cell_type: str, plane: str):
    """Linear displacement imposed on the boundary of a distorted patch: uniform strain."""
    mesh = distorted(unit_mesh(cell_type), amount=0.2)
    grad = np.array([[1e-3, 2e-3], [0.5e-3, -2e-3]])
    model = Elasticity(mesh, E=E, nu=NU, plane=plane, thickness=0.4)
    boundary = np.zeros(mesh.n_points, dtype=bool)
    boundary[mesh.boundary_facets().nodes] = True
    model.fix(lambda p: boundary, value=lambda p: p @ grad.T)
    return model.solve(), 0.5 * (grad + grad.T)


@pytest.mark.parametrize("cell_type", CELL_TYPES_2D)
def test_plane_strain_out_of_plane_stress_is_nu_times_in_plane_sum(cell_type):
    sol, eps = uniform_strain_solution(cell_type, "strain")
    # Hooke's law in 3D with ε_zz = 0: σ = E/(1+ν) (ε + ν/(1−2ν) tr(ε) I).
    eps3 = np.zeros((3, 3))
    eps3[:2, :2] = eps
    expected = E / (1 + NU) * (eps3 + NU / (1 - 2 * NU) * np.trace(eps3) * np.eye(3))
    assert expected[2, 2] == pytest.approx(NU * (expected[0, 0] + expected[1, 1]))
    stress = sol.stress_3d()
    assert stress.shape == (sol.model.mesh.n_cells, 3, 3)
    np.testing.assert_allclose(stress, np.broadcast_to(expected, stress.shape),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sol.von_mises(), von_mises_by_components(expected), rtol=1e-9)


@pytest.mark.parametrize("cell_type", CELL_TYPES_2D)
def test_plane_stress_has_no_out_of_plane_stress(cell_type):
    sol, eps = uniform_strain_solution(cell_type, "stress")
    # Plane stress: σ = E/(1−ν²) ((1−ν) ε + ν tr(ε) I) in the plane, σ_zz = 0.
    expected = np.zeros((3, 3))
    expected[:2, :2] = E / (1 - NU**2) * ((1 - NU) * eps + NU * np.trace(eps) * np.eye(2))
    stress = sol.stress_3d()
    np.testing.assert_allclose(stress, np.broadcast_to(expected, stress.shape),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sol.von_mises(), von_mises_by_components(expected), rtol=1e-9)


def test_nodal_average_of_a_constant_field_is_that_constant():
    rng = np.random.default_rng(2)
    mesh = distorted(unit_mesh("tri6"))
    constant = np.array([[1.5, -2.0], [-2.0, 0.25]])
    values = np.broadcast_to(constant, (mesh.n_cells, 2, 2))
    weights = rng.uniform(0.1, 2.0, mesh.n_cells)
    averaged = nodal_average(mesh.cells, values, weights, mesh.n_points)
    assert averaged.shape == (mesh.n_points, 2, 2)
    np.testing.assert_allclose(averaged, np.broadcast_to(constant, averaged.shape), rtol=1e-14)


@pytest.mark.parametrize("cell_type", CELL_TYPES_2D)
def test_nodal_stress_of_a_uniform_stress_field_is_uniform(cell_type):
    sol, _ = uniform_strain_solution(cell_type, "stress")
    cell_stress = sol.stress()
    nodal = sol.nodal_stress()
    assert nodal.shape == (sol.model.mesh.n_points, 2, 2)
    np.testing.assert_allclose(nodal, np.broadcast_to(cell_stress[0], nodal.shape),
                               rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ reactions
def moments_2d(points: np.ndarray, forces: np.ndarray) -> float:
    """``Σ_a (x_a f_ay − y_a f_ax)`` about the origin."""
    return float(np.sum(points[:, 0] * forces[:, 1] - points[:, 1] * forces[:, 0]))


@pytest.mark.parametrize("cell_type", CELL_TYPES_2D)
def test_cantilever_reactions_balance_load_and_moment_2d(cell_type):
    length, depth, thickness, q, s = 3.0, 1.0, 0.4, 2.0, 1.5
    mesh = rectangle(12, 4, length, depth, cell_type=cell_type)
    model = Elasticity(mesh, E=E, nu=NU, plane="stress", thickness=thickness).fix("left")
    # t = (s (y − D/2), −q) on x = L: a bending couple plus a shear force.
    model.traction("right", lambda p: np.column_stack([s * (p[:, 1] - depth / 2),
                                                      np.full(len(p), -q)]))
    sol = model.solve()
    load = np.array([0.0, -q * depth * thickness])
    # ∫ (x t_y − y t_x) dy = −q D L − s ∫ y (y − D/2) dy = −q D L − s D³/12
    load_moment = thickness * (-q * depth * length - s * depth**3 / 12)
    reactions = sol.reactions()
    np.testing.assert_allclose(reactions.sum(axis=0), -load, atol=1e-10)
    np.testing.assert_allclose(sol.reaction_force("left"), -load, atol=1e-10)
    assert moments_2d(mesh.points, reactions) == pytest.approx(-load_moment, rel=1e-10)
    assert not reactions[mesh.points[:, 0] > 0].any()


@pytest.mark.parametrize("cell_type", ["tet4", "tet10", "hex8"])
def test_cantilever_reactions_balance_load_and_moment_3d(cell_type):
    lx, ly, lz, q, tau = 3.0, 1.0, 0.5, 2.0, 4.0
    mesh = box(6, 2, 2, lx, ly, lz, cell_type=cell_type)
    model = Elasticity(mesh, E=E, nu=NU).fix("left")
    # t = (0, τ (z − lz/2), −q) on x = lx: twist plus a vertical shear.
    model.traction("right", lambda p: np.column_stack(
        [np.zeros(len(p)), tau * (p[:, 2] - lz / 2), np.full(len(p), -q)]))
    sol = model.solve()
    area = ly * lz
    load = np.array([0.0, 0.0, -q * area])
    # ∫ x × t dS with x = (lx, y, z): (y t_z − z t_y, z t_x − x t_z, x t_y − y t_x)
    load_moment = np.array([-q * area * ly / 2 - tau * area * lz**2 / 12, q * lx * area, 0.0])
    reactions = sol.reactions()
    np.testing.assert_allclose(reactions.sum(axis=0), -load, atol=1e-10)
    np.testing.assert_allclose(sol.reaction_force("left"), -load, atol=1e-10)
    moment = np.cross(mesh.points, reactions).sum(axis=0)
    np.testing.assert_allclose(moment, -load_moment, rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------------ compliance
def simplex_energy(points, cells, u, lam, mu, thickness=1.0) -> float:
    """``∫ σ : ε dΩ`` (= uᵀ K u) for linear simplices, from each cell's affine interpolant.

    The gradient solves ``(x_k − x_0) · ∇u_i = u_i(x_k) − u_i(x_0)`` for the edges from
    vertex 0; the volume is ``|det| / dim!``.
    """
    edges = points[cells[:, 1:]] - points[cells[:, :1]]  # (n, dim, dim), rows = edges
    jumps = u[cells[:, 1:]] - u[cells[:, :1]]  # (n, dim, dim), rows = jumps of u
    grad = np.swapaxes(np.linalg.solve(edges, jumps), 1, 2)  # grad[e, i, j] = ∂u_i/∂x_j
    eps = 0.5 * (grad + np.swapaxes(grad, 1, 2))
    dim = points.shape[1]
    volume = np.abs(np.linalg.det(edges)) / (2 if dim == 2 else 6)
    density = lam * np.trace(eps, axis1=1, axis2=2) ** 2 + 2 * mu * np.sum(eps**2, axis=(1, 2))
    return float(thickness * np.sum(volume * density))


@pytest.mark.parametrize("cell_type", ["tri3", "tet4"])
def test_compliance_is_twice_the_strain_energy(cell_type):
    mesh = distorted(unit_mesh(cell_type, 4))
    dim = mesh.dim
    thickness = 0.3 if dim == 2 else 1.0
    if dim == 2:
        model = Elasticity(mesh, E=E, nu=NU, plane="stress", thickness=thickness)
        lam = E * NU / (1 - NU**2)
    else:
        model = Elasticity(mesh, E=E, nu=NU)
        lam = E * NU / ((1 + NU) * (1 - 2 * NU))
    mu = E / (2 * (1 + NU))
    model.fix("left")
    model.traction("right", np.full(dim, 0.5))
    model.body_force(-np.eye(dim)[1])
    sol = model.solve()
    energy = simplex_energy(mesh.points, mesh.cells, sol.displacement, lam, mu, thickness)
    assert sol.compliance() == pytest.approx(energy, rel=1e-10)
    assert sol.compliance() > 0


# ------------------------------------------------------------------ heat flux
@pytest.mark.parametrize("cell_type", ["tri3", "quad4", "tri6", "tet4", "hex8", "tet10"])
def test_heat_flux_of_a_linear_temperature_points_down_the_gradient(cell_type):
    mesh = distorted(unit_mesh(cell_type))
    dim = mesh.dim
    gradient = np.array([3.0, -2.0, 1.0])[:dim]
    kappa = 1.5
    model = HeatConduction(mesh, conductivity=kappa, thickness=0.25 if dim == 2 else 1.0)
    boundary = np.zeros(mesh.n_points, dtype=bool)
    boundary[mesh.boundary_facets().nodes] = True
    model.fix(lambda p: boundary, value=lambda p: 7.0 + p @ gradient)
    flux = model.solve().heat_flux()
    assert flux.shape == (mesh.n_cells, dim)
    np.testing.assert_allclose(flux, np.broadcast_to(-kappa * gradient, flux.shape), rtol=1e-9)
    # A uniform density scale multiplies the conductivity, not the temperature.
    scaled = model.solve(scale=2.0).heat_flux()
    np.testing.assert_allclose(scaled, np.broadcast_to(-2 * kappa * gradient, flux.shape),
                               rtol=1e-9)


# ------------------------------------------------------------------ output
def test_write_vtu_elasticity_fields_read_back_by_meshio(tmp_path):
    mesh = rectangle(4, 2, 2.0, 1.0, cell_type="tri6")
    model = Elasticity(mesh, E=E, nu=NU, plane="strain").fix("left")
    model.traction("right", (0.0, -1.0))
    sol = model.solve()
    path = tmp_path / "cantilever.vtu"
    sol.write(path)
    raw = meshio.read(path)
    np.testing.assert_array_equal(raw.points[:, :2], mesh.points)
    displacement = raw.point_data["displacement"]
    np.testing.assert_allclose(displacement[:, :2], sol.displacement, rtol=1e-15)
    assert not displacement[:, 2:].any()
    np.testing.assert_allclose(raw.cell_data["von_mises"][0], sol.von_mises(), rtol=1e-15)
    stress = raw.cell_data["stress"][0]  # XX, YY, ZZ, XY, YZ, XZ: ParaView's symmetric tensor
    full = sol.stress_3d()
    np.testing.assert_allclose(stress, full[:, [0, 1, 2, 0, 1, 0], [0, 1, 2, 1, 2, 2]],
                               rtol=1e-15)
    assert np.abs(stress[:, 2]).max() > 0  # plane strain: σ_zz
    nodal = raw.point_data["nodal_stress"]
    np.testing.assert_allclose(nodal[:, [0, 1, 3]],
                               sol.nodal_stress()[:, [0, 1, 0], [0, 1, 1]], rtol=1e-14)
    np.testing.assert_allclose(raw.point_data["nodal_von_mises"], sol.nodal_von_mises(),
                               rtol=1e-14)
    assert raw.point_data["nodal_strain"].shape == (mesh.n_points, 6)


def test_write_vtu_heat_fields_read_back_by_meshio(tmp_path):
    mesh = box(2, 2, 2, cell_type="tet10")
    model = HeatConduction(mesh, conductivity=2.0).fix("left").fix("right", value=1.0)
    sol = model.solve()
    path = tmp_path / "slab.vtu"
    sol.write(path)
    raw = meshio.read(path)
    np.testing.assert_allclose(raw.point_data["temperature"], mesh.points[:, 0], atol=1e-12)
    flux = np.zeros((mesh.n_cells, 3))
    flux[:, 0] = -2.0
    np.testing.assert_allclose(raw.cell_data["heat_flux"][0], flux, atol=1e-10)

"""Nodal stress recovery (:mod:`fesens.fem.post.recovery`): patch tests for every element type,
exactness of SPR for polynomials of the element's degree, von Mises and principal stresses
of the recovered tensor, and the choice of method.

Superconvergent patch recovery: Zienkiewicz & Zhu, "The superconvergent patch recovery and
a posteriori error estimates. Part 1: the recovery technique", IJNME 33 (1992) 1331–1364.
"""

import numpy as np
import pytest
from fem_helpers import ALL_CELL_TYPES, distorted, unit_mesh

from fesens.fem.elements import ELEMENTS
from fesens.fem.integrals.geometry import cell_geometry
from fesens.fem.post import recovery
from fesens.mesh.cell_types import VOLUME_CELL_TYPES
from fesens.physics import Elasticity

E, NU = 200.0, 0.3
METHODS = ("spr", "extrapolation", "average")
# every volume element fesens has (the quadratic quads/hexes included once they exist)
VOLUME_ELEMENTS = [name for name in ELEMENTS if name in VOLUME_CELL_TYPES]


def linear_displacement_solution(cell_type: str, plane: str | None = "stress"):
    """A linear displacement on the boundary of a distorted patch: a uniform stress."""
    mesh = distorted(unit_mesh(cell_type, n=4), amount=0.15)
    dim = mesh.dim
    grad = np.array([[1e-3, 2e-3, -1e-3], [0.5e-3, -2e-3, 1e-3], [1e-3, 0.3e-3, 2e-3]])
    grad = grad[:dim, :dim]
    model = Elasticity(mesh, E=E, nu=NU, plane=plane if dim == 2 else None)
    boundary = np.zeros(mesh.n_points, dtype=bool)
    boundary[mesh.boundary_facets().nodes] = True
    model.fix(lambda p: boundary, value=lambda p: p @ grad.T)
    eps = 0.5 * (grad + grad.T)
    return model.solve(), E / (1 + NU) * (eps + NU / (1 - 2 * NU) * np.trace(eps)
                                          * np.eye(dim)) if dim == 3 else None


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_recovered_stress_of_a_linear_displacement_is_exact(cell_type, method):
    """Patch test: a linear displacement field gives the exact (uniform) nodal stress."""
    sol, expected = linear_displacement_solution(cell_type, "strain")
    cell_stress = sol.stress_3d()[0]
    if expected is not None:
        np.testing.assert_allclose(cell_stress, expected, rtol=1e-9, atol=1e-12)
    nodal = sol.nodal_stress(method, full=True)
    n_points = sol.model.mesh.n_points
    assert nodal.shape == (n_points, 3, 3)
    np.testing.assert_allclose(nodal, np.broadcast_to(cell_stress, nodal.shape),
                               rtol=1e-8, atol=1e-10 * np.abs(cell_stress).max())
    vm = sol.nodal_von_mises(method)
    np.testing.assert_allclose(vm, sol.von_mises()[0], rtol=1e-8)
    principal = sol.principal_stresses(method)
    np.testing.assert_allclose(principal, np.broadcast_to(
        np.linalg.eigvalsh(cell_stress)[::-1], (n_points, 3)), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_spr_reproduces_a_polynomial_of_the_element_degree(cell_type):
    """Sampling values of a polynomial of degree p (1 or 2) are recovered exactly at every
    node, corners of the domain included."""
    mesh = distorted(unit_mesh(cell_type, n=4), amount=0.15)
    degree = recovery.element_degree(mesh)
    x = cell_geometry(mesh).x

    def field(p):
        linear = 1.0 + 2.0 * p[..., 0] - 3.0 * p[..., 1]
        return linear + (p[..., 0] * p[..., 1] - 0.5 * p[..., -1] ** 2 if degree == 2 else 0)

    values = np.stack([field(x), -2 * field(x)], axis=-1)
    out = recovery.patch_recovery(mesh, x, values, np.full((mesh.n_points, 2), np.nan))
    expected = np.stack([field(mesh.points), -2 * field(mesh.points)], axis=-1)
    np.testing.assert_allclose(out, expected, atol=1e-10)


@pytest.mark.parametrize("cell_type", ["quad4", "hex8", "tet10"])
def test_spr_in_small_batches_equals_one_batch(cell_type, monkeypatch):
    """Patches are fitted in batches (a million-cell mesh at once needed ~20 GB): batches of
    7 patches give the values of one batch, for arbitrary (non-polynomial) sampled values."""
    mesh = distorted(unit_mesh(cell_type, n=4), amount=0.15)
    x = cell_geometry(mesh).x
    values = np.random.default_rng(2).standard_normal((*x.shape[:2], 3))
    fallback = np.zeros((mesh.n_points, 3))
    whole = recovery.patch_recovery(mesh, x, values, fallback)
    monkeypatch.setattr(recovery, "_PATCHES_PER_FIT", 7)
    np.testing.assert_allclose(recovery.patch_recovery(mesh, x, values, fallback), whole,
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", VOLUME_ELEMENTS)
def test_extrapolation_reproduces_the_polynomials_its_points_determine(name):
    element = ELEMENTS[name]
    xi, _ = element.quadrature()
    matrix = recovery.extrapolation_matrix(element, xi)
    assert matrix.shape == (element.n_nodes, len(xi))
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0, atol=1e-12)  # constants
    if len(xi) > element.dim:  # linear fields too
        np.testing.assert_allclose(matrix @ xi, element.nodes, atol=1e-12)


def test_principal_stresses_are_sorted_and_von_mises_uses_the_full_tensor():
    sol, _ = linear_displacement_solution("tri6", "stress")
    principal = sol.principal_stresses()
    assert np.all(np.diff(principal, axis=1) <= 1e-12)
    full = sol.nodal_stress(full=True)
    assert np.allclose(full[:, 2, 2], 0.0)  # plane stress
    sxx, syy, sxy = full[:, 0, 0], full[:, 1, 1], full[:, 0, 1]
    np.testing.assert_allclose(sol.nodal_von_mises(),
                               np.sqrt(sxx**2 - sxx * syy + syy**2 + 3 * sxy**2), rtol=1e-12)


def test_unknown_recovery_method_is_refused():
    sol, _ = linear_displacement_solution("quad4")
    with pytest.raises(ValueError, match="unknown recovery method 'nearest'.*spr"):
        sol.nodal_stress("nearest")


@pytest.mark.parametrize(("cell_type", "plane"), [("quad4", "stress"), ("tri6", "strain"),
                                                  ("tet4", None)])
def test_output_tensors_are_paraview_symmetric_tensors(tmp_path, cell_type, plane):
    """Stress and strain are written as 6 components XX, YY, ZZ, XY, YZ, XZ (what ParaView
    reads as a symmetric tensor), the full 3D tensors: the out-of-plane strain of plane
    stress makes σ_zz = 0 by Hooke's law."""
    import meshio

    sol, _ = linear_displacement_solution(cell_type, plane)
    cells, points = sol.cell_data(), sol.point_data()
    for name in ("stress", "strain"):
        assert cells[name].shape == (sol.model.mesh.n_cells, 6)
        assert points[f"nodal_{name}"].shape == (sol.model.mesh.n_points, 6)
    eps, sigma = cells["strain"][0], cells["stress"][0]
    tensor = np.array([[eps[0], eps[3], eps[5]], [eps[3], eps[1], eps[4]],
                       [eps[5], eps[4], eps[2]]])
    hooke = E / (1 + NU) * (tensor + NU / (1 - 2 * NU) * np.trace(tensor) * np.eye(3))
    np.testing.assert_allclose(hooke[[0, 1, 2, 0, 1, 0], [0, 1, 2, 1, 2, 2]], sigma,
                               atol=1e-12 * np.abs(sigma).max())
    np.testing.assert_allclose(points["nodal_stress"], np.broadcast_to(sigma, (len(
        points["nodal_stress"]), 6)), atol=1e-9 * np.abs(sigma).max())
    sol.write(tmp_path / "out.vtu")
    text = (tmp_path / "out.vtu").read_text()
    assert 'Name="nodal_stress" NumberOfComponents="6"' in text.replace("\n", " ")
    assert meshio.read(tmp_path / "out.vtu").cell_data["strain"][0].shape[1] == 6


def test_spr_of_a_solve_at_moved_nodes_uses_the_moved_coordinates():
    """A quadratic displacement on moved nodes: SPR (tri6, p = 2) recovers the linear
    stress exactly, which needs the moved node coordinates in the patch fits."""
    mesh = distorted(unit_mesh("tri6", n=4), amount=0.1)
    moved = mesh.points * [2.0, 1.0] + [0.0, 0.3]
    model = Elasticity(mesh, E=E, nu=NU, plane="strain")
    model.fix(lambda p: np.ones(len(p), dtype=bool),
              value=lambda p: 1e-3 * np.column_stack([(p[:, 0] * 2) ** 2, p[:, 1] + 0.3]))
    sol = model.solve(points=moved)
    assert sol.points is not None
    sxx = sol.nodal_stress()[:, 0, 0]
    # u_x = 1e-3 x'^2 in moved coordinates x' = 2x: ε_xx = 2e-3 x', ε_yy = 1e-3
    lam, mu = E * NU / ((1 + NU) * (1 - 2 * NU)), E / (2 * (1 + NU))
    expected = (lam + 2 * mu) * 2e-3 * moved[:, 0] + lam * 1e-3
    np.testing.assert_allclose(sxx, expected, rtol=1e-8)

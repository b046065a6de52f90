"""Mass matrices (fesens/fem/integrals/mass.py): consistent and HRZ-lumped, every element type,
bars,
the scalar (heat capacity) case, traced in the density and the node coordinates."""

import numpy as np
import pytest
from fem_helpers import ALL_CELL_TYPES, distorted, unit_mesh

from fesens.ad import grad, taylor_test
from fesens.fem.integrals.mass import MassForm
from fesens.mesh import Mesh
from fesens.physics import Elasticity, HeatConduction, Truss


def _elasticity(mesh, **kwargs):
    plane = {"plane": "stress"} if mesh.dim == 2 else {}
    return Elasticity(mesh, **plane, **kwargs)


def _full_mass(model, lumped):
    (Me,) = MassForm(model, lumped).cell_matrices()
    Me = np.broadcast_to(Me, (model.mesh.n_cells, *Me.shape[1:]))
    n = model.dofmap.n_dofs
    full = np.zeros((n, n))
    dofs = model.dofmap.cell_dofs
    for e in range(model.mesh.n_cells):
        full[np.ix_(dofs[e], dofs[e])] += Me[e]
    return full


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
@pytest.mark.parametrize("lumped", [False, True])
def test_mass_of_every_element_type(cell_type, lumped):
    """Rigid translations carry the body's mass (ρ V per component, no cross-coupling);
    lumped masses are positive and diagonal; both agree on every translation."""
    mesh = distorted(unit_mesh(cell_type, 2))
    model = _elasticity(mesh)
    M = _full_mass(model, lumped)
    volume = 1.0
    for c in range(mesh.dim):
        for d in range(mesh.dim):
            ec, ed = np.zeros(model.dofmap.n_dofs), np.zeros(model.dofmap.n_dofs)
            ec[c::mesh.dim], ed[d::mesh.dim] = 1.0, 1.0
            assert ec @ M @ ed == pytest.approx(volume if c == d else 0.0, abs=1e-12)
    if lumped:
        assert np.allclose(M, np.diag(np.diag(M)))
        assert np.all(np.diag(M) > 0)
    else:  # symmetric positive definite
        assert np.allclose(M, M.T)
        assert np.linalg.eigvalsh(M).min() > 0


def test_consistent_mass_of_a_linear_bar_segment_is_the_textbook_matrix():
    """tri3: ∫ N_a N_b = A/12 (1 + δ_ab) (Zienkiewicz & Taylor vol. 1); HRZ gives A/3."""
    mesh = Mesh(np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 1.0]]), np.array([[0, 1, 2]]), "tri3")
    model = HeatConduction(mesh)
    (Me,) = MassForm(model).cell_matrices()
    assert np.allclose(Me[0], (np.ones((3, 3)) + np.eye(3)) / 12)
    (Ml,) = MassForm(model, lumped=True).cell_matrices()
    assert np.allclose(Ml[0], np.eye(3) / 3)


def test_thickness_and_density_scale_the_mass():
    mesh = unit_mesh("quad4", 2)
    model = Elasticity(mesh, plane="stress", thickness=0.2)
    M = model.mass(density=3.0)
    assert M.tocsr().sum() == pytest.approx(2 * 3.0 * 0.2)  # 2 components, no supports


def test_truss_bar_mass():
    """ρ A L / 6 [[2, 1], [1, 2]] per component (lumped: ρ A L / 2)."""
    mesh = Mesh(np.array([[0.0, 0.0], [3.0, 4.0]]), np.array([[0, 1]]), "line2")
    model = Truss(mesh, A=0.5)
    M = _full_mass(model, False)
    expected = 0.5 * 5.0 / 6 * np.kron([[2.0, 1.0], [1.0, 2.0]], np.eye(2))
    assert np.allclose(M, expected)
    assert np.allclose(_full_mass(model, True), 0.5 * 5.0 / 2 * np.eye(4))


@pytest.mark.parametrize("lumped", [False, True])
def test_mass_is_differentiable_in_density_and_points(lumped):
    mesh = distorted(unit_mesh("tri6", 2))
    model = HeatConduction(mesh)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(model.free_dofs.size)
    rho = 1 + rng.random(mesh.n_cells)

    def energy(density, points=None):
        M = model.mass(density, lumped=lumped, points=points)
        return a @ (M @ a)

    # linear in the density: the gradient is the exact difference quotient
    step = 0.1 * rng.random(mesh.n_cells)
    assert grad(energy)(rho) @ step == pytest.approx(energy(rho + step) - energy(rho),
                                                      rel=1e-10)
    result = taylor_test(lambda X: energy(rho, X), mesh.points.copy(), step=1e-2)
    assert result.rate == pytest.approx(2, abs=0.1)

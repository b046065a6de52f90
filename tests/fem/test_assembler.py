"""The cached-pattern assembler against a plain COO reference assembly."""

import numpy as np
import pytest
import scipy.sparse as sp
from fem_helpers import ALL_CELL_TYPES, distorted, unit_mesh

from fesens.fem import Assembler
from fesens.fem.integrals.geometry import cell_geometry
from fesens.physics import Elasticity
from fesens.physics.elasticity import elasticity_matrices


def reference_matrix(cell_dofs, n_dofs, cell_matrices):
    """Σ_e P_eᵀ K_e P_e by COO → CSR (the way textbook codes do it)."""
    n_cells, nd = cell_dofs.shape
    Ke = np.broadcast_to(cell_matrices, (n_cells, nd, nd))
    rows = np.repeat(cell_dofs, nd, axis=1).ravel()
    cols = np.tile(cell_dofs, nd).ravel()
    return sp.coo_matrix((Ke.ravel(), (rows, cols)), shape=(n_dofs, n_dofs)).tocsr()


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_blocks_match_reference_assembly(cell_type):
    rng = np.random.default_rng(1)
    mesh = distorted(unit_mesh(cell_type))
    geometry = cell_geometry(mesh)
    components = list(elasticity_matrices(geometry))
    cell_dofs = (mesh.cells[:, :, None] * mesh.dim + np.arange(mesh.dim)).reshape(
        mesh.n_cells, -1)
    n_dofs = mesh.n_points * mesh.dim
    constrained = np.sort(rng.choice(n_dofs, size=n_dofs // 5, replace=False))
    assembler = Assembler(cell_dofs, n_dofs, constrained, components)
    for _ in range(2):  # re-assembly with new coefficients on the same pattern
        coefficients = [rng.uniform(0.5, 2.0, mesh.n_cells) for _ in components]
        cell_K = sum(c[:, None, None] * Kk for c, Kk in zip(coefficients, components, strict=True))
        K = reference_matrix(cell_dofs, n_dofs, cell_K)
        free = assembler.free
        K_ff = assembler.stiffness(coefficients)
        assert abs(K_ff - K[free][:, free]).max() < 1e-12 * abs(K).max()
        K_fc = assembler.coupling(coefficients)
        assert abs(K_fc - K[free][:, constrained]).max() < 1e-12 * abs(K).max()
        u = rng.standard_normal(n_dofs)
        tolerance = 1e-12 * abs(K).max() * np.abs(u).sum()
        assert np.allclose(assembler.apply(coefficients, u), K @ u, rtol=0, atol=tolerance)


def test_coefficient_cotangent_is_adjoint_of_assembly():
    """<G c, d> = <c, Gᵀ d> for the gather matrices (the assembler's VJP)."""
    rng = np.random.default_rng(2)
    mesh = distorted(unit_mesh("quad4", 4))
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress").fix("left")
    assembler = model.assembler
    c = [rng.standard_normal(mesh.n_cells) for _ in range(2)]
    d = rng.standard_normal(assembler.ff.nnz)
    lhs = assembler.stiffness_data(c) @ d
    rhs = sum(ck @ gk for ck, gk in zip(c, assembler.coefficient_cotangent(d), strict=True))
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_cell_matrices_equal_textbook_BtDB_for_quad4():
    """Kλ/Kμ split against the classical Voigt form Σ_q Bᵀ D B det(J) w (plane stress)."""
    mesh = distorted(unit_mesh("quad4", 2))
    geometry = cell_geometry(mesh)
    K_lambda, K_mu = elasticity_matrices(geometry)
    E, nu = 3.0, 0.3
    D = E / (1 - nu**2) * np.array([[1, nu, 0], [nu, 1, 0], [0, 0, (1 - nu) / 2]])
    lam, mu = E * nu / (1 - nu**2), E / (2 * (1 + nu))
    for e in range(mesh.n_cells):
        Ke = np.zeros((8, 8))
        for q in range(geometry.dx.shape[1]):
            G = geometry.dNdx[e, q]
            B = np.zeros((3, 8))
            B[0, 0::2], B[1, 1::2] = G[:, 0], G[:, 1]
            B[2, 0::2], B[2, 1::2] = G[:, 1], G[:, 0]
            Ke += B.T @ D @ B * geometry.dx[e, q]
        assert np.allclose(lam * K_lambda[e] + mu * K_mu[e], Ke, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_cell_stiffness_has_rigid_body_null_space(cell_type):
    mesh = distorted(unit_mesh(cell_type, 1), amount=0.0)
    K_lambda, K_mu = elasticity_matrices(cell_geometry(mesh))
    Ke = 1.7 * K_lambda[0] + 0.9 * K_mu[0]
    eigenvalues = np.linalg.eigvalsh(Ke)
    n_rigid = 3 if mesh.dim == 2 else 6
    scale = eigenvalues.max()
    assert np.all(np.abs(eigenvalues[:n_rigid]) < 1e-12 * scale)
    assert np.all(eigenvalues[n_rigid:] > 1e-8 * scale)


def test_structured_grid_stores_one_cell_matrix():
    from fesens.mesh import rectangle

    mesh = rectangle(30, 10, 3.0, 1.0, cell_type="quad4")
    K_lambda, _ = elasticity_matrices(cell_geometry(mesh))
    assert K_lambda.shape == (1, 8, 8)


def test_lean_pattern_int32_indices_and_folded_gather_only():
    """Lean memory: int32 index arrays where they fit, no per-entry int64 maps, and a SIMP
    model (coefficients = weights x one field) never builds the stacked gather matrix."""
    model = Elasticity(unit_mesh("quad4", 6), E=1.0, nu=0.3, plane="stress").fix("left")
    model.point_load((1.0, 0.0), (0.0, -1.0))
    assembler = model.assembler
    for name, value in vars(assembler.ff).items():
        if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
            assert value.dtype == np.int32, name
    scale = np.linspace(0.2, 1.0, model.mesh.n_cells)
    model.solve(scale=scale)
    assert assembler._gathers == {}  # only the folded gather matrix was built
    weights = next(iter(assembler._folded.values()))[0]
    folded = assembler.gather_matrix("ff", weights)
    assert folded.indices.dtype == np.int32 and folded.indptr.dtype == np.int32
    # The folded gather gives the stacked one's matrix.
    stacked = assembler.stiffness([w * scale for w in weights])
    assert abs(assembler.stiffness([scale], weights) - stacked).max() < 1e-13 * abs(stacked).max()

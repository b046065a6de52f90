"""Filters against independent constructions: top88's H/Hs, Sigmund's formula, constants."""

import re

import numpy as np
import pytest

from fesens.ad import grad, taylor_test
from fesens.errors import MeshError, TooLargeError
from fesens.fem.integrals.geometry import cell_geometry
from fesens.mesh import Mesh, box, quarter_annulus, rectangle
from fesens.opt import (
    FILTERS,
    DensityFilter,
    Filter,
    HelmholtzFilter,
    NoFilter,
    SensitivityFilter,
    make_filter,
)


def top88_filter(nelx: int, nely: int, rmin: float) -> tuple[np.ndarray, np.ndarray]:
    """``H`` and ``Hs`` built with top88's double loop (Andreassen et al. 2011, lines 36–54).

    Element ``e = i·nely + j`` (0-based) is column ``i`` from the left and row ``j`` from the
    top, as in the MATLAB code.
    """
    n = nelx * nely
    H = np.zeros((n, n))
    reach = int(np.ceil(rmin)) - 1
    for i1 in range(nelx):
        for j1 in range(nely):
            e1 = i1 * nely + j1
            for i2 in range(max(i1 - reach, 0), min(i1 + reach, nelx - 1) + 1):
                for j2 in range(max(j1 - reach, 0), min(j1 + reach, nely - 1) + 1):
                    H[e1, i2 * nely + j2] = max(0.0, rmin - np.hypot(i1 - i2, j1 - j2))
    return H, H.sum(axis=1)


def graded_mesh(cell_type: str = "quad4") -> Mesh:
    """A 12x6 rectangle mesh with cell sizes growing along x and y (non-uniform volumes)."""
    mesh = rectangle(12, 6, 12.0, 6.0, cell_type=cell_type)
    points = mesh.points.copy()
    points[:, 0] = points[:, 0] ** 1.4 / 12.0**0.4
    points[:, 1] = points[:, 1] ** 1.2 / 6.0**0.2
    return Mesh(points, mesh.cells, cell_type)


@pytest.mark.parametrize("rmin", [1.5, 2.4, 3.0])
def test_density_filter_equals_top88(rmin):
    nelx, nely = 9, 5
    H, Hs = top88_filter(nelx, nely, rmin)
    # fesens numbers cells x fastest from the bottom row: top88 element (i, j) is cell
    # i + nelx (nely − 1 − j).
    i, j = np.divmod(np.arange(nelx * nely), nely)
    fesens_id = i + nelx * (nely - 1 - j)
    mesh = rectangle(nelx, nely, float(nelx), float(nely))
    W = DensityFilter(mesh, rmin).matrix.toarray()[np.ix_(fesens_id, fesens_id)]
    np.testing.assert_allclose(W, H / Hs[:, None], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("cell_type", ["quad4", "tri3"])
def test_density_filter_preserves_constants_and_volume_weights(cell_type):
    mesh = graded_mesh(cell_type)
    density = DensityFilter(mesh, 2.5)
    np.testing.assert_allclose(density.matrix @ np.ones(mesh.n_cells), 1.0, rtol=1e-13)
    # Row e is H_ei v_i / Σ_i H_ei v_i: compare with a dense computation.
    volumes = np.broadcast_to(cell_geometry(mesh).volumes, (mesh.n_cells,))
    c = mesh.cell_centroids()
    H = np.maximum(0.0, 2.5 - np.linalg.norm(c[:, None] - c[None], axis=2))
    expected = H * volumes / (H @ volumes)[:, None]
    np.testing.assert_allclose(density.matrix.toarray(), expected, rtol=1e-12, atol=1e-15)


def test_density_filter_vjp_passes_taylor_test():
    mesh = graded_mesh("tri3")
    density = DensityFilter(mesh, 2.0)
    rng = np.random.default_rng(3)
    weights, x = rng.standard_normal(mesh.n_cells), rng.uniform(0.2, 0.8, mesh.n_cells)
    result = taylor_test(lambda x: np.sum(weights * np.sin(3.0 * density(x))), x,
                         verbose=False)
    assert result.rate > 1.9


def test_sensitivity_filter_matches_sigmunds_formula():
    """``∂̃c_e = Σ_i H_ei x_i ∂c_i / (max(γ, x_e) Σ_i H_ei)`` computed densely."""
    mesh = rectangle(10, 4, 10.0, 4.0, cell_type="tri3")
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 1.0, mesh.n_cells)
    x[:3] = 0.0  # max(γ, x_e) guards the division
    dc = -rng.uniform(0.1, 2.0, mesh.n_cells)
    c = mesh.points[mesh.cells].mean(axis=1)
    H = np.maximum(0.0, 1.7 - np.linalg.norm(c[:, None] - c[None], axis=2))
    expected = (H @ (x * dc)) / H.sum(axis=1) / np.maximum(1e-3, x)
    filtered = SensitivityFilter(mesh, 1.7).filter_gradient(x, dc)
    np.testing.assert_allclose(filtered, expected, rtol=1e-12)
    assert SensitivityFilter(mesh, 1.7)(x) is x  # densities are not filtered


@pytest.mark.parametrize("mesh", [graded_mesh("quad4"), graded_mesh("tri3"),
                                  box(4, 3, 2, 4.0, 3.0, 2.0)],
                         ids=["quad4", "tri3", "hex8"])
def test_helmholtz_filter_preserves_constants(mesh):
    filtered = HelmholtzFilter(mesh, 2.0)(np.full(mesh.n_cells, 0.37))
    np.testing.assert_allclose(filtered, 0.37, rtol=1e-10)


def test_helmholtz_filter_smooths_and_its_vjp_passes_taylor_test():
    mesh = graded_mesh("quad4")
    helmholtz = HelmholtzFilter(mesh, 3.0)
    rng = np.random.default_rng(1)
    x = rng.uniform(0.0, 1.0, mesh.n_cells)
    filtered = helmholtz(x)
    assert np.ptp(filtered) < 0.5 * np.ptp(x)
    weights = rng.standard_normal(mesh.n_cells)
    result = taylor_test(lambda x: np.sum(weights * helmholtz(x) ** 2), x, verbose=False)
    assert result.rate > 1.9
    # The filter is linear, so the gradient of Σ w·F(y) is Fᵀw: ⟨Fᵀw, x⟩ = ⟨w, F x⟩.
    y = rng.standard_normal(mesh.n_cells)
    g = grad(lambda x: np.sum(weights * helmholtz(x)))(y)
    assert g @ x == pytest.approx(weights @ helmholtz(x), rel=1e-10)


def test_make_filter_and_bad_inputs():
    mesh = rectangle(4, 2, 4.0, 2.0)
    assert isinstance(make_filter("none", mesh), NoFilter)
    assert make_filter("density", mesh, 1.5).radius == 1.5
    with pytest.raises(ValueError, match="unknown filter 'gaussian'; choose one of"):
        make_filter("gaussian", mesh, 1.5)
    with pytest.raises(ValueError, match="the density filter needs a radius"):
        make_filter("density", mesh)
    for kind in ("density", "sensitivity", "helmholtz"):
        for radius in (0.0, -1.0, float("nan")):
            with pytest.raises(ValueError, match="filter radius must be > 0"):
                make_filter(kind, mesh, radius)


@pytest.mark.parametrize(("mesh", "radius"), [
    (rectangle(9, 5, 9.0, 5.0), 1.5), (rectangle(9, 5, 9.0, 5.0), 2.4),
    (rectangle(7, 4, 3.5, 1.0, cell_type="quad9"), 0.9),
    (box(5, 4, 3, 5.0, 4.0, 3.0), 1.8), (box(4, 3, 3, 2.0, 1.5, 1.0, cell_type="hex20"), 1.2)])
def test_density_filter_on_a_grid_is_a_stencil_equal_to_the_matrix(mesh, radius):
    """On structured grids the density filter is a stencil correlation (no
    neighbour list), equal to the neighbour-list matrix and its transpose to 1e-12."""
    density = DensityFilter(mesh, radius)
    assert density.stencil is not None and "matrix" not in vars(density)
    rng = np.random.default_rng(5)
    x, g = rng.uniform(0, 1, mesh.n_cells), rng.standard_normal(mesh.n_cells)
    filtered = density(x)
    assert "matrix" not in vars(density)  # the filter never built it
    np.testing.assert_allclose(filtered, density.matrix @ x, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(density.stencil.transpose(g), density.matrix.T @ g,
                               rtol=1e-12, atol=1e-14)
    gradient = grad(lambda x: np.sum(g * density(x)))(x)
    np.testing.assert_allclose(gradient, density.matrix.T @ g, rtol=1e-12, atol=1e-14)


def test_density_filter_on_an_unstructured_mesh_keeps_the_matrix():
    assert DensityFilter(graded_mesh("quad4"), 2.0).stencil is None
    assert DensityFilter(rectangle(4, 3, cell_type="tri3"), 0.6).stencil is None


def test_sensitivity_filter_on_a_grid_is_a_stencil_equal_to_the_matrix():
    mesh = box(5, 4, 3, 5.0, 4.0, 3.0)
    sensitivity = SensitivityFilter(mesh, 1.8)
    assert sensitivity.stencil is not None
    rng = np.random.default_rng(6)
    x, g = rng.uniform(0, 1, mesh.n_cells), rng.standard_normal(mesh.n_cells)
    filtered = sensitivity.filter_gradient(x, g)
    assert "H" not in vars(sensitivity)  # the filter never built the matrix
    H = sensitivity.H
    expected = (H @ (x * g)) / np.asarray(H.sum(axis=1)).ravel() / np.maximum(1e-3, x)
    np.testing.assert_allclose(filtered, expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mesh", [rectangle(24, 12, 2.0, 1.0), box(12, 6, 6, 2.0, 1.0, 1.0)],
                         ids=["quad4 24x12", "hex8 12x6x6"])
def test_helmholtz_filter_with_multigrid_agrees_with_the_direct_solve(mesh):
    x = np.random.default_rng(3).uniform(0.0, 1.0, mesh.n_cells)
    weights = np.random.default_rng(4).normal(size=mesh.n_cells)
    direct = HelmholtzFilter(mesh, 0.3, solver="superlu")
    multigrid = HelmholtzFilter(mesh, 0.3, solver=("gmg", {"rtol": 1e-10, "coarse_size": 20}))
    np.testing.assert_allclose(multigrid(x), direct(x), rtol=0, atol=1e-9)
    np.testing.assert_allclose(grad(lambda x: np.sum(weights * multigrid(x)))(x),
                               grad(lambda x: np.sum(weights * direct(x)))(x), rtol=0, atol=1e-9)
    backend = multigrid._matrix.pattern.solver(multigrid.solver)
    assert len(backend.stats["levels"]) >= 2 and backend.stats["last_iterations"] > 1


def test_helmholtz_filter_with_multigrid_refuses_an_unstructured_mesh():
    with pytest.raises(MeshError, match="structured"):
        HelmholtzFilter(quarter_annulus(4, 6, 1.0, 2.0), 0.3, solver="gmg")


def test_helmholtz_filter_auto_takes_multigrid_on_a_large_structured_3d_mesh(monkeypatch):
    """``auto`` follows the models' size rule (the threshold lowered, so a small box is
    "large"); 2D and unstructured meshes keep ``auto``."""
    import fesens.solvers.policy as policy

    monkeypatch.setattr(policy, "DIRECT_MAX_3D_UNKNOWNS", 100)
    mesh = box(8, 4, 4, 2.0, 1.0, 1.0)
    x = np.random.default_rng(5).uniform(0.0, 1.0, mesh.n_cells)
    chosen = HelmholtzFilter(mesh, 0.3)
    assert chosen.solver == "gmg"
    np.testing.assert_allclose(chosen(x), HelmholtzFilter(mesh, 0.3, solver="superlu")(x),
                               rtol=0, atol=1e-7)
    assert HelmholtzFilter(rectangle(24, 12, 2.0, 1.0), 0.3).solver == "auto"


@pytest.mark.parametrize("kind", ["density", "sensitivity"])
def test_a_radius_beyond_the_domain_gives_top88s_cone_over_the_whole_grid(kind):
    """A radius far beyond the mesh (a unit mix-up) once made a stencil of (2r + 1)² points
    (29 TiB): it reaches no further than the grid, with every weight ``r − d``."""
    nelx, nely, rmin = 6, 3, 1e6
    H, Hs = top88_filter(nelx, nely, rmin)
    i, j = np.divmod(np.arange(nelx * nely), nely)
    fesens_id = i + nelx * (nely - 1 - j)
    mesh = rectangle(nelx, nely, float(nelx), float(nely))
    cone = make_filter(kind, mesh, rmin)
    assert cone.stencil.weights.shape == (2 * nelx - 1, 2 * nely - 1)
    x = np.random.default_rng(3).random(mesh.n_cells)
    if kind == "density":
        expected = (H / Hs[:, None]) @ x[fesens_id]
        np.testing.assert_allclose(cone(x)[fesens_id], expected, rtol=1e-12)
    else:
        gradient = -np.ones(mesh.n_cells)
        expected = H @ (x * gradient)[fesens_id] / Hs / np.maximum(1e-3, x[fesens_id])
        np.testing.assert_allclose(cone.filter_gradient(x, gradient)[fesens_id], expected,
                                   rtol=1e-12)


@pytest.mark.parametrize("kind", ["density", "sensitivity"])
def test_a_stencil_too_costly_to_correlate_is_refused_with_a_radius(kind):
    mesh = rectangle(400, 400, 400.0, 400.0)
    with pytest.raises(TooLargeError, match=r"radius 1e\+06 on the 400×400 grid of cells is "
                       r"a 799×799 stencil: 1.02e\+11 multiply-adds.*use a radius of 1.5 to 3 "
                       r"cell sizes \(about 1.5 to 2.99 here\)"):
        make_filter(kind, mesh, 1e6)


@pytest.mark.parametrize("kind", ["density", "sensitivity"])
def test_cone_weights_beyond_the_memory_are_refused_up_front(kind, monkeypatch):
    """On an unstructured mesh the weights are a matrix of every pair within the radius:
    the filter counts them (from sampled cells) before building it."""
    mesh = quarter_annulus(8, 16, 1.0, 2.0, cell_type="tri3")
    n = mesh.n_cells
    monkeypatch.setattr("fesens.opt.filters.available_bytes", lambda: 64.0 * n * n / 2)
    make_filter(kind, mesh, 0.3)
    weights = re.escape(f"{float(n * n):.3g}")
    with pytest.raises(TooLargeError, match=rf"radius 100 on {n:,} cells has about {weights} "
                       r"weights: .* GB, more than the .* GB of memory available; use a radius "
                       "of 1.5 to 3 cell sizes"):
        make_filter(kind, mesh, 100.0)


@pytest.mark.parametrize("radius", [1e6, 1e300])
def test_a_helmholtz_radius_too_ill_conditioned_to_solve_is_refused(radius):
    """``r_h² K + M`` with ``r_h ≫ h`` once failed its solve's residual check with a
    message about missing Dirichlet conditions (1e300: an overflow warning)."""
    mesh = rectangle(12, 4, 12.0, 4.0)
    make_filter("helmholtz", mesh, 1e3)
    with pytest.raises(TooLargeError, match=r"Helmholtz filter of radius .* condition "
                       r"number.* exceeds 1e\+09.*use a radius of 1.5 to 3 cell sizes"):
        make_filter("helmholtz", mesh, radius)


def test_every_filter_is_a_filter_and_the_base_is_abstract():
    assert all(issubclass(cls, Filter) for cls in FILTERS.values())
    assert not any(issubclass(cls, NoFilter) for name, cls in FILTERS.items() if name != "none")
    with pytest.raises(TypeError, match="abstract"):
        Filter()
    x = np.linspace(0.1, 1.0, 4)
    assert SensitivityFilter(rectangle(4, 1), 1.5)(x) is x  # the densities are unfiltered

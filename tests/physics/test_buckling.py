"""Linear buckling (fesens/fem/analysis/buckling.py, fesens/physics/geometric_stiffness.py): Euler's
column with mesh convergence, Taylor tests and finite differences of the load factors'
sensitivities (with the adjoint term of K_σ(u)), bad input.

Run with ``-s`` to see the convergence tables and the Taylor remainders.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from fesens.ad import grad, taylor_test
from fesens.ad.numpy_wrapper import getval
from fesens.errors import ModeCountError, NoBucklingError, NonFiniteError
from fesens.fem.analysis.buckling import BucklingAnalysis
from fesens.mesh import box, rectangle
from fesens.objectives import eigenvalue_ks, eigenvalue_sum
from fesens.physics import Elasticity, HeatConduction
from fesens.physics.geometric_stiffness import ElasticBuckling
from fesens.solvers.buckling_eigen import lowest_load_factors


def euler_cantilever(E, inertia, length):
    """Euler's critical load of a column fixed at one end and free at the other,
    ``P_cr = π² E I / (K L)²`` with the effective-length factor ``K = 2`` (Timoshenko &
    Gere, *Theory of Elastic Stability*, 2nd ed., 1961, §2.1)."""
    return np.pi**2 * E * inertia / (2.0 * length) ** 2


def column_2d(nx, ny, cell_type="quad4", length=20.0, height=1.0, E=1e3):
    """A plane-stress cantilever column, clamped at x = 0, unit axial compression at x = L."""
    model = Elasticity(rectangle(nx, ny, length, height, cell_type=cell_type), E=E, nu=0.3,
                       plane="stress")
    model.fix("left")
    model.traction("right", (-1.0 / height, 0.0))  # total force 1 (thickness 1)
    return model


def test_quad4_column_converges_to_euler_from_above():
    """L/H = 20: μ₁ · P → P_cr = π² E I / (2L)²; quad4's shear locking makes it too stiff,
    the excess falling at rate 2 in h. The next two load factors are 9 and 25 times the
    first (Euler's (2n − 1)² for the cantilever)."""
    L, H, E = 20.0, 1.0, 1e3
    exact = euler_cantilever(E, H**3 / 12, L)
    print("\nquad4 cantilever column, L/H = 20: μ_n / P_cr(Euler)")
    ratios = []
    for nx, ny in ((40, 2), (80, 4), (160, 8)):
        result = ElasticBuckling(column_2d(nx, ny, length=L, height=H, E=E), 3).run()
        factors = np.asarray(result.load_factors)
        ratios.append(factors[0] / exact)
        print(f"  {nx:4d} x {ny:2d}  " + "  ".join(f"{f / exact:9.5f}" for f in factors))
        assert factors[1:] / factors[0] == pytest.approx([9.0, 25.0], rel=0.1)
    errors = np.array(ratios) - 1.0
    assert np.all(errors > 0)
    assert errors[-1] < 0.01
    assert np.log2(errors[:-1] / errors[1:]) == pytest.approx([2.0, 2.0], abs=0.3)


@pytest.mark.parametrize("cell_type", ["quad8", "quad9", "tri6"])
def test_quadratic_elements_match_euler(cell_type):
    """Quadratic cells on 80 x 4: within 0.2% of Euler (a little below: the 2D model has
    shear deformation, which Euler's beam has not)."""
    result = ElasticBuckling(column_2d(80, 4, cell_type), 2).run()
    assert result.load_factors[0] / euler_cantilever(1e3, 1 / 12, 20.0) == pytest.approx(
        1.0, abs=2e-3)


def test_tri3_column_converges():
    """tri3 locks more than quad4 but converges: 80 x 4 within 25%, 160 x 8 within 6%."""
    exact = euler_cantilever(1e3, 1 / 12, 20.0)
    coarse = ElasticBuckling(column_2d(80, 4, "tri3"), 1).run().load_factors[0] / exact
    fine = ElasticBuckling(column_2d(160, 8, "tri3"), 1).run().load_factors[0] / exact
    assert 1.0 < fine < coarse < 1.25 and fine < 1.06


def test_plane_strain_and_thickness():
    """Plane strain buckles at Euler's load with E / (1 − ν²); a thickness t carries the
    force t per unit traction, and P_cr ∝ I ∝ t: μ₁ · t = P_cr(t)."""
    L, E, nu = 20.0, 1e3, 0.3
    strain = Elasticity(rectangle(80, 4, L, 1.0, cell_type="quad8"), E=E, nu=nu,
                        plane="strain")
    strain.fix("left")
    strain.traction("right", (-1.0, 0.0))
    exact = euler_cantilever(E / (1 - nu**2), 1 / 12, L)
    assert ElasticBuckling(strain, 1).run().load_factors[0] / exact == pytest.approx(1.0, abs=2e-3)
    thin = Elasticity(rectangle(80, 4, L, 1.0, cell_type="quad8"), E=E, nu=nu,
                      plane="stress", thickness=0.5)
    thin.fix("left")
    thin.traction("right", (-1.0, 0.0))
    force = 0.5
    assert ElasticBuckling(thin, 1).run().load_factors[0] * force / euler_cantilever(
        E, 0.5 / 12, L) == pytest.approx(1.0, abs=2e-3)


def column_3d(nx, ny, nz, cell_type="hex8", length=4.0, width=0.2, depth=0.3, E=1e3):
    """A cantilever of b x h = 0.2 x 0.3 section along x, unit axial compression."""
    model = Elasticity(box(nx, ny, nz, length, width, depth, cell_type=cell_type), E=E, nu=0.3)
    model.fix("left")
    model.traction("right", (-1.0 / (width * depth), 0.0, 0.0))
    return model


@pytest.mark.parametrize(("cell_type", "divisions", "tolerance"), [
    ("hex8", (80, 4, 6), 0.04), ("hex20", (20, 2, 3), 0.005), ("tet10", (20, 2, 3), 0.006),
    ("hex27", (10, 2, 3), 0.008),
])
def test_3d_column_buckles_about_the_weak_axis_at_euler(cell_type, divisions, tolerance):
    """L = 4, b x h = 0.2 x 0.3: the first mode bends about the weak axis (I = h b³/12), the
    second about the strong one, (h/b)² = 2.25 times higher (Timoshenko & Gere, §2.1)."""
    b, h = 0.2, 0.3
    result = ElasticBuckling(column_3d(*divisions, cell_type), 2).run()
    factors = np.asarray(result.load_factors)
    exact = euler_cantilever(1e3, h * b**3 / 12, 4.0)
    print(f"\n{cell_type} {divisions}: μ / P_cr = {factors / exact}")
    assert factors[0] / exact == pytest.approx(1.0, abs=tolerance)
    assert factors[1] / factors[0] == pytest.approx((h / b) ** 2, rel=0.03)
    mode = result.vectors[:, 0].reshape(-1, 3)
    assert np.abs(mode[:, 1]).max() > 10 * np.abs(mode[:, 2]).max()  # bends in y (weak)


def test_the_eigen_solve_reuses_the_static_factorization():
    """One numeric factorization of K serves the static solve and the eigen solve; the
    modes are (−K_σ)-orthonormal and satisfy (K + μ K_σ) φ = 0."""
    model = column_2d(60, 3)
    backend = model.solver("cholmod" if "cholmod" in _available() else "superlu")
    before = backend.stats["n_numeric"]
    result = ElasticBuckling(model, 3, solver=backend).run()
    assert backend.stats["n_numeric"] == before + 1
    free = model.free_dofs
    K = model.stiffness("ff").tocsr()
    from fesens.fem.analysis.buckling import negative_geometric_stiffness
    G = negative_geometric_stiffness(model, result.solution.stress()).tocsr()
    phi = result.vectors[free]
    assert phi.T @ G @ phi == pytest.approx(np.eye(3), abs=1e-9)
    residual = K @ phi - (G @ phi) * np.asarray(result.load_factors)
    assert np.abs(residual).max() < 1e-8 * np.abs(K @ phi).max()


def _available():
    from fesens.solvers import available_solvers
    return available_solvers()


# ------------------------------------------------------------------ sensitivities
def small_column(nx=24, ny=4):
    model = Elasticity(rectangle(nx, ny, 6.0, 1.0), E=100.0, nu=0.3, plane="stress")
    model.fix("left")
    model.traction("right", (-1.0, 0.0))
    return model


@pytest.fixture
def design():
    return np.random.default_rng(1).uniform(0.5, 1.0, 96)


def lowest(model, x, prestress=None):
    """μ₁ with SIMP stiffness x³ and stress interpolation x³ (Ferrari et al. 2021)."""
    if prestress is None:
        return ElasticBuckling(model, 4).run(scale=x**3, stress_scale=x**3).load_factors[0]
    return BucklingAnalysis(model, 4, prestress).run(scale=x**3).load_factors[0]


def test_lowest_load_factor_taylor_test(design):
    result = taylor_test(lambda x: lowest(small_column(), x), design)
    assert result.rate == pytest.approx(2.0, abs=0.1)


def test_ks_of_the_lowest_three_taylor_test(design):
    model = small_column()

    def ks(x):
        return eigenvalue_ks(ElasticBuckling(model, 4).run(scale=x**3, stress_scale=x**2),
                             rho=20.0, count=3)

    result = taylor_test(ks, design)
    assert result.rate == pytest.approx(2.0, abs=0.1)


def test_full_adjoint_matches_finite_differences_and_the_u_term_matters(design):
    """dμ₁/dx_e by central differences (step 1e-4, error O(1e-9)) against the traced
    gradient, which includes the adjoint of the static solve for K_σ(u); the gradient
    without that term (the prestress taken from a detached solution, so only σ's explicit
    x³ remains) differs from both by far more than the differences' error."""
    model = small_column()
    full = grad(lambda x: lowest(model, x))(design)

    def frozen_prestress(x):
        return lambda solution: solution.detached().stress(x**3)

    partial = grad(lambda x: lowest(model, x, frozen_prestress(x)))(design)
    cells, step = [0, 10, 37, 50, 95], 1e-4
    differences = []
    for e in cells:
        plus, minus = design.copy(), design.copy()
        plus[e] += step
        minus[e] -= step
        differences.append((lowest(model, plus) - lowest(model, minus)) / (2 * step))
    differences = np.array(differences)
    scale = np.abs(full).max()
    print(f"\nfinite differences {differences}\nfull adjoint       {full[cells]}"
          f"\nwithout dK_σ/du    {partial[cells]}")
    assert np.abs(full[cells] - differences).max() < 1e-6 * scale
    assert np.abs(full - partial).max() > 0.1 * scale


def test_3d_lowest_load_factor_taylor_test():
    model = column_3d(10, 2, 2, length=2.0, width=0.2, depth=0.3)
    x0 = np.random.default_rng(2).uniform(0.5, 1.0, model.mesh.n_cells)
    result = taylor_test(
        lambda x: ElasticBuckling(model, 3).run(scale=x**3).load_factors[0], x0)
    assert result.rate == pytest.approx(2.0, abs=0.1)


def test_repeated_load_factors_of_a_square_column():
    """A square section buckles in y and z at one load: the pair is reported as a cluster,
    and its sum and KS aggregate (symmetric in the pair) pass Taylor tests in a random
    direction, which splits the pair."""
    model = column_3d(8, 2, 2, length=2.0, width=0.2, depth=0.2)
    x0 = np.full(model.mesh.n_cells, 0.8)
    assert ElasticBuckling(model, 3).run(scale=x0**3).clusters == ((0, 1),)
    for aggregate in (eigenvalue_sum, eigenvalue_ks):
        result = taylor_test(
            lambda x, f=aggregate: f(ElasticBuckling(model, 3).run(scale=x**3), count=2), x0)
        assert result.rate == pytest.approx(2.0, abs=0.1)


def test_shape_sensitivity_taylor_test():
    """μ₁ in the node coordinates (the geometric stiffness and the stress are traced in
    them too)."""
    model = small_column(12, 2)
    points = model.mesh.points.copy()
    direction = np.random.default_rng(3).standard_normal(points.shape) * 0.01
    result = taylor_test(lambda X: ElasticBuckling(model, 2).run(points=X).load_factors[0],
                         points, direction)
    assert result.rate == pytest.approx(2.0, abs=0.1)


# ------------------------------------------------------------------ bad input
def test_pure_tension_has_no_positive_load_factor():
    """A column pulled at its end: no cell is in compression but for a sliver of the
    Poisson stress at the clamp, so no load factor is found; the error names the η that
    Lanczos found (none) and the principal stresses."""
    model = column_2d(40, 2)
    model.traction("right", (2.0, 0.0), name="pull")
    with pytest.raises(NoBucklingError, match=r"no positive load factor found.*found: "
                       r"none.*tension.*lowest principal stress -[\de.]+, largest stress "
                       r"magnitude 2"):
        ElasticBuckling(model, 2).run(loads={"surface0": 0.0, "pull": 1.0})
    # ν = 0 and rollers at the left end: uniaxial tension, no compression anywhere.
    uniaxial = Elasticity(rectangle(40, 2, 20.0, 1.0), E=1e3, nu=0.0, plane="stress")
    uniaxial.fix("left", "x").fix(lambda p: p[:, 0] < 1e-9, "y").traction("right", (2.0, 0.0))
    with pytest.raises(NoBucklingError, match=r"no compressive prestress: the smallest "
                       r"principal stress of every cell is >= 0 \(lowest [-\de.]+, largest "
                       r"stress magnitude 2\b.*pure tension"):
        ElasticBuckling(uniaxial, 2).run()


def test_no_load_is_no_prestress():
    with pytest.raises(NoBucklingError, match="no compressive prestress.*largest stress "
                       "magnitude 0"):
        ElasticBuckling(column_2d(20, 2), 1).run(loads={"surface0": 0.0})


def test_too_few_positive_load_factors_names_the_etas():
    """The eigen solve itself: with G = diag(1, −1, ..., −1) only one η is positive."""
    K = sp.identity(40, format="csr")
    G = sp.diags(np.r_[0.5, -np.ones(39)], format="csr")
    factors, modes = lowest_load_factors(K, G, 1, lambda b: b)
    assert factors == pytest.approx([2.0])
    with pytest.raises(NoBucklingError, match=r"asked for 2 .* only 1 are positive: the "
                       r"largest η = 1/μ of −K_σ φ = η K φ are 0.5, -1"):
        lowest_load_factors(K, G, 2, lambda b: b)
    with pytest.raises(NoBucklingError, match="only 0 are positive"):
        lowest_load_factors(K, -abs(G), 1, lambda b: b)


def test_more_modes_than_free_dofs():
    model = column_2d(4, 1)
    n_free = model.free_dofs.size
    with pytest.raises(ModeCountError, match=f"k = {n_free + 1}.*{n_free} free dofs"):
        ElasticBuckling(model, n_free + 1).run()
    with pytest.raises(ModeCountError, match="k = 0"):
        ElasticBuckling(model, 0).run()


def test_nan_is_refused():
    model = column_2d(20, 2)
    scale = np.ones(model.mesh.n_cells)
    scale[3] = np.nan
    with pytest.raises(NonFiniteError):
        ElasticBuckling(model, 1).run(scale=scale)
    K = sp.identity(70, format="csr")
    G = sp.csr_matrix(np.diag(np.r_[np.nan, np.ones(69)]))
    with pytest.raises(NonFiniteError, match="geometric stiffness matrix .* 1 NaN"):
        lowest_load_factors(K, G, 1, lambda b: b)


def test_iterative_solver_and_other_physics_are_refused():
    with pytest.raises(ValueError, match="direct solver.*cholmod"):
        ElasticBuckling(column_2d(20, 2), 1, solver="cg").run()
    heat = HeatConduction(rectangle(4, 4))
    heat.fix("left")
    with pytest.raises(TypeError, match="Elasticity"):
        ElasticBuckling(heat, 1).run()


def test_a_traced_result_detaches():
    model = small_column()
    x = np.full(model.mesh.n_cells, 0.8)
    result = ElasticBuckling(model, 2).run(scale=x**3)
    plain = result.detached()
    assert np.array_equal(plain.load_factors, getval(result.load_factors))
    assert plain.critical_load(2.0) == pytest.approx(2 * plain.load_factors[0])

"""Free vibration (fesens/fem/analysis/modal.py): eigenvalues against closed forms with mesh
convergence, Taylor tests of eigenvalue sensitivities (simple and repeated), bad input.

Run with ``-s`` to see the convergence tables and the Taylor remainders.
"""

import numpy as np
import pytest

from fesens.ad import grad, taylor_test
from fesens.errors import (
    ModeCountError,
    NonFiniteError,
    SingularMassError,
    SingularMatrixError,
)
from fesens.fem.analysis import ModalAnalysis
from fesens.mesh import Mesh, box, rectangle
from fesens.objectives import eigenvalue, eigenvalue_ks, eigenvalue_sum, frequency
from fesens.physics import Elasticity, HeatConduction, Truss

#: Root of 1 + cos β cosh β = 0, the first cantilever mode (Euler–Bernoulli).
BETA_1 = 1.875104068711961


def _convergence(label, sizes, errors):
    print(f"\n{label}")
    for n, row in zip(sizes, errors, strict=True):
        print(f"  n = {n:3d}  " + "  ".join(f"{e:+.3e}" for e in row))


def test_bar_in_axial_vibration_converges_to_the_closed_form():
    """Fixed-free bar, ω_n = (2n − 1) π / (2L) √(E/ρ) (Rao, *Mechanical Vibrations*, 5th
    ed., §8.4): a plane-stress strip with ν = 0 moving axially only. The consistent mass
    converges from above, the lumped from below, both at rate 2 in h."""
    L, E, rho = 10.0, 2.0, 0.5
    exact = np.array([(2 * n - 1) * np.pi / (2 * L) * np.sqrt(E / rho) for n in (1, 2, 3)])
    sizes, errors = (10, 20, 40), []
    for nx in sizes:
        model = Elasticity(rectangle(nx, 1, L, 0.1), E=E, nu=0.0, plane="stress")
        model.fix("left", "x").fix(lambda p: np.ones(len(p), bool), "y")
        consistent = ModalAnalysis(model, 4).run(density=rho).omega[:3]
        lumped = ModalAnalysis(model, 4, lumped=True).run(density=rho).omega[:3]
        errors.append(np.concatenate([consistent / exact - 1, lumped / exact - 1]))
    errors = np.array(errors)
    _convergence("axial bar: relative errors of ω1..ω3 (consistent, then lumped)", sizes, errors)
    assert np.all(errors[:, :3] > 0) and np.all(errors[:, 3:] < 0)  # bracketed
    assert abs(errors[-1]).max() < 2e-3
    rates = np.log2(errors[:-1] / errors[1:])
    assert np.allclose(rates, 2.0, atol=0.05)


def test_cantilever_first_bending_frequency_converges_to_euler_bernoulli():
    """ω₁ = β₁² √(EI / (ρ A L⁴)), β₁ = 1.8751 (Euler–Bernoulli; Rao, *Mechanical
    Vibrations*, §8.5) for a slender plane-stress cantilever, L/H = 40: quad8 within 0.1%
    (what remains is the shear and rotary inertia of the 2D model, O((H/L)²)), consistent
    and lumped mass closing in from both sides; quad4 converges from above (its shear
    locking vanishing at rate 2)."""
    L, H, E, rho = 10.0, 0.25, 3.0, 2.0
    exact = BETA_1**2 * np.sqrt(E * H**3 / 12 / (rho * H * L**4))
    sizes, errors = (10, 20, 40), []
    for nx in sizes:
        row = []
        for cell_type, lumped in (("quad8", False), ("quad8", True), ("quad4", False)):
            model = Elasticity(rectangle(nx, 1, L, H, cell_type=cell_type), E=E, nu=0.0,
                               plane="stress")
            model.fix("left")
            row.append(ModalAnalysis(model, 2, lumped=lumped).run(density=rho).omega[0] / exact - 1)
        errors.append(row)
    errors = np.array(errors)
    _convergence("cantilever: relative error of ω1 (quad8, quad8 lumped, quad4)", sizes, errors)
    assert abs(errors[-1, :2]).max() < 1e-3
    assert errors[0, 0] > errors[-1, 0] and errors[0, 1] < errors[-1, 1]  # from both sides
    assert np.all(np.diff(errors[:, 2]) < 0) and errors[-1, 2] < 0.25


def test_heat_capacity_gives_the_decay_rates_of_a_rod():
    """κ T'' = λ ρc T, T(0) = 0, T'(L) = 0: λ_n = κ/(ρc) ((2n − 1) π / (2L))² (Carslaw &
    Jaeger, *Conduction of Heat in Solids*, §3.3)."""
    L, kappa, capacity = 2.0, 3.0, 1.5
    model = HeatConduction(rectangle(40, 1, L, 0.05, cell_type="quad8"), conductivity=kappa)
    model.fix("left")
    values = ModalAnalysis(model, 3).run(density=capacity).values
    exact = kappa / capacity * ((2 * np.arange(1, 4) - 1) * np.pi / (2 * L)) ** 2
    assert np.allclose(values, exact, rtol=1e-5)


def _plate():
    mesh = rectangle(12, 3, 4.0, 1.0)
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress")
    model.fix("left")
    rng = np.random.default_rng(0)
    return model, 1 + 0.3 * rng.random(mesh.n_cells), 1 + 0.3 * rng.random(mesh.n_cells)


@pytest.mark.parametrize("lumped", [False, True])
def test_simple_eigenvalue_taylor_in_density_and_E(lumped):
    model, rho, E = _plate()
    analysis = ModalAnalysis(model, 3, lumped=lumped)
    result = taylor_test(lambda r: analysis.run(density=r, E=E).values[0], rho)
    assert result.rate == pytest.approx(2, abs=0.1)
    result = taylor_test(lambda e: analysis.run(density=rho, E=e).values[1], E)
    assert result.rate == pytest.approx(2, abs=0.1)


def test_simple_eigenvalue_taylor_in_poisson_ratio():
    model, rho, E = _plate()
    nu = 0.3 * np.ones(model.mesh.n_cells)
    analysis = ModalAnalysis(model, 3)
    result = taylor_test(lambda v: analysis.run(density=rho, E=E, nu=v).values[2], nu)
    assert result.rate == pytest.approx(2, abs=0.1)


@pytest.mark.parametrize("lumped", [False, True])
def test_simple_eigenvalue_taylor_in_node_coordinates(lumped):
    model, rho, E = _plate()
    analysis = ModalAnalysis(model, 3, lumped=lumped)
    result = taylor_test(lambda X: analysis.run(density=rho, E=E, points=X).values[0],
                         model.mesh.points.copy(), step=1e-3)
    assert result.rate == pytest.approx(2, abs=0.1)


def test_frequency_gradient_of_heat_conduction():
    model = HeatConduction(rectangle(6, 6, cell_type="tri6"))
    model.fix("left")
    rng = np.random.default_rng(1)
    kappa, capacity = 1 + rng.random(model.mesh.n_cells), 1 + rng.random(model.mesh.n_cells)
    analysis = ModalAnalysis(model, 2)
    result = taylor_test(lambda c: frequency(analysis.run(density=capacity, conductivity=c)),
                         kappa)
    assert result.rate == pytest.approx(2, abs=0.1)


def _square_beam():
    """A cantilever of square section: its two first bending modes are one repeated
    eigenvalue; densities vary along the axis only, which keeps the symmetry."""
    mesh = box(8, 2, 2, 4.0, 0.5, 0.5)
    model = Elasticity(mesh, E=1.0, nu=0.3)
    model.fix("left")
    x = mesh.points[mesh.cells].mean(axis=1)[:, 0]
    rng = np.random.default_rng(2)
    direction = 0.1 * np.cos(3 * x) + 0.05 * rng.random(mesh.n_cells)  # breaks the symmetry
    return model, 1 + 0.2 * np.sin(x), direction


@pytest.mark.parametrize("objective", [lambda m: eigenvalue_sum(m, 2),
                                       lambda m: eigenvalue_ks(m, 20.0, 2)],
                         ids=["sum", "ks"])
def test_symmetric_function_of_a_repeated_eigenvalue_taylor(objective):
    model, rho, direction = _square_beam()
    modes = ModalAnalysis(model, 3).run(density=rho)
    assert modes.clusters == ((0, 1),)
    result = taylor_test(lambda r: objective(ModalAnalysis(model, 3).run(density=r)), rho,
                         direction)
    assert result.rate == pytest.approx(2, abs=0.1)


def test_an_individual_repeated_eigenvalue_has_no_gradient():
    """What a user gets for λ₀ of a cluster: a basis-dependent directional derivative, whose
    Taylor remainder is first order; eigenvalue() and frequency() refuse it."""
    model, rho, direction = _square_beam()
    result = taylor_test(lambda r: ModalAnalysis(model, 3).run(density=r).values[0], rho, direction)
    assert result.rate < 1.5
    with pytest.raises(ValueError, match="eigenvalue 0 is repeated .*eigenvalue_sum"):
        eigenvalue(ModalAnalysis(model, 3).run(density=rho), 0)
    with pytest.raises(ValueError, match="cut a cluster"):
        eigenvalue_sum(ModalAnalysis(model, 3).run(density=rho), 1)
    with pytest.raises(ValueError, match="count = 3 needs 1 <= count < k = 3"):
        eigenvalue_sum(ModalAnalysis(model, 3).run(density=rho), 3)


def test_gradients_of_a_sum_are_the_per_cell_formula():
    """θ̄_e = Σ_i φ_(i,e)ᵀ (∂K_e/∂ρ_e − λ_i ∂M_e/∂ρ_e) φ_(i,e) with ∂K_e/∂ρ_e = 0."""
    model, rho, _ = _plate()
    modes = ModalAnalysis(model, 2).run(density=rho)
    g = grad(lambda r: eigenvalue_sum(ModalAnalysis(model, 2).run(density=r), 1))(rho)
    operator, _ = model.mass_operator()
    phi = modes.vectors[:, 0]
    Me = operator.components[0]
    cells = phi[model.dofmap.cell_dofs]
    expected = -modes.values[0] * np.einsum("ei,eij,ej->e", cells, Me, cells)
    assert np.allclose(g, expected, rtol=1e-8)


def test_bad_input():
    model, rho, E = _plate()
    n = model.free_dofs.size
    with pytest.raises(ModeCountError, match=f"k = {n + 1} eigenpairs.*{n} free dofs"):
        ModalAnalysis(model, n + 1).run()
    with pytest.raises(NonFiniteError, match="parameter 'density' contains NaN"):
        ModalAnalysis(model, 2).run(density=np.full(model.mesh.n_cells, np.nan))
    empty = rho.copy()
    empty[model.mesh.points[model.mesh.cells].mean(axis=1)[:, 0] > 3.0] = 0.0
    with pytest.raises(SingularMassError, match="free dofs have no mass"):
        ModalAnalysis(model, 2, lumped=True).run(density=empty)
    free = Elasticity(model.mesh, plane="stress")
    with pytest.raises(SingularMatrixError, match="free rigid-body motion"):
        ModalAnalysis(free, 2).run()


def test_lobpcg_with_amg_matches_shift_invert_and_static_solves_are_unchanged():
    """Large-problem path (LOBPCG + AMG, also what an iterative model backend gets), and
    the factorization of K + τ M on the pattern's solver does not disturb later solves."""
    model = Elasticity(box(12, 3, 3, 4.0, 1.0, 1.0), E=1.0, nu=0.3)
    model.fix("left").body_force((0.0, 0.0, -1.0))
    before = model.solve(solver="cholmod").u.copy()
    direct = ModalAnalysis(model, 4, solver="cholmod").run().values
    assert np.allclose(ModalAnalysis(model, 4, method="lobpcg").run().values, direct, rtol=1e-7)
    assert np.allclose(ModalAnalysis(model, 4, solver="cg").run().values, direct, rtol=1e-7)
    assert np.array_equal(model.solve(solver="cholmod").u, before)
    assert model.solver("cholmod").stats["n_symbolic"] == 1  # one analysis for K and K + τM


def test_truss_bar_modes_and_their_shape_gradient():
    """A bar of 20 truss elements, fixed-free: ω_n = (2n − 1) π / (2L) √(E/ρ) (Rao §8.4)."""
    n, L = 20, 10.0
    points = np.stack([np.linspace(0, L, n + 1), np.zeros(n + 1)], axis=1)
    cells = np.stack([np.arange(n), np.arange(1, n + 1)], axis=1)
    model = Truss(Mesh(points, cells, "line2"), A=2.0, E=3.0)
    model.fix(lambda p: p[:, 0] < 1e-9).fix(lambda p: np.ones(len(p), bool), "y")
    omega = ModalAnalysis(model, 3).run(density=1.5).omega
    exact = (2 * np.arange(1, 4) - 1) * np.pi / (2 * L) * np.sqrt(3.0 / 1.5)
    assert np.allclose(omega, exact, rtol=1e-2) and np.all(omega > exact)
    direction = np.zeros_like(points)
    direction[:, 0] = np.random.default_rng(3).random(n + 1)
    result = taylor_test(lambda X: ModalAnalysis(model, 3).run(density=1.5, points=X).values[0],
                         points, direction, step=1e-3)
    assert result.rate == pytest.approx(2, abs=0.1)

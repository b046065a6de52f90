"""The energy interpolation of finite-strain elasticity in nearly void cells (Wang, Lazarov,
Sigmund & Jensen, Comput. Methods Appl. Mech. Engrg. 276, 2014, 453–472, §3): the smooth
step, the flux and energy at its ends in closed form, the tangent and the residual as
derivatives, gradients through the Newton solve, the post-processing of void cells, the
physics' Newton defaults, and a load that stops Newton without the interpolation."""

from __future__ import annotations

import numpy as np
import pytest

from fesens.ad import check_grad, taylor_test
from fesens.errors import NewtonError
from fesens.mesh.generators import rectangle
from fesens.objectives import compliance
from fesens.physics.hyperelastic_law import hyperelastic_law, lame_constants
from fesens.physics.hyperelasticity import FiniteStrainElasticity, void_step

LAWS = ("neo-hookean", "saint-venant-kirchhoff")
INTERPOLATED = {"void_treatment": "energy_interpolation"}


def test_the_step_is_that_of_wang_et_al():
    """``γ(s) = (tanh(βη) + tanh(β(s − η))) / (tanh(βη) + tanh(β(1 − η)))``: 0 at s = 0,
    1 at s = 1, ``tanh(βη) / (tanh(βη) + tanh(β(1 − η)))`` at the threshold, monotone."""
    beta, eta = 500.0, 0.01
    assert void_step(0.0, beta, eta) == pytest.approx(0.0, abs=1e-15)
    assert void_step(1.0, beta, eta) == pytest.approx(1.0, abs=1e-15)
    assert void_step(eta, beta, eta) == pytest.approx(np.tanh(5.0) / (np.tanh(5.0) + 1.0))
    s = np.linspace(0.0, 1.0, 1001)
    assert np.all(np.diff(void_step(s, beta, eta)) >= 0)
    assert void_step(1e-3, beta, eta) < 1e-3 and void_step(0.05, beta, eta) > 1 - 1e-15


def deformed_state(model):
    X = model.mesh.points
    u = (0.15 * np.c_[np.sin(2 * X[:, 0]) * X[:, 1], X[:, 0] ** 2]).ravel()
    u[model.constrained_dofs] = 0.0
    return u


@pytest.mark.parametrize("law", LAWS)
def test_solid_cells_keep_the_law_and_void_cells_are_linear(law):
    """At ``s = 1`` (γ = 1) the flux and the energy are the law's; at ``γ → 0`` (here
    5e-6) they are those of small-strain elasticity, ``P = λ tr ε I + 2μ ε``,
    ``W = λ/2 (tr ε)² + μ ε:ε`` (times the scale), up to ``O(γ²)``, at a finite strain."""
    mesh = rectangle(2, 1, 1.0, 0.5, "quad4")
    model = FiniteStrainElasticity(mesh, E=50.0, nu=0.3, law=law, **INTERPOLATED)
    u = deformed_state(model)
    _, u_q, H = model._at_quadrature(u, None)
    s = np.array([1.0, 1e-4])
    fields = model.material_fields(scale=s)
    assert fields["gamma"][0] == 1.0 and fields["gamma"][1] < 5e-6
    lam, mu = lame_constants(50.0, 0.3, "strain")
    P = model.flux(u_q, H, fields)
    W = model.energy(u_q, H, fields)
    plain = hyperelastic_law(law)
    assert np.allclose(P[0], plain.first_piola(H[0], lam, mu), rtol=1e-13, atol=0)
    assert np.allclose(W[0], plain.energy(H[0], lam, mu), rtol=1e-13, atol=0)
    eps = 0.5 * (H[1] + np.swapaxes(H[1], -1, -2))
    tr = np.trace(eps, axis1=-2, axis2=-1)
    P_linear = s[1] * (lam * tr[:, None, None] * np.eye(2) + 2 * mu * eps)
    W_linear = s[1] * (0.5 * lam * tr ** 2 + mu * np.sum(eps * eps, axis=(-1, -2)))
    assert np.abs(P[1] - P_linear).max() < 1e-9 * np.abs(P_linear).max()
    assert np.abs(W[1] - W_linear).max() < 1e-9 * np.abs(W_linear).max()


@pytest.mark.parametrize("law", LAWS)
def test_tangent_and_residual_are_derivatives(law):
    """Across the step (γ from 0 to 1 over the cells): the assembled tangent equals the
    central difference of the residual (all free columns), and the internal forces equal
    the central difference of the stored energy, so the energy line search sees the
    energy of the residual Newton solves."""
    mesh = rectangle(3, 2, 1.0, 0.5, "quad8")
    model = FiniteStrainElasticity(mesh, E=60.0, nu=0.35, law=law, void_beta=20.0,
                                   void_eta=0.3, **INTERPOLATED)
    model.fix("left")
    fields = model.material_fields(scale=np.linspace(0.05, 1.0, mesh.n_cells))
    assert np.ptp(fields["gamma"]) > 0.99 and 0.05 < np.sort(fields["gamma"])[1] < 0.95
    u = deformed_state(model)
    f = np.zeros(model.dofmap.n_dofs)
    K = model.tangent(u, fields).tocsr().toarray()
    h = 1e-6
    columns, slopes = [], []
    for dof in model.free_dofs:
        step = np.zeros_like(u)
        step[dof] = h
        columns.append((model.residual(u + step, fields, f)
                        - model.residual(u - step, fields, f)) / (2 * h))
        slopes.append((model.stored_energy(u + step, fields)
                       - model.stored_energy(u - step, fields)) / (2 * h))
    assert np.abs(K - np.array(columns).T).max() < 1e-6 * np.abs(K).max()
    assert np.abs(K - K.T).max() < 1e-12 * np.abs(K).max()
    forces = model.internal_forces(u, fields)[model.free_dofs]
    assert np.abs(forces - np.array(slopes)).max() < 1e-6 * np.abs(forces).max()


# ------------------------------------------------------------ gradients
@pytest.fixture
def beam():
    """A cantilever 2 x 0.4 of 12 quad8 cells with an interpolated model; its design
    (``scale``) has void cells (s = 1e-3), cells on the step and solid ones."""
    model = FiniteStrainElasticity(rectangle(6, 2, 2.0, 0.4, "quad8"), E=100.0, nu=0.3,
                                   void_beta=30.0, void_eta=0.1, **INTERPOLATED)
    model.fix("left")
    model.point_load("right", (0.0, -0.05), name="tip")
    return model


def design(n: int) -> np.ndarray:
    rng = np.random.default_rng(3)
    x = 0.6 + 0.4 * rng.random(n)
    x[[1, 7]] = 0.1   # void: s = 1e-3
    x[[3, 9]] = 0.45  # on the step: s ≈ 0.09
    return x


def objective(solution):
    return compliance(solution) + 3.0 * np.sum(solution.u ** 3)


def test_taylor_through_the_solve_in_the_density_and_e(beam):
    """Taylor remainders of a compliance through the Newton solve fall at rate 2 (Farrell
    et al., SIAM J. Sci. Comput. 35, 2013) in the density (through ``s = x³`` and
    ``γ(s)``) and in the per-cell E; central differences agree."""
    n = beam.mesh.n_cells
    x = design(n)
    assert 0.05 < void_step(0.45 ** 3, 30.0, 0.1) < 0.95
    by_density = lambda x: objective(beam.solve(scale=x ** 3))  # noqa: E731
    by_modulus = lambda E: objective(beam.solve(E=E, scale=x ** 3))  # noqa: E731
    E = 100.0 * (1 + 0.3 * np.random.default_rng(4).random(n))
    for fun, value in ((by_density, x), (by_modulus, E)):
        result = taylor_test(fun, value, verbose=False)
        assert result.rate > 1.9, result.table()
    assert check_grad(by_density, x, rtol=1e-5) < 1e-5


def test_void_cells_post_process_without_nan(beam):
    """A void cell's stresses and ``J`` are those of ``I + γH`` (γ ≈ 0): finite, ``J ≈ 1``;
    the Piola stress is the flux the residual balances."""
    x = design(beam.mesh.n_cells)
    solution = beam.solve(scale=x ** 3, loads={"tip": 4.0}, steps=2)
    J = solution.jacobian()
    assert np.all(np.isfinite(solution.von_mises())) and np.all(np.isfinite(J))
    assert np.abs(J[[1, 7]] - 1).max() < 1e-3
    _, u_q, H = beam._at_quadrature(solution.u, None)
    assert np.allclose(solution.first_piola_at_quadrature(),
                       beam.flux(u_q, H, solution.fields), rtol=1e-14, atol=0)


def test_without_a_scale_every_cell_is_solid(beam):
    """No ``scale``: the interpolated model solves as the plain one (γ = 1 everywhere)."""
    plain = FiniteStrainElasticity(beam.mesh, E=100.0, nu=0.3)
    plain.fix("left").point_load("right", (0.0, -0.05), name="tip")
    assert np.array_equal(beam.solve().u, plain.solve().u)


def test_parameters_of_the_interpolation_are_checked():
    mesh = rectangle(2, 1)
    with pytest.raises(ValueError, match="void_treatment must be one of"):
        FiniteStrainElasticity(mesh, void_treatment="linear")
    with pytest.raises(ValueError, match="void_eta .* must lie in"):
        FiniteStrainElasticity(mesh, void_eta=1.0, **INTERPOLATED)
    with pytest.raises(ValueError, match="void_beta .* must be a finite number > 0"):
        FiniteStrainElasticity(mesh, void_beta=0.0, **INTERPOLATED)


# ------------------------------------------------------------ what it is for
def test_void_under_a_bent_band_stops_newton_unless_interpolated():
    """A solid band 2 x 0.2 on top of void (s = 1e-4) in a 2 x 1 cantilever, bent by a tip
    load until its end hangs 1.75 down: the squashed void cells stop Newton halfway
    without the interpolation; with it Newton converges without cut-backs, and the tip
    moves as that of the band alone (void removed) to 2.5 % (the void's linear energy
    left over)."""
    def tip_load(model, corner):
        model.fix("left")
        model.point_load(lambda p: np.isclose(p[:, 0], 2.0) & np.isclose(p[:, 1], corner),
                         (0.0, -0.002))
        return int(np.argmin(np.hypot(model.mesh.points[:, 0] - 2.0,
                                      model.mesh.points[:, 1] - corner)))

    mesh = rectangle(20, 10, 2.0, 1.0, "quad4")
    s = np.where(mesh.cell_centroids()[:, 1] > 0.8, 1.0, 1e-4)
    newton = {"max_cutbacks": 3}
    plain = FiniteStrainElasticity(mesh, E=1.0, nu=0.3)
    tip_load(plain, 1.0)
    with pytest.raises(NewtonError) as failed:
        plain.solve(scale=s, steps=4, solver="lu", newton=newton)
    assert failed.value.load_factor < 0.6
    model = FiniteStrainElasticity(mesh, E=1.0, nu=0.3, **INTERPOLATED)
    tip = tip_load(model, 1.0)
    solution = model.solve(scale=s, steps=4, solver="lu", newton=newton)
    assert solution.report.cutbacks == []
    band = FiniteStrainElasticity(rectangle(20, 2, 2.0, 0.2, "quad4"), E=1.0, nu=0.3)
    band_tip = tip_load(band, 0.2)
    expected = band.solve(steps=4, solver="lu").displacement[band_tip]
    assert expected[1] < -1.7
    assert np.abs(solution.displacement[tip] - expected).max() < 0.025 * np.abs(expected).max()


# ------------------------------------------------------------ the physics' Newton defaults
def test_the_physics_newton_defaults_apply_key_by_key():
    """``newton_defaults`` fill the options a solve does not give: a subclass that
    defaults to 3 load steps takes 3, and given options override only their keys."""
    class Stepped(FiniteStrainElasticity):
        newton_defaults = {**FiniteStrainElasticity.newton_defaults, "steps": 3,
                           "adaptive": False}

    assert FiniteStrainElasticity.newton_defaults == {"line_search": "auto"}
    model = Stepped(rectangle(4, 1, 2.0, 0.5, "quad4"), E=50.0)
    model.fix("left").point_load("right", (0.0, -0.5))
    assert model.solve(warm_start=False).report.load_factors == pytest.approx(
        [0, 1 / 3, 2 / 3, 1])
    report = model.solve(warm_start=False, newton={"steps": 2}).report
    assert report.load_factors == pytest.approx([0, 0.5, 1])
    with pytest.raises(TypeError, match="unknown newton option"):
        model.solve(newton={"linesearch": "energy"})

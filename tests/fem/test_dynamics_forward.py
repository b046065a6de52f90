"""Structural dynamics, forward (fesens/fem/transient/dynamics.py): energy conservation
and period error of Newmark's average acceleration (T. J. R. Hughes, *The Finite Element
Method*, Dover 2000, §9.1 and §9.3), generalized-α with ρ∞ = 1 equal to it (Chung &
Hulbert, *J. Appl. Mech.* 60, 1993), a damped single-mode oscillator against its closed
form (Rayleigh damping: ζ = (c_M/ω + c_K ω)/2; A. K. Chopra, *Dynamics of Structures*,
§2.2 and §11.4), convergence orders in Δt, and refusals."""

import numpy as np
import pytest
from scipy.linalg import eigh

from fesens.fem.analysis import ModalAnalysis
from fesens.fem.transient.dynamics import DynamicProblem
from fesens.mesh.generators import rectangle
from fesens.physics import Elasticity

L, H, E, RHO = 4.0, 0.5, 100.0, 1.5


def _cantilever(nx=12, ny=2):
    model = Elasticity(rectangle(nx, ny, L, H), E=E, nu=0.3, plane="stress")
    model.fix("left")
    model.traction("right", (0.0, -1.0), name="tip")
    return model


def _first_mode(model):
    """ω₁ and the first mode on all dofs (mass-normalized), scaled to tip deflection 0.01."""
    modes = ModalAnalysis(model, 1).run(density=RHO)
    phi = modes.vectors[:, 0]
    return float(modes.omega[0]), 0.01 * phi / np.max(np.abs(phi))


def _energy(model, u, v):
    free = model.free_dofs
    K, M = model.stiffness("ff").tocsr(), model.mass(RHO).tocsr()
    uf, vf = u[free], v[free]
    return 0.5 * vf @ (M @ vf) + 0.5 * uf @ (K @ uf)


def _tip_dof(model):
    """The y dof of the upper right corner."""
    node = int(np.argmin(np.sum((model.mesh.points - [L, H]) ** 2, axis=1)))
    return 2 * node + 1


def test_average_acceleration_conserves_the_energy_of_an_undamped_system():
    """Hughes §9.1: the trapezoidal rule conserves ½vᵀMv + ½uᵀKu exactly for f = 0 (here
    to 1e-12 relative over 400 steps from a random start)."""
    model = _cantilever()
    rng = np.random.default_rng(0)
    n = model.dofmap.n_dofs
    problem = DynamicProblem(model, t_end=4.0, dt=0.01)
    energies = [_energy(model, u, v) for _, _, u, v, _ in
                problem.states(u0=1e-3 * rng.standard_normal(n),
                               v0=1e-3 * rng.standard_normal(n), density=RHO,
                               loads={"tip": 0.0})]
    assert len(energies) == 401
    assert np.max(np.abs(np.array(energies) / energies[0] - 1)) < 1e-12


def test_generalized_alpha_with_rho_inf_one_is_average_acceleration():
    """ρ∞ = 1: α_m = α_f = ½, γ = ½, β = ¼, the equation of motion averaged over each
    step; with a load history and damping the states agree to round-off."""
    model = _cantilever()
    rng = np.random.default_rng(1)
    n = model.dofmap.n_dofs
    kwargs = dict(u0=1e-3 * rng.standard_normal(n), v0=1e-3 * rng.standard_normal(n),
                  density=RHO, damping=(0.1, 0.003),
                  histories={"tip": lambda t: np.sin(3 * t)})
    newmark = DynamicProblem(model, t_end=2.0, dt=0.01)
    alpha = DynamicProblem(model, t_end=2.0, dt=0.01, scheme="generalized_alpha",
                           rho_inf=1.0)
    for a, b in zip(newmark.states(**kwargs), alpha.states(**kwargs), strict=True):
        scale = max(np.max(np.abs(a[4])), 1e-30)
        for x, y in zip(a[2:], b[2:], strict=True):
            assert np.max(np.abs(x - y)) <= 1e-9 * max(np.max(np.abs(x)), scale * 1e-3)


def _zero_crossing_period(times, signal):
    """Mean period from the first to the last downward-and-upward zero crossings
    (linear interpolation)."""
    s = np.sign(signal)
    idx = np.flatnonzero(s[:-1] * s[1:] < 0)
    crossings = times[idx] - signal[idx] * (times[idx + 1] - times[idx]) / (
        signal[idx + 1] - signal[idx])
    half_periods = len(crossings) - 1
    return 2 * (crossings[-1] - crossings[0]) / half_periods


@pytest.mark.parametrize("steps_per_period", [16, 32])
def test_cantilever_free_vibration_period_has_the_schemes_period_error(steps_per_period):
    """Started from the first mode, the tip moves in that mode alone; its period is the
    modal 2π/ω₁ lengthened by average acceleration's relative period error ≈ (ωΔt)²/12
    (Hughes §9.3; exactly ωΔt / (2 arctan(ωΔt/2)) − 1): measured elongation within 3% of
    (ωΔt)²/12 and within 1e-4 of the exact discrete period."""
    model = _cantilever()
    omega, phi = _first_mode(model)
    period = 2 * np.pi / omega
    dt = period / steps_per_period
    problem = DynamicProblem(model, times=dt * np.arange(10 * steps_per_period + 1))
    tip = _tip_dof(model)
    signal = np.array([u[tip] for _, _, u, _, _ in problem.states(u0=phi, density=RHO,
                                                                    loads={"tip": 0.0})])
    measured = _zero_crossing_period(problem.times, signal)
    x = omega * dt
    assert measured / period - 1 == pytest.approx(x ** 2 / 12, rel=0.03)
    assert measured == pytest.approx(period * x / (2 * np.arctan(x / 2)), rel=1e-4)


def _damped_mode_error(scheme, n_steps, **scheme_kwargs):
    """Max tip error over 3 periods of a damped single-mode oscillation (u0 = the first
    mode, v0 = 0) against u = e^(−ζωt) (cos ω_d t + ζ/√(1−ζ²) sin ω_d t) (Chopra §2.2), ζ
    of Rayleigh damping (Chopra §11.4)."""
    model = _cantilever()
    omega, phi = _first_mode(model)
    mass_damping, stiffness_damping = 0.08, 0.004
    zeta = 0.5 * (mass_damping / omega + stiffness_damping * omega)
    omega_d = omega * np.sqrt(1 - zeta ** 2)
    t_end = 3 * 2 * np.pi / omega
    problem = DynamicProblem(model, t_end=t_end, dt=t_end / n_steps, scheme=scheme,
                             **scheme_kwargs)
    tip = _tip_dof(model)
    errors = []
    for _, t, u, _, _ in problem.states(u0=phi, density=RHO, loads={"tip": 0.0},
                                        damping=(mass_damping, stiffness_damping)):
        exact = phi[tip] * np.exp(-zeta * omega * t) * (
            np.cos(omega_d * t) + zeta / np.sqrt(1 - zeta ** 2) * np.sin(omega_d * t))
        errors.append(abs(u[tip] - exact))
    return max(errors) / abs(phi[tip]), zeta


@pytest.mark.parametrize(("scheme", "kwargs", "order"), [
    ("newmark", {}, 2),
    ("generalized_alpha", {"rho_inf": 0.8}, 2),
    ("generalized_alpha", {"rho_inf": 0.0}, 2),
    ("newmark", {"gamma": 0.6, "beta": 0.3025}, 1),  # γ ≠ ½: first order (Hughes §9.1)
])
def test_damped_oscillation_follows_the_closed_form_at_the_schemes_order(scheme, kwargs,
                                                                        order):
    """The error at Δt halved three times falls at the scheme's order (fitted slope of log
    error over log Δt within 0.15); with 480 steps Newmark is within 1e-3 of the closed
    form."""
    steps = np.array([60, 120, 240, 480])
    results = [_damped_mode_error(scheme, n, **kwargs) for n in steps]
    errors = np.array([e for e, _ in results])
    assert 0.01 < results[0][1] < 0.2  # a lightly damped mode
    slope = np.polyfit(np.log(1.0 / steps), np.log(errors), 1)[0]
    assert abs(slope - order) < 0.15, (errors, slope)
    if order == 2 and scheme == "newmark":
        assert errors[-1] < 1e-3


def test_a_step_load_follows_modal_superposition_and_settles_at_the_static_deflection():
    """A suddenly applied constant load on an undamped model: the semi-discrete solution
    is u(t) = Σ_i φ_i φ_iᵀ f (1 − cos ω_i t) / ω_i² (Chopra §12.6; dense
    eigendecomposition), and average acceleration, symmetric in time, gives each mode
    exactly 1 − cos(n θ_i) with tan(θ_i / 2) = ω_i Δt / 2 (Hughes §9.3): the tip matches
    that to 1e-9 of the static deflection over 4000 steps; with mass damping the motion
    settles at the static solution."""
    model = _cantilever()
    static = model.solve().u
    tip = _tip_dof(model)
    free = model.free_dofs
    K, M = model.stiffness("ff").tocsr().toarray(), model.mass(RHO).tocsr().toarray()
    lam, phi = eigh(K, M)
    f = model.load_vector()[free]
    row = np.flatnonzero(free == tip)[0]
    modal = phi[row] * (phi.T @ f / lam)  # each mode's static part at the tip
    dt = 0.005
    theta = 2 * np.arctan(np.sqrt(lam) * dt / 2)
    undamped = DynamicProblem(model, t_end=20.0, dt=dt)
    for n, _, u, _, _ in undamped.states(density=RHO, at=range(0, 4001, 50)):
        exact = modal @ (1 - np.cos(n * theta))
        assert abs(u[tip] - exact) < 1e-9 * abs(static[tip]), n
    # c_M = 0.36: every underdamped mode decays as e^(−c_M t / 2), e^(−18) at t = 100
    problem = DynamicProblem(model, t_end=100.0, dt=0.05)
    settled = list(problem.states(at=[2000], density=RHO, damping=(0.36, 0.0)))
    assert settled[0][2][tip] == pytest.approx(static[tip], rel=1e-6)


def test_bad_input_is_refused_with_the_reason():
    model = _cantilever()
    with pytest.raises(ValueError, match="constant time step"):
        DynamicProblem(model, times=[0.0, 0.1, 0.3])
    with pytest.raises(ValueError, match="gamma >= 1/2"):
        DynamicProblem(model, t_end=1.0, dt=0.1, gamma=0.4)
    with pytest.raises(ValueError, match="rho_inf"):
        DynamicProblem(model, t_end=1.0, dt=0.1, scheme="generalized_alpha", rho_inf=1.5)
    with pytest.raises(ValueError, match="rho_inf only"):
        DynamicProblem(model, t_end=1.0, dt=0.1, scheme="generalized_alpha", beta=0.3)
    with pytest.raises(ValueError, match="unknown dynamic scheme"):
        DynamicProblem(model, t_end=1.0, dt=0.1, scheme="bdf2")
    problem = DynamicProblem(model, t_end=1.0, dt=0.1)
    with pytest.raises(ValueError, match="Rayleigh"):
        list(problem.states(damping=(-0.1, 0.0)))
    with pytest.raises(ValueError, match="u0"):
        list(problem.states(u0=np.ones(3)))
    model.fix("right", "x", value=0.01)
    explicit = DynamicProblem(model, t_end=1.0, dt=0.1, beta=0.0)
    with pytest.raises(ValueError, match="prescribed motion needs beta > 0"):
        list(explicit.states())
    with pytest.raises(ValueError, match="dirichlet_rates"):
        list(problem.states(dirichlet_rates=(0.0,)))

"""Prescribed motion ``u_c(t) = g φ(t)`` in a dynamic run (fesens/fem/transient/dynamics.py):
the base excitation of a spring–mass against its closed form, a rigid translation of a free
body, and the discrete adjoint's cotangents of ``g``, a ``φ`` table, its initial rates, the
coupling blocks' parameters and the damping (Taylor tests, central differences, the same
bits with checkpointing)."""

import numpy as np
import pytest

from fesens.ad import check_grad, getval, grad, taylor_test
from fesens.fem.transient.dynamics import DynamicProblem
from fesens.mesh import Mesh
from fesens.mesh.generators import rectangle
from fesens.physics import Elasticity, Truss

RHO, A_BAR, E_BAR, L_BAR = 1.5, 2.0, 3.0, 1.0
ACCELERATION = 0.7  # of the base: u_g(t) = a t² / 2


def _spring_mass(lumped):
    """One truss bar along x: node 0 the moving base (x prescribed g = a), node 1 free in
    x; every y fixed at 0. Returns the model and ``(m, m_fc, k)`` of the free dof."""
    mesh = Mesh(np.array([[0.0, 0.0], [L_BAR, 0.0]]), np.array([[0, 1]]), "line2")
    model = Truss(mesh, A=A_BAR, E=E_BAR)
    model.fix(lambda p: p[:, 0] < 1e-9, "x", value=ACCELERATION)
    model.fix(lambda p: np.ones(len(p), bool), "y")
    mass = RHO * A_BAR * L_BAR
    m, m_fc = (mass / 2, 0.0) if lumped else (mass / 3, mass / 6)
    return model, (m, m_fc, E_BAR * A_BAR / L_BAR)


def _free_x(model):
    return 2  # node 1, component x


@pytest.mark.parametrize("lumped", [True, False])
def test_base_excitation_of_a_spring_mass_is_the_step_response(lumped):
    """Relative motion ``w = u − u_g`` under a constant ground acceleration ``a``:
    ``m ẅ + k w = −(m + m_fc) a`` (Chopra, *Dynamics of Structures*, §1.7: earthquake
    excitation as an effective force; the consistent mass adds its coupling ``m_fc``), a
    step force from rest: ``w = −u_st (1 − cos ω t)``, ``u_st = (m + m_fc) a / k``,
    ``ω² = k / m`` (Chopra §4.3). Newmark's average acceleration reproduces it exactly
    with the phase ``θ = 2 arctan(ω Δt / 2)`` per step (Hughes, *The Finite Element
    Method*, §9.1); ``u_g`` is quadratic, so the prescribed motion's update is exact."""
    model, (m, m_fc, k) = _spring_mass(lumped)
    omega, u_st = np.sqrt(k / m), (m + m_fc) * ACCELERATION / k
    dt, n_steps = 0.02, 400
    problem = DynamicProblem(model, t_end=dt * n_steps, dt=dt, lumped=lumped)
    theta = 2 * np.arctan(omega * dt / 2)
    dof = _free_x(model)
    for n, t, u, v, a in problem.states(density=RHO, dirichlet_history=lambda t: t ** 2 / 2,
                                        dirichlet_rates=(0.0, 1.0)):
        assert u[0] == pytest.approx(ACCELERATION * t ** 2 / 2, rel=1e-12, abs=1e-15)
        assert v[0] == pytest.approx(ACCELERATION * t, rel=1e-12, abs=1e-15)
        # the update recovers a_c from differences of u_c ~ a t² / 2 over β Δt²: rounding of
        # ε (t / Δt)² per step, which average acceleration does not damp
        assert a[0] == pytest.approx(ACCELERATION, rel=1e-7)
        relative = u[dof] - ACCELERATION * t ** 2 / 2
        assert relative == pytest.approx(-u_st * (1 - np.cos(n * theta)), abs=1e-11), n
        # and the continuous solution, within the scheme's O(Δt²) phase error
        assert abs(relative + u_st * (1 - np.cos(omega * t))) < 2e-2 * u_st


@pytest.mark.parametrize("scheme", [{"scheme": "newmark"},
                                    {"scheme": "generalized_alpha", "rho_inf": 0.8}])
def test_damped_base_excitation_settles_like_the_closed_form(scheme):
    """With stiffness-proportional damping ``c = c_K k`` (a dashpot between base and mass,
    acting on the relative velocity) the coupling ``C_fc v_g`` enters too: the damped step
    response ``w = −u_st (1 − e^(−ζωt) (cos ω_D t + ζ/√(1 − ζ²) sin ω_D t))``, ``ζ = c /
    (2 m ω)`` (Chopra §1.7 and §4.3, lumped mass), within the scheme's O(Δt²) error.
    (Mass-proportional damping acts on the absolute velocity: not Chopra's form.)"""
    model, (m, _, k) = _spring_mass(True)
    omega, u_st = np.sqrt(k / m), m * ACCELERATION / k
    c_M, c_K = 0.0, 0.05
    zeta = (c_M * m + c_K * k) / (2 * m * omega)
    omega_d = omega * np.sqrt(1 - zeta ** 2)
    problem = DynamicProblem(model, t_end=20.0, dt=0.01, lumped=True, **scheme)
    dof = _free_x(model)
    for _, t, u, _, _ in problem.states(density=RHO, damping=(c_M, c_K),
                                        dirichlet_history=lambda t: t ** 2 / 2,
                                        dirichlet_rates=(0.0, 1.0), at=range(0, 2001, 40)):
        exact = -u_st * (1 - np.exp(-zeta * omega * t) * (
            np.cos(omega_d * t) + zeta / np.sqrt(1 - zeta ** 2) * np.sin(omega_d * t)))
        assert abs(u[dof] - ACCELERATION * t ** 2 / 2 - exact) < 2e-3 * u_st, t


def _plate():
    """An 8 × 2 plane-stress plate whose left edge is prescribed (x and y)."""
    model = Elasticity(rectangle(8, 2, 4.0, 0.5), E=100.0, nu=0.3, plane="stress")
    model.fix("left")
    model.traction("right", (0.0, -1.0), name="tip")
    return model


@pytest.mark.parametrize("scheme", [{"scheme": "newmark"},
                                    {"scheme": "generalized_alpha", "rho_inf": 0.5}])
def test_a_rigid_translation_of_the_support_carries_the_body_rigidly(scheme):
    """A body moving at constant velocity ``V`` with its support: ``u = V t`` everywhere is
    the exact solution (``K`` and stiffness-proportional damping do no work on a rigid
    motion, no acceleration), and the schemes reproduce it to rounding with a consistent
    mass whose ``M_fc`` couples the support. Without the initial rate ``φ̇_0 = 1`` the
    support's acceleration would oscillate from step to step and shake the body."""
    model = Elasticity(rectangle(8, 2, 4.0, 0.5), E=100.0, nu=0.3, plane="stress")
    model.fix("left")
    V = np.array([0.3, -0.2])
    g = np.tile(V, model.constrained_dofs.size // 2)
    assert np.array_equal(model.constrained_dofs % 2, np.tile([0, 1], len(g) // 2))
    problem = DynamicProblem(model, t_end=5.0, dt=0.05, **scheme)
    everywhere = np.tile(V, model.dofmap.n_dofs // 2)
    for _, t, u, v, a in problem.states(dirichlet=g, dirichlet_history=lambda t: t,
                                        dirichlet_rates=(1.0, 0.0), v0=everywhere,
                                        damping=(0.0, 0.01), density=2.0):
        assert np.allclose(u, everywhere * t, rtol=0, atol=1e-12)
        assert np.allclose(v, everywhere, rtol=0, atol=1e-11)
        assert np.allclose(a, 0.0, rtol=0, atol=1e-9)
    shaken = list(problem.states(dirichlet=g, dirichlet_history=lambda t: t, v0=everywhere,
                                 at=[100]))
    assert np.max(np.abs(shaken[0][2] - everywhere * 5.0)) > 1e-3


N_STEPS, T_END = 120, 6.0
TABLE = np.array([0.0, 1.0, 2.5, 6.0])
SCHEMES = {"newmark": {}, "generalized_alpha": {"rho_inf": 0.6}}


def _parameters(model):
    rng = np.random.default_rng(5)
    n_cells, n_dofs = model.mesh.n_cells, model.dofmap.n_dofs
    return {
        "g": 0.05 * rng.standard_normal(model.constrained_dofs.size),
        "phi": np.array([0.0, 0.8, -0.3, 0.5]),
        "rates": np.array([0.2, -0.1]),
        "E": 100.0 * (1.0 + 0.3 * rng.random(n_cells)),
        "rho": 1.0 + 0.2 * rng.random(n_cells), "cM": 0.05, "cK": 0.004,
        "w": 1.0 + rng.random(n_dofs),
    }


def _objective(problem, aggregate):
    def J(p):
        values = problem.values(lambda u, t, w: np.sum(w * u ** 2), term_args=(p["w"],),
                                dirichlet=p["g"], dirichlet_history=(TABLE, p["phi"]),
                                dirichlet_rates=p["rates"], density=p["rho"],
                                damping=(p["cM"], p["cK"]), E=p["E"])
        return aggregate(values)
    return J


def _integral(values):
    dt = T_END / N_STEPS
    return dt * (np.sum(values) - 0.5 * (values[0] + values[-1]))


def _ks_peak(values, rho=20.0):
    shift = float(np.max(getval(values)))
    return shift + np.log(np.sum(np.exp(rho * (values - shift)))) / rho


@pytest.mark.parametrize("key", ["g", "phi", "rates", "E", "rho", "cM", "cK"])
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_gradient_of_the_prescribed_motion_and_what_it_couples(scheme, key):
    """Taylor remainder rate 2 and finite differences along a random direction."""
    model = _plate()
    problem = DynamicProblem(model, t_end=T_END, dt=T_END / N_STEPS, scheme=scheme,
                             **SCHEMES[scheme])
    J, p = _objective(problem, _integral), _parameters(model)

    def along(x):
        return J({**p, key: x})

    x0 = p[key]
    # The initial rates force the run at the highest frequency the scheme resolves, which
    # the plate hardly follows: J moves by 1e-5 per unit rate, near the rounding of the
    # accelerations (Δt⁻² times that of u). J is a quadratic in them (u affine), so large
    # steps carry no truncation: Taylor steps from 20.
    rates = key == "rates"
    step = 0.1 * abs(x0) if np.ndim(x0) == 0 else 20.0 if rates else None
    result = taylor_test(along, x0, step=step, verbose=False)
    assert result.rate > 1.9, result.table()
    # the difference's step and tolerance from the round-off measured on J itself (large
    # for the rates): a fixed step drifts past a fixed tolerance with the machine's kernels
    check_grad(along, x0, n_directions=1, rtol=1e-6, seed=7)


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_checkpointing_gives_the_same_bits(scheme):
    def gradients(max_states):
        model = _plate()
        problem = DynamicProblem(model, t_end=T_END, dt=T_END / N_STEPS, scheme=scheme,
                                 max_states=max_states, **SCHEMES[scheme])
        p = _parameters(model)
        J = _objective(problem, _ks_peak)
        return grad(lambda q: J({**p, **q}))(p)

    stored = gradients(None)
    for s in (2, 5):
        checkpointed = gradients(s)
        for key, value in stored.items():
            assert np.array_equal(checkpointed[key], value), (s, key)


def test_a_zero_prescribed_motion_changes_nothing():
    """``dirichlet`` of zeros takes the prescribed path; its run is the homogeneous one."""
    model = _plate()
    problem = DynamicProblem(model, t_end=1.0, dt=0.05)
    zero = np.zeros(model.constrained_dofs.size)

    def run(**kw):
        return problem.values(lambda u, t: np.sum(u ** 2), u0=0.01, **kw)

    assert np.allclose(run(dirichlet=zero), run(), rtol=1e-13, atol=1e-16)

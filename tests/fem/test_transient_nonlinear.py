"""Transient nonlinear heat conduction ``C Ṫ + R_int(T) = f(t)``, ``k(T) = k0 (1 + β (T −
T_ref))`` (fesens/fem/transient/nonlinear_steps.py): the linear limit β = 0 against the
linear run, closed forms (a uniform field heated uniformly; the long-time limit, the
steady Kirchhoff-transform solution of Carslaw & Jaeger, *Conduction of Heat in Solids*,
2nd ed., 1959, §1.15), backward Euler's time convergence rate, and the discrete
adjoint's gradients (Taylor tests and central differences) over 50 steps."""

from __future__ import annotations

import numpy as np
import pytest

from fesens.ad import check_grad, taylor_test, value_and_grad
from fesens.errors import NewtonError
from fesens.fem.transient import TransientProblem
from fesens.mesh.generators import rectangle
from fesens.physics import HeatConduction
from fesens.physics.nonlinear_conduction import NonlinearHeatConduction
from tests.physics.test_nonlinear_conduction import kirchhoff_rod

BETA = 0.5


def _plate(beta=BETA, linear=False, nx=6, ny=3):
    """A plate held at 0.5 on its left side, heated by a source (name ``q``) and a flux
    into its right side (``f``)."""
    mesh = rectangle(nx, ny, 1.0, 0.5)
    if linear:
        model = HeatConduction(mesh, conductivity=2.0)
        model.flux("right", 1.0, name="f")
    else:
        model = NonlinearHeatConduction(mesh, conductivity=2.0, beta=beta)
        model.flux_load("right", 1.0, name="f")
    model.fix("left", value=0.5)
    model.heat_source(3.0, name="q")
    return model


def _pulse(t):
    return np.cos(10 * t)


def _squares(T, t):
    return np.sum(T ** 2)


@pytest.mark.parametrize("scheme", ["backward_euler", "crank_nicolson", "bdf2"])
def test_beta_zero_is_the_linear_run(scheme):
    """k(T) = k0: the values and the fields of every level equal the linear transient
    run's (same scheme, same steps, a time-varying source and a prescribed value)."""
    runs = [TransientProblem(model, t_end=0.2, dt=0.01, scheme=scheme)
            for model in (_plate(beta=0.0), _plate(linear=True))]
    inputs = {"T0": 0.2, "heat_capacity": 3.0, "histories": {"q": _pulse}}
    nonlinear, linear = (run.values(_squares, **inputs) for run in runs)
    assert np.max(np.abs(nonlinear - linear)) < 1e-10 * np.max(np.abs(linear))
    for (_, _, a), (_, _, b) in zip(*(run.states(**inputs) for run in runs), strict=True):
        assert np.max(np.abs(a - b)) < 1e-10
    assert runs[0].stats["newton_iterations"] > 0


@pytest.mark.parametrize("scheme", ["backward_euler", "crank_nicolson", "bdf2"])
def test_uniform_heating_follows_the_lumped_balance(scheme):
    """A uniform source Q and the left side held on the lumped solution: the field stays
    uniform (∇T = 0, so k(T) plays no part) and ρc dT/dt = Q gives T = T0 + Q t / ρc,
    which every scheme integrates exactly (T is linear in t); β is large enough to matter
    if ∇T were not zero. (With no side held at all the model is refused as singular.)"""
    model = NonlinearHeatConduction(rectangle(4, 2, 1.0, 0.5), conductivity=2.0, beta=2.0)
    model.fix("left", value=1.0)
    model.heat_source(3.0)
    problem = TransientProblem(model, t_end=1.0, dt=0.1, scheme=scheme)
    for _, t, T in problem.states(T0=1.0, heat_capacity=4.0,
                                  dirichlet_history=lambda t: 1.0 + 3.0 * t / 4.0):
        assert np.max(np.abs(T - (1.0 + 3.0 * t / 4.0))) < 1e-12


def test_long_times_reach_the_kirchhoff_steady_state():
    """A rod at 2, its ends held at 1 and 3: at long times backward Euler settles on the
    steady solution, whose vertex values on a strip of quad4 cells are those of the
    Kirchhoff transform's closed form (Carslaw & Jaeger §1.15); the steady solve of the
    same model agrees."""
    mesh = rectangle(6, 1, 1.0, 1.0 / 6)
    model = NonlinearHeatConduction(mesh, conductivity=2.0, beta=BETA)
    model.fix("left", value=1.0)
    model.fix("right", value=3.0)
    problem = TransientProblem(model, t_end=3.0, dt=0.1, scheme="backward_euler")
    ((_, _, T),) = problem.states(T0=2.0, at=[30])
    x = mesh.points[:, 0]
    assert np.max(np.abs(T - kirchhoff_rod(x))) < 1e-8
    assert np.max(np.abs(T - model.solve().temperature)) < 1e-10


def _final(model, scheme, n_steps, t_end=0.2):
    problem = TransientProblem(model, t_end=t_end, dt=t_end / n_steps, scheme=scheme)
    x = model.mesh.points[:, 0]
    ((_, _, T),) = problem.states(T0=0.5 + np.sin(np.pi * x), at=[n_steps],
                                  histories={"q": lambda t: np.cos(20 * t)})
    return T


def test_backward_euler_converges_at_first_order():
    """The error at t = 0.2 against BDF2 with 1280 steps on the same mesh falls as Δt
    (fitted slope of log error over log Δt for Δt halved three times, within 0.15)."""
    model = NonlinearHeatConduction(rectangle(20, 1, 1.0, 0.05), conductivity=1.0,
                                    beta=1.0)
    model.fix("left", value=0.5)
    model.fix("right", value=0.5)
    model.heat_source(4.0, name="q")
    reference = _final(model, "bdf2", 1280)
    steps = np.array([10, 20, 40, 80])
    errors = [np.max(np.abs(_final(model, "backward_euler", n) - reference)) for n in steps]
    slope = np.polyfit(np.log(0.2 / steps), np.log(errors), 1)[0]
    assert abs(slope - 1.0) < 0.15, (errors, slope)


def _objective(problem, wrt, x, rho):
    """A weighted sum of the level values over 50 steps as a function of one input."""
    weights = np.linspace(0.5, 1.5, problem.n_steps + 1)
    density = x if wrt == "density" else rho
    inputs = {"T0": 0.2 + 0.1 * np.arange(problem.model.dofmap.n_dofs) / 40,
              "heat_capacity": 3.0 * density, "scale": 0.1 + density ** 3,
              "histories": {"q": _pulse}}
    if wrt == "loads":
        inputs["loads"] = {"q": x[0], "f": x[1]}
    elif wrt == "T0":
        inputs["T0"] = x
    elif wrt == "dirichlet":
        inputs["dirichlet"] = x
    elif wrt == "points":
        inputs["points"] = x
    return np.sum(weights * problem.values(_squares, **inputs))


@pytest.mark.parametrize(("wrt", "scheme", "max_states"), [
    ("density", "backward_euler", None),
    ("density", "bdf2", 4),
    ("loads", "backward_euler", None),
    ("T0", "crank_nicolson", None),
    ("T0", "backward_euler", 5),
    ("dirichlet", "backward_euler", None),
    ("points", "crank_nicolson", None),
])
def test_gradients_pass_taylor_tests_and_central_differences(wrt, scheme, max_states):
    """50 steps: the remainder of the first-order Taylor expansion falls at rate 2, and
    the gradient along the test's direction matches a central difference (rel. 1e-6);
    with ``max_states`` the states are recomputed from snapshots; ``points``: the node
    coordinates (shape)."""
    model = _plate()
    problem = TransientProblem(model, t_end=0.2, dt=0.004, scheme=scheme,
                               max_states=max_states)
    rng = np.random.default_rng(3)
    rho = 0.5 + 0.5 * rng.random(model.mesh.n_cells)
    x = {"density": rho, "loads": np.array([1.0, 1.0]),
         "T0": 0.2 + 0.1 * rng.random(model.dofmap.n_dofs),
         "dirichlet": 0.5 + 0.1 * rng.random(model.constrained_dofs.size),
         "points": model.mesh.points.copy()}[wrt]
    direction = rng.standard_normal(np.shape(x)) * (0.05 if wrt == "points" else 1.0)

    def fun(value):
        return _objective(problem, wrt, value, rho)

    result = taylor_test(fun, x, direction, verbose=False)
    assert np.all(result.rates[1:] > 1.9), result
    _, gradient = value_and_grad(fun)(x)
    if max_states is not None:  # recomputed states: the same bits as stored ones
        assert problem.stats["advanced"] > 0
        stored = TransientProblem(model, t_end=0.2, dt=0.004, scheme=scheme)
        _, kept = value_and_grad(lambda value: _objective(stored, wrt, value, rho))(x)
        assert np.array_equal(gradient, kept)
    # step and tolerance from the round-off measured on the function itself: a fixed
    # step's central difference drifts past a fixed tolerance with the floating-point
    # kernels of the machine
    check_grad(lambda t: fun(x + t * direction), 0.0, n_directions=1, rtol=1e-6)


def test_a_step_that_does_not_converge_names_it():
    """k(T) ≤ 0 reached within a step (β < 0 and a strong source): NewtonError names the
    time step and the remedy, and keeps the last converged field."""
    model = NonlinearHeatConduction(rectangle(4, 2, 1.0, 0.5), conductivity=1.0, beta=-1.0)
    model.fix("left")
    model.heat_source(200.0)
    problem = TransientProblem(model, t_end=0.1, dt=0.05, scheme="backward_euler")
    with pytest.raises(NewtonError, match="time step 1 .*smaller time steps") as error:
        problem.values(_squares)
    assert error.value.state.shape == (model.dofmap.n_dofs,)


def test_newton_options_are_refused_for_a_linear_model():
    with pytest.raises(ValueError, match="nonlinear model"):
        TransientProblem(_plate(linear=True), t_end=0.1, dt=0.05, newton={"rtol": 1e-8})

"""Transient heat conduction, forward (fesens/fem/transient): closed-form solutions of
Carslaw & Jaeger, *Conduction of Heat in Solids*, 2nd ed. (1959), the time convergence
rates of the schemes, one factorization per distinct step matrix, and the input errors."""

import numpy as np
import pytest
from scipy.special import erfc

from fesens.errors import NonFiniteError
from fesens.fem.transient import TransientProblem
from fesens.mesh.generators import rectangle
from fesens.physics import HeatConduction
from fesens.solvers.base import LinearSolver


def _strip(nx, length=1.0, width=0.02, **kwargs):
    """A thin strip along x: 1D conduction (insulated top and bottom)."""
    model = HeatConduction(rectangle(nx, 1, length, width), **kwargs)
    return model, model.mesh.points[:, 0]


def _slab_series(t, x, diffusivity, length=1.0, n_terms=2000):
    """Slab 0 < x < L, initially at 1, both faces held at 0 (Carslaw & Jaeger §3.3):
    ``T = 4/π Σ_(m odd) sin(mπx/L) exp(−a m²π² t / L²) / m``."""
    m = np.arange(1, n_terms, 2)[:, None]
    terms = np.sin(m * np.pi * x / length) * np.exp(-diffusivity * (m * np.pi / length) ** 2 * t)
    return 4 / np.pi * np.sum(terms / m, axis=0)


@pytest.mark.parametrize("scheme", ["bdf2", "crank_nicolson", "backward_euler"])
def test_slab_cooling_follows_the_series_solution(scheme):
    """κ = 2, ρ c = 4 (a = 1/2), 60 cells, Δt = 5e-4: within 2.5e-3 of the series at
    t = 0.02, 0.05, 0.2 (backward Euler's first-order error dominates its share)."""
    model, x = _strip(60, conductivity=2.0)
    model.fix("left")
    model.fix("right")
    problem = TransientProblem(model, t_end=0.2, dt=5e-4, scheme=scheme)
    seen = []
    for n, t, T in problem.states(T0=1.0, at=[40, 100, 400], density=1.0, heat_capacity=4.0):
        seen.append(n)
        assert t == pytest.approx(n * 5e-4)
        assert np.max(np.abs(T - _slab_series(t, x, 0.5))) < 2.5e-3
    assert seen == [40, 100, 400]


def test_semi_infinite_body_after_a_surface_step_follows_erfc():
    """Surface raised to 1 at t = 0 on a body at 0 (Carslaw & Jaeger §2.4):
    ``T = erfc(x / (2 √(a t)))``; the far face (x = 1) is 10 diffusion lengths away at
    t = 0.01, so the bar is semi-infinite there."""
    model, x = _strip(200, width=0.01)
    model.fix("left", value=1.0)
    model.fix("right")
    problem = TransientProblem(model, t_end=0.01, dt=2.5e-5, scheme="bdf2")
    for _, t, T in problem.states(at=[100, 400]):
        assert np.max(np.abs(T - erfc(x / (2 * np.sqrt(t))))) < 5e-4


def _final_field(model, scheme, n_steps, t_end=0.2, **kwargs):
    x = model.mesh.points[:, 0]
    problem = TransientProblem(model, t_end=t_end, dt=t_end / n_steps, scheme=scheme)
    ((_, _, T),) = problem.states(T0=np.sin(np.pi * x), at=[n_steps],
                                  histories={"q": lambda t: np.cos(20 * t)}, **kwargs)
    return T


@pytest.mark.parametrize(("scheme", "order"),
                         [("backward_euler", 1), ("crank_nicolson", 2), ("bdf2", 2)])
def test_time_convergence_rates(scheme, order):
    """Smooth start, a heat source varying as cos(20 t); the error at t = 0.2 against
    BDF2 with 5120 steps on the same mesh falls at the scheme's order (fitted slope of
    log error over log Δt for Δt halved four times, within 0.15)."""
    model, _ = _strip(30, width=0.05)
    model.fix("left")
    model.fix("right")
    model.heat_source(1.0, name="q")
    reference = _final_field(model, "bdf2", 5120)
    steps = np.array([10, 20, 40, 80, 160])
    errors = [np.max(np.abs(_final_field(model, scheme, n) - reference)) for n in steps]
    slope = np.polyfit(np.log(0.2 / steps), np.log(errors), 1)[0]
    assert abs(slope - order) < 0.15, (errors, slope)


def test_variable_step_bdf2_is_second_order():
    """Steps growing geometrically (ratio 1.05) and refined by halving every step:
    second order too (the variable-step BDF2 coefficients)."""
    model, _ = _strip(30, width=0.05)
    model.fix("left")
    model.fix("right")
    model.heat_source(1.0, name="q")
    x = model.mesh.points[:, 0]
    reference = _final_field(model, "bdf2", 5120)
    errors = []
    for n in (20, 40, 80, 160):
        base = 1.05 ** np.arange(20)
        steps = np.repeat(base, n // 20) / (n // 20)
        times = np.concatenate([[0.0], np.cumsum(steps)]) * 0.2 / np.sum(steps)
        problem = TransientProblem(model, times=times, scheme="bdf2")
        ((_, _, T),) = problem.states(T0=np.sin(np.pi * x), at=[n],
                                      histories={"q": lambda t: np.cos(20 * t)})
        errors.append(np.max(np.abs(T - reference)))
    slope = np.polyfit(np.log([20, 40, 80, 160]), np.log(errors), 1)[0]
    assert abs(slope + 2) < 0.15, (errors, slope)


@pytest.fixture
def counted_factorizations(monkeypatch):
    calls = []
    original = LinearSolver.factorize

    def counting(self, A):
        calls.append(A.shape)
        return original(self, A)

    monkeypatch.setattr(LinearSolver, "factorize", counting)
    return calls


@pytest.mark.parametrize(("scheme", "expected"),
                         [("crank_nicolson", 1), ("backward_euler", 1), ("bdf2", 2)])
def test_a_constant_step_factorizes_once(counted_factorizations, scheme, expected):
    """θ-method: one matrix M/Δt + θK for the whole run; BDF2: its backward Euler start
    and (3/2) M/Δt + K. A second run with the same parameters factorizes nothing."""
    model, _ = _strip(10)
    model.fix("left")
    problem = TransientProblem(model, t_end=1.0, dt=0.01, scheme=scheme)
    list(problem.states(T0=1.0))
    assert len(counted_factorizations) == expected
    assert problem.stats["factorizations"] == expected
    list(problem.states(T0=2.0))
    assert len(counted_factorizations) == expected
    list(problem.states(T0=2.0, conductivity=3.0))
    assert len(counted_factorizations) == 2 * expected


def test_variable_steps_refactor_only_for_new_step_sizes(counted_factorizations):
    """Steps alternating between two sizes: two factorizations, not one per step."""
    model, _ = _strip(10)
    model.fix("left")
    times = np.concatenate([[0.0], np.cumsum(np.tile([0.01, 0.03], 20))])
    problem = TransientProblem(model, times=times, scheme="crank_nicolson")
    list(problem.states(T0=1.0))
    assert len(counted_factorizations) == 2


def test_time_varying_prescribed_values_and_loads_by_table():
    """A table (times, values) is interpolated linearly: a face temperature ramped from
    0 to 1 over [0, 1] and held equals a callable of the same ramp, to the bit."""
    model, _ = _strip(10)
    model.fix("left", value=1.0)
    model.fix("right")
    problem = TransientProblem(model, t_end=2.0, dt=0.1, scheme="bdf2")
    by_table = [T for *_, T in problem.states(dirichlet_history=([0.0, 1.0], [0.0, 1.0]))]
    by_callable = [T for *_, T in problem.states(dirichlet_history=lambda t: min(t, 1.0))]
    assert np.array_equal(np.array(by_table), np.array(by_callable))
    assert by_table[5][0] == pytest.approx(0.5) and by_table[-1][0] == 1.0


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"t_end": 1.0, "dt": 0.0}, ValueError, "dt must be > 0"),
    ({"t_end": 1.0, "dt": -0.1}, ValueError, "dt must be > 0"),
    ({"t_end": 0.0, "dt": 0.1}, ValueError, "t_end must be after t_start"),
    ({"t_end": 1.0, "dt": 0.3}, ValueError, "does not divide"),
    ({"t_end": np.nan, "dt": 0.1}, NonFiniteError, "t_end"),
    ({"times": [0.0, 0.2, 0.2, 0.3]}, ValueError, "increase strictly"),
    ({"times": [0.0, np.nan]}, NonFiniteError, "times"),
    ({"t_end": 1.0, "dt": 0.1, "max_states": 1}, ValueError, "max_states must be >= 2"),
    ({"t_end": 1.0, "dt": 0.1, "scheme": "rk4"}, ValueError, "unknown time scheme"),
    ({"t_end": 1.0, "dt": 0.1, "scheme": "theta", "theta": 0.3}, ValueError, "theta"),
])
def test_bad_time_settings_are_refused(kwargs, error, match):
    model, _ = _strip(4)
    model.fix("left")
    with pytest.raises(error, match=match):
        TransientProblem(model, **kwargs)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"histories": {"q": ([0.0, 1.0, 0.5], [0.0, 1.0, 2.0])}}, ValueError,
     "increase strictly"),
    ({"histories": {"q": ([0.0, 1.0], [0.0, np.nan])}}, NonFiniteError, "NaN"),
    ({"histories": {"q": lambda t: np.nan}}, NonFiniteError, "finite"),
    ({"histories": {"nope": lambda t: 1.0}}, ValueError, "unknown load term"),
    ({"dirichlet_history": ([0.0, 0.0], [1.0, 2.0])}, ValueError, "increase strictly"),
    ({"T0": np.zeros(3)}, ValueError, "T0 must be"),
    ({"T0": np.nan}, NonFiniteError, "T0"),
])
def test_bad_histories_and_initial_fields_are_refused(kwargs, error, match):
    model, _ = _strip(4)
    model.fix("left", value=1.0)
    model.heat_source(1.0, name="q")
    problem = TransientProblem(model, t_end=1.0, dt=0.1)
    with pytest.raises(error, match=match):
        list(problem.states(**kwargs))


def test_the_old_scheme_names_warn_and_give_the_records_coefficients():
    import fesens.fem.transient as transient
    from fesens.fem.transient import dynamics, schemes

    times = np.linspace(0.0, 1.0, 5)
    with pytest.deprecated_call(match="TIME_SCHEMES"):
        assert "bdf2" in transient.SCHEMES
    with pytest.deprecated_call(match="time_scheme"):
        old = schemes.step_coefficients(times, "theta", 0.7)
    assert np.array_equal(old.beta, schemes.time_scheme("theta").coefficients(
        times, theta=0.7).beta)
    with pytest.deprecated_call(match="time_scheme"):
        old = dynamics.newmark_coefficients(times, "generalized_alpha", rho_inf=0.5)
    assert old == schemes.time_scheme("generalized_alpha").coefficients(times, rho_inf=0.5)

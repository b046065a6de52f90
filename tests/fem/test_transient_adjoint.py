"""The discrete adjoint of a transient run (fesens/fem/transient/steps.py): Taylor
tests (remainder rate 2) and finite differences (``check_grad``: step and tolerance from
the measured round-off) for every kind of parameter over 200 steps, for ∫ Σ_set T² dt
(trapezoidal) and a KS peak over time; the gradient with binomial checkpointing is the
bit-for-bit gradient of the run that keeps every state, and recomputes the number of steps
of Griewank's schedule."""

import numpy as np
import pytest

from fesens.ad import check_grad, getval, grad, hvp, taylor_test, vjp
from fesens.fem.transient import TransientProblem, minimal_advances
from fesens.fem.transient.checkpointing import forward_snapshots
from fesens.mesh.generators import rectangle
from fesens.physics import HeatConduction

N_STEPS, T_END = 200, 0.4
TABLE = np.array([0.0, 0.1, 0.25, 0.4])


def _model(convection=True):
    """A 6 × 2 strip: 1 on the left, 0 on the right, a heat source, convection on top
    (or a flux there)."""
    model = HeatConduction(rectangle(6, 2, 1.0, 0.3))
    model.fix("left", value=1.0)
    model.fix("right")
    model.heat_source(2.0, name="q")
    if convection:
        model.convection("top", h=0.5, ambient=0.3)
    else:
        model.flux("top", 0.4)
    return model


def _parameters(model):
    rng = np.random.default_rng(3)
    n_cells, n_points = model.mesh.n_cells, model.mesh.n_points
    return {
        "kappa": 1.0 + 0.3 * rng.random(n_cells), "rho": 1.0 + 0.2 * rng.random(n_cells),
        "c": 1.5, "m": 1.2, "hq": np.array([0.0, 1.0, 0.5, 0.8]),
        "T0": 0.3 * rng.random(n_points), "g": model.prescribed_values() + 0.1,
        "hg": np.array([1.0, 0.8, 1.1, 0.9]), "h": 0.7, "ambient": 0.2,
        "w": 1.0 + rng.random(n_points),
    }


def _weighted_squares(T, t, w):
    return np.sum(w * T ** 2)


def _integral(values):
    """Trapezoidal ∫ j dt over the uniform levels."""
    dt = T_END / N_STEPS
    return dt * (np.sum(values) - 0.5 * (values[0] + values[-1]))


def _ks_peak(values, rho=20.0):
    """KS aggregate of the values over time, a smooth maximum."""
    shift = float(np.max(getval(values)))
    return shift + np.log(np.sum(np.exp(rho * (values - shift)))) / rho


def _objective(problem, aggregate, convection=True):
    def J(p):
        films = {"h": p["h"], "ambient": p["ambient"]} if convection else {}
        values = problem.values(_weighted_squares, term_args=(p["w"],), T0=p["T0"],
                                loads={"q": p["m"]}, histories={"q": (TABLE, p["hq"])},
                                dirichlet=p["g"], dirichlet_history=(TABLE, p["hg"]),
                                density=p["rho"], heat_capacity=p["c"],
                                conductivity=p["kappa"], points=p.get("X"), **films)
        return aggregate(values)
    return J


def _check(J, p, key):
    def along(x):
        return J({**p, key: x})

    x0 = p[key]
    result = taylor_test(along, x0, verbose=False)
    assert result.rate > 1.9, result.table()
    # step and tolerance from the round-off measured on the run itself: a fixed step's
    # central difference drifts past a fixed 1e-6 with the machine's floating-point kernels
    check_grad(along, x0, n_directions=1, rtol=1e-6, seed=7)


KINDS = ["kappa", "rho", "c", "m", "hq", "T0", "g", "hg", "h", "ambient", "w"]


@pytest.mark.parametrize("key", KINDS)
@pytest.mark.parametrize("aggregate", [_integral, _ks_peak], ids=["integral", "ks"])
def test_gradient_of_every_parameter_kind_bdf2(key, aggregate):
    model = _model()
    problem = TransientProblem(model, t_end=T_END, dt=T_END / N_STEPS, scheme="bdf2")
    _check(_objective(problem, aggregate), _parameters(model), key)


@pytest.mark.parametrize("scheme", ["crank_nicolson", "backward_euler"])
@pytest.mark.parametrize("key", ["kappa", "rho", "hq", "T0", "g", "hg"])
def test_gradient_of_the_theta_schemes(scheme, key):
    model = _model()
    problem = TransientProblem(model, t_end=T_END, dt=T_END / N_STEPS, scheme=scheme)
    _check(_objective(problem, _integral), _parameters(model), key)


def test_gradient_with_variable_steps():
    """Steps growing geometrically: several step matrices, variable-step BDF2."""
    model = _model()
    steps = 1.01 ** np.arange(N_STEPS)
    times = np.concatenate([[0.0], np.cumsum(steps)]) * T_END / np.sum(steps)
    problem = TransientProblem(model, times=times, scheme="bdf2")
    p = _parameters(model)
    for key in ("kappa", "rho", "g"):
        _check(_objective(problem, _ks_peak), p, key)


@pytest.mark.parametrize("convection", [True, False])
def test_shape_gradient(convection):
    """The node coordinates: through the assembly of K, M, the loads (the moved nodes
    keep their Dirichlet values); with and without the integrand rule of conduction
    (convection's facet matrices have none)."""
    model = _model(convection)
    problem = TransientProblem(model, t_end=T_END, dt=T_END / N_STEPS, scheme="bdf2")
    p = {**_parameters(model), "X": model.mesh.points.copy()}
    if not convection:
        del p["h"], p["ambient"]
    _check(_objective(problem, _integral, convection), p, "X")


def _gradients(max_states, scheme):
    model = _model()
    problem = TransientProblem(model, t_end=T_END, dt=T_END / N_STEPS, scheme=scheme,
                               max_states=max_states)
    p = _parameters(model)
    J = _objective(problem, _ks_peak)
    keys = ["kappa", "rho", "c", "m", "hq", "T0", "g", "hg", "w"]
    gradient = grad(lambda q: J({**p, **q}))({k: p[k] for k in keys})
    return gradient, problem.stats


@pytest.mark.parametrize("scheme", ["bdf2", "crank_nicolson"])
def test_checkpointing_gives_the_same_bits_and_the_theoretical_recomputations(scheme):
    stored, stats = _gradients(None, scheme)
    assert stats["advanced"] == stats["taped"] == 0
    for s in (2, 3, 7):
        checkpointed, stats = _gradients(s, scheme)
        for key, value in stored.items():
            assert np.array_equal(checkpointed[key], value), (s, key)
        spine = forward_snapshots(N_STEPS, s)
        # the forward sweep placed the first chain of snapshots; the gradient advanced
        # the rest of the schedule and re-ran only the last step before its adjoint (each
        # other adjoint step reads its state from the step reversed before it)
        assert stats["advanced"] + spine[-1] == minimal_advances(N_STEPS, s)
        assert stats["taped"] == 1


def test_the_gradient_run_keeps_at_most_max_states_snapshots():
    """What the forward sweep leaves for the gradient: every state without a budget, the
    schedule's snapshots under one (BDF2's hold two vectors each)."""
    model = _model()
    kappa = np.ones(model.mesh.n_cells)
    for scheme, per_snapshot in (("crank_nicolson", 1), ("bdf2", 2)):
        for max_states, most in ((None, N_STEPS + 1), (4, 4 * per_snapshot)):
            problem = TransientProblem(model, t_end=T_END, dt=T_END / N_STEPS,
                                       scheme=scheme, max_states=max_states)
            grad(lambda k, p=problem: np.sum(p.values(_weighted_squares, term_args=(1.0,),
                                                      conductivity=k)))(kappa)
            assert 0 < problem.stats["kept"] <= most
            problem.values(_weighted_squares, term_args=(1.0,))
            assert problem.stats["kept"] == 0  # plain runs keep nothing


def test_misuse_is_refused_with_the_fix():
    model = _model()
    problem = TransientProblem(model, t_end=T_END, dt=T_END / 10, scheme="bdf2")
    kappa = np.ones(model.mesh.n_cells)

    def closing_over(k):  # the traced weight reaches the step term by a closure
        return np.sum(problem.values(lambda T, t: k[0] * np.sum(T), conductivity=k))

    with pytest.raises(TypeError, match="term_args"):
        grad(closing_over)(kappa)
    with pytest.raises(ValueError, match="scalar"):
        problem.values(lambda T, t: T)
    with pytest.raises(NotImplementedError, match="second derivatives"):
        hvp(lambda k: np.sum(problem.values(_weighted_squares, term_args=(1.0,),
                                            conductivity=k)))(kappa, kappa)


@pytest.mark.parametrize("max_states", [None, 3])
def test_a_pullback_may_be_called_again(max_states):
    """The kept states live as long as the tape: a second cotangent gets its own exact
    answer (linear in the cotangent)."""
    model = _model()
    problem = TransientProblem(model, t_end=T_END, dt=T_END / 20, max_states=max_states)
    kappa = np.ones(model.mesh.n_cells)
    values, pull = vjp(lambda k: problem.values(_weighted_squares, term_args=(1.0,),
                                                conductivity=k), kappa)
    first = pull(np.ones(values.shape))
    assert np.allclose(pull(2 * np.ones(values.shape)), 2 * first, rtol=1e-12, atol=0)

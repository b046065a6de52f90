"""The discrete adjoint of a dynamic run (fesens/fem/transient/dynamics.py): Taylor tests
(remainder rate 2) and central differences for every kind of parameter over 200 steps of
Newmark and generalized-α, for ∫ Σ w u² dt (trapezoidal), a KS peak over time of a probe
displacement and the final probe value; the gradient with binomial checkpointing is the
bit-for-bit gradient of the run that keeps every state, with Griewank's recomputation
count (Griewank & Walther, ACM TOMS 26(1), 2000)."""

import numpy as np
import pytest

from fesens.ad import check_grad, getval, grad, hvp, taylor_test, vjp
from fesens.fem.transient import minimal_advances
from fesens.fem.transient.checkpointing import forward_snapshots
from fesens.fem.transient.dynamics import DynamicProblem
from fesens.mesh.generators import rectangle
from fesens.physics import Elasticity

N_STEPS, T_END = 200, 8.0
TABLE = np.array([0.0, 1.0, 3.0, 8.0])
SCHEMES = {"newmark": {}, "generalized_alpha": {"rho_inf": 0.6}}


def _model():
    """An 8 × 2 plane-stress cantilever with a tip traction."""
    model = Elasticity(rectangle(8, 2, 4.0, 0.5), E=100.0, nu=0.3, plane="stress")
    model.fix("left")
    model.traction("right", (0.0, -1.0), name="tip")
    return model


def _parameters(model):
    rng = np.random.default_rng(3)
    n_cells, n_dofs = model.mesh.n_cells, model.dofmap.n_dofs
    return {
        "E": 100.0 * (1.0 + 0.3 * rng.random(n_cells)),
        "x": 0.5 + 0.5 * rng.random(n_cells),  # SIMP design: E x³, ρ x
        "rho": 1.0 + 0.2 * rng.random(n_cells), "cM": 0.05, "cK": 0.004, "m": 1.2,
        "hq": np.array([0.0, 1.0, 0.5, 0.8]),
        "u0": 0.01 * rng.random(n_dofs), "v0": 0.01 * rng.random(n_dofs),
        "w": 1.0 + rng.random(n_dofs),
    }


def _tip_dof(model):
    node = int(np.argmax(model.mesh.points[:, 0] + model.mesh.points[:, 1]))
    return 2 * node + 1


def _weighted_squares(u, t, w):
    return np.sum(w * u ** 2)


def _integral(values):
    """Trapezoidal ∫ j dt over the uniform levels."""
    dt = T_END / N_STEPS
    return dt * (np.sum(values) - 0.5 * (values[0] + values[-1]))


def _ks_peak(values, rho=20.0):
    """KS aggregate of the values over time, a smooth maximum."""
    shift = float(np.max(getval(values)))
    return shift + np.log(np.sum(np.exp(rho * (values - shift)))) / rho


def _final(values):
    return values[-1]


def _objective(problem, aggregate, term="squares"):
    tip = _tip_dof(problem.model)

    def step_term(u, t, w):
        if term == "squares":
            return _weighted_squares(u, t, w)
        return w[tip] * u[tip] ** 2 if term == "probe_squared" else w[tip] * u[tip]

    def J(p):
        values = problem.values(step_term, term_args=(p["w"],), u0=p["u0"], v0=p["v0"],
                                loads={"tip": p["m"]}, histories={"tip": (TABLE, p["hq"])},
                                density=p["rho"] * p["x"], damping=(p["cM"], p["cK"]),
                                E=p["E"] * p["x"] ** 3, points=p.get("X"))
        return aggregate(values)
    return J


def _check(J, p, key):
    def along(x):
        return J({**p, key: x})

    x0 = p[key]
    # scalars: 10% of their value; coordinates: 1e-3 (the default 1% of the beam's length
    # still carries third-order terms at the first step: rates 1.89, 1.95, 1.97, 1.99)
    step = (0.1 * float(np.max(np.abs(x0))) if np.ndim(x0) == 0
            else 1e-3 if key == "X" else None)
    result = taylor_test(along, x0, step=step, verbose=False)
    assert result.rate > 1.9, result.table()
    # step and tolerance from the round-off measured on the function itself: a fixed
    # step's central difference drifts past a fixed tolerance with the floating-point
    # kernels of the machine
    check_grad(along, x0, n_directions=1, rtol=1e-6, seed=7)


KINDS = ["E", "x", "rho", "cM", "cK", "m", "hq", "u0", "v0", "w"]


@pytest.mark.parametrize("key", KINDS)
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_gradient_of_every_parameter_kind(scheme, key):
    model = _model()
    problem = DynamicProblem(model, t_end=T_END, dt=T_END / N_STEPS, scheme=scheme,
                             **SCHEMES[scheme])
    _check(_objective(problem, _integral), _parameters(model), key)


@pytest.mark.parametrize(("aggregate", "term"), [(_ks_peak, "probe_squared"),
                                                 (_final, "probe")], ids=["ks", "final"])
@pytest.mark.parametrize("key", ["x", "cM", "hq", "u0", "v0"])
def test_gradient_of_a_probe_displacement(aggregate, term, key):
    model = _model()
    problem = DynamicProblem(model, t_end=T_END, dt=T_END / N_STEPS, scheme="newmark",
                             gamma=0.6, beta=0.3025, lumped=True)
    _check(_objective(problem, aggregate, term), _parameters(model), key)


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_shape_gradient(scheme):
    """The node coordinates: through the assembly of K, M and the traction."""
    model = _model()
    problem = DynamicProblem(model, t_end=T_END, dt=T_END / N_STEPS, scheme=scheme,
                             **SCHEMES[scheme])
    p = {**_parameters(model), "X": model.mesh.points.copy()}
    _check(_objective(problem, _integral), p, "X")


def _gradients(max_states, scheme):
    model = _model()
    problem = DynamicProblem(model, t_end=T_END, dt=T_END / N_STEPS, scheme=scheme,
                             max_states=max_states, **SCHEMES[scheme])
    p = _parameters(model)
    J = _objective(problem, _ks_peak)
    keys = ["E", "x", "rho", "cM", "cK", "m", "hq", "u0", "v0", "w"]
    gradient = grad(lambda q: J({**p, **q}))({k: p[k] for k in keys})
    return gradient, problem.stats


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_checkpointing_gives_the_same_bits_and_the_theoretical_recomputations(scheme):
    stored, stats = _gradients(None, scheme)
    assert stats["advanced"] == stats["taped"] == 0
    assert stats["kept"] == N_STEPS + 1
    for s in (2, 3, 7):
        checkpointed, stats = _gradients(s, scheme)
        for key, value in stored.items():
            assert np.array_equal(checkpointed[key], value), (s, key)
        spine = forward_snapshots(N_STEPS, s)
        assert stats["kept"] <= s
        assert stats["advanced"] + spine[-1] == minimal_advances(N_STEPS, s)
        assert stats["taped"] == 1  # the last step; the others read the state reversed before


def test_one_factorization_for_the_run():
    """Constant Δt: the step matrix is factorized once, and M once for a_0."""
    model = _model()
    problem = DynamicProblem(model, t_end=T_END, dt=T_END / N_STEPS)
    p = _parameters(model)
    grad(lambda x: _objective(problem, _integral)({**p, "x": x}))(p["x"])
    assert problem.stats["factorizations"] == 2


@pytest.mark.parametrize("max_states", [None, 3])
def test_a_pullback_may_be_called_again(max_states):
    model = _model()
    problem = DynamicProblem(model, t_end=T_END, dt=T_END / 20, max_states=max_states)
    E = 100.0 * np.ones(model.mesh.n_cells)
    values, pull = vjp(lambda e: problem.values(_weighted_squares, term_args=(1.0,), E=e,
                                                u0=0.01), E)
    first = pull(np.ones(values.shape))
    assert np.allclose(pull(2 * np.ones(values.shape)), 2 * first, rtol=1e-12, atol=0)


def test_misuse_is_refused_with_the_fix():
    model = _model()
    problem = DynamicProblem(model, t_end=T_END, dt=T_END / 10)
    E = 100.0 * np.ones(model.mesh.n_cells)

    def closing_over(e):
        return np.sum(problem.values(lambda u, t: e[0] * np.sum(u), E=e))

    with pytest.raises(TypeError, match="term_args"):
        grad(closing_over)(E)
    with pytest.raises(ValueError, match="scalar"):
        problem.values(lambda u, t: u)
    with pytest.raises(NotImplementedError, match="second derivatives"):
        hvp(lambda e: np.sum(problem.values(_weighted_squares, term_args=(1.0,), E=e,
                                            u0=0.01)))(E, E)


def test_changing_damping_keeps_two_factorizations_and_exact_pullbacks():
    """The step matrix follows the damping: a new value takes over the old instance (two
    solver instances whatever the number of values), and a pullback taken before another
    damping was run still gets its own answer."""
    model = _model()
    problem = DynamicProblem(model, t_end=T_END, dt=T_END / 20)

    def run(c):
        return problem.values(_weighted_squares, term_args=(1.0,), u0=0.01, damping=(c, 0.0))

    values, pull = vjp(run, 0.05)
    first = pull(np.ones(values.shape))
    for c in (0.1, 0.2, 0.3):
        run(c)
    assert len(problem._solvers) == 2
    assert pull(np.ones(values.shape)) == pytest.approx(first, rel=1e-12)


def test_gradient_of_the_time_integral_of_the_strain_energy():
    """j_n = ½ u_nᵀ K u_n through the cells' energies with the stiffness coefficients as a
    traced step-term argument (the same design enters the run and the term); its plain
    value equals ½ u_fᵀ K_ff u_f."""
    model = _model()
    problem = DynamicProblem(model, t_end=T_END, dt=T_END / N_STEPS,
                             scheme="generalized_alpha", rho_inf=0.5)
    p = _parameters(model)
    assembler = model.assembler

    def strain_energy(u, t, coefficients, weights):
        return 0.5 * np.sum(coefficients * (weights @ assembler.cell_energies(u)))

    def J(x):
        E = p["E"] * x ** 3
        weights, (coefficients,) = model.stiffness_fields(E=E)
        values = problem.values(strain_energy, term_args=(coefficients, np.array(weights)),
                                E=E, density=p["rho"] * x, u0=p["u0"], v0=p["v0"],
                                damping=(p["cM"], p["cK"]))
        return _integral(values)

    _check(lambda q: J(q["x"]), {"x": p["x"]}, "x")
    E = p["E"] * p["x"] ** 3
    weights, (coefficients,) = model.stiffness_fields(E=E)
    values = problem.values(strain_energy, term_args=(coefficients, np.array(weights)), E=E,
                            u0=p["u0"])
    K = model.stiffness("ff", E=E).tocsr()
    ((_, _, u, _, _),) = problem.states(at=[N_STEPS], E=E, u0=p["u0"])
    u_f = u[model.free_dofs]
    assert values[-1] == pytest.approx(0.5 * u_f @ (K @ u_f), rel=1e-12)

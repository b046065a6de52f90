"""The ordered SIMP interpolation of several solid phases (Zuo & Saitou 2017): its values at
the phases, continuity and one-sided derivatives at the breakpoints, gradients of the
interpolation, of its cost and of the compliance through it, input checks, and a resumed
multi-material run.

W. Zuo and K. Saitou, "Multi-material topology optimization using ordered SIMP
interpolation", Struct. Multidisc. Optim. 55 (2017) 477–491; the three phases below are
those of its example (normalised densities 0.4, 0.7, 1, moduli 0.2, 0.6, 1, costs 0.5,
0.8, 1).
"""

import numpy as np
import pytest
from opt_helpers import mbb_model
from test_opt_problem import remainder_rates

from fesens.ad import grad, taylor_test
from fesens.objectives import compliance
from fesens.opt import MMA, DesignProblem, load_checkpoint, make_filter, optimize
from fesens.opt.interpolation import OrderedSIMP

PHASES = {"moduli": [0.2, 0.6, 1.0], "densities": [0.4, 0.7, 1.0], "costs": [0.5, 0.8, 1.0]}
P = 3.0
BREAKPOINTS = np.array([0.0, 0.4, 0.7, 1.0])


def ordered(**changes) -> OrderedSIMP:
    return OrderedSIMP(P, minimum=1e-9, **{**PHASES, **changes})


def away_from_breakpoints(n: int, seed: int, margin: float = 0.05) -> np.ndarray:
    """``n`` densities in the phases' intervals, at least ``margin`` from a breakpoint."""
    rng = np.random.default_rng(seed)
    interval = rng.integers(0, 3, n)
    low, high = BREAKPOINTS[interval] + margin, BREAKPOINTS[interval + 1] - margin
    return low + rng.uniform(0.0, 1.0, n) * (high - low)


def test_the_phases_get_their_moduli_and_costs_and_void_its_minimum():
    interpolation = ordered()
    np.testing.assert_allclose(interpolation(BREAKPOINTS), [1e-9, 0.2, 0.6, 1.0], rtol=1e-14)
    # a cell's cost is its mass x times the cost per unit mass of its phase
    np.testing.assert_allclose(interpolation.cost(BREAKPOINTS),
                               [0.0, 0.4 * 0.5, 0.7 * 0.8, 1.0], rtol=1e-14, atol=1e-300)
    np.testing.assert_array_equal(interpolation.phases(np.array([0.0, 0.2, 0.21, 0.55, 0.56,
                                                                 0.85, 0.86, 1.0])),
                                  [0, 0, 1, 1, 2, 2, 3, 3])


def test_between_two_phases_it_is_simp_like():
    """On ``(x_i, x_{i+1}]``: ``s = A x^p + B``, ``A = (E_i − E_{i+1}) / (x_i^p − x_{i+1}^p)``
    (Zuo & Saitou, eq. of the ordered SIMP); ``s' = p A x^(p−1)``."""
    x = away_from_breakpoints(60, seed=0)
    i = np.searchsorted(BREAKPOINTS[1:-1], x)
    E = np.array([1e-9, 0.2, 0.6, 1.0])
    A = (E[i] - E[i + 1]) / (BREAKPOINTS[i] ** P - BREAKPOINTS[i + 1] ** P)
    B = E[i] - A * BREAKPOINTS[i] ** P
    interpolation = ordered()
    np.testing.assert_allclose(interpolation(x), A * x**P + B, rtol=1e-13)
    np.testing.assert_allclose(grad(lambda r: np.sum(interpolation(r)))(x),
                               P * A * x ** (P - 1.0), rtol=1e-13)
    # the cost per unit mass, with the exponent 1/p: intermediate densities cost extra
    c = np.array([0.0, 0.5, 0.8, 1.0])
    q = 1.0 / P
    A_c = (c[i] - c[i + 1]) / (BREAKPOINTS[i] ** q - BREAKPOINTS[i + 1] ** q)
    B_c = c[i] - A_c * BREAKPOINTS[i] ** q
    np.testing.assert_allclose(interpolation.cost(x), x * (A_c * x**q + B_c), rtol=1e-13)
    assert np.all(interpolation.cost(x) > x * np.interp(x, BREAKPOINTS, c))


@pytest.mark.parametrize("breakpoint", [0.4, 0.7])
@pytest.mark.parametrize("function", ["stiffness", "cost"])
def test_continuity_and_one_sided_derivatives_at_the_breakpoints(breakpoint, function):
    """Continuous at each phase, with a kink: the derivative at the breakpoint is the
    left-sided one (the intervals are closed on the right, as the paper's code has them),
    and just above it the right-sided one; both agree with one-sided differences."""
    interpolation = ordered()
    f = interpolation if function == "stiffness" else interpolation.cost
    derivative = grad(lambda r: np.sum(f(r)))
    at = f(np.array([breakpoint]))[0]
    for delta in (1e-4, 1e-6, 1e-8):  # the jump vanishes with the distance: continuous
        below, above = f(np.array([breakpoint - delta, breakpoint + delta]))
        assert abs(below - at) < 3.0 * delta and abs(above - at) < 3.0 * delta
    delta = 1e-7
    left = derivative(np.array([breakpoint]))[0]
    right = derivative(np.array([breakpoint * (1.0 + 1e-15)]))[0]
    left_difference = (at - f(np.array([breakpoint - delta]))[0]) / delta
    right_difference = (f(np.array([breakpoint + delta]))[0] - at) / delta
    assert left == pytest.approx(left_difference, rel=1e-5)
    assert right == pytest.approx(right_difference, rel=1e-5)
    assert abs(left - right) > 0.01 * abs(left)  # a kink, not C¹


@pytest.mark.parametrize("function", ["stiffness", "cost"])
def test_interpolation_gradients_pass_taylor_test(function):
    interpolation = ordered()
    f = interpolation if function == "stiffness" else interpolation.cost
    x = away_from_breakpoints(40, seed=1)
    weights = np.random.default_rng(2).standard_normal(x.size)
    direction = np.random.default_rng(3).uniform(-1.0, 1.0, x.size)
    result = taylor_test(lambda r: np.sum(weights * f(r)), x, direction, step=1e-2,
                         verbose=False)
    assert result.rate > 1.9


def test_the_cost_has_a_finite_derivative_at_void():
    derivative = grad(lambda r: np.sum(ordered().cost(r)))(np.array([0.0, 1e-12]))
    assert np.all(np.isfinite(derivative)) and derivative[0] == 0.0


def multimaterial_problem(nelx: int = 12, nely: int = 4, **options) -> DesignProblem:
    """top88's half MBB beam with the three phases, density filter of radius 1.5."""
    model = mbb_model(nelx, nely)
    return DesignProblem(model, lambda state, rho: compliance(state), volume_fraction=0.5,
                         interpolation=ordered(),
                         filter=make_filter("density", model.mesh, 1.5), **options)


def test_compliance_through_the_ordered_interpolation_passes_taylor_test():
    """No filtered density crosses a breakpoint over the steps (a step ε moves each by at
    most ε |h|_∞ = ε, the filter being an average), so the compliance is smooth along the
    line; rate 2 and central differences."""
    problem = multimaterial_problem()
    rng = np.random.default_rng(5)
    x = rng.uniform(0.05, 0.95, problem.n_design)
    h = rng.uniform(-1.0, 1.0, problem.n_design)
    steps = (1e-3, 5e-4, 2.5e-4, 1.25e-4)
    rho = problem.density(x)
    assert np.min(np.abs(rho[:, None] - BREAKPOINTS[None, 1:-1])) > steps[0]
    evaluation = problem.evaluate(x)
    rates = remainder_rates(lambda y: problem.evaluate(y).objective, evaluation.gradient, x, h,
                            steps)
    assert np.all(rates > 1.9), rates
    for i in (0, 17, 40):
        e = np.zeros_like(x)
        e[i] = 1e-5
        difference = (problem.evaluate(x + e).objective
                      - problem.evaluate(x - e).objective) / 2e-5
        assert evaluation.gradient[i] == pytest.approx(difference, rel=1e-6)


@pytest.mark.parametrize(("changes", "message"), [
    ({"moduli": [1.0], "densities": [1.0], "costs": None},
     "moduli: give 2 or 3 solid phases, got 1"),
    ({"moduli": [0.1, 0.2, 0.6, 1.0], "densities": [0.2, 0.4, 0.7, 1.0], "costs": None},
     "moduli: give 2 or 3 solid phases, got 4"),
    ({"densities": [0.4, 1.0]}, r"densities: give one value per phase \(3, as moduli\), got 2"),
    ({"costs": [1.0, 2.0]}, r"costs: give one value per phase \(3, as moduli\), got 2"),
    ({"names": ["a"]}, r"names: give one value per phase \(3, as moduli\), got 1"),
    ({"densities": [0.7, 0.4, 1.0]}, r"densities = \[0.7, 0.4, 1.0\] must increase strictly"),
    ({"moduli": [0.6, 0.6, 1.0]}, r"moduli = \[0.6, 0.6, 1.0\] must increase strictly"),
    ({"moduli": [0.2, -0.6, 1.0]}, "moduli must be a list of positive numbers"),
])
def test_inconsistent_phases_are_refused_naming_the_parameter(changes, message):
    with pytest.raises(ValueError, match=message):
        ordered(**changes)


def test_void_must_be_softer_than_the_softest_phase():
    with pytest.raises(ValueError, match="minimum = 0.3 makes void as stiff as the softest"):
        OrderedSIMP(3.0, minimum=0.3, **PHASES)
    with pytest.raises(ValueError, match="given no costs"):
        ordered(costs=None).cost(np.array([0.5]))


def test_a_resumed_multimaterial_run_is_bit_identical(tmp_path):
    """One variable per cell: the checkpoint's design-sized arrays are those of a
    single-material run, and the resumed run repeats the uninterrupted one exactly."""
    checkpoint = tmp_path / "run.npz"
    uninterrupted = optimize(multimaterial_problem(), MMA(), max_iter=8, tol_change=0.0)
    optimize(multimaterial_problem(), MMA(), max_iter=4, tol_change=0.0, checkpoint=checkpoint)
    x, iteration, _, _ = load_checkpoint(checkpoint)
    assert iteration == 4 and x.shape == (multimaterial_problem().n_design,)
    resumed = optimize(multimaterial_problem(), MMA(), max_iter=8, tol_change=0.0,
                       checkpoint=checkpoint, resume=True)
    assert [r["objective"] for r in resumed.history] == \
        [r["objective"] for r in uninterrupted.history]
    np.testing.assert_array_equal(resumed.x, uninterrupted.x)

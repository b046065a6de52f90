"""Min–max (worst case) by the bound formulation: MMA's bound constraints on analytic
problems with known solutions, MinMaxProblem's per-case gradients, its refusals."""

import numpy as np
import pytest
from opt_helpers import mbb_model, toy_evaluation

from fesens.ad import grad
from fesens.ad.checks import taylor_test
from fesens.objectives import compliance
from fesens.opt import MMA, OC, SIMP, MinMaxProblem, case_state, make_filter, optimize


def bounded(values, gradients, constraints=(), constraint_gradients=None):
    """An Evaluation whose objective is the largest of ``values``."""
    values, gradients = np.asarray(values, float), np.asarray(gradients, float)
    n = gradients.shape[1]
    return toy_evaluation(
        objective=float(values.max()), gradient=gradients[int(values.argmax())],
        bounds=values, bound_gradients=gradients,
        constraints=np.asarray(constraints, float),
        constraint_gradients=np.zeros((0, n)) if constraint_gradients is None
        else np.asarray(constraint_gradients, float))


def two_parabolas(x, constraint=None):
    """``max(x², (x − 2)²)``: the two parabolas cross at x = 1, the min–max solution."""
    t = x[0]
    extra = {} if constraint is None else {
        "constraints": [constraint - t], "constraint_gradients": [[-1.0]]}
    return bounded([t * t, (t - 2.0) ** 2], [[2.0 * t], [2.0 * (t - 2.0)]], **extra)


def run(optimizer, evaluate, x, iterations):
    for k in range(1, iterations + 1):
        x = optimizer.step(x, evaluate(x), None, k)
    return x


@pytest.mark.parametrize("start", [-0.8, 2.9])
@pytest.mark.parametrize("scale", [None, 10.0])
def test_two_parabolas_min_max_is_where_they_cross(start, scale):
    """min_x max(x², (x − 2)²) on [−1, 3]: x = 1, value 1 (neither parabola's minimum)."""
    x = run(MMA(lower=-1.0, upper=3.0, objective_scale=scale), two_parabolas,
            np.array([start]), 20)
    assert x[0] == pytest.approx(1.0, abs=1e-6)


def test_two_parabolas_with_an_active_ordinary_constraint():
    """With x ≥ 1.5 (g = 1.5 − x ≤ 0, a_i = 0) the worst case is (x)², smallest at 1.5."""
    x = run(MMA(lower=-1.0, upper=3.0), lambda x: two_parabolas(x, 1.5), np.array([0.0]), 30)
    assert x[0] == pytest.approx(1.5, abs=1e-6)


def test_smallest_enclosing_circle_is_the_circumcentre():
    """min_x max_i |x − p_i|² of an acute triangle's corners (0, 0), (4, 0), (1, 3): the
    circumcentre (2, 1), where all three are 5 — three bounds active at once."""
    corners = np.array([[0.0, 0.0], [4.0, 0.0], [1.0, 3.0]])

    def evaluate(x):
        return bounded(np.sum((x - corners) ** 2, axis=1), 2.0 * (x - corners))

    x = run(MMA(lower=-5.0, upper=5.0), evaluate, np.array([-3.0, 4.0]), 40)
    np.testing.assert_allclose(x, [2.0, 1.0], atol=1e-5)
    np.testing.assert_allclose(evaluate(x).bounds, 5.0, atol=1e-4)


def test_bound_state_resumes_exactly():
    corners = np.array([[0.0, 0.0], [4.0, 0.0], [1.0, 3.0]])

    def evaluate(x):
        return bounded(np.sum((x - corners) ** 2, axis=1), 2.0 * (x - corners))

    straight, x = MMA(lower=-5.0, upper=5.0), np.array([-3.0, 4.0])
    x_straight = run(straight, evaluate, x, 6)
    first = MMA(lower=-5.0, upper=5.0)
    x_half = run(first, evaluate, x, 3)
    second = MMA(lower=-5.0, upper=5.0)
    second.load_state(first.state())
    for k in range(4, 7):
        x_half = second.step(x_half, evaluate(x_half), None, k)
    np.testing.assert_array_equal(x_half, x_straight)


def two_case_problem(nelx=12, nely=6, **options):
    """The MBB half beam with a second, horizontal load at the upper right; two cases."""
    model = mbb_model(nelx, nely)
    model.point_load((float(nelx), float(nely)), (-1.0, 0.0), name="H")
    return MinMaxProblem(model, lambda state, rho: compliance(state), volume_fraction=0.5,
                         interpolation=SIMP(3.0, 1e-9),
                         filter=make_filter("density", model.mesh, 1.5),
                         load_cases=[{"F": 1.0, "H": 0.0}, {"F": 0.0, "H": 1.0}], **options)


def test_each_case_gradient_is_taylor_tested_and_matches_differences():
    problem = two_case_problem()
    x = np.random.default_rng(3).uniform(0.3, 0.9, problem.n_design)
    evaluation = problem.evaluate(x)
    assert evaluation.bounds.shape == (2,) and evaluation.bound_gradients.shape == (2, x.size)
    assert evaluation.objective == pytest.approx(evaluation.bounds.max(), rel=1e-14)
    scale = problem.interpolation(evaluation.density)
    for case, loads in enumerate(problem.load_cases):
        def f_case(x, case=case):
            rho = problem.density(x)
            return compliance(case_state(problem.solve(rho), case))

        plain = float(compliance(problem.model.solve(scale=scale, loads=loads)))
        assert evaluation.bounds[case] == pytest.approx(plain, rel=1e-10)
        assert grad(f_case)(x) == pytest.approx(evaluation.bound_gradients[case], rel=1e-12)
        assert abs(taylor_test(f_case, x, verbose=False).rate - 2.0) < 0.1
        h = 1e-4
        for j in (0, 17, x.size - 1):
            e = np.zeros_like(x)
            e[j] = h
            difference = (f_case(x + e) - f_case(x - e)) / (2 * h)
            assert evaluation.bound_gradients[case, j] == pytest.approx(difference, rel=1e-6)
    worst = int(np.argmax(evaluation.bounds))
    np.testing.assert_array_equal(evaluation.gradient, evaluation.bound_gradients[worst])


def test_min_max_problem_runs_with_mma_and_is_refused_by_oc():
    problem = two_case_problem()
    with pytest.raises(ValueError, match="bound formulation.*'oc' cannot: use MMA"):
        optimize(problem, OC(), max_iter=2)
    result = optimize(problem, MMA(move=0.2), max_iter=3)
    assert len(result.history) == 3


@pytest.mark.parametrize("cases", [None, [{"F": 1.0}]])
def test_min_max_needs_two_cases(cases):
    with pytest.raises(ValueError, match="at least two load cases"):
        MinMaxProblem(mbb_model(4, 2), lambda s, rho: compliance(s), volume_fraction=0.5,
                      load_cases=cases)

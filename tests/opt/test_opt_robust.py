"""The robust formulation (eroded, intermediate, dilated designs; Wang, Lazarov & Sigmund
2011): the three designs' order, the gradients of the worst objective and of the dilated
volume constraint (Taylor remainders of the evaluation's own numbers, central differences),
the volume limit's rescaling, the worst over load cases too, and the refusals."""

import numpy as np
import pytest
from opt_helpers import mbb_model

from fesens.ad import grad
from fesens.ad.checks import taylor_test
from fesens.objectives import compliance, volume
from fesens.opt import MMA, OC, SIMP, Continuation, Heaviside, make_filter, optimize
from fesens.opt.robust import DESIGNS, RobustProblem, RobustProjection


def robust_problem(nelx=12, nely=4, beta=4.0, **options):
    model = mbb_model(nelx, nely)
    return RobustProblem(model, lambda state, rho: compliance(state), volume_fraction=0.5,
                         interpolation=SIMP(3.0, 1e-9),
                         filter=make_filter("density", model.mesh, 1.5),
                         projection=RobustProjection(beta, delta_eta=0.2), **options)


def design(problem, seed=3):
    return np.random.default_rng(seed).uniform(0.2, 0.9, problem.n_design)


def remainder_rate(value, gradient, x, h, steps=(1e-2, 5e-3, 2.5e-3, 1.25e-3)):
    """The observed order of ``|J(x + εh) − J(x) − ε ∇J·h|`` over ``steps`` (2 for a right
    gradient, 1 for a wrong one)."""
    j0, slope = value(x), float(gradient @ h)
    remainders = np.array([abs(value(x + e * h) - j0 - e * slope) for e in steps])
    return np.log2(remainders[:-1] / remainders[1:])


def test_three_designs_are_ordered_eroded_intermediate_dilated():
    """Heaviside decreases in its threshold, so η_e > η_i > η_d orders the designs cell by
    cell, for any filtered field and sharpness."""
    problem = robust_problem()
    for beta in (1.0, 8.0, 64.0):
        problem.projection = RobustProjection(beta, delta_eta=0.2)
        eroded, intermediate, dilated = problem.designs(design(problem))
        assert np.all(eroded <= intermediate) and np.all(intermediate <= dilated)
        assert np.any(eroded < intermediate) and np.any(intermediate < dilated)
    assert problem.projection.thresholds == pytest.approx((0.7, 0.5, 0.3))


def test_each_design_is_the_heaviside_projection_of_one_filtered_field():
    problem = robust_problem()
    x = design(problem)
    filtered = problem.filter(x)
    for rho, eta in zip(problem.designs(x), (0.7, 0.5, 0.3), strict=True):
        assert rho == pytest.approx(Heaviside(4.0, eta)(filtered), rel=1e-14)
    assert problem.density(x) == pytest.approx(problem.designs(x)[1], rel=1e-14)


def test_worst_objective_and_dilated_volume_pass_the_taylor_test():
    """The evaluation's objective (the eroded compliance, well above the other two: no tie)
    and volume constraint with their gradients: remainders of order 2, and central
    differences; each design's compliance through the tape passes taylor_test too."""
    problem = robust_problem()
    x = design(problem)
    evaluation = problem.evaluate(x)
    bounds = evaluation.bounds
    assert bounds.shape == (3,) and evaluation.objective == bounds.max()
    assert np.argmax(bounds) == 0 and bounds[0] > 1.2 * max(bounds[1:])  # eroded, no tie
    h = np.random.default_rng(5).uniform(-1.0, 1.0, x.size)
    rates = remainder_rate(lambda y: problem.evaluate(y).objective, evaluation.gradient, x, h)
    assert np.all(np.abs(rates - 2.0) < 0.1), rates
    rates = remainder_rate(lambda y: problem.evaluate(y).constraints[0],
                           evaluation.constraint_gradients[0], x, h)
    assert np.all(np.abs(rates - 2.0) < 0.1), rates
    for k, name in enumerate(DESIGNS):
        def one_design(y, k=k):
            rho = problem.evaluated_densities(y)
            return compliance(problem.solve(rho)[k])

        assert grad(one_design)(x) == pytest.approx(evaluation.bound_gradients[k], rel=1e-12)
        assert abs(taylor_test(one_design, x, verbose=False).rate - 2.0) < 0.1, name
        assert evaluation.extras[f"objective_{name}"] == pytest.approx(bounds[k], rel=1e-14)
    step = 1e-5
    for j in (0, 17, x.size - 1):
        e = np.zeros_like(x)
        e[j] = step
        plus, minus = problem.evaluate(x + e), problem.evaluate(x - e)
        assert evaluation.gradient[j] == pytest.approx(
            (plus.objective - minus.objective) / (2 * step), rel=1e-6)
        assert evaluation.constraint_gradients[0, j] == pytest.approx(
            (plus.constraints[0] - minus.constraints[0]) / (2 * step), rel=1e-6)


def test_volume_constraint_is_the_dilated_design_against_the_rescaled_limit():
    """``V_d* = f V(ρ_d)/V(ρ_i)`` at the first evaluation; the constraint ``V(ρ_d) − V_d*``;
    the evaluation reports the blueprint's density and volume."""
    problem = robust_problem()
    x = design(problem)
    evaluation = problem.evaluate(x)
    _, intermediate, dilated = problem.designs(x)
    v_i = float(volume(problem.model, intermediate, fraction=True))
    v_d = float(volume(problem.model, dilated, fraction=True))
    assert problem.volume_limit == pytest.approx(0.5 * v_d / v_i, rel=1e-14)
    assert evaluation.constraints[0] == pytest.approx(v_d - problem.volume_limit, abs=1e-14)
    assert evaluation.volume_fraction == pytest.approx(v_i, rel=1e-14)
    assert evaluation.density == pytest.approx(intermediate, rel=1e-14)
    assert evaluation.extras["volume_dilated"] == pytest.approx(v_d, rel=1e-14)
    # held between updates, rescaled at the next update's iteration
    limit = problem.volume_limit
    problem.update_schedules(2)
    problem.evaluate(x + 0.05)
    assert problem.volume_limit == limit
    problem.update_schedules(1 + problem.volume_update_every)
    problem.evaluate(x + 0.05)
    assert problem.volume_limit != limit


def test_worst_over_designs_and_load_cases():
    """With ``worst_case_loads`` the bounds are the 3 × 2 (design, case) compliances."""
    model = mbb_model(12, 4)
    model.point_load((12.0, 4.0), (0.0, -1.0), name="G")
    cases = [{"F": 1.0, "G": 0.0}, {"F": 0.0, "G": 1.0}]
    problem = RobustProblem(model, lambda state, rho: compliance(state), volume_fraction=0.5,
                            filter=make_filter("density", model.mesh, 1.5),
                            projection=RobustProjection(4.0, delta_eta=0.2),
                            load_cases=cases, worst_case_loads=True)
    x = design(problem)
    evaluation = problem.evaluate(x)
    assert evaluation.bounds.shape == (6,)
    for k, rho in enumerate(problem.designs(x)):
        for i, loads in enumerate(cases):
            plain = compliance(model.solve(scale=problem.interpolation(rho), loads=loads))
            assert evaluation.bounds[2 * k + i] == pytest.approx(float(plain), rel=1e-10)


def test_short_robust_run_keeps_the_blueprint_volume():
    """A few MMA iterations: the blueprint's volume fraction stays near the prescribed one."""
    problem = robust_problem(24, 8, beta=Continuation(1.0, 4.0, 10, factor=2.0))
    result = optimize(problem, MMA(move=0.1), max_iter=30)
    assert result.history[-1]["volume"] == pytest.approx(0.5, abs=0.02)
    assert result.history[-1]["objective"] < 0.5 * result.history[0]["objective"]


def test_refusals():
    with pytest.raises(ValueError, match="delta_eta"):
        RobustProjection(4.0, delta_eta=0.5)
    with pytest.raises(ValueError, match="delta_eta"):
        RobustProjection(4.0, eta=0.3, delta_eta=0.3)
    with pytest.raises(TypeError, match="RobustProjection"):
        RobustProblem(mbb_model(4, 2), lambda s, r: compliance(s), volume_fraction=0.5,
                      projection=Heaviside(4.0))
    model = mbb_model(8, 4)
    with pytest.raises(ValueError, match="sensitivity filter"):
        RobustProblem(model, lambda s, r: compliance(s), volume_fraction=0.5,
                      filter=make_filter("sensitivity", model.mesh, 1.5),
                      projection=RobustProjection(4.0))
    with pytest.raises(ValueError, match="two load cases"):
        robust_problem(worst_case_loads=True)
    with pytest.raises(ValueError, match="use MMA"):
        optimize(robust_problem(), OC(), max_iter=1)


@pytest.mark.parametrize("stop", [7, 10, 11])
def test_a_resumed_robust_run_equals_the_uninterrupted_one(stop, tmp_path):
    """The dilated volume limit is derived during the run (every 5 iterations): a run
    resumed between two updates (7, 11) or right before one (10) must hold the limit the
    uninterrupted run holds, so every later design is bit-identical."""
    def run(max_iter, checkpoint, resume=False):
        problem = robust_problem(24, 8, beta=Continuation(1.0, 4.0, 10, factor=2.0))
        return optimize(problem, MMA(move=0.1), max_iter=max_iter, tol_change=0.0,
                        checkpoint=checkpoint, resume=resume)

    whole = run(15, tmp_path / "whole.npz")
    run(stop, tmp_path / "part.npz")
    resumed = run(15, tmp_path / "part.npz", resume=True)
    assert np.array_equal(resumed.x, whole.x)
    assert [r["volume_limit"] for r in resumed.history] == [
        r["volume_limit"] for r in whole.history]

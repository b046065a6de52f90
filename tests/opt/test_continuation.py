"""Continuation schedules and the stop rule: a continuation holds its final value for
``final_iterations`` iterations after the one that reached it before the loop may stop (the
change at a raise answers the old value), a robust problem stops only on a current dilated
volume limit, a schedule that cannot end within ``stop.max_iter`` is refused at check time
naming the count it needs, and a robust run starts from a blueprint at its volume fraction."""

import copy
import tomllib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from opt_helpers import Standstill, mbb_model, mbb_problem

from fesens.cli import cli
from fesens.config import ConfigError, resolve
from fesens.config.schedules import check_schedules
from fesens.config.toml_writer import dumps
from fesens.objectives import compliance
from fesens.opt import MMA, SIMP, Continuation, Heaviside, make_filter, optimize
from fesens.opt.robust import RobustProblem, RobustProjection

ROOT = Path(__file__).resolve().parents[2]
SMALL = tomllib.loads((ROOT / "tests" / "data" / "small_mbb.toml").read_text())


def test_final_value_is_held_for_final_iterations():
    """β 1, 2, 4, 8 raised every 5 iterations: final from iteration 16; with
    final_iterations = 3 the schedule is done from iteration 19 on, not before."""
    schedule = Continuation(1.0, 8.0, every=5, factor=2.0, final_iterations=3)
    assert [schedule.value(k) for k in (1, 5, 6, 11, 15, 16, 40)] == [
        1.0, 1.0, 2.0, 4.0, 4.0, 8.0, 8.0]
    assert schedule.first_final_iteration() == 16
    assert schedule.iterations_needed() == 19
    assert [schedule.done(k) for k in (16, 17, 18, 19, 50)] == [False] * 3 + [True] * 2
    stepped = Continuation(1.0, 3.0, every=10, step=0.5)  # 1, 1.5, 2, 2.5, 3 from 41
    assert stepped.first_final_iteration() == 41 and stepped.iterations_needed() == 42
    assert Continuation(3.0).done(1) and Continuation(3.0).iterations_needed() == 1
    # a schedule that never reaches its final value (the class allows decreasing ones)
    assert Continuation(2.0, 1.0, every=5, factor=2.0).first_final_iteration(100) is None
    assert not Continuation(2.0, 1.0, every=5, factor=2.0).done(10**6)


@pytest.mark.parametrize("final_iterations", [1, 4])
def test_the_loop_runs_the_final_iterations_even_when_the_design_stands_still(
        final_iterations):
    """The change is 0 from the first iteration: the loop stops at the first iteration the
    schedule allows, which is never the iteration of a raise."""
    problem = mbb_problem(12, 4, 1.5, "density", projection=Heaviside(
        Continuation(1.0, 4.0, every=3, factor=2.0, final_iterations=final_iterations)))
    result = optimize(problem, Standstill(), max_iter=30)
    betas = [record["beta"] for record in result.history]
    assert betas == [1.0] * 3 + [2.0] * 3 + [4.0] * (1 + final_iterations)
    assert result.status != "max_iter"


def test_a_resumed_run_holds_the_same_schedule(tmp_path):
    """The schedule is a function of the iteration: stopped in the hold at the final value
    and resumed, the run ends where the uninterrupted one ends, with the same design."""
    def run(max_iter, checkpoint, resume=False):
        problem = mbb_problem(12, 4, 1.5, "density", projection=Heaviside(
            Continuation(1.0, 4.0, every=4, factor=2.0, final_iterations=5)))
        return optimize(problem, MMA(move=0.2), max_iter=max_iter, tol_change=1.0,
                        checkpoint=checkpoint, resume=resume)

    whole = run(40, tmp_path / "whole.npz")
    assert len(whole.history) == 14  # final β from iteration 9, held 5 more
    run(11, tmp_path / "part.npz")
    resumed = run(40, tmp_path / "part.npz", resume=True)
    assert len(resumed.history) == 14 and np.array_equal(resumed.x, whole.x)


def robust_problem(update_every: int, beta: Continuation) -> RobustProblem:
    model = mbb_model(12, 4)
    return RobustProblem(model, lambda state, rho: compliance(state), volume_fraction=0.5,
                         interpolation=SIMP(3.0, 1e-9),
                         filter=make_filter("density", model.mesh, 1.5),
                         projection=RobustProjection(beta, delta_eta=0.2),
                         volume_update_every=update_every)


@pytest.mark.parametrize(("update_every", "iterations"), [(5, 11), (1000, 15)])
def test_a_robust_run_stops_only_on_a_current_volume_limit(update_every, iterations):
    """β 1, 2, 4 (every 3, final from iteration 7, done from 8): a raise changes the dilated
    to blueprint volume ratio of the standing design, so the limit of iteration 6 is stale at
    β = 4. With updates every 5 iterations the loop waits for the update of iteration 11;
    with none after the first it never settles and ends at max_iter."""
    problem = robust_problem(update_every, Continuation(1.0, 4.0, every=3, factor=2.0))
    result = optimize(problem, Standstill(), max_iter=15)
    assert len(result.history) == iterations
    last = result.history[-1]
    current = 0.5 * last["volume_dilated"] / last["volume"]
    stale = [abs(0.5 * r["volume_dilated"] / r["volume"] - r["volume_limit"]) > 1e-3
             for r in result.history[7:10]]  # iterations 8-10: done, but the limit is stale
    assert all(stale)
    if update_every == 5:
        assert abs(current - last["volume_limit"]) <= 1e-3
    else:
        assert result.status == "max_iter"


def heaviside(value: float, beta: float, eta: float) -> float:
    """Wang, Lazarov & Sigmund (2011), eq. (9), written out here."""
    return (np.tanh(beta * eta) + np.tanh(beta * (value - eta))) / (
        np.tanh(beta * eta) + np.tanh(beta * (1.0 - eta)))


def test_a_robust_run_starts_from_a_blueprint_at_the_volume_fraction():
    """The uniform start's blueprint has the volume fraction (the filter keeps a uniform
    field): H(c; β = 1, η = 0.5) = 0.5 holds for c = 0.5, and with η = 0.6 for the c that
    the projection maps to 0.5, found here by bisection on the formula."""
    problem = robust_problem(5, Continuation(1.0, 4.0, every=3, factor=2.0))
    x0 = problem.initial_design()
    assert np.ptp(x0) == 0.0 and x0[0] == pytest.approx(0.5, abs=1e-12)
    model = mbb_model(12, 4)
    shifted = RobustProblem(model, lambda state, rho: compliance(state), volume_fraction=0.3,
                            interpolation=SIMP(3.0, 1e-9),
                            filter=make_filter("density", model.mesh, 1.5),
                            projection=RobustProjection(2.0, eta=0.6, delta_eta=0.2))
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if heaviside(middle, 2.0, 0.6) < 0.3 else (low, middle)
    x0 = shifted.initial_design()
    assert x0 == pytest.approx(np.full(shifted.n_design, low), abs=1e-12)
    assert shifted.evaluate(x0).volume_fraction == pytest.approx(0.3, abs=1e-12)


def with_beta(beta, max_iter):
    raw = copy.deepcopy(SMALL)
    raw["projection"] = {"type": "heaviside", "beta": beta}
    raw["stop"]["max_iter"] = max_iter
    return raw


def test_a_schedule_that_cannot_end_within_max_iter_is_refused_naming_the_count():
    """β 1 → 64 doubled every 40: final from iteration 241, held 20 more: 261 needed."""
    beta = {"start": 1.0, "final": 64.0, "every": 40, "factor": 2.0, "final_iterations": 20}
    with pytest.raises(ConfigError, match=r"projection\.beta reaches final = 64(\.0)? at "
                                          r"iteration 241 .*stop\.max_iter ≥ 261, but "
                                          r"stop\.max_iter = 260: give stop\.max_iter = 261"):
        check_schedules(resolve(with_beta(beta, 260), base_dir=ROOT, source="test").data)
    config = resolve(with_beta(beta, 261), base_dir=ROOT, source="test")
    check_schedules(config.data)
    assert config.data["projection"]["beta"]["final_iterations"] == 20
    penalty = copy.deepcopy(SMALL)
    penalty["penalization"]["penalty"] = {"start": 1.0, "final": 3.0, "every": 3, "step": 1.0}
    with pytest.raises(ConfigError, match=r"penalization\.penalty .* stop\.max_iter ≥ 8"):
        check_schedules(resolve(penalty, base_dir=ROOT, source="test").data)  # final at 7


def test_fesens_optimize_refuses_it_before_any_work_unless_the_limit_is_the_runs(tmp_path):
    """Exit 2 naming the keys for a fresh run under the config's own limit; ``--max-iter``
    (a limit chosen for this run) runs the shortened run, whose written config reloads."""
    config = tmp_path / "short.toml"
    raw = with_beta({"start": 1.0, "final": 4.0, "every": 3, "factor": 2.0}, 6)
    config.write_text(dumps(raw))
    result = CliRunner().invoke(cli, ["optimize", str(config), "--out", str(tmp_path / "a"),
                                      "-q"])
    assert result.exit_code == 2
    assert "projection.beta reaches final = 4" in result.output
    assert "give stop.max_iter = 8 or more" in result.output
    assert not (tmp_path / "a").exists()
    result = CliRunner().invoke(cli, ["optimize", str(config), "--out", str(tmp_path / "b"),
                                      "--max-iter", "2", "-q"])
    assert result.exit_code == 0, result.output
    assert resolve(tomllib.loads((tmp_path / "b" / "config.toml").read_text()),
                   base_dir=tmp_path, source="b").data["stop"]["max_iter"] == 2


@pytest.mark.parametrize(("beta", "words"), [
    ({"start": 8.0, "final": 2.0, "factor": 2.0}, r"projection\.beta\.final = 2(\.0)? is "
                                                  r"below projection\.beta\.start"),
    ({"start": 1.0, "final": 2.0, "final_iterations": 0}, r"projection\.beta\.final_iter"),
])
def test_bad_schedules_are_refused(beta, words):
    with pytest.raises(ConfigError, match=words):
        resolve(with_beta(beta, 100), base_dir=ROOT, source="test")

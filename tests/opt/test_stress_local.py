"""Local stress constraints by the augmented Lagrangian (fesens.opt.augmented_lagrangian):
the merit's gradient against a Taylor test, the multiplier update on a problem whose
constrained optimum and multiplier are known in closed form, the update at the iteration
boundary, and a resumed run equal to the uninterrupted one."""

from __future__ import annotations

import numpy as np
import pytest
from opt_helpers import mbb_model
from scipy.optimize import minimize

from fesens.ad import taylor_test
from fesens.objectives import volume
from fesens.objectives.local_stress import relaxed_von_mises, stress_violations
from fesens.opt import MMA, SIMP, make_filter, optimize
from fesens.opt.augmented_lagrangian import (
    AugmentedLagrangianProblem,
    LocalStress,
    augmented_term,
    updated_multipliers,
)


def _problem(relaxation: str = "polynomial", limit: float = 2.0) -> AugmentedLagrangianProblem:
    model = mbb_model(12, 6)
    cells = np.arange(model.mesh.n_cells)
    return AugmentedLagrangianProblem(
        model, lambda state, rho: volume(state, rho, fraction=True), volume_fraction=1.0,
        interpolation=SIMP(3.0, 1e-9), filter=make_filter("density", model.mesh, 1.5),
        stress=LocalStress(limit, cells, relaxation))


@pytest.mark.parametrize("relaxation", ["polynomial", "qp"])
def test_merit_gradient_passes_the_taylor_test(relaxation):
    """The merit J = V + (1/N) Σ [λ h + μ/2 h²] through the solve: second-order Taylor
    remainders, with multipliers such that both branches of h = max(g, −λ/μ) occur."""
    problem = _problem(relaxation)
    x = np.random.default_rng(3).uniform(0.3, 0.9, problem.n_design)
    rho = problem.density(x)
    g = np.asarray(problem.stress.violations(problem.solve(rho), rho))
    problem.penalty = 30.0
    # λ_j = μ·|g_j| ± 50 %: the floor −λ/μ lies on either side of g_j, away from it
    problem.multipliers = problem.penalty * np.abs(g) * np.where(np.arange(g.size) % 2, 0.5,
                                                                  1.5)
    floor = -problem.multipliers / problem.penalty
    assert np.any(g > floor) and np.any(g < floor)

    def merit(x):
        rho = problem.density(x)
        return problem.objective_values(problem.solve(rho), rho)[0]

    result = taylor_test(merit, x, step=1e-3, verbose=False)
    assert np.min(result.rates) > 1.9, result.rates


def test_violations_are_the_papers_relaxations():
    """g_j of both relaxations from the cell stresses, written out: PolyStress's
    ρ x (x² + 1), x = σ/σ_lim − 1 with the solid stress, and Le et al.'s ρ^q σ/σ_lim − 1."""
    problem = _problem()
    rho = np.linspace(0.1, 1.0, problem.mesh.n_cells)
    state = problem.solve(rho)
    solid = np.sqrt(np.asarray(state.von_mises_squared(np.ones(rho.size))))
    x = solid / 2.0 - 1.0
    np.testing.assert_allclose(stress_violations(state, rho, 2.0), rho * x * (x**2 + 1.0),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(stress_violations(state, rho, 2.0, "qp", 0.5),
                               rho**0.5 * solid / 2.0 - 1.0, rtol=1e-12)
    np.testing.assert_allclose(relaxed_von_mises(state, rho, "qp", 0.5), rho**0.5 * solid,
                               rtol=1e-12)


def test_multipliers_converge_to_the_closed_form_kkt_point():
    """min x₁² + x₂² subject to g₁ = 1 − x₁ − x₂ ≤ 0 and g₂ = x₁ − 3 ≤ 0: the optimum
    x = (½, ½) with multipliers λ = (2·½ · N, 0) — the term carries 1/N, N = 2, so the
    multiplier of the active constraint is N times the KKT multiplier 1. Each subproblem is
    solved to convergence; the penalty grows by 1.1 from 10 (PolyStress's schedule)."""
    def constraints(x):
        return np.array([1.0 - x[0] - x[1], x[0] - 3.0])

    multipliers, penalty, x = np.zeros(2), 10.0, np.zeros(2)
    for _ in range(60):
        x = minimize(lambda y, lam=multipliers, mu=penalty:
                     y @ y + augmented_term(constraints(y), lam, mu), x,
                     method="BFGS", options={"gtol": 1e-12}).x
        multipliers = updated_multipliers(constraints(x), multipliers, penalty)
        penalty = min(1.1 * penalty, 1e4)
    np.testing.assert_allclose(x, [0.5, 0.5], atol=1e-6)
    # the update multiplies the subproblem's error in x (BFGS, ~1e-8) by μ (~3e3 at the end)
    np.testing.assert_allclose(multipliers, [2.0, 0.0], atol=1e-4)


def test_multipliers_advance_once_per_iteration_from_the_last_evaluation():
    """update_schedules(k) applies λ ← λ + μ max(g, −λ/μ) with g of the design evaluated in
    iteration k − 1 and then μ ← min(α μ, μ_max); repeated calls within an iteration do
    nothing."""
    problem = _problem()
    x = np.full(problem.n_design, 0.5)
    problem.update_schedules(1)
    assert problem.penalty == 10.0 and not problem.multipliers.any()
    problem.evaluate(x)
    rho = problem.density(x)
    g = np.asarray(problem.stress.violations(problem.solve(rho), rho))
    problem.update_schedules(2)
    problem.update_schedules(2)
    np.testing.assert_allclose(problem.multipliers, np.maximum(10.0 * g, 0.0), rtol=1e-12)
    assert problem.penalty == pytest.approx(11.0)


def test_resumed_run_equals_the_uninterrupted_one(tmp_path):
    """The multipliers and the penalty travel in the checkpoint: 2 + 2 iterations give the
    uninterrupted 4 iterations' design bit for bit."""
    whole = optimize(_problem(), MMA(move=0.1), max_iter=4, tol_change=0.0)
    path = tmp_path / "checkpoint.npz"
    optimize(_problem(), MMA(move=0.1), max_iter=2, tol_change=0.0, checkpoint=path)
    resumed = optimize(_problem(), MMA(move=0.1), max_iter=4, tol_change=0.0,
                       checkpoint=path, resume=True)
    np.testing.assert_array_equal(resumed.x, whole.x)
    assert resumed.history[-1]["stress_penalty"] == whole.history[-1]["stress_penalty"]


def test_several_iterations_per_step_advance_the_multipliers_at_each_steps_start():
    """iterations_per_step = 2: λ and μ change at iterations 3, 5, ... only."""
    problem = _problem()
    problem.stress = LocalStress(2.0, problem.stress.cells, iterations_per_step=2)
    x = np.full(problem.n_design, 0.5)
    penalties = []
    for iteration in range(1, 6):
        problem.update_schedules(iteration)
        penalties.append(problem.penalty)
        problem.evaluate(x)
    assert penalties == pytest.approx([10.0, 10.0, 11.0, 11.0, 12.1])


def test_after_max_steps_the_multipliers_stay():
    """max_steps = 2: the second AL step (iteration 2) is the last that updates λ and μ."""
    problem = _problem()
    problem.stress = LocalStress(2.0, problem.stress.cells, max_steps=2)
    x = np.full(problem.n_design, 0.5)
    penalties, multipliers = [], []
    for iteration in range(1, 5):
        problem.update_schedules(iteration)
        penalties.append(problem.penalty)
        multipliers.append(problem.multipliers.copy())
        problem.evaluate(x)
    assert penalties == pytest.approx([10.0, 11.0, 11.0, 11.0])
    assert multipliers[1].any()
    np.testing.assert_array_equal(multipliers[3], multipliers[1])


def test_settled_only_within_the_stress_limit():
    """settled: the largest relaxed stress of the half-solid cells (the history's
    stress_max) at most σ_lim (1 + constraint_tol); a record without it is not."""
    problem = _problem(limit=2.0)
    assert problem.settled({"stress_max": 2.0 * 1.01}, 0.01)
    assert not problem.settled({"stress_max": 2.0 * 1.011}, 0.01)
    assert not problem.settled({}, 0.01)


def test_run_stops_converged_at_the_first_iteration_within_the_limit():
    """With a design change test that always holds (tol_change = 1), the loop stops at the
    first iteration whose stress_max is within constraint_tol of the limit, and the run
    ends converged; the uniform start is far above the limit, so that is not the first."""
    problem = _problem(limit=2.0)
    result = optimize(problem, MMA(move=0.1), np.full(problem.n_design, 0.5), max_iter=60,
                      tol_change=1.0, constraint_tol=0.01)
    peaks = [record["stress_max"] for record in result.history]
    assert result.status == "converged"
    assert len(peaks) > 1 and peaks[0] > 2.02
    assert peaks[-1] <= 2.0 * 1.01 and all(peak > 2.0 * 1.01 for peak in peaks[:-1])

"""MMA: Svanberg's toy problem, closed-form optima, the MBB beam, extra constraints, state."""

import numpy as np
import pytest
from opt_helpers import mbb_problem, toy_evaluation

from fesens.objectives import displacement_at
from fesens.opt import MMA, OC, OPTIMIZERS, Constraint, make_optimizer, optimize

# Svanberg (2007), "MMA and GCMMA – two methods for nonlinear optimization", §"A simple
# example": min x1² + x2² + x3² s.t. two balls of radius 3, 0 ≤ x ≤ 5, from (4, 3, 2).
TOY_CENTRES = np.array([[5.0, 2.0, 1.0], [3.0, 4.0, 3.0]])
TOY_OPTIMUM = np.array([2.0175, 1.7800, 1.2375])
# The iterates printed by the reference implementation's run of this example (log
# examples/mma_toy2.log of github.com/arjendeetman/GCMMA-MMA-Python, a port of Svanberg's
# MATLAB mmasub/subsolv; move = 1), to the 4 printed decimals.
TOY_ITERATES = np.array([[2.3903, 1.8057, 0.9929], [2.0385, 1.7624, 1.2417],
                         [2.0178, 1.7786, 1.2392]])


def toy(x):
    """An Evaluation of the toy problem at ``x``."""
    return toy_evaluation(
        objective=float(x @ x), gradient=2.0 * x,
        constraints=np.sum((x - TOY_CENTRES) ** 2, axis=1) - 9.0,
        constraint_gradients=2.0 * (x - TOY_CENTRES))


def run(optimizer, evaluate, x, iterations):
    for k in range(1, iterations + 1):
        x = optimizer.step(x, evaluate(x), None, k)
    return x


@pytest.mark.parametrize("move", [0.5, 1.0])
def test_toy_problem_reaches_published_optimum(move):
    x = run(MMA(move=move, lower=0.0, upper=5.0, objective_scale=None), toy,
            np.array([4.0, 3.0, 2.0]), 11)
    np.testing.assert_allclose(x, TOY_OPTIMUM, atol=1e-4)
    # KKT, independently: both constraints active, ∇f = −Σ λ_i ∇g_i with λ ≥ 0.
    record = toy(x)
    np.testing.assert_allclose(record.constraints, 0.0, atol=1e-6)
    lam, *_ = np.linalg.lstsq(record.constraint_gradients.T, -record.gradient, rcond=None)
    assert np.all(lam > 0)
    np.testing.assert_allclose(record.constraint_gradients.T @ lam, -record.gradient,
                               atol=1e-5)


def test_toy_problem_iterates_match_reference_implementation():
    optimizer = MMA(move=1.0, lower=0.0, upper=5.0, objective_scale=None)
    x = np.array([4.0, 3.0, 2.0])
    for k, expected in enumerate(TOY_ITERATES, start=1):
        x = optimizer.step(x, toy(x), None, k)
        np.testing.assert_allclose(x, expected, atol=5e-5)


def test_more_constraints_than_variables():
    """min (x − 3)² s.t. x ≤ 2 and x ≤ 2.5, 0 ≤ x ≤ 5: closed form x = 2."""
    def evaluate(x):
        return toy_evaluation(objective=float((x[0] - 3.0) ** 2), gradient=2.0 * (x - 3.0),
                              constraints=np.array([x[0] - 2.0, x[0] - 2.5]),
                              constraint_gradients=np.ones((2, 1)))

    x = run(MMA(lower=0.0, upper=5.0), evaluate, np.array([0.5]), 30)
    assert x[0] == pytest.approx(2.0, abs=1e-4)


def test_bounds_and_move_limit_are_respected():
    """An objective that pulls every variable down hard: steps stop at the move limit
    (0.2 of the box) and then at the lower bound."""
    def evaluate(x):
        return toy_evaluation(objective=float(np.sum(x)), gradient=np.ones_like(x),
                              constraints=np.array([-1.0]),
                              constraint_gradients=np.zeros((1, x.size)))

    optimizer = MMA(move=0.2, lower=np.array([0.1, 0.0]), upper=np.array([1.0, 2.0]))
    x = np.array([0.9, 1.5])
    x1 = optimizer.step(x, evaluate(x), None, 1)
    np.testing.assert_allclose(x1, x - 0.2 * np.array([0.9, 2.0]), atol=1e-6)
    x = run(optimizer, evaluate, x1, 20)
    np.testing.assert_allclose(x, [0.1, 0.0], atol=1e-6)


def test_shrinking_move_limit_bounds_each_step():
    """move_min: the move limit is 0.2 for two iterations, then 0.2 · 0.5^k down to 0.03;
    an objective that pulls every variable down hard steps by exactly that much."""
    def evaluate(x):
        return toy_evaluation(objective=float(np.sum(x)), gradient=np.ones_like(x),
                              constraints=np.array([-1.0]),
                              constraint_gradients=np.zeros((1, x.size)))

    optimizer = MMA(move=0.2, move_min=0.03, move_shrink=0.5, move_shrink_after=2)
    expected = [0.2, 0.2, 0.1, 0.05, 0.03, 0.03]
    assert [optimizer.move_limit(k) for k in range(1, 7)] == pytest.approx(expected)
    x = np.array([1.0])
    for k, move in enumerate(expected, start=1):
        x_new = optimizer.step(x, evaluate(x), None, k)
        assert x - x_new == pytest.approx(move, abs=1e-6)
        x = x_new
    assert MMA(move=0.2).move_limit(10**6) == 0.2


def test_state_round_trip_reproduces_the_next_step():
    reference = MMA(lower=0.0, upper=5.0)
    x = run(reference, toy, np.array([4.0, 3.0, 2.0]), 3)
    restored = MMA(lower=0.0, upper=5.0)
    restored.load_state({k: np.array(v) for k, v in reference.state().items()})
    np.testing.assert_array_equal(restored.step(x, toy(x), None, 4),
                                  reference.step(x, toy(x), None, 4))


def test_iteration_one_starts_afresh():
    fresh = MMA(lower=0.0, upper=5.0)
    used = MMA(lower=0.0, upper=5.0)
    run(used, toy, np.array([4.0, 3.0, 2.0]), 5)
    x0 = np.array([1.0, 1.0, 1.0])
    np.testing.assert_array_equal(used.step(x0, toy(x0), None, 1),
                                  fresh.step(x0, toy(x0), None, 1))


@pytest.mark.parametrize(("options", "message"), [
    ({"move": 0.0}, "move limit"),
    ({"asyinit": 1.5}, "asyinit"),
    ({"asyincr": 0.9}, "asyincr"),
    ({"asydecr": 0.0}, "asydecr"),
    ({"objective_scale": -1.0}, "objective_scale"),
    ({"lower": 1.0, "upper": 1.0}, "lower bound"),
    ({"move": 0.1, "move_min": 0.2}, "move_min"),
    ({"move_min": 0.01, "move_shrink": 1.0}, "move_shrink"),
    ({"move_min": 0.01, "move_shrink_after": -1}, "move_shrink_after"),
])
def test_invalid_options_raise(options, message):
    with pytest.raises(ValueError, match=message):
        MMA(**options)


def test_design_outside_bounds_and_foreign_state_raise():
    with pytest.raises(ValueError, match="outside its bounds"):
        MMA().step(np.array([1.5]), toy(np.zeros(3)), None, 1)
    with pytest.raises(ValueError, match="not an MMA state"):
        MMA().load_state({"xold1": np.zeros(3)})


def test_registry():
    assert set(OPTIMIZERS) == {"oc", "mma"}
    assert isinstance(make_optimizer("oc", move=0.1), OC)
    mma = make_optimizer("mma", move=0.3, asyinit=0.2)
    assert isinstance(mma, MMA) and (mma.move, mma.asyinit) == (0.3, 0.2)
    with pytest.raises(ValueError, match="unknown optimizer 'sqp'; choose one of oc, mma"):
        make_optimizer("sqp")
    with pytest.raises(ValueError, match="unknown option"):
        make_optimizer("oc", asyinit=0.5)


# ---------------------------------------------------------------- MBB beam
def test_mma_on_mbb_matches_oc():
    """Density filter, 60x20: OC reaches the published top88 value 233.7146
    (test_opt_top88.py); MMA must land within 2 % of it with the volume bound met."""
    problem = mbb_problem(60, 20, 2.4, "density")
    result = optimize(problem, MMA(), max_iter=200, tol_change=0.01)
    final = result.history[-1]
    assert result.converged
    assert final["objective"] == pytest.approx(233.7146, rel=0.02)
    assert final["volume"] <= 0.5 + 1e-3


def test_mma_meets_an_extra_displacement_constraint():
    """Compliance at volume fraction 0.5 with the mid-span deflection of the 30x10 MBB
    beam limited to 90 % of its value at the unconstrained optimum: the limit holds at the
    end, and the compliance cannot beat the unconstrained optimum."""
    def deflection(state, rho):
        return -displacement_at(state, (15.0, 0.0), 1)

    free = optimize(mbb_problem(30, 10, 1.5, "density"), MMA(), max_iter=150)
    limit = 0.9 * deflection(free.evaluation.state, None)
    problem = mbb_problem(30, 10, 1.5, "density",
                          constraints=[Constraint("deflection", deflection, limit)])
    result = optimize(problem, MMA(), max_iter=150)
    final = result.history[-1]
    assert final["deflection"] <= limit * (1 + 1e-3)
    assert final["volume"] <= 0.5 + 1e-3
    assert final["objective"] >= free.history[-1]["objective"] * (1 - 1e-3)
    with pytest.raises(ValueError, match="use the MMA optimizer"):
        optimize(problem, OC(), max_iter=1)

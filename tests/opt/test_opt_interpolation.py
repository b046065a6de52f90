"""SIMP, RAMP and Heaviside projection: values, derivatives, continuation schedules."""

import numpy as np
import pytest
from opt_helpers import mbb_problem

from fesens.ad import grad, taylor_test
from fesens.opt import OC, RAMP, SIMP, Continuation, Heaviside, NoProjection, optimize

RHO = np.random.default_rng(0).uniform(0.05, 0.95, 40)


def test_simp_values_and_derivative():
    simp = SIMP(3.0, minimum=1e-3)
    np.testing.assert_allclose(simp(np.array([0.0, 0.5, 1.0])),
                               [1e-3, 1e-3 + 0.125 * (1 - 1e-3), 1.0], rtol=1e-14)
    np.testing.assert_allclose(grad(lambda r: np.sum(simp(r)))(RHO),
                               3.0 * RHO**2 * (1 - 1e-3), rtol=1e-12)


@pytest.mark.parametrize("penalty", [0.5, Continuation(0.5, final=3.0, step=0.5)])
def test_a_simp_penalty_below_one_is_refused(penalty):
    """p < 1 rewards intermediate densities; RAMP's q = 0.5 still
    penalizes them."""
    with pytest.raises(ValueError, match="SIMP needs a penalty ≥ 1, got 0.5"):
        SIMP(penalty)
    assert RAMP(0.5)(np.array([0.5]))[0] < 0.5


def test_ramp_values_and_derivative():
    """RAMP ``s = s_min + ρ/(1 + q(1 − ρ)) (1 − s_min)``: ``s' = (1 + q)/(1 + q(1 − ρ))²``."""
    q, smin = 8.0, 1e-9
    ramp = RAMP(q, minimum=smin)
    np.testing.assert_allclose(ramp(np.array([0.0, 0.5, 1.0])),
                               [smin, smin + 0.5 / 5.0 * (1 - smin), 1.0], rtol=1e-14)
    np.testing.assert_allclose(grad(lambda r: np.sum(ramp(r)))(RHO),
                               (1 + q) / (1 + q * (1 - RHO)) ** 2 * (1 - smin), rtol=1e-12)


@pytest.mark.parametrize(("beta", "eta"), [(1.0, 0.5), (8.0, 0.5), (16.0, 0.3)])
def test_heaviside_values_and_derivative(beta, eta):
    """``ρ̄(0) = 0``, ``ρ̄(1) = 1``, ``ρ̄(η) = tanh(βη) / (tanh(βη) + tanh(β(1 − η)))``,
    ``ρ̄' = β sech²(β(ρ − η)) / (tanh(βη) + tanh(β(1 − η)))``."""
    projection = Heaviside(beta, eta)
    denominator = np.tanh(beta * eta) + np.tanh(beta * (1 - eta))
    np.testing.assert_allclose(projection(np.array([0.0, eta, 1.0])),
                               [0.0, np.tanh(beta * eta) / denominator, 1.0], atol=1e-15)
    np.testing.assert_allclose(grad(lambda r: np.sum(projection(r)))(RHO),
                               beta / np.cosh(beta * (RHO - eta)) ** 2 / denominator,
                               rtol=1e-12, atol=1e-12)  # tanh' = 1 − tanh² cancels far out


@pytest.mark.parametrize("function", [SIMP(3.0), RAMP(5.0), Heaviside(4.0, 0.4)],
                         ids=["simp", "ramp", "heaviside"])
def test_interpolation_gradients_pass_taylor_test(function):
    weights = np.random.default_rng(1).standard_normal(RHO.size)
    result = taylor_test(lambda r: np.sum(weights * function(r)), RHO, verbose=False)
    assert result.rate > 1.9


def test_no_projection_is_identity():
    assert NoProjection()(RHO) is RHO


def test_continuation_schedules():
    additive = Continuation(1.0, 3.0, every=20, step=0.5)
    assert [additive.value(k) for k in (1, 20, 21, 41, 61, 81, 500)] == [
        1.0, 1.0, 1.5, 2.0, 2.5, 3.0, 3.0]
    # final from iteration 81, held for final_iterations = 1 more: done from 82 on
    assert not additive.done(81) and additive.done(82)
    multiplicative = Continuation(1.0, 16.0, every=10, factor=2.0)
    assert [multiplicative.value(k) for k in (1, 11, 21, 31, 41, 51)] == [
        1.0, 2.0, 4.0, 8.0, 16.0, 16.0]
    decreasing = Continuation(0.5, 0.1, every=5, factor=0.5)
    assert [decreasing.value(k) for k in (1, 6, 11, 16)] == [0.5, 0.25, 0.125, 0.1]
    constant = Continuation(3.0)
    assert constant.value(1000) == 3.0 and constant.done(1)


def test_interpolation_follows_its_schedule():
    simp = SIMP(Continuation(1.0, 3.0, every=2, step=1.0))
    values = []
    for k in range(1, 7):
        simp.update(k)
        values.append(simp.parameter)
    assert values == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]


def test_loop_does_not_stop_before_continuation_ends():
    """With a design-change tolerance of 1 (met at once), the loop must still run until
    the penalty reaches its final value at iteration 11 and one iteration more (the change
    at the raise answers the old penalty), and record it."""
    problem = mbb_problem(12, 4, 1.5, "density")
    problem.interpolation = SIMP(Continuation(1.0, 3.0, every=5, step=1.0))
    result = optimize(problem, OC(), max_iter=50, tol_change=1.0)
    assert result.converged
    assert [r["penalty"] for r in result.history] == [1.0] * 5 + [2.0] * 5 + [3.0] * 2

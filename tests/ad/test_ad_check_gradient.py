"""``check_gradient``, the gradient check a user runs on their own function: it reports
(never raises) the central difference and the Taylor remainders along one seeded random
direction, passes a right gradient, fails one off by a percent, checks a given gradient,
and keeps the steps within the scale it is given."""

import json
import math

import numpy as np
import pytest
from ad_helpers import scratch_rules, uniform  # noqa: F401 - fixture

from fesens.ad import check_gradient, defvjp, primitive

X = uniform(30, 0.5, 1.5, seed=2)


def cube_sum(factor: float = 1.0):
    """``Σ x³`` through a primitive whose VJP rule is ``factor`` times the right one."""
    cube = primitive(lambda x: x**3, "cube")
    defvjp(cube, lambda ans, x: lambda g: factor * 3.0 * x**2 * g)
    return lambda x: np.sum(cube(x))


@pytest.mark.usefixtures("scratch_rules")
def test_a_right_gradient_passes_with_rate_two():
    check = check_gradient(cube_sum(), X, seed=5)
    assert check.passed
    assert check.rate == pytest.approx(2.0, abs=0.05)
    assert check.difference.agreement < 1e-8
    assert check.lines()[-1].startswith("gradient check: pass: ")


@pytest.mark.usefixtures("scratch_rules")
def test_a_gradient_off_by_a_percent_fails_and_says_so():
    check = check_gradient(cube_sum(1.01), X, seed=5)
    assert not check.passed
    # ∇f·h is 1.01 times the difference: they differ by 0.01 / 1.01 of the larger
    assert check.difference.agreement == pytest.approx(0.01 / 1.01, rel=1e-4)
    assert check.rate < 1.5  # the remainders fall at rate 1 once ε is small
    verdict = check.lines()[-1]
    assert verdict.startswith("gradient check: FAIL: agreement 9.9e-03")
    assert "(tolerance 1e-05)" in verdict and "(at least 1.8)" in verdict


@pytest.mark.usefixtures("scratch_rules")
def test_a_given_gradient_is_the_one_checked():
    right = 3.0 * X**2
    assert check_gradient(cube_sum(), X, gradient=right, seed=1).passed
    wrong = right.copy()
    wrong[7] *= -1.0
    assert not check_gradient(cube_sum(), X, gradient=wrong, seed=1).passed


def test_the_seed_draws_the_direction_and_a_fresh_one_is_reported():
    f = lambda x: np.sum(np.sin(x))  # noqa: E731
    first, again = check_gradient(f, X, seed=11), check_gradient(f, X, seed=11)
    assert first.difference == again.difference
    assert check_gradient(f, X, seed=12).difference.slope != first.difference.slope
    fresh = check_gradient(f, X)
    assert check_gradient(f, X, seed=fresh.seed).difference == fresh.difference
    assert f"(seed {fresh.seed})" in fresh.lines()[0]


def test_a_function_linear_along_the_direction_has_no_rate_and_passes_on_the_difference():
    """``1e6 + 2 Σx``: the remainders are round-off, so no rate is claimed from them."""
    check = check_gradient(lambda x: 1e6 + 2.0 * np.sum(x), X, seed=3)
    assert math.isinf(check.rate) and check.passed
    numbers = json.loads(json.dumps(check.as_dict()))  # JSON-ready: no inf
    assert numbers["taylor"]["rate"] is None and numbers["passed"] is True
    assert any(line.startswith("  Taylor rate         none (round-off)")
               for line in check.lines())


def test_scale_keeps_every_step_within_each_entry():
    """``Σ log x`` over entries from 1e-6 to 1: steps of the default scale (1) take the
    small entries below zero (NaN values); relative to each entry they stay positive."""
    x = np.geomspace(1e-6, 1.0, 12)
    f = lambda v: np.sum(np.log(v))  # noqa: E731
    with np.errstate(invalid="ignore"):
        assert not check_gradient(f, x, seed=2).passed
    check = check_gradient(f, x, scale=x, seed=2)
    assert check.passed and check.rate == pytest.approx(2.0, abs=0.1)


def test_a_dict_of_numbers_with_a_number_scale():
    loads = {"a": 1.0, "b": 2.0}
    f = lambda p: p["a"] ** 2 * p["b"] + np.sin(p["b"])  # noqa: E731
    check = check_gradient(f, loads, scale=0.5, seed=4)
    assert check.passed and check.rate == pytest.approx(2.0, abs=0.1)

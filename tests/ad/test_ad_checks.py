"""The gradient checks themselves: they pass right gradients, fail wrong ones, and do not
mistake finite-difference round-off for an error."""

import numpy as np
import pytest
from ad_helpers import normal, scratch_rules  # noqa: F401 - fixture

from fesens.ad import check_grad, defvjp, primitive, taylor_test

X = normal(20, seed=3)


def cube_with_rule(factor: float):
    """``sum(x³)`` through a primitive whose VJP rule is ``factor`` times the right one."""
    cube = primitive(lambda x: x**3, "cube")
    defvjp(cube, lambda ans, x: lambda g: factor * 3.0 * x**2 * g)
    return lambda x: np.sum(cube(x))


@pytest.mark.usefixtures("scratch_rules")
def test_check_grad_passes_a_right_gradient_and_fails_one_off_by_a_percent():
    assert check_grad(cube_with_rule(1.0), X) < 1e-8
    with pytest.raises(AssertionError, match=r"relative error 9\.90\de-03.*gradient·h = "):
        check_grad(cube_with_rule(1.01), X)


def test_check_grad_does_not_report_round_off_as_an_error():
    """``1e6 + 1e-9 Σx``: the derivative (~1e-9) is far below what central differences of
    values ~1e6 resolve (ulp 1e-10 / ε), so the old relative measure reported ~100 %."""
    f = lambda x: 1e6 + 1e-9 * np.sum(x)  # noqa: E731
    assert check_grad(f, X) == 0.0


@pytest.mark.usefixtures("scratch_rules")
def test_check_grad_still_fails_a_wrong_gradient_above_the_round_off_floor():
    f_wrong = cube_with_rule(0.5)
    with pytest.raises(AssertionError):
        check_grad(lambda x: 1e3 + f_wrong(x), X)


@pytest.mark.usefixtures("scratch_rules")
def test_taylor_rate_is_two_for_a_right_gradient_and_one_for_a_wrong_one():
    right = taylor_test(cube_with_rule(1.0), X, verbose=False)
    wrong = taylor_test(cube_with_rule(1.01), X, verbose=False)
    assert right.rate == pytest.approx(2.0, abs=0.1)
    assert wrong.rate < 1.2

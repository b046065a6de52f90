"""Scalar fast paths: arithmetic on Python floats and nested ``grad`` on numbers.

The raw functions of ``add``, ``subtract``, ``multiply``, ``true_divide`` and ``power``
take Python's operators on numbers where those give the ufunc's bits on every CPU (the
other powers call the ufunc), and the ufunc's warnings where it warns (overflow, division
by zero, invalid values).
"""

import math

import numpy as np
import pytest
from ad_helpers import scratch_rules  # noqa: F401 - fixture

from fesens.ad import grad, value_and_grad
from fesens.ad import numpy_wrapper as w
from fesens.ad.registry import defvjp
from fesens.ad.tracer import new_leaf, primitive

RNG = np.random.default_rng(17)
BASES = [*RNG.uniform(1e-3, 10.0, 40).tolist(), *np.exp(RNG.uniform(-30, 30, 40)).tolist()]
EXPONENTS = [*RNG.uniform(-20, 20, 20).tolist(), 2, 2.0, 0.5, -1, -1.0, 1, 0, 3, 10, -0.5]
UFUNCS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
          "true_divide": np.true_divide, "power": np.power}


@pytest.mark.parametrize("name", sorted(UFUNCS))
def test_scalar_arithmetic_gives_the_ufunc_bits(name):
    raw, ufunc = w.BINARY[name].raw, UFUNCS[name]
    with np.errstate(all="ignore"):  # overflowing powers: inf from both
        _compare_bits(raw, ufunc, name)


def _compare_bits(raw, ufunc, name):
    for x in BASES[::4]:
        for y in EXPONENTS:
            for a, b in ((x, y), (np.float64(x), y), (y, x), (x, np.float64(y))):
                if name == "power" and not a > 0:
                    continue
                expected = ufunc(a, b)
                assert raw(a, b) == expected and math.copysign(1, raw(a, b)) == math.copysign(
                    1, expected), (a, b)


def test_power_of_numbers_matches_numpy_for_special_exponents():
    # numpy computes x**2, x**0.5 and x**-1 as x*x, sqrt(x) and 1/x: not always pow's bits
    for x in BASES:
        for y in (2, 2.0, 0.5, -1, -1.0, 3.7, -2.2):
            assert w.power.raw(x, y) == np.power(x, y), (x, y)


@pytest.mark.parametrize(("name", "x", "y"), [
    ("multiply", 1e308, 10.0), ("add", 1e308, 1e308), ("subtract", -1e308, 1e308),
    ("true_divide", 1.0, 0.0), ("true_divide", 0.0, 0.0), ("power", 10.0, 400.0),
    ("power", -8.0, 1 / 3), ("power", 0.0, -1.0),
])
def test_scalar_arithmetic_keeps_the_ufunc_warnings(name, x, y):
    with pytest.warns(RuntimeWarning):
        expected = UFUNCS[name](x, y)
    with pytest.warns(RuntimeWarning):
        got = w.BINARY[name].raw(x, y)
    assert got == expected or (np.isnan(got) and np.isnan(expected))


def test_int_operands_stay_numpy_integers():
    assert type(w.multiply.raw(3, 4)) is np.int64 or type(w.multiply.raw(3, 4)) is np.intp


def test_nested_grad_on_numbers_returns_floats():
    f = lambda x: 3 * x**3 * (np.cos(x) - 10 * x)  # noqa: E731
    first, second = grad(f)(2.0), grad(grad(f))(2.0)
    assert isinstance(first, float) and isinstance(second, float)
    # d/dx 3x³(cos x − 10x) = 9x²(cos x − 10x) − 3x³ sin x − 30x³ and its derivative
    x = 2.0
    assert first == pytest.approx(9 * x**2 * (math.cos(x) - 10 * x) - 3 * x**3 * math.sin(x)
                                  - 30 * x**3, rel=1e-14)
    assert second == pytest.approx(18 * x * (math.cos(x) - 10 * x) - 18 * x**2 * math.sin(x)
                                   - 180 * x**2 - 3 * x**3 * math.cos(x), rel=1e-14)


def test_grad_of_a_constant_on_numbers_is_zero():
    assert grad(lambda x: 3.0)(2.0) == 0.0
    assert grad(grad(lambda x: 2.0 * x))(2.0) == 0.0
    value, gradient = value_and_grad(lambda x: x * x)(3.0)
    assert value == 9.0 and gradient == 6.0 and isinstance(gradient, float)


def test_nested_grad_on_arrays_keeps_array_zeros():
    # the number fast path must not take a box of an array: its zero is an array
    g = grad(lambda x: np.sum(grad(lambda y: np.sum(y * 2.0))(x)))(np.ones(3))
    assert isinstance(g, np.ndarray) and g.shape == (3,) and not np.any(g)


@pytest.mark.parametrize("x", [2.5, 0.7])
def test_power_rules_on_numbers_match_the_array_path(x):
    # numbers run in forward mode (dual numbers) and skip the np.where of the power rules;
    # arrays of one entry take reverse mode and the np.where: the same derivative, up to
    # the rounding of a different order of operations
    for y in (0.0, 2.0, 3.5, -1.5):
        for f in (lambda a, b: a**b, lambda a, b: np.exp(a) ** b):
            for inner, outer in ((1, 0), (0, 1)):
                on_numbers = grad(grad(f, inner), outer)(x, y)
                on_arrays = _mixed_derivative_on_arrays(f, inner, outer, x, y)[0]
                assert on_numbers == pytest.approx(on_arrays, rel=1e-14, abs=0.0)


@pytest.mark.parametrize("x", [2.5, 0.7])
@pytest.mark.parametrize("y", [0.0, 2.0, -1.5])
def test_mixed_second_derivative_of_power_is_the_closed_form(x, y):
    # ∂²(x^y)/∂x∂y = x^(y−1) (1 + y ln x), at y = 0 too (1/x): the derivative of the
    # x-rule in y must keep the exponent y − 1 traced there
    expected = x ** (y - 1) * (1 + y * math.log(x))
    f = lambda a, b: a**b  # noqa: E731
    for inner, outer in ((1, 0), (0, 1)):
        assert grad(grad(f, inner), outer)(x, y) == pytest.approx(expected, rel=1e-14)
        got = _mixed_derivative_on_arrays(f, inner, outer, x, y)[0]
        assert got == pytest.approx(expected, rel=1e-14)


def _mixed_derivative_on_arrays(f, inner, outer, x, y):
    def summed(a, b):
        return np.sum(f(a, b))

    def inner_gradient(a, b):
        return np.sum(grad(summed, inner)(a, b))

    return grad(inner_gradient, outer)(np.array([x]), np.array([y]))


def test_power_of_a_non_positive_base_has_no_exponent_derivative():
    assert grad(lambda y: (-2.0) ** y)(2.0) == 0.0
    assert grad(lambda y: 0.0**y)(2.0) == 0.0


@pytest.mark.usefixtures("scratch_rules")
def test_a_rule_registered_after_tracing_decides_whether_the_output_is_kept():
    twice = primitive(lambda x: 2.0 * x, "twice")
    defvjp(twice, lambda ans, x: lambda g: 2.0 * g, uses_ans=False)
    assert twice(new_leaf(np.ones(3), 10**9)).node.ans is None
    defvjp(twice, lambda ans, x: lambda g: g * ans / x)  # reads ans from now on
    assert twice(new_leaf(np.ones(3), 10**9)).node.ans is not None
    assert np.array_equal(grad(lambda x: np.sum(twice(x)))(np.ones(3)), [2.0, 2.0, 2.0])

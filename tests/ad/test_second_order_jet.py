"""``grad(grad(f))`` of a number on a jet (``fesens/ad/jet.py``): the nested evaluation's
numbers to 1e-15 relative for every rule, closed forms, and the nested evaluation itself
wherever the jet gives up."""

import math
import warnings

import numpy as np
import pytest

from fesens.ad import grad, jet, stop_gradient, value_and_grad

POINTS = [2.0, 0.3, -1.7, np.float64(1.25), 3, 0.9]

# one function per rule of the jet; each takes the jet path at every point of POINTS
RULES = {
    "add": lambda x: (x + 2) + (1.5 + x) + np.add(x, x) + np.add(0.5, x) + x + x * x,
    "subtract": lambda x: (x - 2) - (1.5 - x * x) - np.subtract(x, x * x) - np.subtract(3, x),
    "multiply": lambda x: 3 * x * x * (x - 10 * x * x) * np.float64(0.5) * np.multiply(x, x)
    * np.multiply(2.0, x),
    "divide": lambda x: x / 7 + 2.5 / (1.5 + x * x) - (x * x) / (x * x + 1.0)
    + np.true_divide(x, 1.0 + x * x) + np.true_divide(3.0, x * x + 2.0),
    "constant powers": lambda x: x**2 + x**3 + (x * x + 1.0) ** 0.5 + (x * x + 0.5) ** -1.5
    + x**10 + (x * x + 1.0) ** 2.5 + x**-2 + np.power(x * x + 1.0, 1.5) + x**1,
    "powers of a constant": lambda x: 2.0**x + np.float64(1.5) ** (x * x) + np.power(3, x),
    "traced powers": lambda x: (x * x + 1.0) ** (x * 0.5) + (np.cos(x) + 1.5) ** np.exp(x * 0.1),
    "negative, positive, abs": lambda x: -x * x + (+x) * x - np.negative(x * x * x)
    + abs(x) * x + np.absolute(x - 10.0) * x + np.fabs(x) * x,
    "square": lambda x: np.square(x) + np.square(x * x - 1.0) * x,
}
# ufunc, its second derivative, an argument map keeping it in its domain
UNARY = {
    np.exp: (lambda v: math.exp(v), lambda x: 0.5 * x),
    np.log: (lambda v: -1.0 / v**2, lambda x: x * x + 0.5),
    np.sqrt: (lambda v: -0.25 * v**-1.5, lambda x: x * x + 0.5),
    np.sin: (lambda v: -math.sin(v), lambda x: 1.3 * x),
    np.cos: (lambda v: -math.cos(v), lambda x: 1.3 * x),
    np.tan: (lambda v: 2 * math.tan(v) / math.cos(v) ** 2, lambda x: 0.3 * x),
    np.tanh: (lambda v: -2 * math.tanh(v) / math.cosh(v) ** 2, lambda x: 0.7 * x),
    np.sinh: (lambda v: math.sinh(v), lambda x: 0.7 * x),
    np.cosh: (lambda v: math.cosh(v), lambda x: 0.7 * x),
    np.arctan: (lambda v: -2 * v / (1 + v * v) ** 2, lambda x: 0.7 * x),
    np.log1p: (lambda v: -1 / (1 + v) ** 2, lambda x: x * x),
    np.expm1: (lambda v: math.exp(v), lambda x: 0.5 * x),
    np.reciprocal: (lambda v: 2 / v**3, lambda x: x * x + 0.5),
}


def test_every_chain_rule_is_tested():
    assert set(jet.CHAIN) == set(UNARY) | {np.absolute, np.fabs}  # those two in RULES


def _nested(d, x, monkeypatch):
    """``d(x)`` with the jet off: the nested evaluation."""
    with monkeypatch.context() as m:
        m.setattr(jet, "first_and_second", lambda *args: None)
        return _outcome(d, x)


def _outcome(d, x):
    try:
        return d(x)
    except Exception as error:  # noqa: BLE001 - the same error from both paths
        return f"{type(error).__name__}: {error}"


def _jet_taken(monkeypatch) -> list:
    """Record each call of the jet driver: True where it answered."""
    answered = []
    original = jet.first_and_second

    def recorded(*args):
        out = original(*args)
        answered.append(out is not None)
        return out

    monkeypatch.setattr(jet, "first_and_second", recorded)
    return answered


def _close(a, b):
    return a == pytest.approx(b, rel=1e-15, abs=0)  # a few units in the last place


@pytest.mark.parametrize("name", sorted(RULES))
def test_every_rule_gives_the_nested_evaluation_to_1e_15(name, monkeypatch):
    f = RULES[name]
    for x in POINTS:
        for d in (grad(grad(f)), value_and_grad(grad(f))):
            nested = _nested(d, x, monkeypatch)
            answered = _jet_taken(monkeypatch)
            assert _close(d(x), nested), (name, x)
            assert answered == [True], (name, x)


@pytest.mark.parametrize("ufunc", list(UNARY), ids=lambda u: u.__name__)
def test_every_ufunc_gives_the_nested_evaluation_and_its_closed_form(ufunc, monkeypatch):
    second, inner = UNARY[ufunc]
    f = lambda x: ufunc(inner(x))  # noqa: E731
    answered = _jet_taken(monkeypatch)
    for x in POINTS:
        x = float(x)
        v, a = inner(x), inner(1.0) - inner(0.0)  # the inner map's value and slope
        found = grad(grad(f))(x)
        if inner(-x) == inner(x):  # x² + c: f'' = φ''(v) (2x)² + φ'(v) 2, φ' by the jet
            phi1 = grad(ufunc)(v)
            expected = second(v) * (2 * x) ** 2 + phi1 * 2
            assert found == pytest.approx(expected, rel=1e-13)
        else:
            assert found == pytest.approx(second(v) * a * a, rel=1e-14)
        assert _close(found, _nested(grad(grad(f)), x, monkeypatch))
    assert all(answered)


def test_the_benchmark_functions_and_their_closed_form():
    x = 2.0
    assert grad(grad(lambda y: 5 * y**10))(x) == 450 * x**8
    # d²/dx² (3x³ cos x − 30x⁴) = 18x cos x − 18x² sin x − 3x³ cos x − 360x²
    expected = (18 * x * math.cos(x) - 18 * x**2 * math.sin(x) - 3 * x**3 * math.cos(x)
                - 360 * x**2)
    g = lambda y: 3 * y**3 * (np.cos(y) - 10 * y)  # noqa: E731
    assert value_and_grad(grad(g))(x) == pytest.approx(
        (9 * x**2 * math.cos(x) - 3 * x**3 * math.sin(x) - 120 * x**3, expected), rel=1e-14)


# where the jet gives up: the nested evaluation's result (or error, or warning), bit for bit
FALLBACKS = {
    "an array": lambda x: np.sum(x * np.ones(3)),
    "a ufunc without a jet rule": lambda x: np.arcsinh(x),
    "float()": lambda x: float(x) * x,
    "math on a jet": lambda x: math.sin(x),
    "an attribute": lambda x: x * x.shape[0] if x.ndim else x * x,
    "stop_gradient": lambda x: stop_gradient(x) * x * x,
    "grad inside": lambda x: grad(lambda y: x * y * y)(1.5) * x,
    "a jet inside": lambda x: x * grad(grad(lambda y: x * y * y))(1.0),  # 2x²: f'' = 4
    "a binary ufunc without a jet rule": lambda x: np.maximum(x, 0.0) * x,
    "abs at 0": lambda x: abs(x - 2.0) * x,
    "log of a negative number": lambda x: np.log(x - 5.0),
    "division by zero": lambda x: 1.0 / (x - 2.0),
    "fractional power of a negative number": lambda x: (x - 5.0) ** 0.5,
    "traced power at 0": lambda x: (x - 2.0) ** x,
    "overflow": lambda x: np.exp(x * 400.0),
    "a tuple": lambda x: (x, x),
    "numpy.positive (not traced)": lambda x: np.positive(x),
    "a bool": lambda x: x > 1.0,
}


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_where_the_jet_gives_up_the_nested_evaluation_answers(name, monkeypatch):
    f = FALLBACKS[name]
    for d in (grad(grad(f)), value_and_grad(grad(f))):
        with warnings.catch_warnings(record=True) as nested_warnings:
            warnings.simplefilter("always")
            nested = _nested(d, 2.0, monkeypatch)
        answered = _jet_taken(monkeypatch)
        with warnings.catch_warnings(record=True) as found_warnings:
            warnings.simplefilter("always")
            found = _outcome(d, 2.0)
        assert answered and not all(answered), name  # (an inner jet may answer first)
        assert type(found) is type(nested) and repr(found) == repr(nested), name
        assert [str(w.message) for w in found_warnings] == \
            [str(w.message) for w in nested_warnings], name


def test_a_jet_inside_a_jet_is_the_nested_evaluation():
    assert grad(grad(FALLBACKS["a jet inside"]))(2.0) == 4.0


def test_other_nestings_are_not_the_jet(monkeypatch):
    answered = _jet_taken(monkeypatch)
    f = lambda x, y: x**3 * y**2 + np.sin(x * y)  # noqa: E731
    x, y = 0.7, 1.3
    mixed = 6 * x**2 * y + np.cos(x * y) - x * y * np.sin(x * y)
    assert grad(grad(f, 1), 0)(x, y) == pytest.approx(mixed, rel=1e-14)
    assert grad(grad(f, 1), 1)(x, y) == pytest.approx(
        2 * x**3 - x * x * np.sin(x * y), rel=1e-14)  # the jet in the second argument
    assert grad(grad(grad(np.sin)))(x) == pytest.approx(-np.cos(x), rel=1e-15)
    assert answered == [True]  # only grad(grad(f, 1), 1)

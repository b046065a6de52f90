"""Second-order rules on numbers (``fesens/ad/second_order.py``): nested ``grad`` gives the
nested evaluation's results bit for bit (value and type), on every branch of the rules."""

import math

import numpy as np
import pytest

from fesens.ad import forward, grad, jet, value_and_grad

POINTS = [2.0, 0.3, -1.7, np.float64(1.25), 0.0, 3]


@pytest.fixture(autouse=True)
def _nested(monkeypatch):
    """These are the nested evaluation's rules: the jet (``test_second_order_jet.py``) off."""
    monkeypatch.setattr(jet, "first_and_second", lambda *args: None)


def _mixed(f):
    """``d/dx (∂f/∂y)(x, y = x)``: the inner trace sees the outer input as a constant dual."""
    return grad(lambda x: grad(lambda y: f(x, y))(x))


FUNCTIONS = {
    "5x^10": lambda x: 5 * x**10,
    "3x^3 (cos x - 10x)": lambda x: 3 * x**3 * (np.cos(x) - 10 * x),
    "exp((5x/2) sin(x)^(e^x))": lambda x: np.exp((5 * x / 2) * np.sin(x) ** np.exp(x)),
    "quotients": lambda x: (x / (1.5 + x * x) - 2.0 / (x * x + 1.0)) / 3 - x / np.float64(7.0),
    "sums": lambda x: -(x - 2.5) + (1 - x) - (x + x) * (0.5 + x),
    "powers": lambda x: x**2 + x**1 + x**0 + x**0.5 * 0 + (x * x + 1.0) ** 0.5 + x**-1.5 * 0
    + (x * x + 0.5) ** -1 + 2.0 ** x + (x * x + 1.0) ** (x * 0.5) + np.square(x),
    "elementwise": lambda x: np.sin(x) * np.cos(x) + np.tanh(x) - np.exp(-x) + np.log(x * x + 1.0)
    + np.sqrt(x * x + 2.0) + np.negative(x),
    "power at 0": lambda x: (x * 0.0) ** (x + 1.0) + (x - x) ** 2.0 + np.float64(0.0) ** (x + 2.0),
    "negative base": lambda x: (-1.0 - x * x) ** 3 + (-2.0) ** (x * 0 + 2.0),
}


def _outcome(d, x):
    try:
        return d(x)
    except ArithmeticError as error:  # Python's 0.0 ** -0.5 in a rule: the same from both
        return f"{type(error).__name__}: {error}"


def _both(d, x, monkeypatch):
    fast = _outcome(d, x)
    with monkeypatch.context() as m:
        for table in (forward.SECOND_ORDER_BINARY, forward.SECOND_ORDER_UNARY):
            for prim in list(table):
                m.delitem(table, prim)
        nested = _outcome(d, x)
    return fast, nested


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return all(_same(p, q) for p, q in zip(a, b, strict=True))
    return type(a) is type(b) and repr(a) == repr(b)  # repr: every bit, -0.0 and nan too


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_nested_grad_matches_the_nested_evaluation_bit_for_bit(name, monkeypatch):
    f = FUNCTIONS[name]
    with np.errstate(all="ignore"):  # 0 ** negative, log 0: inf and nan from both
        for x in POINTS:
            for d in (grad(grad(f)), value_and_grad(grad(f)), _mixed(lambda x, y: f(x * y))):
                fast, nested = _both(d, x, monkeypatch)
                assert _same(fast, nested), (name, x, fast, nested)


def test_second_derivative_closed_form():
    # d²/dx² (3x³ cos x − 30x⁴) = 18x cos x − 18x² sin x − 3x³ cos x − 360x²
    x = 2.0
    expected = (18 * x * math.cos(x) - 18 * x**2 * math.sin(x) - 3 * x**3 * math.cos(x)
                - 360 * x**2)
    assert grad(grad(FUNCTIONS["3x^3 (cos x - 10x)"]))(x) == pytest.approx(expected, rel=1e-14)


def test_the_rules_are_taken(monkeypatch):
    taken = []
    for table in (forward.SECOND_ORDER_BINARY, forward.SECOND_ORDER_UNARY):
        for prim, rule in table.items():
            def counted(*args, rule=rule, prim=prim):
                out = rule(*args)
                taken.append((prim.__name__, out is not None))
                return out
            monkeypatch.setitem(table, prim, counted)
    grad(grad(FUNCTIONS["exp((5x/2) sin(x)^(e^x))"]))(2.0)
    assert sorted(set(taken)) == [("exp", True), ("multiply", True), ("power", True),
                                  ("sin", True), ("true_divide", True)]

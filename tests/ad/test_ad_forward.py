"""Forward mode (fesens.ad.forward): dual numbers for ``jvp`` and for derivatives of
functions of one number, their nesting with each other and with reverse mode, and the
fall-back to reverse mode where a primitive has no JVP rule.

Expected values are closed forms (derivatives written out by hand) or reverse mode's."""

import math

import numpy as np
import pytest

from fesens.ad import api, grad, jvp, value_and_grad, vjp
from fesens.ad.forward import Dual, ForwardModeUnsupported, ForwardTrace
from fesens.ad.tracer import Box, new_trace_id


@pytest.fixture
def reverse_calls(monkeypatch):
    """Counts the reverse-mode traces opened (``api._trace``)."""
    calls = []
    original = api._trace

    def counting(*args):
        calls.append(args[0])
        return original(*args)

    monkeypatch.setattr(api, "_trace", counting)
    return calls


def test_grad_on_a_number_runs_in_forward_mode(reverse_calls):
    f = lambda x: 3 * x**3 * (np.cos(x) - 10 * x)  # noqa: E731
    x = 2.0
    first = 9 * x**2 * (math.cos(x) - 10 * x) - 3 * x**3 * math.sin(x) - 30 * x**3
    second = (18 * x * (math.cos(x) - 10 * x) - 18 * x**2 * math.sin(x) - 180 * x**2
              - 3 * x**3 * math.cos(x))
    assert grad(f)(x) == pytest.approx(first, rel=1e-14)
    assert grad(grad(f))(x) == pytest.approx(second, rel=1e-14)
    assert reverse_calls == []  # no tape was recorded


def test_third_and_fourth_derivatives_of_sine():
    d3 = grad(grad(grad(np.sin)))
    d4 = grad(d3)
    for x in (0.3, 1.7, -2.2):
        assert d3(x) == pytest.approx(-math.cos(x), rel=1e-14)
        assert d4(x) == pytest.approx(math.sin(x), rel=1e-14)


def test_the_issue_functions_agree_with_closed_forms():
    # d/dx exp(u), u = (5x/2) s^e, s = sin x, e = eˣ: u' = (5/2) s^e + (5x/2) s^e (e ln s +
    # e cos x / s)
    x = 2.0
    s, e = math.sin(x), math.exp(x)
    u = 2.5 * x * s**e
    du = 2.5 * s**e + 2.5 * x * s**e * (e * math.log(s) + e * math.cos(x) / s)
    f = lambda y: np.exp((5 * y / 2) * np.sin(y) ** np.exp(y))  # noqa: E731
    assert grad(f)(x) == pytest.approx(math.exp(u) * du, rel=1e-13)
    h = 1e-5  # the second derivative against central differences of the exact first
    fd = (grad(f)(x + h) - grad(f)(x - h)) / (2 * h)
    assert grad(grad(f))(x) == pytest.approx(fd, rel=1e-7)
    assert grad(grad(lambda y: 5 * y**10))(x) == pytest.approx(450 * x**8, rel=1e-14)


def test_value_and_grad_and_int_inputs():
    value, slope = value_and_grad(lambda x: x * np.exp(x))(1.0)
    assert value == pytest.approx(math.e) and slope == pytest.approx(2 * math.e)
    assert isinstance(slope, float)
    assert grad(lambda x: x**3)(2) == pytest.approx(12.0)
    assert grad(lambda x: 7.0)(2.0) == 0.0


def test_grad_of_a_vector_output_of_a_number_is_refused():
    with pytest.raises(TypeError, match="grad needs a scalar output"):
        grad(lambda x: np.array([1.0, 2.0]) * x)(2.0)


def test_a_primitive_without_jvp_rule_falls_back_to_reverse_mode(reverse_calls):
    # cumprod has no JVP rule: forward mode gives way, reverse mode gives the derivative
    f = lambda x: np.sum(np.cumprod(np.array([1.0, 2.0, 3.0]) * x))  # noqa: E731
    x = 1.5
    expected = 1.0 + 2 * 2.0 * x + 3 * 6.0 * x**2  # d/dx (x + 2x² + 6x³)
    assert grad(f)(x) == pytest.approx(expected, rel=1e-14)
    assert len(reverse_calls) == 1


def test_a_function_that_swallows_the_signal_still_falls_back():
    def f(x):
        try:
            extra = np.sum(np.cumprod(np.array([1.0, 2.0]) * x))  # no JVP rule
        except Exception:  # noqa: BLE001 - a user function that hides every failure
            extra = 0.0
        return x**2 + extra

    # reverse mode differentiates the cumprod branch: d/dx (x² + x + 2x²) = 6x + 1
    assert grad(f)(2.0) == pytest.approx(13.0, rel=1e-14)


def test_forward_inside_reverse_through_a_captured_box():
    # outer reverse mode over an array; inner forward derivative in s of sin(s a₀) at s = 1
    def f(a):
        inner = grad(lambda s: np.sin(s * a[0]))(1.0)  # a₀ cos(a₀)
        return np.sum(a * inner)

    a = np.array([0.5, 2.0])
    c = a[0] * math.cos(a[0])
    dc = math.cos(a[0]) - a[0] * math.sin(a[0])
    expected = np.array([c + (a[0] + a[1]) * dc, c])
    np.testing.assert_allclose(grad(f)(a), expected, rtol=1e-14)


def test_reverse_inside_forward_through_a_captured_dual_falls_back():
    # the inner reverse trace would hold the outer dual: forward mode gives way
    def f(s):
        return np.sum(grad(lambda v: np.sum(s * v**2))(np.ones(3)))  # Σ 2 s v = 6 s

    assert grad(f)(2.0) == pytest.approx(6.0, rel=1e-14)
    assert grad(grad(lambda s: s * f(s)))(2.0) == pytest.approx(12.0, rel=1e-14)


def test_mixed_partials_of_two_numbers():
    f = lambda x, y: np.sin(x * y) + x**2 * y  # noqa: E731
    x, y = 0.7, 1.3
    expected = math.cos(x * y) - x * y * math.sin(x * y) + 2 * x
    assert grad(grad(f, 1), 0)(x, y) == pytest.approx(expected, rel=1e-14)
    assert grad(grad(f, 0), 1)(x, y) == pytest.approx(expected, rel=1e-14)


def test_jvp_runs_in_forward_mode_and_matches_reverse_mode(reverse_calls):
    rng = np.random.default_rng(3)
    A = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    x, v = rng.standard_normal(4), rng.standard_normal(4)

    def f(z):
        return {"solve": np.linalg.solve(A + np.outer(z, z), np.tanh(z)),
                "norm": np.linalg.norm(z) * np.max(z)}

    value, tangent = jvp(f, (x,), (v,))
    assert reverse_calls == []
    # ⟨w, J v⟩ = ⟨Jᵀ w, v⟩ against reverse mode
    _, pull = vjp(f, x)
    w = {"norm": 0.7, "solve": rng.standard_normal(4)}
    lhs = np.dot(w["solve"], tangent["solve"]) + w["norm"] * tangent["norm"]
    assert lhs == pytest.approx(np.dot(pull(w), v), rel=1e-12)
    np.testing.assert_allclose(value["solve"], f(x)["solve"], rtol=1e-15)


def test_jvp_broadcasts_a_scalar_tangent_and_refuses_a_wrong_shape():
    _, tangent = jvp(lambda z: np.sum(z**2), (np.array([1.0, 2.0, 3.0]),), (1.0,))
    assert tangent == pytest.approx(12.0)  # Σ 2 z · 1
    with pytest.raises(ValueError, match="tangent of shape"):
        jvp(lambda z: np.sum(z), (np.ones(3),), (np.ones(2),))


def test_jvp_of_a_constant_output_is_zero():
    value, tangent = jvp(lambda z: (np.ones(2), 3.0 * z), (1.5,), (2.0,))
    np.testing.assert_array_equal(tangent[0], np.zeros(2))
    assert tangent[1] == pytest.approx(6.0)


def test_a_box_never_holds_a_dual():
    trace = ForwardTrace(new_trace_id())
    dual = Dual(2.0, 1.0, trace)
    box_trace = new_trace_id()
    box = Box(3.0, api.new_leaf(3.0, box_trace).node, box_trace)
    with pytest.raises(ForwardModeUnsupported):
        box * dual  # the box's trace is newer: recording it would put a dual on the tape
    assert trace.missing is not None and "reverse-mode trace" in trace.missing

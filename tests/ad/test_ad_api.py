"""The user-facing transformations: grad, value_and_grad, vjp and jvp."""

import numpy as np
import pytest
from ad_helpers import normal, uniform

from fesens.ad import grad, jvp, taylor_test, value_and_grad, vjp

X = uniform(4, 0.5, 1.5, seed=1)
Y = uniform(4, 0.5, 1.5, seed=2)
A = normal((3, 4), seed=3)


def f_xyz(x, y, z):
    """``Σ x² y + z Σ y``: ``∂x = 2xy``, ``∂y = x² + z``, ``∂z = Σ y``."""
    return np.sum(x**2 * y) + z * np.sum(y)


# ------------------------------------------------------------------ argnums
def test_argnums_int_selects_one_argument():
    assert np.allclose(grad(f_xyz)(X, Y, 1.5), 2 * X * Y, rtol=1e-15)
    assert np.allclose(grad(f_xyz, argnums=1)(X, Y, 1.5), X**2 + 1.5, rtol=1e-15)
    assert grad(f_xyz, argnums=2)(X, Y, 1.5) == pytest.approx(np.sum(Y), rel=1e-15)


def test_argnums_tuple_gives_a_tuple_in_that_order():
    g = grad(f_xyz, argnums=(2, 0))(X, Y, 1.5)
    assert type(g) is tuple and len(g) == 2
    assert g[0] == pytest.approx(np.sum(Y), rel=1e-15)
    assert np.allclose(g[1], 2 * X * Y, rtol=1e-15)


def test_value_and_grad_returns_the_plain_value():
    value, g = value_and_grad(f_xyz, argnums=(0, 1))(X, Y, 1.5)
    assert value == pytest.approx(np.sum(X**2 * Y) + 1.5 * np.sum(Y), rel=1e-15)
    assert isinstance(value, float | np.floating | np.ndarray)
    assert np.allclose(g[0], 2 * X * Y) and np.allclose(g[1], X**2 + 1.5)


# ------------------------------------------------------------------ structured inputs
def test_dict_input_gives_a_dict_float_leaves_give_floats():
    params = {"field": X, "scale": 2.0, "load": 0.5}

    def f(p):
        return p["scale"] * np.sum(p["field"] ** 2) + p["load"] ** 3

    g = grad(f)(params)
    assert type(g) is dict and set(g) == set(params)
    assert np.allclose(g["field"], 4.0 * X, rtol=1e-15)
    assert isinstance(g["scale"], float) and not isinstance(g["scale"], np.ndarray)
    assert g["scale"] == pytest.approx(np.sum(X**2), rel=1e-15)
    assert isinstance(g["load"], float) and g["load"] == pytest.approx(0.75, rel=1e-15)


def test_list_and_tuple_inputs_keep_their_type():
    def f(p):
        return p[0] * np.sum(p[1] * p[2])

    for kind in (list, tuple):
        g = grad(f)(kind([3.0, X, Y]))
        assert type(g) is kind and len(g) == 3
        assert isinstance(g[0], float) and g[0] == pytest.approx(np.sum(X * Y), rel=1e-15)
        assert np.allclose(g[1], 3.0 * Y) and np.allclose(g[2], 3.0 * X)


def test_nested_structures():
    params = {"materials": [{"E": 2.0}, {"E": 3.0}], "mesh": (X, {"t": 0.1})}

    def f(p):
        E = p["materials"][0]["E"] * p["materials"][1]["E"]
        return E * np.sum(p["mesh"][0]) + p["mesh"][1]["t"] ** 2

    g = grad(f)(params)
    assert g["materials"][0]["E"] == pytest.approx(3.0 * np.sum(X), rel=1e-15)
    assert g["materials"][1]["E"] == pytest.approx(2.0 * np.sum(X), rel=1e-15)
    assert type(g["mesh"]) is tuple and np.allclose(g["mesh"][0], 6.0)
    assert g["mesh"][1]["t"] == pytest.approx(0.2, rel=1e-15)


def test_taylor_test_accepts_structured_inputs():
    def f(p):
        return p["a"] * np.sum(np.sin(p["x"])) + np.sum(p["y"][0] * p["y"][1] ** 2)

    rate = taylor_test(f, {"a": 1.3, "x": X, "y": [Y, X]}, verbose=False).rate
    assert abs(rate - 2) < 0.1


# ------------------------------------------------------------------ promotion and errors
def test_ints_are_promoted_to_floats():
    assert grad(lambda x: x**3)(2) == 12.0
    assert isinstance(grad(lambda x: x**3)(2), float)
    g = grad(lambda x: np.sum(x**2) / 2)(np.array([1, 2, 3]))
    assert g.dtype == np.float64 and np.array_equal(g, [1.0, 2.0, 3.0])
    g = grad(lambda p: p["n"] * 0.5 * p["n"])({"n": 4})
    assert g["n"] == 4.0 and isinstance(g["n"], float)
    assert grad(lambda x: x * 2.5)(np.int64(3)) == 2.5


@pytest.mark.parametrize(("leaf", "type_name"), [
    ("steel", "str"), (None, "NoneType"), (True, "bool"), (object(), "object"),
])
def test_non_numeric_leaves_raise_type_error_naming_the_type(leaf, type_name):
    with pytest.raises(TypeError, match=rf"\b{type_name}\b"):
        grad(lambda p: np.sum(p["x"]))({"x": X, "name": leaf})
    with pytest.raises(TypeError, match=rf"\b{type_name}\b"):
        grad(lambda p: 1.0)(leaf)


def test_grad_of_non_scalar_output_points_at_vjp():
    with pytest.raises(TypeError, match="vjp") as info:
        grad(lambda x: np.sin(x))(X)
    assert "(4,)" in str(info.value)


def test_function_independent_of_the_input_gives_zeros():
    g = grad(lambda x: 3.0)(X)
    assert isinstance(g, np.ndarray) and g.shape == X.shape and not np.any(g)
    assert grad(lambda x: np.sum(Y**2))(X).shape == X.shape
    assert not np.any(grad(lambda x: np.sum(Y**2))(X))
    assert grad(lambda x: 3.0)(1.5) == 0.0
    g = grad(lambda p: 1.0)({"a": X, "b": 2.0})
    assert not np.any(g["a"]) and g["a"].shape == X.shape and g["b"] == 0.0
    assert grad(f_xyz, argnums=2)(X, Y * 0, 1.5) == 0.0
    value, g = value_and_grad(lambda x, y: np.sum(y), argnums=0)(X, Y)
    assert value == pytest.approx(np.sum(Y)) and not np.any(g)


def test_gradient_is_a_writable_array_of_its_own():
    """Users post-process gradients in place (e.g. zero passive elements)."""
    for n in (10, 10_000):
        x = np.ones(n)
        g = grad(np.sum)(x)
        assert g.flags.writeable, f"n = {n}: the gradient is a read-only view"
        g[0] = 0.0
        assert g[0] == 0.0 and g[1] == 1.0


# ------------------------------------------------------------------ vjp
def _vector_function(x, y):
    """``R⁴ x R⁴ → R³``: ``A (x ⊙ sin y)``."""
    return A @ (x * np.sin(y))


def test_vjp_value_and_pullback_closed_form():
    w = normal(3, seed=4)
    value, pullback = vjp(_vector_function, X, Y)
    assert isinstance(value, np.ndarray)
    assert np.allclose(value, A @ (X * np.sin(Y)), rtol=1e-15)
    assert np.allclose(pullback(w), np.sin(Y) * (A.T @ w), rtol=1e-14)


def test_vjp_pullback_can_be_called_twice():
    w1, w2 = normal(3, seed=5), normal(3, seed=6)
    _, pullback = vjp(_vector_function, X, Y, argnums=(0, 1))
    first = pullback(w1)
    again = pullback(w1)
    other = pullback(w2)
    for a, b in zip(first, again, strict=True):
        assert np.array_equal(a, b)
    assert np.allclose(other[1], X * np.cos(Y) * (A.T @ w2), rtol=1e-14)


def test_vjp_of_a_function_independent_of_the_input():
    value, pullback = vjp(lambda x: A @ Y, X)
    assert np.allclose(value, A @ Y)
    g = pullback(np.ones(3))
    assert g.shape == X.shape and not np.any(g)


def test_vjp_of_a_tuple_output():
    """A tuple output gives a plain tuple value; the pullback takes a tuple cotangent."""
    w1, w2 = normal(4, seed=14), normal(3, seed=15)
    value, pullback = vjp(lambda x: (x**2, A @ x), X)
    assert type(value) is tuple
    assert all(type(v) is np.ndarray for v in value), "boxes leaked out of vjp"
    assert np.allclose(value[0], X**2) and np.allclose(value[1], A @ X)
    assert np.allclose(pullback((w1, w2)), 2 * X * w1 + A.T @ w2, rtol=1e-14)


# ------------------------------------------------------------------ jvp
def test_jvp_against_central_differences():
    tx, ty = normal(4, seed=7), normal(4, seed=8)
    value, tangent = jvp(_vector_function, (X, Y), (tx, ty))
    eps = 1e-6
    fd = (_vector_function(X + eps * tx, Y + eps * ty)
          - _vector_function(X - eps * tx, Y - eps * ty)) / (2 * eps)
    assert np.allclose(value, _vector_function(X, Y), rtol=1e-15)
    assert np.allclose(tangent, fd, rtol=1e-8, atol=1e-10)


def test_jvp_closed_form():
    tx, ty = normal(4, seed=9), normal(4, seed=10)
    _, tangent = jvp(_vector_function, (X, Y), (tx, ty))
    assert np.allclose(tangent, A @ (tx * np.sin(Y) + X * np.cos(Y) * ty), rtol=1e-13)


def test_jvp_is_the_transpose_of_vjp():
    """``⟨v, Jᵀ w⟩ = ⟨J v, w⟩`` for random ``v`` and ``w``."""
    v, w = (normal(4, seed=11), normal(4, seed=12)), normal(3, seed=13)
    _, Jv = jvp(_vector_function, (X, Y), v)
    _, pullback = vjp(_vector_function, X, Y, argnums=(0, 1))
    JTw = pullback(w)
    lhs = v[0] @ JTw[0] + v[1] @ JTw[1]
    assert lhs == pytest.approx(Jv @ w, rel=1e-13)


def test_jvp_of_scalar_function_and_float_primal():
    value, tangent = jvp(lambda x, s: s * np.sum(x**2), (X, 2.0), (Y, 0.5))
    assert value == pytest.approx(2.0 * np.sum(X**2), rel=1e-15)
    assert tangent == pytest.approx(2.0 * 2 * X @ Y + 0.5 * np.sum(X**2), rel=1e-13)


def test_jvp_of_a_tuple_output():
    t = normal(4, seed=16)
    value, tangent = jvp(lambda x: (x**2, A @ x), (X,), (t,))
    assert all(type(v) is np.ndarray for v in value), "boxes leaked out of jvp"
    assert np.allclose(tangent[0], 2 * X * t, rtol=1e-14)
    assert np.allclose(tangent[1], A @ t, rtol=1e-14)


def test_a_traced_value_can_be_printed_with_a_format_spec(capsys):
    def f(x):
        J = np.sum(x**2)
        print(f"J = {J:.3f}, x0 = {x[0]:+.1e}")
        return J

    assert np.allclose(grad(f)(np.array([1.5, 2.0])), [3.0, 4.0])
    assert capsys.readouterr().out == "J = 6.250, x0 = +1.5e+00\n"

"""Errors: operations without rules, arguments without rules, and values that would cut
the gradient all fail loudly and say what to do."""

import numpy as np
import pytest
from ad_helpers import normal, scratch_rules  # noqa: F401 - fixture

from fesens.ad import NotDifferentiableError, defvjp, defvjp_argnum, grad, primitive

X = normal(5, seed=1)


@pytest.mark.parametrize(("name", "fun"), [
    ("interp", lambda x: np.sum(np.interp(0.3, x, x))),
    ("convolve", lambda x: np.sum(np.convolve(x, x))),
    ("unwrap", lambda x: np.sum(np.unwrap(x))),
    ("eig", lambda x: np.sum(np.linalg.eig(np.outer(x, x))[0])),
])
def test_numpy_function_without_rule(name, fun):
    with pytest.raises(NotDifferentiableError) as info:
        grad(fun)(X)
    message = str(info.value)
    assert f"numpy.{name}" in message
    assert "supported functions:" in message
    for supported in ("sum", "einsum", "reshape", "where"):
        assert supported in message.split("supported functions:")[1]


@pytest.mark.parametrize(("name", "fun"), [
    ("cbrt", lambda x: np.sum(np.cbrt(x))),
    ("fmod", lambda x: np.sum(np.fmod(x, 0.3))),
    ("add.reduce", lambda x: np.add.reduce(x)),
    ("multiply.outer", lambda x: np.sum(np.multiply.outer(x, x))),
])
def test_ufunc_without_rule(name, fun):
    with pytest.raises(NotDifferentiableError) as info:
        grad(fun)(X)
    message = str(info.value)
    assert f"numpy.{name}" in message
    assert "supported ufuncs:" in message and "exp" in message


def test_not_differentiable_error_is_a_type_error():
    assert issubclass(NotDifferentiableError, TypeError)


@pytest.mark.parametrize("fun", [
    lambda x: np.sum(np.exp(x, out=np.empty(5))),
    lambda x: np.sum(np.multiply(x, 2.0, out=np.empty(5))),
])
def test_ufunc_with_out_raises(fun):
    with pytest.raises(NotDifferentiableError, match="out="):
        grad(fun)(X)


@pytest.mark.usefixtures("scratch_rules")
def test_primitive_missing_the_rule_of_its_second_argument():
    scaled = primitive(lambda a, b: a * b, "scaled")
    defvjp(scaled, lambda ans, a, b: lambda g: g * b)  # argument 0 only

    assert np.allclose(grad(lambda a: np.sum(scaled(a, X)))(X * 0 + 2.0), X)
    with pytest.raises(NotDifferentiableError) as info:
        grad(lambda b: np.sum(scaled(2.0, b)))(X)
    message = str(info.value)
    assert "'scaled'" in message and "argument 1" in message
    assert "no rules at all" not in message


@pytest.mark.usefixtures("scratch_rules")
def test_primitive_without_any_rule():
    bare = primitive(lambda a: 2.0 * a, "bare")
    assert np.array_equal(bare(X), 2.0 * X)  # untraced calls go straight through
    with pytest.raises(NotDifferentiableError, match=r"argument 0 of primitive 'bare'.*no rules"):
        grad(lambda a: np.sum(bare(a)))(X)


@pytest.mark.usefixtures("scratch_rules")
def test_defvjp_argnum_serves_every_argument_from_first_on():
    weighted = primitive(lambda w, *xs: w * np.sum(np.stack(xs)), "weighted")
    defvjp_argnum(weighted, lambda argnum, ans, w, *xs: lambda g: g * w * np.ones_like(xs[0]),
                  first=1)
    gx, gy = grad(lambda x, y: np.sum(weighted(3.0, x, y)), argnums=(0, 1))(X, 2 * X)
    assert np.array_equal(gx, np.full(5, 3.0)) and np.array_equal(gy, np.full(5, 3.0))
    with pytest.raises(NotDifferentiableError, match="argument 0 of primitive 'weighted'"):
        grad(lambda w: weighted(w, X))(3.0)


def test_float_of_a_traced_value_raises_with_the_stop_gradient_hint():
    with pytest.raises(TypeError, match="stop_gradient"):
        grad(lambda x: float(np.sum(x)))(X)
    with pytest.raises(TypeError, match="stop_gradient"):
        grad(lambda x: float(x) ** 2)(3.0)


def test_unsupported_norm_order_is_named():
    with pytest.raises(NotImplementedError, match="ord=0 counts non-zero entries"):
        grad(lambda x: np.linalg.norm(x, 0))(X)
    with pytest.raises(NotImplementedError, match="not ord=3"):
        grad(lambda x: np.linalg.norm(x, 3))(X.reshape(1, 5) * np.ones((3, 1)))


def test_svd_of_a_non_square_matrix_needs_the_thin_form():
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        grad(lambda x: np.sum(np.linalg.svd(x)[0]))(X.reshape(1, 5) * np.ones((3, 1)))


def test_einsum_with_an_index_repeated_within_an_operand_is_refused():
    M = normal((3, 3), seed=2)
    assert np.einsum("ii->", M) == np.trace(M)
    with pytest.raises(NotImplementedError, match="repeated index"):
        grad(lambda m: np.einsum("ii->", m))(M)

"""fesens functions as JAX functions (``fesens.interop.jax.as_jax``): gradients agree with
fesens's own, under ``grad``, ``value_and_grad``, ``jit`` and ``vmap``, with pytrees in and
out; bad inputs are refused with errors naming the dtype or shape."""

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="JAX is not installed (pip install fesens[jax])")
import jax.numpy as jnp  # noqa: E402
from interop_helpers import (  # noqa: E402
    OBJECTIVES,
    RTOL,
    densities,
    objective,
    pytree_function,
    relative_error,
)

from fesens.ad import value_and_grad, vjp  # noqa: E402
from fesens.interop import AdapterDtypeError, AdapterShapeError  # noqa: E402
from fesens.interop.jax import as_jax  # noqa: E402


@pytest.fixture(autouse=True)
def x64():
    """fesens computes in float64: JAX's 64-bit mode, for each test only."""
    with jax.enable_x64(True):
        yield


@pytest.mark.parametrize("load_cases", [False, True], ids=["one case", "two cases"])
@pytest.mark.parametrize("name", OBJECTIVES)
@pytest.mark.parametrize("dim", [2, 3])
def test_gradient_agrees_with_fesens(dim, name, load_cases):
    fun = objective(dim, name, load_cases)
    x = densities(dim, seed=dim)
    value, gradient = value_and_grad(fun)(x)
    jax_value, jax_gradient = jax.value_and_grad(as_jax(fun))(jnp.asarray(x))
    assert float(jax_value) == pytest.approx(float(value), rel=RTOL)
    assert relative_error(jax_gradient, gradient) < RTOL
    assert relative_error(jax.grad(as_jax(fun))(x), gradient) < RTOL


def test_jit_of_a_function_calling_the_adapter():
    fun = objective(2, "compliance", True)
    adapted = as_jax(fun)
    x = densities(2, seed=5)

    def pipeline(x):  # JAX around the fesens call
        return jnp.log(adapted(jnp.clip(x, 0.1, 1.0))) + 0.5 * jnp.sum(x**2)

    value, gradient = value_and_grad(lambda x: np.log(fun(x)) + 0.5 * np.sum(x**2))(x)
    compiled = jax.jit(jax.value_and_grad(pipeline))
    for _ in range(2):  # the second call runs the compiled program
        jit_value, jit_gradient = compiled(jnp.asarray(x))
        assert float(jit_value) == pytest.approx(float(value), rel=RTOL)
        assert relative_error(jit_gradient, gradient) < RTOL
    assert float(jax.jit(pipeline)(x)) == pytest.approx(float(value), rel=RTOL)


def test_one_fesens_evaluation_per_value_and_gradient():
    """The backward applies the forward's pullback: fesens runs (and solves) once."""
    fun = objective(2, "compliance", False)
    calls = []
    adapted = as_jax(lambda x: calls.append(1) or fun(x))
    jax.value_and_grad(adapted)(densities(2))
    jax.jit(jax.grad(adapted))(densities(2))
    assert len(calls) == 2
    assert len(adapted.pending) == 0


def test_pytrees_in_and_out():
    fun = pytree_function(2)
    x, load, factor = densities(2, seed=7), 1.3, 0.5
    out_shape = {"compliance": jax.ShapeDtypeStruct((), jnp.float64),
                 "tip": jax.ShapeDtypeStruct((4,), jnp.float64)}
    adapted = as_jax(fun, out_shape)
    params = {"x": jnp.asarray(x), "load": jnp.asarray(load)}
    value, pullback = jax.vjp(adapted, params, jnp.asarray(factor))
    expected, fesens_pullback = vjp(fun, {"x": x, "load": load}, factor, argnums=(0, 1))
    cotangent = {"compliance": jnp.asarray(2.0), "tip": jnp.arange(4.0)}
    got_params, got_factor = pullback(cotangent)
    want_params, want_factor = fesens_pullback(
        {"compliance": 2.0, "tip": np.arange(4.0)})
    assert relative_error(value["tip"], expected["tip"]) < RTOL
    assert float(value["compliance"]) == pytest.approx(float(expected["compliance"]), rel=RTOL)
    assert relative_error(got_params["x"], want_params["x"]) < RTOL
    assert float(got_params["load"]) == pytest.approx(float(want_params["load"]), rel=RTOL)
    assert float(got_factor) == pytest.approx(float(want_factor), rel=RTOL)


def test_vmap_loops_over_the_batch():
    fun = objective(2, "displacement_norm", False)
    batch = np.stack([densities(2, seed=s) for s in range(3)])
    gradients = jax.vmap(jax.grad(as_jax(fun)))(jnp.asarray(batch))
    for row, x in zip(np.asarray(gradients), batch, strict=True):
        assert relative_error(row, value_and_grad(fun)(x)[1]) < RTOL


def test_pending_pullbacks_are_bounded_and_a_dropped_one_is_recomputed():
    fun = objective(2, "compliance", False)
    adapted = as_jax(fun, keep=2)
    x = densities(2, seed=9)
    pullbacks = [jax.vjp(adapted, jnp.asarray(x))[1] for _ in range(5)]
    assert len(adapted.pending) == 2
    (gradient,) = pullbacks[0](jnp.asarray(1.0))  # its pullback was dropped: re-traced
    assert relative_error(gradient, value_and_grad(fun)(x)[1]) < RTOL
    with pytest.raises(ValueError, match="keep must be at least 1"):
        as_jax(fun, keep=0)


@pytest.mark.parametrize(("dtype", "named"), [
    (np.float32, "float32"), (np.int32, "integer dtype int32"),
    (np.complex128, "complex dtype complex128")])
def test_bad_dtypes_are_refused(dtype, named):
    adapted = as_jax(objective(2, "compliance", False))
    with pytest.raises(AdapterDtypeError, match=named):
        adapted(jnp.ones(18, dtype=dtype))


def test_float32_without_64_bit_mode_names_the_fix():
    adapted = as_jax(objective(2, "compliance", False))
    with jax.enable_x64(False):
        with pytest.raises(AdapterDtypeError, match="float32: .*jax_enable_x64"):
            jax.grad(adapted)(jnp.ones(18))
        with pytest.raises(AdapterDtypeError, match="64-bit mode is off"):
            adapted(np.ones(18))  # float64, which JAX would round to float32


def test_shapes_that_do_not_match():
    fun = objective(2, "compliance", False)
    with pytest.raises(ValueError, match=r"one value per cell \(18\), got shape \(17,\)"):
        as_jax(fun)(jnp.ones(17))
    wrong = as_jax(fun, out_shape=jax.ShapeDtypeStruct((2,), jnp.float64))
    with pytest.raises(AdapterShapeError, match=r"has shape \(\), but out_shape declared"):
        wrong(jnp.ones(18))
    with pytest.raises(AdapterShapeError, match="structure"):
        as_jax(fun, out_shape=(jnp.ones(()), jnp.ones(())))(jnp.ones(18))
    with pytest.raises(Exception, match="but out_shape declared"):  # inside JAX's error
        jax.jit(wrong)(jnp.ones(18))
    with pytest.raises(TypeError, match="out_shape leaves need a shape"):
        as_jax(fun, out_shape=(2,))

"""A fesens function as a JAX function: ``jax.custom_vjp`` over ``jax.pure_callback``.

>>> import jax
>>> from fesens.interop.jax import as_jax
>>> jax.config.update("jax_enable_x64", True)  # doctest: +SKIP
>>> f = as_jax(lambda x: compliance(problem.solve(scale=x**3)))  # doctest: +SKIP
>>> jax.jit(jax.value_and_grad(f))(x)  # doctest: +SKIP

How a call runs. The forward (``fwd`` of the custom VJP) calls fesens on the host through
``jax.pure_callback``: one traced evaluation gives the value and the pullback, whose tape
holds the forward solve's factorization. A pullback is a Python closure and cannot be a JAX
residual, so the adapter keeps it on the Python side, in a small table owned by the wrapped
function, under an integer key; the key (an ``int32`` array) and the inputs are the
residuals. The backward callback takes the pullback out of the table by its key and applies
it to the cotangent: the adjoint solve reuses the forward factorization. The table holds at
most ``keep`` pullbacks (oldest dropped first), so forward calls whose backward never runs
(``jax.vjp`` without calling the pullback, a backward removed by dead-code elimination) do not
leak; a backward whose pullback was dropped, or that runs twice, re-traces fesens at the
saved inputs (correct, one more forward solve). A call without differentiation keeps no
pullback; one under no JAX transformation calls fesens directly, so its errors (a wrong
input shape, an output unlike ``out_shape``) reach the caller as they are; under ``jit`` or
``grad`` they arrive inside JAX's callback error, with the same message.

JAX dispatches asynchronously: a backward callback may still run after ``jax.grad``
returned. The adapters' callbacks take one lock, so they never run fesens concurrently; a
direct fesens call on a problem an adapter also uses should wait for JAX's results first
(``jax.block_until_ready``).

``jax.vmap`` runs the function once per batch element (``vmap_method="sequential"``): a
loop on the host, not a vectorised solve.

Inputs: pytrees (dicts, tuples, lists) of float64 arrays or numbers; JAX's 64-bit mode must
be on (``jax.config.update("jax_enable_x64", True)`` or ``with jax.enable_x64(True):``),
since fesens's gradients are float64. Float32, integer and complex inputs are refused with
:class:`~fesens.interop.AdapterDtypeError` naming the dtype.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from fesens.interop._common import (
    AdapterDtypeError,
    AdapterShapeError,
    check_output,
    dtype_problem,
    value_and_pullback,
)

_KEY_RANGE = 2**31 - 1  # keys are int32 arrays

#: fesens's problems are not thread-safe (a model's factorization is shared by its solves),
#: and JAX may run callbacks on its own threads, one call's backward beside the next call's
#: forward: every host call of every adapter holds this lock. It holds no data, so nothing
#: leaks from one call (or test) to the next.
_HOST_LOCK = threading.RLock()


class _PendingPullbacks:
    """Pullbacks of forward calls whose backward has not run yet, by integer key.

    Holds at most ``keep``; the oldest is dropped first. Callbacks may run on JAX's
    threads, hence the lock.
    """

    def __init__(self, keep: int):
        self.keep = keep
        self._items: OrderedDict[int, Callable] = OrderedDict()
        self._next = 0
        self._lock = threading.Lock()

    def put(self, pullback: Callable) -> int:
        with self._lock:
            key = self._next
            self._next = (self._next + 1) % _KEY_RANGE
            self._items[key] = pullback
            while len(self._items) > self.keep:
                self._items.popitem(last=False)
        return key

    def pop(self, key: int) -> Callable | None:
        with self._lock:
            return self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)


def _output_structs(out_shape):
    """``out_shape`` (leaves with a ``shape``; None: a scalar) as float64 ShapeDtypeStructs."""
    if out_shape is None:
        return jax.ShapeDtypeStruct((), jnp.float64)

    def struct(leaf):
        if not hasattr(leaf, "shape"):
            raise TypeError(
                f"out_shape leaves need a shape (jax.ShapeDtypeStruct or an array); got "
                f"{type(leaf).__name__} {leaf!r}")
        return jax.ShapeDtypeStruct(tuple(leaf.shape), jnp.float64)

    return jax.tree_util.tree_map(struct, out_shape)


def _checked_inputs(leaves: list) -> list:
    """The input leaves as arrays (numbers converted), refusing what is not float64."""
    arrays = [leaf if hasattr(leaf, "dtype") and hasattr(leaf, "shape") else jnp.asarray(leaf)
              for leaf in leaves]
    for k, array in enumerate(arrays):
        dtype = np.dtype(array.dtype)
        where = f"input leaf {k} (shape {tuple(array.shape)})"
        problem = dtype_problem(dtype.kind, dtype.name, where)
        if problem is None and dtype != np.float64:
            problem = (f"{where} has the dtype {dtype.name}: fesens computes in float64; "
                       "pass float64 arrays (with JAX's 64-bit mode on: "
                       "jax.config.update('jax_enable_x64', True))")
        if problem is None and not jax.config.jax_enable_x64:
            problem = (f"{where} is float64, but JAX's 64-bit mode is off, so JAX would "
                       "round fesens's results to float32; turn it on: "
                       "jax.config.update('jax_enable_x64', True)")
        if problem is not None:
            raise AdapterDtypeError(problem)
    return arrays


def as_jax(fn: Callable, out_shape=None, *, keep: int = 4) -> Callable:
    """Wrap the fesens function ``fn`` as a JAX function with a custom VJP.

    Parameters
    ----------
    fn : callable
        ``fn(*args)`` written in fesens's traced numpy (e.g. ``x ↦ compliance(problem.solve(
        scale=x**3))``); its arguments are pytrees of float64 arrays, all differentiated.
    out_shape : pytree, optional
        The structure of ``fn``'s output, leaves with a ``shape`` (``jax.ShapeDtypeStruct``
        or arrays; the dtype is float64). Default: a scalar. JAX needs it before the call.
    keep : int
        How many pullbacks waiting for their backward to keep (each holds a tape and its
        factorization); see the module's docstring.

    Returns
    -------
    callable
        Takes the arguments of ``fn`` as JAX arrays (or numbers), returns JAX arrays in the
        structure of ``out_shape``; composes with ``jax.grad``, ``jax.value_and_grad``,
        ``jax.vjp``, ``jax.jit`` and ``jax.vmap`` (a loop over the batch).
    """
    if keep < 1:
        raise ValueError(f"keep must be at least 1 (got {keep})")
    out_structs = _output_structs(out_shape)
    out_struct_leaves, out_tree = jax.tree_util.tree_flatten(out_structs)
    pending = _PendingPullbacks(keep)
    key_struct = jax.ShapeDtypeStruct((), jnp.int32)
    name = getattr(fn, "__name__", "the function")

    built: dict = {}  # in_tree -> (custom-VJP function, host evaluation), built once each

    def build(in_tree):
        """The custom-VJP function of flat inputs of structure ``in_tree``. Its callbacks
        are the same objects on every call, so JAX reuses what it compiled for them."""

        def flat_fn(*np_leaves):
            return fn(*jax.tree_util.tree_unflatten(in_tree, np_leaves))

        def outputs(value) -> list[np.ndarray]:
            value_leaves, value_tree = jax.tree_util.tree_flatten(value)
            if value_tree != out_tree:
                raise AdapterShapeError(
                    f"{name} returned the structure {value_tree}, but out_shape declared "
                    f"{out_tree}; pass out_shape matching what {name} returns")
            return [check_output(v, s.shape, f"output leaf {k} of {name}")
                    for k, (v, s) in enumerate(zip(value_leaves, out_struct_leaves,
                                                   strict=True))]

        def host_value(*np_leaves):
            with _HOST_LOCK:
                return tuple(outputs(flat_fn(*_float64(np_leaves))))

        def host_forward(*np_leaves):
            with _HOST_LOCK:
                value, pullback = value_and_pullback(flat_fn, _float64(np_leaves))
                return (*outputs(value), np.int32(pending.put(pullback)))

        def host_backward(key, *g_and_leaves):
            g_leaves = _float64(g_and_leaves[:len(out_struct_leaves)])
            np_leaves = _float64(g_and_leaves[len(out_struct_leaves):])
            with _HOST_LOCK:
                pullback = pending.pop(int(key))
                if pullback is None:  # dropped from the table, or a second backward
                    _, pullback = value_and_pullback(flat_fn, np_leaves)
                return tuple(pullback(jax.tree_util.tree_unflatten(out_tree, g_leaves)))

        @jax.custom_vjp
        def call(*flat):
            return tuple(jax.pure_callback(host_value, tuple(out_struct_leaves), *flat,
                                           vmap_method="sequential"))

        def call_fwd(*flat):
            *out, key = jax.pure_callback(host_forward, (*out_struct_leaves, key_struct),
                                          *flat, vmap_method="sequential")
            return tuple(out), (key, flat)

        def call_bwd(residuals, g):
            key, flat = residuals
            in_structs = tuple(jax.ShapeDtypeStruct(leaf.shape, jnp.float64) for leaf in flat)
            return tuple(jax.pure_callback(host_backward, in_structs, key, *g, *flat,
                                           vmap_method="sequential"))

        call.defvjp(call_fwd, call_bwd)
        # jitted: an eager jax.grad then reuses the compiled forward and backward instead of
        # re-dispatching each callback (1.6 instead of 6 ms per call); inlined under jit
        return jax.jit(call), host_value

    def wrapped(*args):
        leaves, in_tree = jax.tree_util.tree_flatten(args)
        if not leaves:
            raise TypeError(f"as_jax({name}) was called without array arguments")
        leaves = _checked_inputs(leaves)
        if in_tree not in built:
            built[in_tree] = build(in_tree)
        call, host_value = built[in_tree]
        if not any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
            # a plain call, under no transformation: fesens's errors reach the caller as
            # they are, not wrapped in JAX's callback error
            return jax.tree_util.tree_unflatten(
                out_tree, [jnp.asarray(v) for v in host_value(*leaves)])
        return jax.tree_util.tree_unflatten(out_tree, call(*leaves))

    wrapped.pending = pending  # the table of waiting pullbacks (tests check it is bounded)
    wrapped.__wrapped__ = fn
    wrapped.__name__ = f"as_jax({name})"
    wrapped.__doc__ = fn.__doc__
    return wrapped


def _float64(arrays) -> list[np.ndarray]:
    return [np.asarray(a, dtype=np.float64) for a in arrays]

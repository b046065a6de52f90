"""User-facing transformations: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``.

Inputs may be arrays, numbers, or dicts/lists/tuples of them (differentiate with respect
to ``{"E": field, "nu": 0.3, "load": 2.0}`` at once); gradients come back in the same
structure. Forward mode (:func:`jvp`) is the transpose of reverse mode: the pullback
``g ↦ Jᵀg`` is linear in ``g``, so ``J v`` is its VJP with cotangent ``v``
(the "double-VJP" trick); it costs about two reverse sweeps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps

import numpy as np

# registering the rules of the traced numpy, numpy.linalg and scipy.special subset
from fesens.ad import array_vjps, linalg_vjps, numpy_vjps, special_vjps  # noqa: F401
from fesens.ad.numpy_wrapper import getval
from fesens.ad.pytree import as_leaf_value, flatten, match_leaf, zeros_like_leaf
from fesens.ad.tracer import Box, backward, new_leaf, new_trace_id

_PLAIN_LEAVES = (np.ndarray, float, Box)
_SCALAR_TYPES = (np.ndarray, np.float64)  # outputs with a cheap ``ndim``


def _argnums_tuple(argnums) -> tuple[int, ...]:
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _trace(fun, args, argnums):
    """Run ``fun`` with the inputs at ``argnums`` boxed in a new trace.

    Returns ``(output, leaves, leaf_nodes, rebuild)`` where ``rebuild`` puts a list of
    per-leaf cotangents back into the structure of the differentiated arguments.
    """
    trace = new_trace_id()
    args = list(args)
    first = args[argnums[0]] if len(argnums) == 1 else None
    if type(first) is np.ndarray and first.dtype.kind == "f":
        # the common case, one float array: no tree to flatten or rebuild
        box = new_leaf(first, trace)
        args[argnums[0]] = box

        def rebuild_one(cotangents):
            g = cotangents[0]
            return (zeros_like_leaf(first) if g is None else match_leaf(g, first),)

        return fun(*args), trace, [box.node], rebuild_one
    if type(first) is float or (type(first) is Box and type(getval(first)) is float):
        # one number, or a number of an outer trace (nested ``grad`` on scalars)
        box = new_leaf(first, trace)
        args[argnums[0]] = box
        return fun(*args), trace, [box.node], _rebuild_number

    tree = tuple(args[i] for i in argnums)
    if all(type(t) in _PLAIN_LEAVES for t in tree):
        leaves, unflatten = list(tree), tuple
    else:
        leaves, unflatten = flatten(tree)
    leaves = [leaf if type(leaf) is Box else as_leaf_value(leaf) for leaf in leaves]
    boxes = [new_leaf(leaf, trace) for leaf in leaves]
    for i, value in zip(argnums, unflatten(boxes), strict=True):
        args[i] = value
    out = fun(*args)

    def rebuild(cotangents):
        filled = [zeros_like_leaf(getval(leaf)) if g is None else match_leaf(g, getval(leaf))
                  for g, leaf in zip(cotangents, leaves, strict=True)]
        return unflatten(filled)

    return out, trace, [b.node for b in boxes], rebuild


def _rebuild_number(cotangents):
    """:func:`_trace`'s ``rebuild`` for one number (or a box of one) as the input."""
    g = cotangents[0]
    return (0.0 if g is None else match_leaf(g, 0.0),)


def _pullback(out, trace, leaf_nodes, rebuild, release):
    """``g ↦ Jᵀg``; ``out`` and ``g`` may be dicts/lists/tuples of arrays (one sweep each)."""
    out_leaves, _ = flatten(out)

    def pull(g):
        g_leaves, _ = flatten(g)
        total = [None] * len(leaf_nodes)
        for o, g_o in zip(out_leaves, g_leaves, strict=True):
            if type(o) is Box and o.trace == trace:
                for k, c in enumerate(backward(o.node, g_o, leaf_nodes, release=release)):
                    if c is not None:
                        total[k] = c if total[k] is None else total[k] + c
        return rebuild(total)

    return pull


def _unbox_output(out, trace):
    leaves, unflatten = flatten(out)
    return unflatten([o.value if type(o) is Box and o.trace == trace else o for o in leaves])


def _value_and_grad(fun: Callable, argnums, with_value: bool) -> Callable:
    """``x ↦ (f(x), ∇f(x))``, or ``x ↦ ∇f(x)`` without ``with_value``."""
    nums = _argnums_tuple(argnums)
    single = isinstance(argnums, int)

    def value_and_gradient(*args):
        out, trace, leaf_nodes, rebuild = _trace(fun, args, nums)
        if type(out) is not Box or out.trace != trace:
            value = out
            cotangents = [None] * len(leaf_nodes)
        else:
            value = out.value
            kind = type(value)
            if kind is not float and (value.ndim if kind in _SCALAR_TYPES else np.ndim(value)):
                raise TypeError(
                    f"grad needs a scalar output; {getattr(fun, '__name__', 'the function')}"
                    f" returned shape {np.shape(value)} (use vjp for non-scalar outputs)"
                )
            cotangents = backward(out.node, 1.0, leaf_nodes)
        grads = rebuild(cotangents)
        gradient = grads[0] if single else grads
        return (value, gradient) if with_value else gradient

    return value_and_gradient


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """``f ↦ (x ↦ (f(x), ∇f(x)))`` for a scalar-valued ``f``.

    Parameters
    ----------
    fun : callable
        Returns a scalar (0-d array or float).
    argnums : int or sequence of int
        Which positional arguments to differentiate; with a sequence the gradient is a
        tuple with one entry per argument.
    """
    return wraps(fun)(_value_and_grad(fun, argnums, with_value=True))


def grad(fun: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """``f ↦ ∇f`` for a scalar-valued ``f`` (see :func:`value_and_grad`)."""
    return wraps(fun)(_value_and_grad(fun, argnums, with_value=False))


def vjp(fun: Callable, *args, argnums: int | Sequence[int] = 0):
    """Evaluate ``fun(*args)`` and return ``(value, pullback)``.

    ``pullback(g)`` returns ``Jᵀ g`` for a cotangent ``g`` shaped like the output, in the
    structure of the differentiated argument(s). It may be called many times (the tape is
    kept until the pullback is garbage-collected).
    """
    nums = _argnums_tuple(argnums)
    out, trace, leaf_nodes, rebuild = _trace(fun, args, nums)
    pull = _pullback(out, trace, leaf_nodes, rebuild, release=False)
    single = isinstance(argnums, int)
    return _unbox_output(out, trace), (lambda g: pull(g)[0]) if single else pull


def jvp(fun: Callable, primals: Sequence, tangents: Sequence):
    """Forward mode: ``(fun(*primals), J · tangents)``.

    ``primals`` and ``tangents`` are sequences of the same structure (one tangent per
    argument). Computed as the VJP of the (linear) pullback.
    """
    primals, tangents = tuple(primals), tuple(tangents)
    nums = tuple(range(len(primals)))
    value, pull = vjp(fun, *primals, argnums=nums)
    value_leaves, unflatten_value = flatten(value)
    zero = unflatten_value([np.zeros_like(np.asarray(getval(v), dtype=float))
                            for v in value_leaves])

    def pullback_dot(g):
        grads = pull(g)
        grad_leaves, _ = flatten(grads)
        tangent_leaves, _ = flatten(tangents)
        total = 0.0
        for a, b in zip(grad_leaves, tangent_leaves, strict=True):
            total = total + np.sum(a * np.asarray(b, dtype=float))
        return total

    return value, grad(pullback_dot)(zero)

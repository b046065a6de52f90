"""User-facing transformations: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``.

Inputs may be arrays, numbers, or dicts/lists/tuples of them (differentiate with respect
to ``{"E": field, "nu": 0.3, "load": 2.0}`` at once); gradients come back in the same
structure. Forward mode (:func:`jvp`) is the transpose of reverse mode: the pullback
``g ↦ Jᵀg`` is linear in ``g``, so ``J v`` is its VJP with cotangent ``v``
(the "double-VJP" trick); it costs about two reverse sweeps.

Forward mode (:mod:`fesens.ad.forward`) serves :func:`jvp` and the derivative of a
function of one number (``grad`` and nested ``grad`` on a float: one pass with dual
numbers, no tape) whenever every primitive reached has a JVP rule; otherwise the
function is evaluated again in reverse mode (the same numbers; a function with side
effects then sees them twice). ``grad(grad(f))`` and ``value_and_grad(grad(f))`` of a
number evaluate ``f`` once on a second-order Taylor number (:mod:`fesens.ad.jet`) where it
can follow ``f``, and nest the two traces where it cannot.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from functools import wraps

import numpy as np

# registering the rules of the traced numpy, numpy.linalg and scipy.special subset, and the
# second-order rules on numbers
from fesens.ad import (  # noqa: F401
    array_vjps,
    linalg_vjps,
    numpy_jvps,
    numpy_vjps,
    second_order,
    special_vjps,
)
from fesens.ad.forward import Dual, ForwardModeUnsupported, ForwardTrace, give_way
from fesens.ad.jet import through_jet
from fesens.ad.numpy_wrapper import getval
from fesens.ad.pytree import as_leaf_value, flatten, match_leaf, zeros_like_leaf
from fesens.ad.traced import Traced
from fesens.ad.tracer import Box, backward, new_leaf, new_trace_id

_PLAIN_LEAVES = (np.ndarray, float, Box)
#: ``grad(f, argnum) -> (f, argnum)`` for the functions :func:`grad` made: ``grad`` of one of
#: them along the same number runs on a jet (:mod:`fesens.ad.jet`).
_GRADIENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
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
    for leaf in leaves:
        if type(leaf) is Dual:  # a box never holds a dual: the forward trace gives way
            give_way(leaf.trace, "a reverse-mode derivative of a forward-mode value")
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


_FORWARD_NUMBERS = (float, np.float64, int)


def _forward_number(x) -> bool:
    """True for an input that forward mode differentiates: a number, or a dual of one."""
    kind = type(x)
    if kind is Dual:
        kind = type(getval(x))
        return kind is float or kind is np.float64
    return kind is float or kind is np.float64 or (kind is int and x is not True
                                                   and x is not False)


def _run_forward(fun, args, trace):
    """``fun(*args)``, or ``None`` when forward mode gave way in ``trace``."""
    try:
        out = fun(*args)
    except ForwardModeUnsupported:
        if trace.missing is None:
            raise  # an inner trace's signal that escaped its driver: not ours to handle
        return None
    return None if trace.missing is not None else (out,)


def _check_scalar(fun, value) -> None:
    kind = type(value)
    if kind is not float and (value.ndim if kind in _SCALAR_TYPES else np.ndim(value)):
        raise TypeError(
            f"grad needs a scalar output; {getattr(fun, '__name__', 'the function')}"
            f" returned shape {np.shape(value)} (use vjp for non-scalar outputs)"
        )


def _forward_derivative(fun, args, argnum):
    """``(f(x), f'(x))`` for the number ``x = args[argnum]`` by forward mode, or ``None``."""
    trace = ForwardTrace(new_trace_id())
    x = args[argnum]
    x = Dual(float(x) if type(x) is int else x, 1.0, trace)
    args = (x,) if len(args) == 1 else (*args[:argnum], x, *args[argnum + 1:])
    result = _run_forward(fun, args, trace)
    if result is None:
        return None
    out = result[0]
    if type(out) is not Dual or out.trace is not trace:
        return out, 0.0
    value = out.value
    if type(value) is not float:  # a dual of a number (nested grad), an array
        _check_scalar(fun, getval(value))
    tangent = out.tangent
    return value, tangent if type(tangent) is float else match_leaf(tangent, 0.0)


def _gradient_of(fun) -> tuple | None:
    """``(f, argnum)`` where ``fun`` is ``grad(f, argnum)``, else ``None`` (also for a
    function that cannot be weakly referenced, such as a ufunc)."""
    try:
        return _GRADIENTS.get(fun)
    except TypeError:
        return None


def _value_and_grad(fun: Callable, argnums, with_value: bool) -> Callable:
    """``x ↦ (f(x), ∇f(x))``, or ``x ↦ ∇f(x)`` without ``with_value``."""
    nums = _argnums_tuple(argnums)
    single = isinstance(argnums, int)

    def value_and_gradient(*args):
        if single and _forward_number(args[argnums]):
            forward = _forward_derivative(fun, args, argnums)
            if forward is not None:
                return forward if with_value else forward[1]
        out, trace, leaf_nodes, rebuild = _trace(fun, args, nums)
        if type(out) is not Box or out.trace != trace:
            value = out
            cotangents = [None] * len(leaf_nodes)
        else:
            value = out.value
            _check_scalar(fun, value)
            cotangents = backward(out.node, 1.0, leaf_nodes)
        grads = rebuild(cotangents)
        gradient = grads[0] if single else grads
        return (value, gradient) if with_value else gradient

    inner = _gradient_of(fun)
    if single and inner is not None and inner[1] == argnums and _gradient_of(inner[0]) is None:
        return through_jet(inner[0], argnums, with_value, value_and_gradient)
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
    gradient = wraps(fun)(_value_and_grad(fun, argnums, with_value=False))
    if isinstance(argnums, int):
        _GRADIENTS[gradient] = (fun, argnums)
    return gradient


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


def _dual_leaf(primal, tangent, trace):
    """A dual of one input leaf; its tangent is broadcast to the leaf's shape."""
    value = primal if isinstance(primal, Traced) else as_leaf_value(primal)
    shape = np.shape(getval(value))
    t = np.asarray(getval(tangent), dtype=float)
    if t.shape != shape:
        try:
            t = np.broadcast_to(t, shape)
        except ValueError:
            raise ValueError(f"jvp: a tangent of shape {t.shape} does not fit its primal of "
                             f"shape {shape}") from None
    return Dual(value, t if shape else float(t), trace)


def _forward_jvp(fun, primals, tangents):
    """``(fun(*primals), J · tangents)`` by forward mode, or ``None`` when it gives way."""
    p_leaves, unflatten = flatten(primals)
    t_leaves, _ = flatten(tangents)
    if len(p_leaves) != len(t_leaves):
        raise ValueError(f"jvp: {len(t_leaves)} tangents for {len(p_leaves)} primals")
    trace = ForwardTrace(new_trace_id())
    duals = [_dual_leaf(p, t, trace) for p, t in zip(p_leaves, t_leaves, strict=True)]
    result = _run_forward(fun, unflatten(duals), trace)
    if result is None:
        return None
    out_leaves, unflatten_out = flatten(result[0])
    values, out_tangents = [], []
    for o in out_leaves:
        if type(o) is Dual and o.trace is trace:
            values.append(o.value)
            t = o.tangent
            out_tangents.append(np.array(t, dtype=float) if type(t) is np.ndarray
                                and not t.flags.writeable else t)
        else:
            values.append(o)
            out_tangents.append(zeros_like_leaf(np.asarray(getval(o), dtype=float))
                                if np.ndim(getval(o)) else 0.0)
    return unflatten_out(values), unflatten_out(out_tangents)


def jvp(fun: Callable, primals: Sequence, tangents: Sequence):
    """Forward mode: ``(fun(*primals), J · tangents)``.

    ``primals`` and ``tangents`` are sequences of the same structure (one tangent per
    argument). Computed in forward mode (dual numbers, one pass) when every primitive
    reached has a JVP rule, otherwise as the VJP of the (linear) pullback.
    """
    primals, tangents = tuple(primals), tuple(tangents)
    forward = _forward_jvp(fun, primals, tangents)
    if forward is not None:
        return forward
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

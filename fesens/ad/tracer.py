"""The tape: boxes, nodes, primitives and the reverse sweep.

A differentiated input is wrapped in a :class:`Box` carrying a :class:`Node` of the trace.
Calling a :func:`primitive` on boxes records one node per *array* operation (arrays are
traced, not scalars): the node keeps the primitive, its (unboxed) arguments and result.
Arguments that are not boxes are constants: they are never traced and never get a cotangent.

Nested differentiation (``grad(grad(f))``) follows HIPS/autograd: each ``grad`` opens a
trace with a larger id, a primitive unboxes the arguments of the newest trace and calls
itself again on the result, so older traces record the same operation. VJP rules are
written with numpy functions that dispatch on boxes (``__array_ufunc__`` and
``__array_function__``), so the backward sweep of an inner trace is itself traced by the
outer one.

The backward sweep visits the nodes latest-created first (creation order is a topological
order: a node is created after the nodes it consumes) and drops each cotangent and each
node's saved values as soon as they are consumed. A node whose rules do not read
its output (``x**2``, ``x * y``, ``sum``: see ``uses_ans`` of
:func:`~fesens.ad.registry.defvjp`) does not save it at all, so the output is freed as
soon as the operations consuming it have run their rules.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from heapq import heappop, heappush, heapreplace

from fesens.ad.forward import Dual, forward_binary, forward_call, refuse_in_reverse
from fesens.ad.registry import ANS_FLAGS, ans_flags, needs_ans, node_cotangents
from fesens.ad.traced import Traced

_trace_ids = itertools.count(1)
_FIRST, _SECOND, _BOTH = (0,), (1,), (0, 1)
_node_ids = itertools.count()


def new_trace_id() -> int:
    """A fresh trace id, larger than every id handed out before."""
    return next(_trace_ids)


class Node:
    """One recorded array operation: ``ans = fun(*args, **kwargs)``.

    ``parents[i]`` is the node of argument ``argnums[i]``; a leaf has no parents. ``index``
    counts the nodes in creation order. ``ans`` is ``None`` when no rule needs it.
    """

    __slots__ = ("fun", "args", "kwargs", "ans", "parents", "argnums", "index")

    def __init__(self, fun, args, kwargs, ans, parents, argnums):
        self.fun = fun
        self.args = args
        self.kwargs = kwargs
        self.ans = ans
        self.parents = parents
        self.argnums = argnums
        self.index = next(_node_ids)


class Box(Traced):
    """A value being traced in reverse mode: its ``node`` is its operation on the tape.

    Behaves like the array (or number) it wraps (:class:`~fesens.ad.traced.Traced`); numpy
    functions and operators applied to a box dispatch to fesens primitives, and one that has
    no rule raises :class:`~fesens.ad.registry.NotDifferentiableError` naming it.
    """

    __slots__ = ("value", "node", "trace")

    def __init__(self, value, node: Node, trace: int):
        self.value = value
        self.node = node
        self.trace = trace


def primitive(raw: Callable, name: str | None = None) -> Callable:
    """Make ``raw`` (a function of arrays) traceable.

    The returned function calls ``raw`` directly when no argument is a :class:`Box`;
    otherwise it records a :class:`Node` in the newest trace among its arguments.
    Only positional arguments can be traced.
    """

    def wrapped(*args, **kwargs):
        # Fast paths: one or two arguments, the traced ones boxes of one trace. ``which``
        # indexes the rule facts of ``ans_flags``: traced argument 0, 1 or both. Duals
        # (forward mode) take the general path.
        values = None
        if len(args) == 2:
            x, y = args
            kind_x, kind_y = type(x), type(y)
            if kind_x is Dual and kind_y is not Box:
                trace = y.trace if kind_y is Dual and y.trace > x.trace else x.trace
                if kwargs:
                    return forward_call(wrapped, args, kwargs, trace)
                return forward_binary(wrapped, x, y, trace)
            if kind_y is Dual and kind_x is not Box:
                if kwargs:
                    return forward_call(wrapped, args, kwargs, y.trace)
                return forward_binary(wrapped, x, y, y.trace)
            if kind_x is Box:
                if kind_y is not Box:
                    if kind_y is not Dual:
                        values, parents, boxed, which = (x.value, y), (x.node,), _FIRST, 0
                        top = x.trace
                elif x.trace == y.trace:
                    values, parents, boxed, which = (x.value, y.value), (x.node, y.node), _BOTH, 2
                    top = x.trace
            elif kind_y is Box:
                if kind_x is not Dual:
                    values, parents, boxed, which = (x, y.value), (y.node,), _SECOND, 1
                    top = y.trace
            elif kind_x is not Dual and kind_y is not Dual:
                return raw(x, y, **kwargs)
        elif len(args) == 1:
            arg = args[0]
            kind = type(arg)
            if kind is not Box:
                if kind is Dual:
                    return forward_call(wrapped, args, kwargs, arg.trace)
                return raw(arg, **kwargs)
            values, parents, boxed, which, top = (arg.value,), (arg.node,), _FIRST, 0, arg.trace
        if values is not None:
            if type(values[0]) is Box or (len(values) == 2 and type(values[1]) is Box):
                ans = wrapped(*values, **kwargs)  # boxes a box: record in the older trace too
            else:
                # a ufunc takes a slower call path when given keywords, even none
                ans = raw(*values, **kwargs) if kwargs else raw(*values)
            flags = ANS_FLAGS.get(wrapped) or ans_flags(wrapped)
            return Box(ans, Node(wrapped, values, kwargs, ans if flags[which] else None, parents,
                                 boxed), top)
        top = 0
        boxed = ()
        nested = False  # some argument belongs to an older trace, or boxes a box
        forward = None  # the newest forward trace among the arguments
        for i, arg in enumerate(args):
            kind = type(arg)
            if kind is Box:
                trace = arg.trace
                if trace > top:
                    nested = nested or top > 0
                    top, boxed = trace, (i,)
                elif trace == top:
                    boxed += (i,)
                else:
                    nested = True
            elif kind is Dual and (forward is None or arg.trace > forward):
                forward = arg.trace
        if forward is not None:
            if forward > top:
                return forward_call(wrapped, args, kwargs, forward)
            refuse_in_reverse(forward, wrapped)  # a box never holds a dual: gives way
        if not top:
            return raw(*args, **kwargs)
        values = list(args)
        parents = []
        for i in boxed:
            box = args[i]
            parents.append(box.node)
            value = values[i] = box.value
            nested = nested or type(value) is Box
        if nested:
            ans = wrapped(*values, **kwargs)
        else:
            ans = raw(*values, **kwargs) if kwargs else raw(*values)
        saved = ans if needs_ans(wrapped, boxed) else None
        return Box(ans, Node(wrapped, values, kwargs, saved, parents, boxed), top)

    wrapped.__name__ = name or raw.__name__
    wrapped.__qualname__ = wrapped.__name__
    wrapped.__doc__ = raw.__doc__
    wrapped.raw = raw
    return wrapped


_ABSENT = object()  # a node without a cotangent yet


def new_leaf(value, trace: int) -> Box:
    """Box ``value`` as an input (a leaf with no parents) of trace ``trace``."""
    return Box(value, Node(None, None, None, value, (), ()), trace)


def backward(end: Node, g, leaves: list[Node], *, release: bool = True) -> list:
    """Reverse sweep from ``end`` with output cotangent ``g``.

    Returns the cotangent of each of ``leaves`` (``None`` where the output does not depend
    on it). With ``release``, each node's saved values are dropped once used, so the tape
    cannot be swept again.
    """
    cotangents = {end: g}
    pending = []  # a heap of (-index, node): the latest-created node comes first
    results = {}
    node = end
    while True:
        g = cotangents.pop(node)
        parents = node.parents
        following = None  # the latest-created parent reached for the first time
        if not parents:
            if g is not None:
                results[node] = g
        elif g is not None:
            parent_gs = node_cotangents(node, g)
            g = None
            if release:
                node.args = node.kwargs = node.ans = None  # drop the saved values
            for parent, parent_g in zip(parents, parent_gs):  # noqa: B905 - same length
                previous = cotangents.get(parent, _ABSENT)
                if previous is _ABSENT:
                    cotangents[parent] = parent_g
                    if following is None:
                        following = parent
                    elif parent.index > following.index:
                        heappush(pending, (-following.index, following))
                        following = parent
                    else:
                        heappush(pending, (-parent.index, parent))
                elif parent_g is not None:
                    cotangents[parent] = parent_g if previous is None else previous + parent_g
            # hold no cotangent past its use: the next rule may reuse the memory
            parent_gs = parent_g = previous = None
        # Visit the latest-created node left. ``following`` skips the heap when it is that
        # node (always so along a chain of one-argument operations).
        if following is not None:
            if not pending or following.index > -pending[0][0]:
                node = following
            else:
                node = heapreplace(pending, (-following.index, following))[1]
        elif pending:
            node = heappop(pending)[1]
        else:
            return list(map(results.get, leaves))


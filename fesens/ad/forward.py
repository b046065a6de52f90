"""Forward mode: dual numbers that carry their tangent through the traced primitives.

A :class:`Dual` holds a value, its tangent (the directional derivative along the input's
tangent) and the id of its forward trace. A primitive called on duals (directly or through
numpy's dispatch and the operators of :class:`~fesens.ad.traced.Traced`) computes its
value on the unwrapped arguments and its tangent with the JVP rules registered by
:func:`~fesens.ad.registry.defjvp` (``ṫ = Σ_i ∂f/∂x_i · t_i``), in one pass: no tape, no
closures, no reverse sweep. Nesting follows the trace ids as in reverse mode: the newest
trace is unwrapped first, so a dual of a dual is a second-order (hyper-dual) number, which
is how ``grad(grad(f))`` of a scalar function runs.

Forward mode *gives way* when it cannot go on: a primitive without a JVP rule, or a dual
reaching a reverse-mode trace (a :class:`~fesens.ad.tracer.Box` never holds a dual, so the
tape and the VJP rules never see one). The trace then records why (``trace.missing``) and
:class:`ForwardModeUnsupported` is raised; the drivers in :mod:`fesens.ad.api` catch it and
evaluate the function again in reverse mode, whose results are the same. A function that
catches every exception itself cannot hide this: the drivers look at ``trace.missing``
after it returns, not only at the exception.
"""

from __future__ import annotations

from collections.abc import Callable

from fesens.ad.registry import JVP_RULES, jvp_maker
from fesens.ad.traced import Traced

_NO_RULES: dict = {}  # read only
#: ``prim -> rule(x, y, trace)`` and ``prim -> rule(x, trace)``: second-order rules of
#: arithmetic and elementwise primitives on numbers (:mod:`fesens.ad.second_order`), tried
#: before the nested evaluation when a traced argument's value is a dual; a rule returns
#: the result, or ``None`` where it does not apply.
SECOND_ORDER_BINARY: dict = {}
SECOND_ORDER_UNARY: dict = {}


class ForwardModeUnsupported(Exception):  # noqa: N818 - a signal, caught by the drivers
    """Forward mode met something it cannot differentiate; reverse mode takes over."""


class ForwardTrace(int):
    """The id of a forward trace (an int, ordered with the reverse traces' ids) that
    remembers the first reason it gave way (``missing``, ``None`` while it goes on; set on
    the instance by :func:`give_way`)."""

    missing: str | None = None


class Dual(Traced):
    """A value of a forward trace and its ``tangent`` (same shape as ``value``)."""

    __slots__ = ("value", "tangent", "trace")
    nested_unary_rules = SECOND_ORDER_UNARY

    def __init__(self, value, tangent, trace: ForwardTrace):
        self.value = value
        self.tangent = tangent
        self.trace = trace


def give_way(trace: ForwardTrace, reason: str):
    """Mark ``trace`` as unable to go on (keeping the first reason) and raise."""
    if trace.missing is None:
        trace.missing = reason
    raise ForwardModeUnsupported(f"forward mode stops at {reason}; reverse mode takes over")


def refuse_in_reverse(trace: ForwardTrace, prim: Callable):
    """A dual met a newer reverse-mode trace in ``prim``: forward mode gives way."""
    give_way(trace, f"'{prim.__name__}' recorded by a reverse-mode trace")


def _missing(prim, argnum: int, trace: ForwardTrace):
    """The JVP maker of a variadic rule, or give way when there is none."""
    maker = jvp_maker(prim, argnum)
    if maker is None:
        give_way(trace, f"argument {argnum} of '{prim.__name__}' (no JVP rule)")
    return maker


def forward_call(prim: Callable, args: tuple, kwargs: dict, trace: ForwardTrace) -> Dual:
    """``prim(*args, **kwargs)`` for arguments holding duals of ``trace`` (the newest trace
    among them): the value on the unwrapped arguments, the tangent by the JVP rules (each
    returns a contribution shaped like the output)."""
    rules = JVP_RULES.get(prim) or _NO_RULES
    if len(args) == 1:
        x = args[0]
        value = x.value
        if type(value) is Dual and not kwargs:
            rule = SECOND_ORDER_UNARY.get(prim)
            if rule is not None:
                out = rule(x, trace)
                if out is not None:
                    return out
        maker = rules.get(0) or _missing(prim, 0, trace)
        if kwargs:
            ans = prim(value, **kwargs)
            return Dual(ans, maker(x.tangent, ans, value, **kwargs), trace)
        ans = prim(value) if isinstance(value, Traced) else prim.raw(value)
        return Dual(ans, maker(x.tangent, ans, value), trace)
    if len(args) == 2 and not kwargs:
        return forward_binary(prim, args[0], args[1], trace)
    values = list(args)
    traced = []
    for i, arg in enumerate(args):
        if type(arg) is Dual and arg.trace is trace:
            values[i] = arg.value
            traced.append(i)
    ans = prim(*values, **kwargs)
    tangent = None
    for i in traced:
        maker = rules.get(i) or _missing(prim, i, trace)
        term = (maker(args[i].tangent, ans, *values, **kwargs) if kwargs
                else maker(args[i].tangent, ans, *values))
        tangent = term if tangent is None else tangent + term
    return Dual(ans, tangent, trace)


def forward_binary(prim: Callable, x, y, trace: ForwardTrace) -> Dual:
    """:func:`forward_call` of a primitive of two positional arguments (the arithmetic
    operators: the common case, kept short)."""
    if type((x if type(x) is Dual and x.trace is trace else y).value) is Dual:
        rule = SECOND_ORDER_BINARY.get(prim)  # a dual of a dual: second order
        if rule is not None:
            out = rule(x, y, trace)
            if out is not None:
                return out
    rules = JVP_RULES.get(prim) or _NO_RULES
    if type(x) is Dual and x.trace is trace:
        xv = x.value
        if type(y) is Dual and y.trace is trace:
            yv = y.value
            ans = prim(xv, yv) if isinstance(xv, Traced) or isinstance(yv, Traced) else \
                prim.raw(xv, yv)
            first = rules.get(0) or _missing(prim, 0, trace)
            second = rules.get(1) or _missing(prim, 1, trace)
            return Dual(ans, first(x.tangent, ans, xv, yv) + second(y.tangent, ans, xv, yv),
                        trace)
        ans = prim(xv, y) if isinstance(xv, Traced) or isinstance(y, Traced) else \
            prim.raw(xv, y)
        first = rules.get(0) or _missing(prim, 0, trace)
        return Dual(ans, first(x.tangent, ans, xv, y), trace)
    yv = y.value
    ans = prim(x, yv) if isinstance(x, Traced) or isinstance(yv, Traced) else prim.raw(x, yv)
    second = rules.get(1) or _missing(prim, 1, trace)
    return Dual(ans, second(y.tangent, ans, x, yv), trace)


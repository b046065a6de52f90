"""Second-order forward mode on numbers: ``grad(grad(f))`` of a function of one number.

Nested ``grad`` on a number runs a dual of a dual (:mod:`fesens.ad.forward`): a value of
the inner trace is ``Dual(Dual(v, a), t)`` with ``t`` a number or ``Dual(b, c)`` of the
outer trace. Evaluated generically, every operation of the inner trace applies its JVP rule
to duals of the outer trace, so each rule's arithmetic goes once more through the
primitives, numpy's dispatch and the operators of traced values, a dozen Python calls per
number multiplied.

The rules here compute the same two levels directly on the numbers, for the arithmetic
operators and the common elementwise functions. They are the registered JVP rules of the
two levels written out: each outer-trace operation (``_mul``, ``_add``, ``_sub``,
``_div``, ``_neg``, ``_unary``, ``_binary``) does what the outer trace's ``forward_binary``
or ``forward_call`` does on numbers, in the same order, with the same raw functions (the
ufuncs, or Python's operators where the raw function takes them), so the results are the
nested evaluation's bit for bit (``tests/ad/test_ad_second_order.py`` compares them).
Anything else (arrays, a third level, a rule not written out here, ``0 ** y``) returns
``None`` and takes the nested evaluation.

The rules are tried by ``forward_binary`` and ``forward_call``, and earlier by the
arithmetic operators of a dual (set here: a number or a dual of the same trace goes
straight to ``forward_binary``) and by the ufuncs of a dual of a dual
(``Traced.nested_unary_rules``), which skip the primitive's checks of its arguments.
"""

from __future__ import annotations

import numpy as np

from fesens.ad import numpy_wrapper as w
from fesens.ad.forward import SECOND_ORDER_BINARY, SECOND_ORDER_UNARY, Dual, forward_binary
from fesens.ad.registry import JVP_RULES

_NUMBERS = frozenset((float, np.float64))
_INF = float("inf")
_neg_raw = w.negative.raw
_new = object.__new__


# ------------------------------------------- the outer trace: pairs (value, tangent or None)
# A number ``v`` of the outer trace is the pair ``(v, None)``, a dual of it ``(v, a)``. A
# value of the outer trace is its primitive's raw function of two numbers, one a float
# (``numpy_wrapper._scalar_operator``): Python's operator, or the ufunc (and its warnings)
# where that is not finite.
def _mul(p, q):
    """``p * q`` (the rules ``t y`` and ``x t``)."""
    pv, pa = p
    qv, qa = q
    ans = pv * qv
    if pa is None and qa is None:
        return ans, None
    if not -_INF < ans < _INF:
        ans = np.multiply(pv, qv)
    if pa is None:
        return ans, pv * qa
    return ans, pa * qv if qa is None else pa * qv + pv * qa


def _add(p, q):
    """``p + q`` (the rules ``t`` and ``t``)."""
    pv, pa = p
    qv, qa = q
    ans = pv + qv
    if pa is None and qa is None:
        return ans, None
    if not -_INF < ans < _INF:
        ans = np.add(pv, qv)
    if pa is None:
        return ans, qa
    return ans, pa if qa is None else pa + qa


def _sub(p, q):
    """``p - q`` (the rules ``t`` and ``-t``)."""
    pv, pa = p
    qv, qa = q
    ans = pv - qv
    if pa is None and qa is None:
        return ans, None
    if not -_INF < ans < _INF:
        ans = np.subtract(pv, qv)
    if pa is None:
        return ans, -qa
    return ans, pa if qa is None else pa + -qa


def _div(p, q):
    """``p / q`` (the rules ``t / y`` and ``-(t ans) / y``)."""
    pv, pa = p
    qv, qa = q
    if pa is None and qa is None:
        return pv / qv, None
    ans = pv / qv if qv else _INF  # the ufunc divides by 0
    if not -_INF < ans < _INF:
        ans = np.true_divide(pv, qv)
    if qa is None:
        return ans, pa / qv
    if pa is None:
        return ans, -(qa * ans) / qv
    return ans, pa / qv + -(qa * ans) / qv


def _neg(p):
    """``-p`` (the rule ``-t``)."""
    pv, pa = p
    return (-pv, None) if pa is None else (_neg_raw(pv), -pa)


def _unary(prim, p):
    """``prim(p)`` of an outer dual ``p`` by its JVP rule (``forward_call``)."""
    value, tangent = p
    ans = prim.raw(value)
    return ans, JVP_RULES[prim][0](tangent, ans, value)


def _binary(prim, p, q):
    """``prim(p, q)``, ``p`` or ``q`` an outer dual, by its JVP rules (``forward_binary``)."""
    rules = JVP_RULES[prim]
    pv, pa = p
    qv, qa = q
    ans = prim.raw(pv, qv)
    if pa is None:
        return ans, rules[1](qa, ans, pv, qv)
    if qa is None:
        return ans, rules[0](pa, ans, pv, qv)
    return ans, rules[0](pa, ans, pv, qv) + rules[1](qa, ans, pv, qv)


def _pow(p, exponent):
    """``p ** exponent`` as the operator of traced values computes it (``square`` for 2)."""
    if type(exponent) in (int, float) and exponent == 2:
        return _unary(w.square, p)
    return _binary(w.power, p, (exponent, None))


# ------------------------------------------- the arguments
def _pair(d, outer):
    """A number or a dual of the trace ``outer`` of numbers as a pair (``None`` for
    anything else)."""
    kind = type(d)
    if kind is Dual:
        if d.trace is outer and type(d.value) in _NUMBERS and type(d.tangent) in _NUMBERS:
            return d.value, d.tangent
        return None
    return (d, None) if kind in _NUMBERS else None


def _traced(arg, outer):
    """``(value pair, tangent pair)`` of a traced argument, or ``None`` where the rules do
    not apply (a value that is not an outer dual of numbers, a tangent that is not a number
    or such a dual)."""
    value, tangent = arg.value, arg.tangent
    if type(value) is not Dual or value.trace is not outer or \
            type(value.value) not in _NUMBERS or type(value.tangent) not in _NUMBERS:
        return None
    kind = type(tangent)
    if kind is Dual:
        if tangent.trace is not outer or type(tangent.value) not in _NUMBERS or \
                type(tangent.tangent) not in _NUMBERS:
            return None
        return (value.value, value.tangent), (tangent.value, tangent.tangent)
    return ((value.value, value.tangent), (tangent, None)) if kind in _NUMBERS else None


def _result(value, tangent, trace, outer) -> Dual:
    """The inner trace's dual of a value pair and a tangent pair (duals made without the
    call of ``__init__``: a third of the time of most rules)."""
    d, v = _new(Dual), _new(Dual)
    v.value, v.tangent = value
    v.trace = outer
    d.value, d.trace = v, trace
    if tangent[1] is None:
        d.tangent = tangent[0]
    else:
        d.tangent = t = _new(Dual)
        t.value, t.tangent = tangent
        t.trace = outer
    return d


def _binary_rule(compute):
    """The hook of :mod:`fesens.ad.forward` for ``compute(x, xt, y, yt)`` on pairs (``xt``
    or ``yt`` ``None`` for a constant argument: an int too) returning the pairs of the
    value and the tangent (or ``None``: the nested evaluation)."""

    def rule(x, y, trace):
        if type(x) is Dual and x.trace is trace:
            outer = x.value.trace
            x = _traced(x, outer)
            if type(y) is Dual and y.trace is trace:
                y = _traced(y, outer)
                if x is None or y is None:
                    return None
                parts = compute(x[0], x[1], y[0], y[1])
            else:
                y = (y, None) if type(y) is int else _pair(y, outer)
                if x is None or y is None:
                    return None
                parts = compute(x[0], x[1], y, None)
        else:
            outer = y.value.trace
            x = (x, None) if type(x) is int else _pair(x, outer)
            y = _traced(y, outer)
            if x is None or y is None:
                return None
            parts = compute(x, None, y[0], y[1])
        return None if parts is None else _result(parts[0], parts[1], trace, outer)

    return rule


def _unary_rule(compute):
    """The hook of :mod:`fesens.ad.forward` for ``compute(x, xt)`` on pairs."""

    def rule(x, trace):
        outer = x.value.trace
        x = _traced(x, outer)
        return None if x is None else _result(*compute(x[0], x[1]), trace, outer)

    return rule


# ------------------------------------------- the inner trace's rules
def _sum_of(first, second):
    """``first + second`` of the traced arguments' terms (``None``: a constant's)."""
    if first is None:
        return second
    return first if second is None else _add(first, second)


@_binary_rule
def _multiply(x, xt, y, yt):
    return _mul(x, y), _sum_of(None if xt is None else _mul(xt, y),
                               None if yt is None else _mul(x, yt))


@_binary_rule
def _addition(x, xt, y, yt):
    return _add(x, y), _sum_of(xt, yt)


@_binary_rule
def _subtraction(x, xt, y, yt):
    return _sub(x, y), _sum_of(xt, None if yt is None else _neg(yt))


@_binary_rule
def _division(x, xt, y, yt):
    ans = _div(x, y)
    return ans, _sum_of(None if xt is None else _div(xt, y),
                        None if yt is None else _div(_neg(_mul(yt, ans)), y))


@_binary_rule
def _power(x, xt, y, yt):
    """The rules ``_power_first`` and ``t (ans log x)`` (:mod:`fesens.ad.numpy_jvps`)."""
    traced_exponent = y[1] is not None
    if xt is not None and traced_exponent and x[0] == 0:
        return None  # the exponent's ``where`` at x = 0: the nested evaluation
    ans = _binary(w.power, x, y)
    first = second = None
    if xt is not None:
        if traced_exponent:  # t (y ans / x)
            first = _mul(xt, _div(_mul(y, ans), x))
        else:
            first = _mul(xt, _power_base(x, y[0]))
    if yt is not None:
        if not x[0] > 0:  # _safe_log: log x where x > 0, 0 elsewhere
            log = (0.0, None)
        else:
            log = _unary(w.UNARY["log"], x) if x[1] is not None else (np.log(x[0]), None)
        second = _mul(yt, _mul(ans, log))
    return ans, _sum_of(first, second)


def _power_base(x, y):
    """``_power_base`` of :mod:`fesens.ad.numpy_vjps` for a constant number ``y``."""
    if y == 2:
        return _mul((2.0, None), x)
    if y == 1:
        return _add(_mul((0.0, None), x), (1.0, None))
    if y == 0:
        return _mul((0.0, None), x)
    return _mul((y, None), _pow(x, y - 1.0))


def _elementwise(prim, derivative):
    """The inner rule ``derivative(ans, x) · t`` of a unary primitive (``fresh`` in
    :func:`fesens.ad.numpy_vjps._unary`: the derivative first)."""

    @_unary_rule
    def rule(x, xt):
        ans = _unary(prim, x)
        return ans, _mul(derivative(ans, x), xt)

    SECOND_ORDER_UNARY[prim] = rule


# exp, sin and cos with their outer rules written out (``t ans``, ``cos x · t``,
# ``-sin x · t``): each ufunc once
@_unary_rule
def _exp(x, xt):
    value, tangent = x
    ans = np.exp(value)
    ans = ans, tangent * ans
    return ans, _mul(xt, ans)  # the rule ``t ans``


@_unary_rule
def _sin(x, xt):
    value, tangent = x
    sin, cos = np.sin(value), np.cos(value)
    return (sin, cos * tangent), _mul((cos, -sin * tangent), xt)  # the rule ``cos x · t``


@_unary_rule
def _cos(x, xt):
    value, tangent = x
    cos, sin = np.cos(value), np.sin(value)
    # the rule ``-sin x · t``
    return (cos, -sin * tangent), _mul((_neg_raw(sin), -(cos * tangent)), xt)


@_unary_rule
def _negative(x, xt):
    return _unary(w.negative, x), _neg(xt)


SECOND_ORDER_BINARY.update({w.multiply: _multiply, w.add: _addition, w.subtract: _subtraction,
                            w.true_divide: _division, w.power: _power})
SECOND_ORDER_UNARY.update({w.UNARY["exp"]: _exp, w.UNARY["sin"]: _sin, w.UNARY["cos"]: _cos,
                           w.negative: _negative})
_elementwise(w.UNARY["log"], lambda ans, x: _div((1.0, None), x))
_elementwise(w.UNARY["sqrt"], lambda ans, x: _div((0.5, None), ans))
_elementwise(w.UNARY["tanh"], lambda ans, x: _sub((1.0, None), _mul(ans, ans)))
_elementwise(w.square, lambda ans, x: _add(x, x))


# ------------------------------------------- the operators of duals
# A dual and a number, or two duals of one trace: straight to ``forward_binary``, where the
# primitive would send them after its checks of the arguments (the rules above are tried
# there).
_OPERANDS = frozenset((float, np.float64, int))


def _operator(name: str, prim, reflected: bool = False):
    def operator(self, other):
        kind = type(other)
        if kind in _OPERANDS or (kind is Dual and other.trace is self.trace):
            x, y = (other, self) if reflected else (self, other)
            rule = SECOND_ORDER_BINARY.get(prim)
            if rule is not None and type(self.value) is Dual:  # as forward_binary would
                out = rule(x, y, self.trace)
                if out is not None:
                    return out
            return forward_binary(prim, x, y, self.trace)
        return prim(other, self) if reflected else prim(self, other)

    operator.__name__ = f"__{'r' * reflected}{name}__"
    return operator


_power_operator = _operator("pow", w.power)


def _dual_power(self, other):
    """``dual ** other``; ``** 2`` is ``square`` (as for every traced value)."""
    if type(other) in (int, float) and other == 2:
        return w.square(self)
    return _power_operator(self, other)


for _name, _prim in (("add", w.add), ("sub", w.subtract), ("mul", w.multiply),
                     ("truediv", w.true_divide)):
    setattr(Dual, f"__{_name}__", _operator(_name, _prim))
    setattr(Dual, f"__r{_name}__", _operator(_name, _prim, reflected=True))
Dual.__pow__ = _dual_power
Dual.__rpow__ = _operator("pow", w.power, reflected=True)

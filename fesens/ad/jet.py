"""Second-order Taylor numbers (jets): ``grad(grad(f))`` of a function of one number, one pass.

A :class:`Jet` carries a number and its first and second derivatives along the input,
``(v, v', v'')``, as JAX's ``jet`` and hyper-dual numbers do. ``grad(grad(f))(x)`` (and
``value_and_grad(grad(f))(x)``) of a number ``x`` evaluates ``f`` once on the jet
``(x, 1, 0)`` and reads ``f''`` (and ``f'``) off the result: one object per operation,
where the nested evaluation (a dual of a dual, :mod:`fesens.ad.forward` and
:mod:`fesens.ad.second_order`) makes three and dispatches twice.

The rules, for ``u = (u, u', u'')``, ``w = (w, w', w'')`` and a function ``φ`` of one number::

    u w    (u w, u' w + u w', (u'' w + u' w') + (u' w' + u w''))
    u / w  (q, q', q'') with q = u / w, q' = (u' - q w') / w, q'' = (u'' - 2 q' w' - q w'') / w
    u ** w (z, z g', z (g'' + g'²)) with g = w log u (u > 0)
    φ(u)   (φ(u), φ'(u) u', φ''(u) u'² + φ'(u) u'')

with ``φ`` one of :data:`CHAIN` (numpy's ufuncs applied to a jet), evaluated by
:mod:`math` on Python floats (numpy's own function costs five times as much on a number;
the two may differ by an ulp). Each rule is the nested evaluation's, written out: the
same operations in the same order on ``(v, v', v'')``, so that the jet's numbers are the
nested evaluation's bit for bit but for those ulps of :mod:`math`.

The jet only answers where it is sure to agree with the nested evaluation (to rounding:
the tests hold it to 1e-15 relative). Everything else raises :class:`JetUnsupported`
inside ``f`` (arrays, a ufunc or numpy function without a rule here, ``float()`` of a
jet, a traced value of another trace, an attribute such as ``shape``), and so does every
error of the evaluation (Python's ``ZeroDivisionError``, ``math``'s domain and overflow
errors); :func:`first_and_second` then returns ``None`` and the caller runs the nested
evaluation, which gives its own answer, warnings and errors. That is decided once per
call, before anything is returned: also when the result is not finite (the nested
evaluation's warnings), or when ``f`` started a trace of its own (``grad`` inside ``f``).
A function with side effects then sees them twice, as when forward mode gives way to
reverse mode. The derivatives come back as Python floats.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from fesens.ad.tracer import new_trace_id

_new = object.__new__
_np_tanh = np.tanh
_INF = math.inf


class JetUnsupported(Exception):  # noqa: N818 - a signal, caught by first_and_second
    """The jet cannot follow the function here; the nested evaluation takes over."""


def _jet(value: float, first: float, second: float) -> Jet:
    """A jet made without the call of ``__init__`` (a third of an operation's time)."""
    out = _new(Jet)
    out.value = value
    out.first = first
    out.second = second
    return out


def _constant(other) -> float:
    """A number as a float (an int, a numpy float: the same value), or give up."""
    kind = type(other)
    if kind is float or kind is int or kind is np.float64:
        return float(other)
    raise JetUnsupported(f"a {kind.__name__} in the arithmetic of a jet")


def _unsupported(*args, **kwargs):
    raise JetUnsupported("not a number's operation")


class Jet:
    """``value`` of a function of one number and its ``first`` and ``second`` derivatives."""

    __slots__ = ("value", "first", "second")

    def __repr__(self) -> str:
        return f"Jet({self.value!r}, {self.first!r}, {self.second!r})"

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)  # progress lines inside f, as for traced values

    # ------------------------------------------------------------------ arithmetic
    def __add__(self, other):
        if type(other) is Jet:
            return _jet(self.value + other.value, self.first + other.first,
                        self.second + other.second)
        c = other if type(other) is float else _constant(other)
        return _jet(self.value + c, self.first, self.second)

    __radd__ = __add__

    def __sub__(self, other):
        if type(other) is Jet:
            return _jet(self.value - other.value, self.first - other.first,
                        self.second - other.second)
        c = other if type(other) is float else _constant(other)
        return _jet(self.value - c, self.first, self.second)

    def __rsub__(self, other):
        return _jet(_constant(other) - self.value, -self.first, -self.second)

    def __mul__(self, other):
        if type(other) is Jet:
            u, u1, u2 = self.value, self.first, self.second
            w, w1, w2 = other.value, other.first, other.second
            cross = u1 * w1
            return _jet(u * w, u1 * w + u * w1, (u2 * w + cross) + (cross + u * w2))
        c = other if type(other) is float else _constant(other)
        return _jet(self.value * c, self.first * c, self.second * c)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if type(other) is Jet:
            return _quotient(self.value, self.first, self.second, other)
        c = other if type(other) is float else _constant(other)
        return _jet(self.value / c, self.first / c, self.second / c)

    def __rtruediv__(self, other):
        return _quotient(_constant(other), None, 0.0, self)

    def __pow__(self, other):
        if type(other) is Jet:
            return _power(self, other)
        return _constant_power(self, _constant(other))

    def __rpow__(self, other):
        base = _constant(other)
        if not base > 0:
            raise JetUnsupported("a power of a base that is not positive")
        w1 = self.first
        z, log = base**self.value, math.log(base)
        zl = z * log
        slope = w1 * zl
        return _jet(z, slope, self.second * zl + w1 * (slope * log))

    def __neg__(self):
        return _jet(-self.value, -self.first, -self.second)

    def __pos__(self):
        return self

    def __abs__(self):
        return self.__array_ufunc__(np.absolute, "__call__", self)

    # ------------------------------------------------------------------ comparisons
    def __lt__(self, other):
        return self.value < _compared(other)

    def __le__(self, other):
        return self.value <= _compared(other)

    def __gt__(self, other):
        return self.value > _compared(other)

    def __ge__(self, other):
        return self.value >= _compared(other)

    def __eq__(self, other):
        return self.value == _compared(other)

    def __ne__(self, other):
        return self.value != _compared(other)

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        return bool(self.value)

    # ------------------------------------------------------------------ numpy
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        derivatives = CHAIN.get(ufunc)
        if derivatives is not None and len(inputs) == 1 and method == "__call__" and \
                not kwargs:  # φ(u) by the chain rule, inline: the common case
            u1 = self.first
            phi, phi1, change = derivatives(self.value, u1)
            out = _new(Jet)
            out.value = phi
            out.first = phi1 * u1
            out.second = change * u1 + phi1 * self.second
            return out
        if method != "__call__" or kwargs:
            raise JetUnsupported(f"numpy.{ufunc.__name__} with arguments")
        if len(inputs) == 1:
            rule = _UNARY.get(ufunc)
            if rule is None:
                raise JetUnsupported(f"numpy.{ufunc.__name__}")
            return rule(self)
        operators = _BINARY.get(ufunc)
        if operators is None:
            raise JetUnsupported(f"numpy.{ufunc.__name__}")
        x, y = inputs
        return operators[0](x, y) if type(x) is Jet else operators[1](y, x)

    # anything an array or a traced value would offer: the nested evaluation answers
    __array_function__ = __array__ = __float__ = __int__ = __index__ = __complex__ = \
        __len__ = __iter__ = __getitem__ = __matmul__ = __rmatmul__ = __floordiv__ = \
        __rfloordiv__ = __mod__ = __rmod__ = __round__ = _unsupported

    def __getattr__(self, name: str):
        if name.startswith("__"):  # numpy's probes (``__array_interface__``)
            raise AttributeError(name)
        raise JetUnsupported(f"the attribute {name!r} of a number")


def _compared(other):
    if type(other) is Jet:
        return other.value
    return _constant(other)


def _quotient(u: float, u1: float | None, u2: float, w: Jet) -> Jet:
    """``u / w`` (``u1`` ``None`` for a constant ``u``) as the quotient rule nested in
    itself computes it."""
    wv, w1 = w.value, w.first
    q = u / wv
    shift = -(w1 * q) / wv
    first = shift if u1 is None else u1 / wv + shift
    second = -(w.second * q + w1 * first) / wv + -(w1 * shift) / wv
    if u1 is not None:
        second = (u2 / wv + -(w1 * (u1 / wv)) / wv) + second
    return _jet(q, first, second)


def _constant_power(x: Jet, c: float) -> Jet:
    """``x ** c``: ``c x^(c−1)`` differentiated as a power again (``x ** 2`` as ``x x``)."""
    v, u1 = x.value, x.first
    if c == 2:
        twice = v + v
        return _jet(v * v, twice * u1, (u1 + u1) * u1 + twice * x.second)
    if not v > 0 and c != int(c):  # a complex power in Python, nan in numpy
        raise JetUnsupported("a fractional power of a number that is not positive")
    if c == 0:
        slope, change = 0.0 * v, 0.0 * u1
    elif c == 1:
        slope, change = 0.0 * v + 1.0, 0.0 * u1
    elif c == 3:  # c x², x² a square
        slope, change = c * (v * v), c * ((v + v) * u1)
    else:
        e = c - 1.0
        slope, change = c * v**e, c * (u1 * (e * v ** (e - 1.0)))
    return _jet(v**c, u1 * slope, x.second * slope + u1 * change)


def _power(base: Jet, exponent: Jet) -> Jet:
    """``base ** exponent`` for a positive base: ``t (y z / x)`` and ``t (z log x)`` in
    the two arguments, each differentiated again."""
    v, u1 = base.value, base.first
    if not v > 0:
        raise JetUnsupported("a traced power of a base that is not positive")
    w, w1 = exponent.value, exponent.first
    z, log = v**w, math.log(v)
    log1 = 1.0 / v * u1
    z1 = u1 * (w * v ** (w - 1.0)) + w1 * (z * log)  # the tangent of z
    wz = w * z
    ratio = wz / v  # y z / x
    ratio1 = (w1 * z + w * z1) / v + -(u1 * ratio) / v
    zl = z * log
    first = u1 * ratio + w1 * zl
    second = (base.second * ratio + u1 * ratio1) + (exponent.second * zl
                                                    + w1 * (z1 * log + z * log1))
    return _jet(z, first, second)


# ------------------------------------------------------------------ numpy's ufuncs on a jet
# (φ, φ', (φ')') as the nested evaluation differentiates the JVP rule's φ'
def _exp(v, v1):
    e = math.exp(v)
    return e, e, v1 * e


def _log(v, v1):
    phi1 = 1.0 / v
    return math.log(v), phi1, -(v1 * phi1) / v


def _sqrt(v, v1):
    s = math.sqrt(v)
    phi1 = 0.5 / s
    return s, phi1, -((phi1 * v1) * phi1) / s


def _sin(v, v1):
    s, c = math.sin(v), math.cos(v)
    return s, c, -s * v1


def _cos(v, v1):
    s, c = math.sin(v), math.cos(v)
    return c, -s, -(c * v1)


def _tan(v, v1):
    t = math.tan(v)
    phi1 = 1.0 + t * t
    return t, phi1, (t + t) * (phi1 * v1)


def _tanh(v, v1):
    t = float(_np_tanh(v))  # numpy's bits: 1 − t² would magnify an ulp of math.tanh
    phi1 = 1.0 - t * t
    t1 = phi1 * v1
    return t, phi1, -(t1 * t + t * t1)


def _sinh(v, v1):
    s, c = math.sinh(v), math.cosh(v)
    return s, c, s * v1


def _cosh(v, v1):
    s, c = math.sinh(v), math.cosh(v)
    return c, s, c * v1


def _arctan(v, v1):
    denominator = 1.0 + v * v
    phi1 = 1.0 / denominator
    return math.atan(v), phi1, -(((v + v) * v1) * phi1) / denominator


def _log1p(v, v1):
    denominator = 1.0 + v
    phi1 = 1.0 / denominator
    return math.log1p(v), phi1, -(v1 * phi1) / denominator


def _expm1(v, v1):
    m = math.expm1(v)
    phi1 = m + 1.0
    return m, phi1, phi1 * v1


def _reciprocal(v, v1):
    r = 1.0 / v
    phi1 = -(r * r)
    return r, phi1, -((r + r) * (phi1 * v1))


def _absolute(v, v1):
    if v == 0:
        raise JetUnsupported("abs at 0")
    return abs(v), 1.0 if v > 0 else -1.0, 0.0 * v1


#: ``ufunc -> (v, v') ↦ (φ(v), φ'(v), (φ'(v))')``: the elementwise functions a jet follows
#: by the chain rule, ``φ(u) = (φ(u), φ'(u) u', (φ'(u))' u' + φ'(u) u'')``.
CHAIN: dict = {np.exp: _exp, np.log: _log, np.sqrt: _sqrt, np.sin: _sin, np.cos: _cos,
               np.tan: _tan, np.tanh: _tanh, np.sinh: _sinh, np.cosh: _cosh,
               np.arctan: _arctan, np.log1p: _log1p, np.expm1: _expm1,
               np.reciprocal: _reciprocal, np.absolute: _absolute, np.fabs: _absolute}
_UNARY = {np.negative: Jet.__neg__, np.square: lambda u: _constant_power(u, 2)}
# ``ufunc -> (jet op other, jet reflected-op other)``
_BINARY = {np.add: (Jet.__add__, Jet.__radd__), np.subtract: (Jet.__sub__, Jet.__rsub__),
           np.multiply: (Jet.__mul__, Jet.__rmul__),
           np.true_divide: (Jet.__truediv__, Jet.__rtruediv__),
           np.power: (Jet.__pow__, Jet.__rpow__)}


# ------------------------------------------------------------------ the driver
_NUMBERS = frozenset((float, np.float64, int))  # the inputs, and the constant results


def first_and_second(f: Callable, args: tuple, argnum: int) -> tuple[float, float] | None:
    """``(f'(x), f''(x))`` at the number ``x = args[argnum]`` by one evaluation of ``f`` on
    a jet, or ``None`` where the jet cannot follow ``f`` (the caller then runs the nested
    evaluation)."""
    x = _jet(float(args[argnum]), 1.0, 0.0)
    args = (x,) if len(args) == 1 else (*args[:argnum], x, *args[argnum + 1:])
    before = new_trace_id()
    try:
        out = f(*args)
    except Exception:  # noqa: BLE001 - the nested evaluation gives its own answer or error
        return None
    if new_trace_id() != before + 1:  # f traced something itself: nested traces decide
        return None
    kind = type(out)
    if kind is Jet:
        first, second = out.first, out.second
        if -_INF < out.value < _INF and -_INF < first < _INF and -_INF < second < _INF:
            return first, second
        return None
    return (0.0, 0.0) if kind in _NUMBERS else None


def through_jet(f: Callable, argnum: int, with_value: bool, general: Callable) -> Callable:
    """``grad(grad(f, argnum), argnum)`` (or ``value_and_grad`` outside): the jet on a
    number, ``general`` (the nested evaluation) on anything else or where the jet gives
    up."""

    def second_derivative(*args):
        if type(args[argnum]) in _NUMBERS:
            both = first_and_second(f, args, argnum)
            if both is not None:
                return both if with_value else both[1]
        return general(*args)

    return second_derivative

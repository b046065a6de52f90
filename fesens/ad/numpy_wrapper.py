"""The traced subset of numpy: primitives, their numpy dispatch, and box operators.

Users write plain numpy: ``np.sum(x ** 2)``, ``np.exp(x)``, ``A @ x`` on a traced ``x``
dispatch here through ``Traced.__array_ufunc__`` / ``__array_function__`` and the operators
below. The rules live in :mod:`fesens.ad.numpy_vjps`; cumulative, ordering and building
operations, ``numpy.linalg`` and ``scipy.special`` have their modules (``array_vjps``,
``linalg_vjps``, ``special_vjps``: primitive and rule side by side).
"""

from __future__ import annotations

import math
import operator

import numpy as np
import scipy.sparse as sp

from fesens.ad.dispatch import register_function, register_ufunc
from fesens.ad.forward import Dual
from fesens.ad.jet import Jet, JetUnsupported
from fesens.ad.traced import Traced
from fesens.ad.tracer import Box, primitive


def getval(x):
    """The raw value under any number of boxes and duals."""
    while type(x) is Box or type(x) is Dual:
        x = x.value
    return x


def stop_gradient(x):
    """``x`` as a constant: no gradient flows through the returned value."""
    if type(x) is Jet:  # a jet's constant is its value: the nested evaluation answers
        raise JetUnsupported("stop_gradient")
    return getval(x)


# ------------------------------------------------------------------ elementwise
UNARY = {
    name: primitive(getattr(np, name), name)
    for name in ("negative", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "absolute",
                 "square", "sinh", "cosh", "log1p", "expm1", "arctan", "reciprocal",
                 "arcsin", "arccos", "arcsinh", "arccosh", "arctanh", "exp2", "log2", "log10",
                 "fabs", "deg2rad", "rad2deg")
}
# Python and numpy floats: a ufunc call on two of them costs ~1 µs (its type resolution),
# their own operator ~50 ns. These raw functions take the operator when it gives the bits
# the ufunc gives on every CPU (+, -, *, / are correctly rounded; of the powers only those
# numpy's power loop computes exactly so: x**2, x**0.5, x**-1 as x*x, sqrt x, 1/x) and
# call the ufunc otherwise, so its overflow and division warnings stay.
_FLOATS = frozenset((float, np.float64))
_NUMBERS = frozenset((float, np.float64, int))


def _scalar_operator(ufunc, operator):
    def raw(x, y, **kwargs):
        kind_x, kind_y = type(x), type(y)  # two numbers, at least one of them a float
        if ((kind_x in _FLOATS and kind_y in _NUMBERS)
                or (kind_y in _FLOATS and kind_x in _NUMBERS)) and not kwargs:
            ans = operator(x, y)
            if math.isfinite(ans):
                return ans
        return ufunc(x, y, **kwargs)

    raw.__name__ = ufunc.__name__
    raw.__doc__ = ufunc.__doc__
    return raw


def _divide_numbers(x, y):
    return x / y if y else math.nan  # nan: not finite, so the ufunc runs (and warns)


def _power_numbers(x, y):
    # any other exponent is numpy's pow (SVML or Highway kernels where the CPU has them,
    # libm elsewhere), which differs from Python's pow by an ulp on some CPUs: nan hands it
    # to the ufunc
    if not x > 0 or type(x) is int:
        return math.nan
    if y == 2:
        return x * x
    if y == 0.5:
        return math.sqrt(x)
    if y == -1:
        return 1.0 / x
    return math.nan


_SCALAR_OPERATORS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
                     "true_divide": _divide_numbers, "power": _power_numbers}
BINARY = {
    name: primitive(_scalar_operator(getattr(np, name), _SCALAR_OPERATORS[name])
                    if name in _SCALAR_OPERATORS else getattr(np, name), name)
    for name in ("add", "subtract", "multiply", "true_divide", "power", "maximum", "minimum",
                 "arctan2", "logaddexp", "logaddexp2", "hypot", "fmax", "fmin", "remainder")
}
sign = primitive(np.sign, "sign")
for _name, _prim in {**UNARY, **BINARY, "sign": sign}.items():
    register_ufunc(getattr(np, _name), _prim)
register_ufunc(np.degrees, UNARY["rad2deg"])
register_ufunc(np.radians, UNARY["deg2rad"])

add, subtract, multiply = BINARY["add"], BINARY["subtract"], BINARY["multiply"]
true_divide, power = BINARY["true_divide"], BINARY["power"]
negative, square = UNARY["negative"], UNARY["square"]


def _constant_ufunc(ufunc):
    """Comparisons and predicates: evaluated on raw values, never traced."""
    return lambda *args, **kwargs: ufunc(*map(getval, args), **kwargs)


for _ufunc in (np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal,
               np.isfinite, np.isnan, np.isinf, np.floor, np.ceil, np.rint, np.logical_and,
               np.logical_or, np.logical_not, np.signbit):
    register_ufunc(_ufunc, _constant_ufunc(_ufunc))


# ------------------------------------------------------------------ reductions
@primitive
def sum(x, axis=None, keepdims=False):  # noqa: A001 - mirrors numpy
    if type(x) is np.ndarray:  # the ufunc method skips np.sum's Python-level dispatch
        return np.add.reduce(x, axis, None, None, keepdims)  # positional: cheaper to parse
    return np.sum(x, axis=axis, keepdims=keepdims)


@primitive
def mean(x, axis=None, keepdims=False):
    return np.mean(x, axis=axis, keepdims=keepdims)


@primitive
def amax(x, axis=None, keepdims=False):
    return np.max(x, axis=axis, keepdims=keepdims)


@primitive
def amin(x, axis=None, keepdims=False):
    return np.min(x, axis=axis, keepdims=keepdims)


# ------------------------------------------------------------------ linear algebra
@primitive
def matmul(a, b):
    return a @ b


@primitive
def einsum(subscripts, *operands):
    # Path optimization costs ~0.1 ms: worth it for three operands, or for large ones, where
    # numpy then contracts with BLAS (tensordot) instead of its 10x slower generic loop.
    large = max(np.size(op) for op in operands) > 4096
    return np.einsum(subscripts, *operands, optimize=len(operands) > 2 or large)


@primitive
def outer(a, b):
    return np.outer(a, b)


@primitive
def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - mirrors numpy
    if ord not in (None, 2, "fro") or (ord == 2 and np.ndim(x) > 1 and axis is None):
        raise NotImplementedError(
            f"fesens traces linalg.norm for the 2-norm of vectors and the Frobenius norm "
            f"only, not ord={ord!r}"
        )
    return np.linalg.norm(x, ord=None, axis=axis, keepdims=keepdims)


@primitive
def det(a):
    """Determinants of the matrices of ``a``: ``(..., n, n)`` → ``(...)``.

    2x2 and 3x3 stacks (finite-element Jacobians) use the explicit formulas: several times
    faster than LAPACK's per-matrix factorization on many small matrices.
    """
    a = np.asarray(a)
    if a.ndim >= 2 and a.shape[-1] == a.shape[-2] and a.shape[-1] in (2, 3):
        return _small_det(a)
    return np.linalg.det(a)


def _small_det(a: np.ndarray) -> np.ndarray:
    if a.shape[-1] == 2:
        return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    return np.einsum("...i,...i->...", a[..., 0, :], _small_cofactor_row(a))


def _small_cofactor_row(a: np.ndarray) -> np.ndarray:
    """Cofactors of the first row of 3x3 matrices, ``(..., 3)`` (``a₁ × a₂``)."""
    return np.cross(a[..., 1, :], a[..., 2, :])


def _small_inv(a: np.ndarray) -> np.ndarray:
    """Inverses of 2x2 or 3x3 matrices by the adjugate; LAPACK's error when singular."""
    if a.shape[-1] == 2:
        adjugate = np.empty_like(a, dtype=float)
        adjugate[..., 0, 0] = a[..., 1, 1]
        adjugate[..., 1, 1] = a[..., 0, 0]
        adjugate[..., 0, 1] = -a[..., 0, 1]
        adjugate[..., 1, 0] = -a[..., 1, 0]
    else:  # the columns of adj(A) are the cross products of A's rows
        adjugate = np.stack([np.cross(a[..., 1, :], a[..., 2, :]),
                             np.cross(a[..., 2, :], a[..., 0, :]),
                             np.cross(a[..., 0, :], a[..., 1, :])], axis=-1)
    determinant = _small_det(a)
    if not np.all(determinant != 0):
        raise np.linalg.LinAlgError("Singular matrix")
    return adjugate / determinant[..., None, None]


@primitive
def inv(a):
    """Inverses of the matrices of ``a``: ``(..., n, n)`` → ``(..., n, n)`` (2x2 and 3x3 by
    the adjugate, see :func:`det`)."""
    a = np.asarray(a)
    if a.ndim >= 2 and a.shape[-1] == a.shape[-2] and a.shape[-1] in (2, 3):
        return _small_inv(a)
    return np.linalg.inv(a)


@primitive
def dense_solve(a, b):
    """``np.linalg.solve(a, b)``: ``a`` is ``(..., n, n)``, ``b`` a vector or a stack of
    ``(..., n, k)`` matrices, broadcast over the leading axes. (The sparse solve of FE
    systems is :func:`fesens.ad.sparse.solve`.)"""
    return np.linalg.solve(a, b)


@primitive
def cross(a, b):
    """Cross products of 3-vectors along the last axis: ``(..., 3)``, broadcasting."""
    return np.cross(a, b)


def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if (axisa, axisb, axisc, axis) != (-1, -1, -1, None):
        raise NotImplementedError("fesens traces np.cross along the last axis only")
    if np.shape(getval(a))[-1:] != (3,) or np.shape(getval(b))[-1:] != (3,):
        raise NotImplementedError(
            f"fesens traces np.cross of 3-vectors only, not of shapes "
            f"{np.shape(getval(a))} and {np.shape(getval(b))}"
        )
    return cross(a, b)


def dot(a, b):
    """``np.dot`` for up to 2-D operands (scalars multiply)."""
    if np.ndim(getval(a)) == 0 or np.ndim(getval(b)) == 0:
        return multiply(a, b)
    if np.ndim(getval(a)) > 2 or np.ndim(getval(b)) > 2:
        raise NotImplementedError("fesens traces np.dot for up to 2-D operands; use einsum")
    return matmul(a, b)


# ------------------------------------------------------------------ shape and indexing
@primitive
def reshape(x, shape):
    return np.reshape(x, shape)


@primitive
def transpose(x, axes=None):
    return np.transpose(x, axes)


@primitive
def broadcast_to(x, shape):
    return np.broadcast_to(x, shape)


@primitive
def getitem(x, index):
    return x[index]


@primitive
def untake(g, index, shape, unique=False):
    """Adjoint of ``x[index]``: a zero array of ``shape`` with ``g`` added at ``index``.

    ``unique=True`` promises that ``index`` selects no element twice (plain assignment).
    """
    if unique:
        out = np.zeros(shape, dtype=np.result_type(g, float))
        out[index] = g
        return out
    if isinstance(index, np.ndarray) and index.dtype.kind in "iu":
        # rows of a (n, ...) array: one bincount over flat positions (np.add.at is slow)
        flat = np.where(index < 0, index + shape[0], index)
        row = int(np.prod(shape[1:], dtype=np.int64))
        if row > 1:
            flat = flat[..., None] * row + np.arange(row)
        values = np.broadcast_to(g, (*index.shape, *shape[1:]))
        return np.bincount(flat.ravel(), weights=np.ravel(values),
                           minlength=shape[0] * row).reshape(shape)
    out = np.zeros(shape, dtype=np.result_type(g, float))
    np.add.at(out, index, g)
    return out


@primitive
def concatenate_arrays(axis, *arrays):
    return np.concatenate(arrays, axis=axis)


@primitive
def stack_arrays(axis, *arrays):
    return np.stack(arrays, axis=axis)


@primitive
def where(condition, x, y):
    return np.where(condition, x, y)


@primitive
def clip(x, lower, upper):
    return np.clip(x, lower, upper)


def _concatenate(arrays, axis=0):
    return concatenate_arrays(axis, *arrays)


def _stack(arrays, axis=0):
    return stack_arrays(axis, *arrays)


def _where(condition, x, y):
    return where(getval(condition), x, y)


def _clip(x, a_min=None, a_max=None, **kwargs):
    return clip(x, kwargs.get("min", a_min), kwargs.get("max", a_max))


def _ravel(x):
    return reshape(x, (-1,))


def _squeeze(x, axis=None):
    return reshape(x, np.squeeze(np.empty(np.shape(getval(x)), dtype=bool), axis).shape)


def _expand_dims(x, axis):
    return reshape(x, np.expand_dims(np.empty(np.shape(getval(x)), dtype=bool), axis).shape)


def _sinc(x):
    """``sin(πx) / (πx)``; for ``|πx| < 10⁻²`` its series ``1 − t²/6 + t⁴/120`` (error below
    10⁻¹⁶), so derivatives of every order are right at 0 too."""
    t = np.pi * x
    near = np.abs(getval(t)) < 1e-2
    far = where(near, 1.0, t)
    t2 = t * t
    return where(near, 1.0 - t2 / 6.0 + t2 * t2 / 120.0, UNARY["sin"](far) / far)


def _einsum(subscripts, *operands, **kwargs):
    return einsum(subscripts, *operands)


for _func, _prim in {
    np.sum: sum, np.mean: mean, np.max: amax, np.amax: amax, np.min: amin, np.amin: amin,
    np.matmul: matmul, np.dot: dot, np.einsum: _einsum, np.outer: outer,
    np.linalg.det: det, np.linalg.inv: inv,
    np.linalg.solve: dense_solve, np.cross: _cross, np.reshape: reshape, np.transpose: transpose,
    np.broadcast_to: broadcast_to, np.concatenate: _concatenate, np.stack: _stack,
    np.where: _where, np.clip: _clip, np.ravel: _ravel, np.squeeze: _squeeze,
    np.expand_dims: _expand_dims, np.sinc: _sinc,
    np.shape: lambda x: np.shape(getval(x)), np.ndim: lambda x: np.ndim(getval(x)),
    np.size: lambda x: np.size(getval(x)),
    np.zeros_like: lambda x, *a, **k: np.zeros_like(getval(x), *a, **k),
    np.ones_like: lambda x, *a, **k: np.ones_like(getval(x), *a, **k),
    np.result_type: lambda *a: np.result_type(*map(getval, a)),
}.items():
    register_function(_func, _prim)


# ------------------------------------------------- operators of traced values (boxes and duals)
def _reflected(prim):
    return lambda self, other: prim(other, self)


#: Value types whose ``@`` has a primitive of its own (PatternMatrix → sparse matvec).
MATMUL_BY_TYPE: dict = {}


def _matmul(a, b):
    return MATMUL_BY_TYPE.get(type(getval(a)), matmul)(a, b)


register_ufunc(np.matmul, _matmul)  # np.matmul is a ufunc in numpy 2


def _rmatmul(self, other):
    return _matmul(other, self)


Traced.__add__ = add
Traced.__radd__ = _reflected(add)
Traced.__sub__ = subtract
Traced.__rsub__ = _reflected(subtract)
Traced.__mul__ = multiply
Traced.__rmul__ = _reflected(multiply)
Traced.__truediv__ = true_divide
Traced.__rtruediv__ = _reflected(true_divide)


def _power_operator(self, other):
    """``box ** other``; ``box ** 2`` is ``square(box)``, whose rule ``2 x ḡ`` is cheaper."""
    if type(other) in (int, float) and other == 2:
        return square(self)
    return power(self, other)


Traced.__pow__ = _power_operator
Traced.__rpow__ = _reflected(power)
Traced.__neg__ = negative
Traced.__pos__ = lambda self: self
Traced.__abs__ = UNARY["absolute"]
Traced.__matmul__ = _matmul
Traced.__rmatmul__ = _rmatmul
Traced.__getitem__ = getitem
Traced.__lt__ = lambda a, b: getval(a) < getval(b)
Traced.__le__ = lambda a, b: getval(a) <= getval(b)
Traced.__gt__ = lambda a, b: getval(a) > getval(b)
Traced.__ge__ = lambda a, b: getval(a) >= getval(b)
Traced.__eq__ = lambda a, b: getval(a) == getval(b)
Traced.__ne__ = lambda a, b: getval(a) != getval(b)
Traced.T = property(lambda self: transpose(self))
Traced.sum = lambda self, axis=None, keepdims=False: sum(self, axis, keepdims)
Traced.mean = lambda self, axis=None, keepdims=False: mean(self, axis, keepdims)
Traced.max = lambda self, axis=None, keepdims=False: amax(self, axis, keepdims)
Traced.min = lambda self, axis=None, keepdims=False: amin(self, axis, keepdims)
Traced.reshape = lambda self, *shape: reshape(
    self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)
Traced.ravel = _ravel
Traced.flatten = _ravel
Traced.transpose = lambda self, *axes: transpose(
    self, axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None))
Traced.squeeze = _squeeze
Traced.dot = dot


def is_sparse(x) -> bool:
    """True for scipy sparse matrices and arrays."""
    return sp.issparse(x)

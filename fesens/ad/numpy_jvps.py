"""Forward-mode (JVP) rules of the traced numpy subset (:mod:`fesens.ad.forward`).

A JVP maker ``maker(t, ans, *args, **kwargs)`` returns argument ``i``'s contribution
``∂f/∂x_i · t`` to the output's tangent, shaped like the output (a rule that would return
the tangent of a broadcast argument as it is broadcasts it: :func:`_like`). Functions linear in an
argument (sums, reshapes, indexing, matrix products, einsum) apply themselves to the
tangent (:func:`~fesens.ad.registry.defjvp_linear`). The elementwise functions registered
from their derivative get their rule next to their VJP (:mod:`fesens.ad.numpy_vjps`).
Primitives without a rule here (``max``/``min``, ``numpy.linalg`` beyond products, the
sparse solve, ...) make forward mode give way to reverse mode: same numbers, the cost of
the reverse sweep.

Rules are written with numpy functions that dispatch on traced values, so a tangent may
itself be a dual (second order) or a box (forward mode inside a reverse trace).
"""

from __future__ import annotations

import numpy as np

from fesens.ad import numpy_wrapper as w
from fesens.ad.numpy_vjps import (
    _expand,
    _ndim,
    _power_base,
    _safe_log,
    _shape,
    _stack_matmul,
    cofactors,
)
from fesens.ad.registry import defjvp, defjvp_argnum, defjvp_linear
from fesens.ad.traced import Traced


def _like(t, ans):
    """The tangent ``t`` broadcast to the shape of ``ans`` (numbers: as it is)."""
    shape = _shape(ans)
    return t if _shape(t) == shape else np.broadcast_to(t, shape)


# ------------------------------------------------------------------ elementwise
defjvp(w.UNARY["negative"], lambda t, ans, x: -t)
defjvp(w.UNARY["exp"], lambda t, ans, x: t * ans)
defjvp(w.sign, lambda t, ans, x: 0.0 * t)
defjvp(w.add, lambda t, ans, x, y: _like(t, ans), lambda t, ans, x, y: _like(t, ans))
defjvp(w.subtract, lambda t, ans, x, y: _like(t, ans), lambda t, ans, x, y: _like(-t, ans))
defjvp(w.multiply, lambda t, ans, x, y: t * y, lambda t, ans, x, y: x * t)
defjvp(w.true_divide, lambda t, ans, x, y: t / y, lambda t, ans, x, y: -(t * ans) / y)


def _power_first(t, ans, x, y):
    """``t y x^(y−1)``; a traced exponent and a non-zero number ``x`` reuse ``ans``:
    ``t (y ans / x)`` (three operations on the tangent's trace instead of four)."""
    if isinstance(y, Traced):
        xv = w.getval(x)
        if (type(xv) is float or type(xv) is np.float64) and xv != 0:
            return t * (y * ans / x)
    return t * _power_base(x, y)


defjvp(w.power, _power_first, lambda t, ans, x, y: t * (ans * _safe_log(x)))
defjvp(w.BINARY["logaddexp"], lambda t, ans, x, y: t * np.exp(x - ans),
       lambda t, ans, x, y: t * np.exp(y - ans))
defjvp(w.BINARY["logaddexp2"], lambda t, ans, x, y: t * np.exp2(x - ans),
       lambda t, ans, x, y: t * np.exp2(y - ans))
defjvp(w.BINARY["hypot"], lambda t, ans, x, y: t * x / ans, lambda t, ans, x, y: t * y / ans)


def _clip_jvp(t, ans, x, lower, upper):
    inside = np.ones(np.shape(w.getval(x)), dtype=bool)
    xv = w.getval(x)
    if lower is not None:
        inside &= xv >= w.getval(lower)
    if upper is not None:
        inside &= xv <= w.getval(upper)
    return t * inside


defjvp(w.clip, _clip_jvp)
defjvp(w.where, None, lambda t, ans, c, x, y: np.where(c, t, 0.0),
       lambda t, ans, c, x, y: np.where(c, 0.0, t))

# ------------------------------------------------------------------ linear in an argument
for _prim in (w.sum, w.mean, w.reshape, w.transpose, w.broadcast_to, w.getitem):
    defjvp_linear(_prim, 0)
defjvp_linear(w.untake, 0)
defjvp_linear(w.matmul, 0, 1)
defjvp_linear(w.outer, 0, 1)
defjvp_linear(w.cross, 0, 1)
defjvp_argnum(w.einsum, lambda argnum, t, ans, subscripts, *operands: w.einsum(
    subscripts, *operands[:argnum - 1], t, *operands[argnum:]), first=1)


def _joined_jvp(prim):
    """Concatenation and stacking: the tangent in the argument's place, zeros elsewhere."""
    def maker(argnum, t, ans, axis, *arrays):
        parts = [t if k == argnum - 1 else np.zeros(np.shape(w.getval(a)))
                 for k, a in enumerate(arrays)]
        return prim(axis, *parts)

    return maker


defjvp_argnum(w.concatenate_arrays, _joined_jvp(w.concatenate_arrays), first=1)
defjvp_argnum(w.stack_arrays, _joined_jvp(w.stack_arrays), first=1)


# ------------------------------------------------------------------ reductions
def _extremum_jvp(t, ans, x, axis=None, keepdims=False):
    """Ties share the tangent equally, as they share the cotangent (``_extremum_vjp``)."""
    shape = np.shape(w.getval(x))
    hits = w.getval(x) == _expand(w.getval(ans), shape, axis, keepdims)
    count = np.sum(hits, axis=axis, keepdims=keepdims)
    return np.sum(t * hits, axis=axis, keepdims=keepdims) / count


defjvp(w.amax, _extremum_jvp)
defjvp(w.amin, _extremum_jvp)
# d‖x‖ = ⟨x, dx⟩ / ‖x‖ (2-norm of vectors, Frobenius norm)
defjvp(w.norm, lambda t, ans, x, ord=None, axis=None, keepdims=False: np.sum(
    x * t, axis=axis, keepdims=keepdims) / ans)

# ------------------------------------------------------------------ dense linear algebra
# Giles 2008, §2.2.4: d det A = det A · tr(A⁻¹ dA) = adj(A)ᵀ : dA (exact also where A is
# singular); d A⁻¹ = −A⁻¹ dA A⁻¹; x = A⁻¹ b: dx = A⁻¹ (db − dA x)
defjvp(w.det, lambda t, ans, a: np.sum(cofactors(a) * t, axis=(-2, -1)))
defjvp(w.inv, lambda t, ans, a: -_stack_matmul(_stack_matmul(ans, t), ans))


def _solve_matrix_jvp(t, x, a, b):
    vector = _ndim(x) < _ndim(a)  # b was read as a vector (see _dense_solve_vjp)
    columns = np.expand_dims(x, -1) if vector else x
    dx = -np.linalg.solve(a, t @ columns)
    return np.squeeze(dx, -1) if vector else dx


def _solve_rhs_jvp(t, x, a, b):
    vector = _ndim(x) < _ndim(a)
    dx = np.linalg.solve(a, np.expand_dims(t, -1) if vector else t)
    return np.squeeze(dx, -1) if vector else dx


defjvp(w.dense_solve, _solve_matrix_jvp, _solve_rhs_jvp)

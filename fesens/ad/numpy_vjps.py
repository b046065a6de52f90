"""VJP rules of the traced numpy subset: one ``defvjp`` per primitive.

The elementwise functions registered from their derivative (``_unary``, ``_binary``) get
their forward-mode (JVP) rule from the same derivative here; the other JVP rules are in
:mod:`fesens.ad.numpy_jvps`.

Rules are written with numpy functions that dispatch on boxes, so every rule is itself
differentiable (nested ``grad``). ``unbroadcast`` undoes numpy broadcasting: it sums the
cotangent over the axes along which an argument was broadcast.
"""

from __future__ import annotations

import math

import numpy as np

from fesens.ad import numpy_wrapper as w
from fesens.ad.registry import defjvp, defvjp, defvjp_argnum, defvjp_joint
from fesens.ad.traced import Traced


def unbroadcast(g, shape):
    """Sum ``g`` down to ``shape`` (the inverse of numpy broadcasting)."""
    g_shape = np.shape(g)
    if g_shape == tuple(shape):
        return g
    while len(np.shape(g)) > len(shape):
        g = w.sum(g, 0)
    for axis, size in enumerate(shape):
        if size == 1 and np.shape(g)[axis] != 1:
            g = w.sum(g, axis, True)
    return g


def _shape(v) -> tuple:
    """``np.shape(v)``, without its Python layer for arrays and numbers."""
    kind = type(v)
    if kind is np.ndarray or kind is np.float64:
        return v.shape
    if kind is float or kind is int:
        return ()
    if isinstance(v, Traced):  # np.shape would go through numpy's __array_function__
        return _shape(v.value)
    return np.shape(v)


def _ndim(v) -> int:
    """``np.ndim(v)``, without its Python layer for arrays and numbers."""
    return v.ndim if type(v) is np.ndarray else len(_shape(v))


_FLOAT_TYPES = frozenset((float, np.float64))


def _unbroadcast_like(g, x):
    """``unbroadcast(g, np.shape(x))``, with a shortcut for operands of the same shape."""
    kind = type(x)
    if kind is np.ndarray and type(g) is np.ndarray and g.shape == x.shape:
        return g  # the common case, checked without calls
    if (kind is float or kind is np.float64) and type(g) in _FLOAT_TYPES:
        return g  # numbers: nothing was broadcast
    x_shape = _shape(x)
    if _shape(g) == x_shape:
        return g
    return unbroadcast(g, x_shape)


_IN_PLACE_MIN = 1000
"""Arrays of fewer entries are not updated in place: allocating a small array (numpy
caches them) costs less than the ``out=`` keyword of a ufunc call."""


def _fresh_times(d, g):
    """``d * g``, computed in place in ``d`` when ``d`` is a temporary array the rule owns.

    Saves an allocation (and its page faults) per rule on large arrays. Only used when
    neither operand is traced and ``g`` does not broadcast ``d`` to a larger shape.
    """
    if type(d) is np.ndarray and d.size >= _IN_PLACE_MIN and not isinstance(g, Traced):
        g_shape = _shape(g)
        if g_shape == () or g_shape == d.shape:
            return np.multiply(d, g, out=d)
    return d * g


def _unary(name, derivative, fresh=False, uses_ans=False):
    """Register ``x̄ = g · f'(x)`` and the tangent ``ṫ = f'(x) t`` with
    ``derivative(ans, x)``.

    ``fresh`` says that ``derivative`` returns a new array the rule may overwrite;
    ``uses_ans`` that it reads ``ans``.
    """
    if fresh:
        maker = lambda ans, x: lambda g: _fresh_times(derivative(ans, x), g)  # noqa: E731
    else:
        maker = lambda ans, x: lambda g: g * derivative(ans, x)  # noqa: E731
    defvjp(w.UNARY[name], maker, uses_ans=uses_ans)
    if fresh:
        defjvp(w.UNARY[name], lambda t, ans, x: _fresh_times(derivative(ans, x), t))
    else:
        defjvp(w.UNARY[name], lambda t, ans, x: t * derivative(ans, x))


def _one_minus_square(ans, x):
    d = ans * ans
    if type(d) is np.ndarray and d.size >= _IN_PLACE_MIN:
        return np.subtract(1.0, d, out=d)
    return 1.0 - d


defvjp(w.UNARY["negative"], lambda ans, x: lambda g: -g, uses_ans=False)
defvjp(w.UNARY["exp"], lambda ans, x: lambda g: g * ans)
_unary("log", lambda ans, x: 1.0 / x, fresh=True)
_unary("sqrt", lambda ans, x: 0.5 / ans, fresh=True, uses_ans=True)
_unary("sin", lambda ans, x: np.cos(x), fresh=True)
_unary("cos", lambda ans, x: -np.sin(x), fresh=True)
_unary("tan", lambda ans, x: 1.0 + ans**2, fresh=True, uses_ans=True)
_unary("tanh", _one_minus_square, fresh=True, uses_ans=True)
_unary("sinh", lambda ans, x: np.cosh(x), fresh=True)
_unary("cosh", lambda ans, x: np.sinh(x), fresh=True)
_unary("log1p", lambda ans, x: 1.0 / (1.0 + x), fresh=True)
_unary("expm1", lambda ans, x: ans + 1.0, fresh=True, uses_ans=True)
_unary("arctan", lambda ans, x: 1.0 / (1.0 + x**2), fresh=True)
_unary("absolute", lambda ans, x: np.sign(x), fresh=True)
_unary("square", lambda ans, x: x + x, fresh=True)  # 2x, exactly, and cheaper than 2.0 * x
_unary("reciprocal", lambda ans, x: -(ans**2), fresh=True, uses_ans=True)
_unary("arcsin", lambda ans, x: 1.0 / np.sqrt(1.0 - x**2), fresh=True)
_unary("arccos", lambda ans, x: -1.0 / np.sqrt(1.0 - x**2), fresh=True)
_unary("arcsinh", lambda ans, x: 1.0 / np.sqrt(x**2 + 1.0), fresh=True)
_unary("arccosh", lambda ans, x: 1.0 / np.sqrt(x**2 - 1.0), fresh=True)
_unary("arctanh", lambda ans, x: 1.0 / (1.0 - x**2), fresh=True)
_unary("exp2", lambda ans, x: ans * math.log(2.0), fresh=True, uses_ans=True)
_unary("log2", lambda ans, x: 1.0 / (x * math.log(2.0)), fresh=True)
_unary("log10", lambda ans, x: 1.0 / (x * math.log(10.0)), fresh=True)
_unary("fabs", lambda ans, x: np.sign(x), fresh=True)
_unary("deg2rad", lambda ans, x: math.pi / 180.0)
_unary("rad2deg", lambda ans, x: 180.0 / math.pi)
defvjp(w.sign, lambda ans, x: lambda g: np.zeros_like(g), uses_ans=False)


def _binary(name, d_first, d_second):
    """Register the two partial derivatives (which never read ``ans``) of a broadcasting
    binary ufunc, for reverse and forward mode."""
    defjvp(w.BINARY[name], lambda t, ans, x, y: t * d_first(x, y),
           lambda t, ans, x, y: t * d_second(x, y))
    defvjp(
        w.BINARY[name],
        lambda ans, x, y: lambda g: _unbroadcast_like(g * d_first(x, y), x),
        lambda ans, x, y: lambda g: _unbroadcast_like(g * d_second(x, y), y),
        uses_ans=False,
    )


def _safe_log(x):
    """``log x`` where ``x > 0``, 0 elsewhere (∂(x^y)/∂y there is 0 or undefined)."""
    positive = w.getval(x) > 0
    if type(positive) is bool or type(positive) is np.bool_:  # a number: no where needed
        return np.log(x) if positive else 0.0
    return np.where(positive, np.log(np.where(positive, x, 1.0)), 0.0)


defvjp(w.add, lambda ans, x, y: lambda g: _unbroadcast_like(g, x),
       lambda ans, x, y: lambda g: _unbroadcast_like(g, y), uses_ans=False)
defvjp(w.subtract, lambda ans, x, y: lambda g: _unbroadcast_like(g, x),
       lambda ans, x, y: lambda g: _unbroadcast_like(-g, y), uses_ans=False)
defvjp(w.multiply, lambda ans, x, y: lambda g: _unbroadcast_like(g * y, x),
       lambda ans, x, y: lambda g: _unbroadcast_like(g * x, y), uses_ans=False)
defvjp(w.true_divide, lambda ans, x, y: lambda g: _unbroadcast_like(g / y, x), uses_ans=False)
defvjp(w.true_divide, lambda ans, x, y: lambda g: _unbroadcast_like(g * (-ans / y), y),
       argnums=(1,))


def _power_base(x, y):
    """``∂(x^y)/∂x = y x^(y−1)``; a new array (fast paths for constant 2, 1 and 0).

    A traced exponent keeps ``y − 1`` traced except where ``x = 0`` and ``y = 0`` (there
    ``0 · 0^(−1)`` would be NaN; the exponent 1 gives the limit 0), so the derivative of
    this expression in ``y`` (a mixed second derivative) is right at ``y = 0`` too.
    """
    if not isinstance(y, Traced) and _ndim(y) == 0:
        if y == 2:
            return 2.0 * x
        if y == 1:
            return (np.ones_like(x, dtype=float) if not isinstance(x, Traced)
                    else 0.0 * x + 1.0)
        if y == 0:  # x⁰ is constant, at x = 0 too
            return 0.0 * x
        return y * x ** (y - 1.0)
    xv, yv = w.getval(x), w.getval(y)
    if type(yv) in _FLOAT_TYPES and type(xv) in _FLOAT_TYPES:  # numbers: no where needed
        return y * x ** (1.0 if yv == 0 and xv == 0 else y - 1.0)
    return y * x ** np.where((yv == 0) & (xv == 0), 1.0, y - 1.0)


defvjp(w.power, lambda ans, x, y: lambda g: _unbroadcast_like(
    _fresh_times(_power_base(x, y), g), x), uses_ans=False)
defvjp(w.power, lambda ans, x, y: lambda g: _unbroadcast_like(g * (ans * _safe_log(x)), y),
       argnums=(1,))
_binary("maximum", lambda x, y: w.getval(x) >= w.getval(y),
        lambda x, y: w.getval(x) < w.getval(y))
_binary("minimum", lambda x, y: w.getval(x) <= w.getval(y),
        lambda x, y: w.getval(x) > w.getval(y))
_binary("arctan2", lambda x, y: y / (x**2 + y**2), lambda x, y: -x / (x**2 + y**2))
_binary("fmax", lambda x, y: w.getval(x) >= w.getval(y), lambda x, y: w.getval(x) < w.getval(y))
_binary("fmin", lambda x, y: w.getval(x) <= w.getval(y), lambda x, y: w.getval(x) > w.getval(y))
# log(eˣ + eʸ): ∂x = eˣ⁻ᵃⁿˢ (a softmax weight); base 2 alike; hypot: ∂x = x / ans
defvjp(w.BINARY["logaddexp"],
       lambda ans, x, y: lambda g: _unbroadcast_like(g * np.exp(x - ans), x),
       lambda ans, x, y: lambda g: _unbroadcast_like(g * np.exp(y - ans), y))
defvjp(w.BINARY["logaddexp2"],
       lambda ans, x, y: lambda g: _unbroadcast_like(g * np.exp2(x - ans), x),
       lambda ans, x, y: lambda g: _unbroadcast_like(g * np.exp2(y - ans), y))
# x mod y = x − ⌊x/y⌋ y: ∂x = 1, ∂y = −⌊x/y⌋ (away from the jumps)
_binary("remainder", lambda x, y: np.ones_like(w.getval(x) + w.getval(y)),
        lambda x, y: -np.floor_divide(w.getval(x), w.getval(y)))
defvjp(w.BINARY["hypot"], lambda ans, x, y: lambda g: _unbroadcast_like(g * x / ans, x),
       lambda ans, x, y: lambda g: _unbroadcast_like(g * y / ans, y))


# ------------------------------------------------------------------ reductions
def _expand(g, shape, axis, keepdims):
    """Put back the reduced axes of ``g`` and broadcast to ``shape``.

    A full reduction of an untraced cotangent is a read-only broadcast view for large
    arrays (no allocation) and a small filled array otherwise (cheaper to build).
    """
    if axis is None and not isinstance(g, Traced):
        if keepdims:
            g = np.reshape(g, ())  # (1, ..., 1) → scalar
        if math.prod(shape) > 4096:
            return np.broadcast_to(g, shape)
        filled = np.empty(shape)  # np.full's Python layer costs more than the fill here
        filled.fill(g)
        return filled
    if axis is not None and not keepdims:
        axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
        axes = tuple(a % len(shape) for a in axes)
        kept = [1 if i in axes else s for i, s in enumerate(shape)]
        g = np.reshape(g, kept)
    return np.broadcast_to(g, shape)


def _count(shape, axis):
    if axis is None:
        return int(np.prod(shape))
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return int(np.prod([shape[a] for a in axes]))


defvjp(w.sum, lambda ans, x, axis=None, keepdims=False:
       lambda g: _expand(g, _shape(x), axis, keepdims), uses_ans=False)
defvjp(w.mean, lambda ans, x, axis=None, keepdims=False:
       lambda g: _expand(g, np.shape(x), axis, keepdims) / _count(np.shape(x), axis),
       uses_ans=False)


def _extremum_vjp(ans, x, axis=None, keepdims=False):
    """Ties share the cotangent equally."""
    shape = np.shape(x)
    hits = w.getval(x) == _expand(w.getval(ans), shape, axis, keepdims)
    count = _expand(np.sum(hits, axis=axis, keepdims=keepdims), shape, axis, keepdims)
    return lambda g: _expand(g, shape, axis, keepdims) * (hits / count)


defvjp(w.amax, _extremum_vjp)
defvjp(w.amin, _extremum_vjp)


# ------------------------------------------------------------------ linear algebra
def _swap_last(a):
    """``a`` with its last two axes swapped (traced when ``a`` is a box)."""
    if w.is_sparse(a):
        return a.T
    nd = np.ndim(a)
    return np.transpose(a, (*range(nd - 2), nd - 1, nd - 2)) if nd >= 2 else a


def _matmul_first(ans, a, b):
    a_nd, b_nd = _ndim(a), _ndim(b)
    if a_nd == 1 and b_nd == 1:
        return lambda g: g * b
    if b_nd == 1:  # (..., n, m) @ (m,): ā = g[..., None] b
        return lambda g: unbroadcast(np.expand_dims(g, -1) * b, np.shape(a))
    if a_nd == 1 and b_nd == 2:  # (n,) @ (n, m): ā = b g (a matrix-vector product)
        return lambda g: b @ g
    if a_nd == 1:  # (n,) @ (..., n, m): ā = Σ_batch b g
        return lambda g: unbroadcast(np.squeeze(b @ np.expand_dims(g, -1), -1), np.shape(a))
    return lambda g: unbroadcast(g @ _swap_last(b), np.shape(a))


def _matmul_second(ans, a, b):
    a_nd, b_nd = _ndim(a), _ndim(b)
    if a_nd == 1 and b_nd == 1:
        return lambda g: g * a
    if a_nd == 1:  # (n,) @ (..., n, m): b̄ = a[:, None] g[..., None, :]
        return lambda g: unbroadcast(np.expand_dims(a, -1) * np.expand_dims(g, -2),
                                     np.shape(b))
    if a_nd == 2 and b_nd == 1:  # (n, m) @ (m,): b̄ = aᵀ g, as g @ a (one gemv, no copy)
        return lambda g: g @ a
    if b_nd == 1:  # (..., n, m) @ (m,): b̄ = Σ_batch aᵀ g
        return lambda g: unbroadcast(np.squeeze(_swap_last(a) @ np.expand_dims(g, -1), -1),
                                     np.shape(b))
    return lambda g: unbroadcast(_swap_last(a) @ g, np.shape(b))


defvjp(w.matmul, _matmul_first, _matmul_second, uses_ans=False)
defvjp(w.outer, lambda ans, a, b: lambda g: np.matmul(g, b),
       lambda ans, a, b: lambda g: np.matmul(a, g), uses_ans=False)


def _einsum_parts(subscripts, n_operands):
    if "." in subscripts:
        raise NotImplementedError("fesens traces einsum without ellipsis ('...') only")
    inputs, _, output = subscripts.replace(" ", "").partition("->")
    inputs = inputs.split(",")
    if not _:
        letters = "".join(inputs)
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(inputs) != n_operands:
        raise ValueError(f"einsum subscripts {subscripts!r} name {len(inputs)} operands, "
                         f"got {n_operands}")
    return inputs, output


def _einsum_vjp(argnum, ans, subscripts, *operands):
    """``Ā_i = einsum(out, others -> s_i)(ḡ, others)``; indices only in ``s_i`` broadcast."""
    inputs, output = _einsum_parts(subscripts, len(operands))
    i = argnum - 1
    target = inputs[i]
    if len(set(target)) != len(target):
        raise NotImplementedError(f"einsum VJP with a repeated index in {target!r}")
    others = [s for k, s in enumerate(inputs) if k != i]
    present = set(output).union(*others)
    kept = "".join(c for c in target if c in present)
    other_ops = [op for k, op in enumerate(operands) if k != i]
    shape = np.shape(operands[i])

    def vjp(g):
        reduced = w.einsum(",".join([output, *others]) + "->" + kept, g, *other_ops)
        full = [shape[k] if c not in kept else 1 for k, c in enumerate(target)]
        if kept != target:
            order = [kept.index(c) for c in target if c in kept]
            reduced = np.reshape(np.transpose(reduced, order),
                                 [s if c in kept else 1 for c, s in zip(target, shape,
                                                                         strict=True)])
            return np.broadcast_to(reduced, shape) * 1.0
        del full
        return reduced

    return vjp


defvjp_argnum(w.einsum, _einsum_vjp, first=1)


def _norm_vjp(ans, x, ord=None, axis=None, keepdims=False):  # noqa: A002
    shape = np.shape(x)
    return lambda g: x * _expand(g / ans, shape, axis, keepdims) if axis is not None or \
        keepdims else x * (g / ans)


defvjp(w.norm, _norm_vjp)


def cofactors(a):
    """The cofactor matrices ``adj(A)ᵀ = ∂ det A / ∂A`` ``(..., n, n)`` of a stack (traced
    when ``a`` is). 2x2 and 3x3 (finite-element Jacobians and deformation gradients) by
    their closed forms, exact also where ``A`` is singular (e.g. a zero displacement
    gradient, whose determinant still has the derivative ``adj(0)ᵀ``); larger ones as
    ``det(A) A⁻ᵀ``, which needs ``A`` regular."""
    n = np.shape(a)[-1]
    if n == 2:
        unit = np.eye(2)
        entries = ((a[..., 1, 1], 0, 0), (-a[..., 1, 0], 0, 1), (-a[..., 0, 1], 1, 0),
                   (a[..., 0, 0], 1, 1))
        return sum(np.expand_dims(x, (-2, -1)) * np.outer(unit[i], unit[j])
                   for x, i, j in entries)
    if n == 3:  # the rows of adj(A)ᵀ are the cross products of A's rows
        unit = np.eye(3)
        rows = (w.cross(a[..., 1, :], a[..., 2, :]), w.cross(a[..., 2, :], a[..., 0, :]),
                w.cross(a[..., 0, :], a[..., 1, :]))
        return sum(np.expand_dims(row, -2) * unit[i][:, None] for i, row in enumerate(rows))
    return np.expand_dims(w.det(a), (-2, -1)) * _swap_last(w.inv(a))


def _det_vjp(ans, a):
    """Jacobi's formula ``Ā = ḡ adj(A)ᵀ`` (``= ḡ det(A) A⁻ᵀ`` for a regular ``A``), per
    matrix of the stack; :func:`cofactors` keeps it exact where ``A`` is singular."""
    return lambda g: np.expand_dims(g, (-2, -1)) * cofactors(a)


def _stack_matmul(a, b):
    """``a @ b`` for stacks of matrices; 2x2 and 3x3 by broadcasting (numpy's matmul loops
    over tiny matrices one by one, ~10x slower for the stacks of finite-element Jacobians)."""
    if np.shape(a)[-1] > 3:
        return a @ b
    return np.sum(np.expand_dims(a, -1) * np.expand_dims(b, -3), axis=-2)


def _inv_vjp(ans, a):
    """``Ā = −A⁻ᵀ Ḡ A⁻ᵀ``, per matrix of the stack (``ans`` is ``A⁻¹``)."""
    inv_t = _swap_last(ans)
    return lambda g: -_stack_matmul(_stack_matmul(inv_t, g), inv_t)


defvjp(w.det, _det_vjp)
defvjp(w.inv, _inv_vjp)
# g·(a × b) = a·(b × g) = b·(g × a)
defvjp(w.cross, lambda ans, a, b: lambda g: _unbroadcast_like(np.cross(b, g), a),
       lambda ans, a, b: lambda g: _unbroadcast_like(np.cross(g, a), b), uses_ans=False)


def _dense_solve_vjp(argnums, x, a, b):
    """``b̄ = A⁻ᵀ ḡ`` (one adjoint solve serves both arguments) and ``Ā = −b̄ xᵀ``.

    ``b`` was read as a vector when ``x`` has fewer axes than ``A`` (numpy 2: ``b`` is 1-D;
    numpy 1: ``b.ndim == A.ndim - 1``); then ``ḡ`` is solved as one column per matrix.
    """
    vector = _ndim(x) < _ndim(a)

    def vjp(g):
        columns = np.expand_dims(g, -1) if vector else g  # (..., n, k)
        b_bar = np.linalg.solve(_swap_last(a), columns)
        x_columns = np.expand_dims(x, -1) if vector else x
        grads = {}
        if 0 in argnums:
            grads[0] = unbroadcast(-(b_bar @ _swap_last(x_columns)), np.shape(a))
        if 1 in argnums:
            grads[1] = unbroadcast(np.squeeze(b_bar, -1) if vector else b_bar, np.shape(b))
        return tuple(grads[i] for i in argnums)

    return vjp


defvjp_joint(w.dense_solve, _dense_solve_vjp)


# ------------------------------------------------------------------ shape and indexing
defvjp(w.reshape, lambda ans, x, shape: lambda g: np.reshape(g, np.shape(x)), uses_ans=False)
defvjp(w.transpose, lambda ans, x, axes=None: lambda g: np.transpose(
    g, None if axes is None else np.argsort(axes)), uses_ans=False)
defvjp(w.broadcast_to, lambda ans, x, shape: lambda g: unbroadcast(g, np.shape(x)),
       uses_ans=False)
defvjp(w.getitem, lambda ans, x, index: lambda g: w.untake(g, index, np.shape(x)),
       uses_ans=False)
defvjp(w.untake, lambda ans, g, index, shape, unique=False: lambda h: w.getitem(h, index),
       uses_ans=False)


def _split_vjp(kind):
    def maker(argnum, ans, axis, *arrays):
        if kind == "stack":
            return lambda g: w.getitem(g, (slice(None),) * (axis % np.ndim(ans)) + (argnum - 1,))
        sizes = np.cumsum([0] + [np.shape(a)[axis] for a in arrays])
        index = [slice(None)] * np.ndim(ans)
        index[axis] = slice(sizes[argnum - 1], sizes[argnum])
        return lambda g: w.getitem(g, tuple(index))

    return maker


defvjp_argnum(w.concatenate_arrays, _split_vjp("concatenate"), first=1)
defvjp_argnum(w.stack_arrays, _split_vjp("stack"), first=1)
defvjp(
    w.where,
    None,
    lambda ans, c, x, y: lambda g: unbroadcast(np.where(c, g, 0.0), np.shape(x)),
    lambda ans, c, x, y: lambda g: unbroadcast(np.where(c, 0.0, g), np.shape(y)),
    uses_ans=False,
)


def _clip_vjp(ans, x, lower, upper):
    inside = np.ones(np.shape(x), dtype=bool)
    xv = w.getval(x)
    if lower is not None:
        inside &= xv >= w.getval(lower)
    if upper is not None:
        inside &= xv <= w.getval(upper)
    return lambda g: g * inside


defvjp(w.clip, _clip_vjp, uses_ans=False)

"""Cumulative, ordering and array-building operations of the traced numpy subset.

Each primitive here comes with its VJP rule, derived by hand and written with traced numpy
(so forward mode and nested ``grad`` work through it). Functions that are exact
compositions of primitives (``tile``, ``repeat``, ``kron``, ``sort``, ``take_along_axis``,
``var``, ...) are routed to that composition: their rule is the chain of the primitives'
rules, with no code of their own to get wrong.
"""

from __future__ import annotations

import math

import numpy as np

from fesens.ad import numpy_wrapper as w
from fesens.ad.dispatch import register_function
from fesens.ad.numpy_vjps import _expand
from fesens.ad.registry import defjvp, defjvp_linear, defvjp
from fesens.ad.traced import Traced
from fesens.ad.tracer import primitive


def _axis_index(ndim: int, axis: int, index) -> tuple:
    """``(:, ..., index, ..., :)`` with ``index`` at position ``axis``."""
    return (slice(None),) * (axis % ndim) + (index,)


# ------------------------------------------------------------------ cumulative operations
@primitive
def cumsum(x, axis=None):
    return np.cumsum(x, axis=axis)


@primitive
def flip(x, axis=None):
    return np.flip(x, axis=axis)


def _reverse_cumsum(g, axis):
    """``Σ_{j ≥ i} g_j`` along ``axis``: the transpose of ``cumsum``."""
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


# cumsum is linear: x̄_i = Σ_{j ≥ i} ḡ_j (flattened first when ``axis`` is None)
defvjp(cumsum, lambda ans, x, axis=None: lambda g: np.reshape(
    _reverse_cumsum(g, 0 if axis is None else axis), np.shape(x)), uses_ans=False)
defvjp(flip, lambda ans, x, axis=None: lambda g: np.flip(g, axis), uses_ans=False)
defjvp_linear(cumsum, 0)
defjvp_linear(flip, 0)


@primitive
def cumprod(x, axis=None):
    """``np.cumprod``; its rule divides by ``x``, so entries must not be zero."""
    return np.cumprod(x, axis=axis)


def _cumprod_vjp(ans, x, axis=None):
    """``x̄_i = Σ_{j ≥ i} ḡ_j p_j / x_i`` with ``p = cumprod(x)`` (``x ≠ 0``)."""
    flat_axis = 0 if axis is None else axis
    x_flat = np.reshape(x, -1) if axis is None else x
    return lambda g: np.reshape(_reverse_cumsum(g * ans, flat_axis) / x_flat, np.shape(x))


defvjp(cumprod, _cumprod_vjp)


@primitive
def prod(x, axis=None, keepdims=False):
    """``np.prod``; its rule ``x̄ = ḡ · prod / x`` needs entries other than zero."""
    return np.prod(x, axis=axis, keepdims=keepdims)


defvjp(prod, lambda ans, x, axis=None, keepdims=False: lambda g: _expand(
    g * ans, np.shape(x), axis, keepdims) / x)


@primitive
def diff(x, axis=-1):
    """First differences ``x[1:] − x[:-1]`` along ``axis`` (``np.diff`` with ``n=1``)."""
    return np.diff(x, axis=axis)


def _diff_vjp(ans, x, axis=-1):
    """``x̄ = pad(ḡ, (1, 0)) − pad(ḡ, (0, 1))`` along ``axis`` (the transpose of ``diff``)."""
    ndim = np.ndim(x)

    def vjp(g):
        widths = [(0, 0)] * ndim
        before, after = list(widths), list(widths)
        before[axis % ndim], after[axis % ndim] = (1, 0), (0, 1)
        return np.pad(g, before) - np.pad(g, after)

    return vjp


defvjp(diff, _diff_vjp, uses_ans=False)
defjvp_linear(diff, 0)


def _diff(x, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    if prepend is not np._NoValue or append is not np._NoValue:
        end = list(np.shape(w.getval(x)))
        end[axis] = 1
        parts = [part if np.ndim(w.getval(part)) else np.broadcast_to(part, end)
                 for part in (prepend, x, append) if part is not np._NoValue]
        x = np.concatenate(parts, axis=axis)
    for _ in range(n):
        x = diff(x, axis)
    return x


# ------------------------------------------------------------------ padding and rolling
@primitive
def pad_constant(x, widths, value=0.0):
    """``np.pad(x, widths, constant_values=value)``; ``widths`` is ``((before, after), ...)``."""
    return np.pad(x, widths, constant_values=value)


# the pad's cotangent is the slice of ḡ that holds x
defvjp(pad_constant, lambda ans, x, widths, value=0.0: lambda g: g[tuple(
    slice(b, b + n) for (b, _), n in zip(widths, np.shape(x), strict=True))], uses_ans=False)
defjvp(pad_constant, lambda t, ans, x, widths, value=0.0: pad_constant(t, widths, 0.0))


def _pad(x, pad_width, mode="constant", **kwargs):
    if mode != "constant":
        raise NotImplementedError(f"fesens traces np.pad with mode='constant' only, not "
                                  f"mode={mode!r}")
    value = kwargs.pop("constant_values", 0.0)
    if kwargs or np.ndim(value) != 0:
        raise NotImplementedError("fesens traces np.pad with one scalar constant_values")
    widths = tuple(map(tuple, np.broadcast_to(pad_width, (np.ndim(w.getval(x)), 2)).tolist()))
    return pad_constant(x, widths, w.getval(value))


def _roll(x, shift, axis=None):
    """``np.roll`` as a concatenation of two slices (its rule: split the cotangent)."""
    if axis is None:
        return np.reshape(_roll(np.reshape(x, -1), shift, 0), np.shape(x))
    if np.ndim(shift) or np.ndim(axis):
        for s, a in zip(np.broadcast_to(shift, np.shape(axis) or (1,)),
                        np.broadcast_to(axis, np.shape(shift) or (1,)), strict=True):
            x = _roll(x, int(s), int(a))
        return x
    ndim = np.ndim(w.getval(x))
    cut = -int(shift) % np.shape(w.getval(x))[axis]
    return np.concatenate([w.getitem(x, _axis_index(ndim, axis, slice(cut, None))),
                           w.getitem(x, _axis_index(ndim, axis, slice(None, cut)))], axis=axis)


# ------------------------------------------------------------------ compositions
def _along_axis_index(indices, axis: int, shape: tuple) -> tuple:
    """The index tuple for which ``x[index] == np.take_along_axis(x, indices, axis)``."""
    ndim = len(shape)
    axis %= ndim
    index = []
    for d in range(ndim):
        if d == axis:
            index.append(np.asarray(indices))
        else:
            index.append(np.arange(shape[d]).reshape([-1 if k == d else 1 for k in range(ndim)]))
    return tuple(index)


def _take_along_axis(x, indices, axis=-1):
    """A gather (its rule scatters the cotangent back, adding repeated picks)."""
    shape = np.shape(w.getval(x))
    if axis is None:
        return w.getitem(np.reshape(x, -1), np.asarray(indices))
    return w.getitem(x, _along_axis_index(indices, axis, shape))


def _sort(x, axis=-1, kind=None, order=None):
    """A permutation of ``x``: ``x̄`` is ``ḡ`` put back where each entry came from."""
    if axis is None:
        x, axis = np.reshape(x, -1), 0
    perm = np.argsort(w.getval(x), axis=axis, kind="stable")
    return _take_along_axis(x, perm, axis)


def _tile(x, reps):
    """``np.tile`` as a broadcast then a reshape (its rule sums over the copies)."""
    shape = np.shape(w.getval(x))
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    ndim = max(len(shape), len(reps))
    shape = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(reps)) + reps
    spread = np.reshape(x, [n for s in shape for n in (1, s)])
    copies = np.broadcast_to(spread, [n for r, s in zip(reps, shape, strict=True)
                                      for n in (r, s)])
    return np.reshape(copies, [r * s for r, s in zip(reps, shape, strict=True)])


def _repeat(x, repeats, axis=None):
    """``np.repeat``: a broadcast for one count, a gather for a count per entry."""
    if axis is None:
        x, axis = np.reshape(x, -1), 0
    shape = np.shape(w.getval(x))
    axis %= len(shape)
    if np.ndim(repeats) == 0:
        spread = np.expand_dims(x, axis + 1)
        wide = (*shape[:axis + 1], int(repeats), *shape[axis + 1:])
        merged = (*shape[:axis], shape[axis] * int(repeats), *shape[axis + 1:])
        return np.reshape(np.broadcast_to(spread, wide), merged)
    source = np.repeat(np.arange(shape[axis]), repeats)
    return w.getitem(x, _axis_index(len(shape), axis, source))


def _kron(a, b):
    """``kron(a, b)[i·m + k, j·n + l] = a[i, j] b[k, l]``: a broadcast product, reshaped."""
    sa, sb = np.shape(w.getval(a)), np.shape(w.getval(b))
    ndim = max(len(sa), len(sb))
    sa, sb = (1,) * (ndim - len(sa)) + sa, (1,) * (ndim - len(sb)) + sb
    product = (np.reshape(a, [n for s in sa for n in (s, 1)])
               * np.reshape(b, [n for s in sb for n in (1, s)]))
    return np.reshape(product, [p * q for p, q in zip(sa, sb, strict=True)])


def _diagonal(a, offset=0, axis1=0, axis2=1):
    """``np.diagonal``: a gather of the entries ``a[..., i, i + offset, ...]``."""
    shape = np.shape(w.getval(a))
    axis1, axis2 = axis1 % len(shape), axis2 % len(shape)
    n = len(np.diagonal(np.empty(shape, dtype=bool), offset, axis1, axis2).T)
    rows = np.arange(n) + max(-offset, 0)
    a = np.moveaxis(a, (axis1, axis2), (-2, -1))
    return w.getitem(a, (Ellipsis, rows, rows + offset))


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """``Σ_i a[i, i + offset]``: a sum of the diagonal (``Ā = ḡ I``)."""
    return w.sum(_diagonal(a, offset, axis1, axis2), -1)


def _moveaxis(a, source, destination):
    ndim = np.ndim(w.getval(a))
    source = [int(s) % ndim for s in np.atleast_1d(source)]
    destination = [int(d) % ndim for d in np.atleast_1d(destination)]
    order = [n for n in range(ndim) if n not in source]
    for d, s in sorted(zip(destination, source, strict=True)):
        order.insert(d, s)
    return w.transpose(a, tuple(order))


def _swapaxes(a, axis1, axis2):
    order = list(range(np.ndim(w.getval(a))))
    order[axis1], order[axis2] = order[axis2], order[axis1]
    return w.transpose(a, tuple(order))


def _triangle(upper: bool):
    def part(m, k=0):
        shape = np.shape(w.getval(m))
        rows, cols = np.indices(shape[-2:])
        keep = cols - rows >= k if upper else cols - rows <= k
        return w.multiply(m, keep.astype(float))

    return part


def _variance(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """``Σ (x − mean)² / (N − ddof)``."""
    count = math.prod(np.shape(w.getval(x))) if axis is None else math.prod(
        np.shape(w.getval(x))[a] for a in np.atleast_1d(axis))
    centred = x - w.mean(x, axis, True)
    return w.sum(centred * centred, axis, keepdims) / (count - ddof)


def _std(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    return np.sqrt(_variance(x, axis, ddof=ddof, keepdims=keepdims))


def _tensordot(a, b, axes=2):
    """``np.tensordot`` written as ``einsum`` (its rules are einsum's)."""
    na, nb = np.ndim(w.getval(a)), np.ndim(w.getval(b))
    if np.ndim(axes) == 0:
        axes = (list(range(na - axes, na)), list(range(axes)))
    axes_a, axes_b = ([int(i) % n for i in np.atleast_1d(ax)] for ax, n in
                      zip(axes, (na, nb), strict=True))
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa = [next(letters) for _ in range(na)]
    sb = [next(letters) for _ in range(nb)]
    for i, j in zip(axes_a, axes_b, strict=True):
        sb[j] = sa[i]
    out = [c for k, c in enumerate(sa) if k not in axes_a]
    out += [c for k, c in enumerate(sb) if k not in axes_b]
    return w.einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


def _inner(a, b):
    if np.ndim(w.getval(a)) == 0 or np.ndim(w.getval(b)) == 0:
        return w.multiply(a, b)
    return _tensordot(a, b, ([-1], [-1]))


def _partition(x, kth, axis=-1, kind="introselect", order=None):
    """A permutation of ``x``, like :func:`_sort`."""
    if axis is None:
        x, axis = np.reshape(x, -1), 0
    return _take_along_axis(x, np.argpartition(w.getval(x), kth, axis=axis), axis)


def _split(x, indices_or_sections, axis=0):
    """``np.split``/``np.array_split``: slices of ``x`` (each one a ``getitem``)."""
    shape = np.shape(w.getval(x))
    axis %= len(shape)
    pieces = np.array_split(np.arange(shape[axis]), indices_or_sections)
    return [w.getitem(x, _axis_index(len(shape), axis, slice(p[0], p[-1] + 1) if len(p)
                                     else slice(0, 0))) for p in pieces]


def _checked_split(x, indices_or_sections, axis=0):
    if np.ndim(indices_or_sections) == 0 and \
            np.shape(w.getval(x))[axis] % int(indices_or_sections):
        raise ValueError("array split does not result in an equal division")
    return _split(x, indices_or_sections, axis)


def _rot90(m, k=1, axes=(0, 1)):
    """Quarter turns: flips and an axis swap (permutations, their own rules)."""
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    turned = _swapaxes(m, *axes)
    return flip(turned, axes[0]) if k == 1 else _swapaxes(flip(m, axes[0]), *axes)


def _diag(v, k=0):
    """``np.diag``: the diagonal of a matrix, or a matrix with ``v`` on its diagonal
    (``untake``: its rule reads the diagonal back)."""
    shape = np.shape(w.getval(v))
    if len(shape) == 2:
        return _diagonal(v, k)
    n = shape[0] + abs(k)
    rows = np.arange(shape[0]) + max(-k, 0)
    return w.untake(v, (rows, rows + k), (n, n), True)


def _at_least(ndim: int):
    def reshaped(*arrays):
        out = []
        for x in arrays:
            shape = np.shape(w.getval(x))
            if len(shape) < ndim:
                shape = {0: (1,) * ndim, 1: (1, *shape, 1)[:ndim] if ndim == 3 else (1, *shape),
                         2: (*shape, 1)}[len(shape)]
            out.append(np.reshape(x, shape))
        return out[0] if len(out) == 1 else tuple(out)

    return reshaped


def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Finite entries pass through (and their cotangent); the others become constants."""
    value = w.getval(x)
    return w.where(np.isfinite(value), x,
                   np.nan_to_num(value, nan=nan, posinf=posinf, neginf=neginf))


def _gradient(f, *varargs, axis=None, edge_order=1):
    """``np.gradient`` with uniform (scalar) spacings: slices combined linearly (central
    differences inside, one-sided ones of ``edge_order`` at the two ends)."""
    ndim = np.ndim(w.getval(f))
    axes = tuple(range(ndim)) if axis is None else tuple(np.atleast_1d(axis) % ndim)
    spacings = varargs if len(varargs) == len(axes) else tuple(varargs) * len(axes) or \
        (1.0,) * len(axes)
    if any(np.ndim(h) for h in spacings):
        raise NotImplementedError("fesens traces np.gradient with scalar spacings only")
    out = []
    for a, h in zip(axes, spacings, strict=True):
        def part(start, stop, a=a):
            return w.getitem(f, _axis_index(ndim, a, slice(start, stop)))

        inner = (part(2, None) - part(None, -2)) / (2.0 * h)
        if edge_order == 1:
            first = (part(1, 2) - part(0, 1)) / h
            last = (part(-1, None) - part(-2, -1)) / h
        else:
            first = (-1.5 * part(0, 1) + 2.0 * part(1, 2) - 0.5 * part(2, 3)) / h
            last = (0.5 * part(-3, -2) - 2.0 * part(-2, -1) + 1.5 * part(-1, None)) / h
        out.append(np.concatenate([first, inner, last], axis=a))
    return out[0] if len(out) == 1 else tuple(out)


def _flip(m, axis=None):
    return flip(m, axis)


def _cumsum(x, axis=None, dtype=None, out=None):
    return cumsum(x, axis)


def _cumprod(x, axis=None, dtype=None, out=None):
    return cumprod(x, axis)


def _prod(x, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    return prod(x, axis, keepdims)


for _func, _impl in {
    np.cumsum: _cumsum, np.cumprod: _cumprod, np.prod: _prod, np.diff: _diff, np.pad: _pad,
    np.roll: _roll, np.flip: _flip, np.fliplr: lambda m: flip(m, 1),
    np.flipud: lambda m: flip(m, 0), np.take_along_axis: _take_along_axis, np.sort: _sort,
    np.tile: _tile, np.repeat: _repeat, np.kron: _kron, np.diagonal: _diagonal,
    np.trace: _trace, np.moveaxis: _moveaxis, np.swapaxes: _swapaxes, np.triu: _triangle(True),
    np.tril: _triangle(False), np.var: _variance, np.std: _std, np.tensordot: _tensordot,
    np.inner: _inner, np.atleast_1d: _at_least(1), np.atleast_2d: _at_least(2),
    np.atleast_3d: _at_least(3), np.partition: _partition, np.split: _checked_split,
    np.array_split: _split, np.hsplit: lambda x, s: _checked_split(
        x, s, 1 if np.ndim(w.getval(x)) > 1 else 0),
    np.vsplit: lambda x, s: _checked_split(x, s, 0),
    np.dsplit: lambda x, s: _checked_split(x, s, 2), np.rot90: _rot90, np.diag: _diag,
    np.nan_to_num: _nan_to_num, np.gradient: _gradient,
}.items():
    register_function(_func, _impl)

# the array methods of these functions on traced values
Traced.cumsum, Traced.cumprod, Traced.prod = _cumsum, _cumprod, _prod
Traced.var, Traced.std = _variance, _std
Traced.diagonal = _diagonal
Traced.repeat = lambda self, repeats, axis=None: _repeat(self, repeats, axis)
Traced.swapaxes = _swapaxes
Traced.clip = lambda self, min=None, max=None: w.clip(self, min, max)  # noqa: A002

"""Derivatives of a pointwise function over arrays of points, vectorized over the points.

A *pointwise* function ``f(x, *params)`` maps points ``x`` ``(..., *event)`` (each point's
variable an array of shape ``event``: a vector ``(m,)`` or a matrix ``(d, d)``) to one
number per point ``(...)``; point ``p``'s value depends on ``x[p]`` only (and on the
parameters, broadcast to the points). A stored energy density at the quadrature points
is one: ``W(H, λ, μ)`` with ``H`` ``(n_cells, n_qp, d, d)``.

Because the points are independent, the gradient of ``Σ_p f(x_p)`` *is* the pointwise
gradient, so :func:`pointwise_grad` is one reverse pass of ``sum(f)``; it accepts traced
``x`` and parameters (the stress stays differentiable for an adjoint). The Hessian
(:func:`pointwise_hessian`) is reverse over reverse: the gradient is traced once and each
of its ``m = prod(event)`` columns is one more reverse sweep with the unit direction
``e_k`` at every point (``H e_k`` summed over no point: the points do not mix), all points
at once. No Python loop over points.

A function of a few scalar variables per point (a law's energy of its invariants,
``W(I₁, I₂, J)``) is differentiated in all of them at once by :func:`scalar_partials`
(first derivatives, traced) and :func:`scalar_partials_hessian` (first and second
derivatives, plain: one trace of the gradient, one reverse sweep per variable).

>>> import numpy as np
>>> from fesens.ad.pointwise import pointwise_grad, pointwise_hessian
>>> x = np.array([[1.0, 2.0], [3.0, 4.0]])          # two points in R²
>>> f = lambda x, a: a * x[..., 0] ** 2 * x[..., 1]  # a x₀² x₁ per point
>>> pointwise_grad(f, x, 2.0)
array([[ 8.,  2.],
       [48., 18.]])
>>> pointwise_hessian(f, x, 2.0)[1]
array([[16., 12.],
       [12.,  0.]])
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

import numpy as np

from fesens.ad.api import grad
from fesens.ad.hessian import value_grad_hvp
from fesens.ad.numpy_wrapper import getval

#: Bytes of one variable's array in a block of points of the Hessians below: the sweeps
#: then work in the CPU's caches instead of fresh pages (several times faster than all
#: points at once) and their temporaries are a block's, whatever the number of points.
_BLOCK_BYTES = 2**18


def point_blocks(points: tuple, floats_per_point: int, params: tuple,
                 block_bytes: int | None = None):
    """``(index, params)`` per block of the points ``points`` (shape ``(...)``) along their
    first axis, ``block_bytes`` (default :data:`_BLOCK_BYTES`) of ``floats_per_point``
    floats each; a parameter of at least ``len(points)`` axes whose first is the points'
    first is sliced with them, the others are whole. One block ``(slice(None),)`` (``()``
    for a single point) when the points fit in one."""
    size = _BLOCK_BYTES if block_bytes is None else block_bytes
    step = max(1, size // (8 * floats_per_point * prod(points[1:]))) if points else 1
    if not points or step >= points[0]:
        yield (slice(None),) * bool(points), params
        return
    for start in range(0, points[0], step):
        block = slice(start, start + step)
        yield (block,), tuple(p[block] if np.ndim(p) >= len(points)
                              and np.shape(p)[0] == points[0] else p for p in params)


def _summed(f: Callable, params: tuple) -> Callable:
    """``x ↦ Σ_p f(x, *params)_p``: its gradient is the pointwise gradient."""
    def total(x):
        return np.sum(f(x, *params))

    return total


def _summed_partials(f: Callable, params: tuple) -> Callable:
    """``(v₁…v_k) ↦ Σ_p f(v₁, …, v_k, *params)_p``: its gradient holds the partials."""
    def total(*variables):
        return np.sum(f(*variables, *params))

    return total


def pointwise_grad(f: Callable, x, *params):
    """``∂f/∂x`` at every point, shaped like ``x``, by one reverse pass of ``Σ f``.

    Parameters
    ----------
    f : callable
        ``f(x, *params) -> (...)``, written in the traced numpy subset; point ``p``'s value
        depends on ``x[p]`` only.
    x : numpy.ndarray or traced array
        Points ``(..., *event)``; a traced ``x`` (or traced ``params``) gives a traced
        gradient, differentiable again in both.
    *params
        Passed to ``f`` unchanged (numbers, arrays broadcastable to the points, traced).

    Returns
    -------
    numpy.ndarray or traced array
        ``(..., *event)``.
    """
    return grad(_summed(f, params))(x)


def pointwise_hessian(f: Callable, x, *params, event_ndim: int = 1) -> np.ndarray:
    """``∂²f/∂x²`` at every point ``(..., *event, *event)``, plain numpy.

    Reverse over reverse: one trace of the gradient of ``Σ f``, then ``m = prod(event)``
    reverse sweeps of it, sweep ``k`` with the unit direction ``e_k`` at every point; the
    sweep gives column ``k`` of every point's Hessian (``f`` twice differentiable, so the
    Hessian is symmetric and the column is also the row).

    Parameters
    ----------
    f : callable
        As for :func:`pointwise_grad`.
    x : array_like
        Points ``(..., *event)`` (plain values; a traced ``x`` is read through).
    *params
        Passed to ``f`` (plain or traced; read through: the result is not traced).
    event_ndim : int
        How many trailing axes of ``x`` form one point's variable: 1 for vectors
        ``(..., m)``, 2 for matrices ``(..., d, d)``.

    Returns
    -------
    numpy.ndarray
        ``A[..., I, J] = ∂²f/∂x_I ∂x_J`` with ``I`` and ``J`` multi-indices over ``event``.
    """
    x = np.asarray(getval(x), dtype=float)
    if not 1 <= event_ndim <= x.ndim:
        raise ValueError(f"event_ndim must lie in [1, x.ndim = {x.ndim}]; got {event_ndim}")
    plain = tuple(getval(p) for p in params)
    event = x.shape[x.ndim - event_ndim:]
    hessian = np.empty(x.shape + event)
    for index, block_params in point_blocks(x.shape[:x.ndim - event_ndim], prod(event), plain):
        x_block = x[index]
        _, _, hessp = value_grad_hvp(_summed(f, block_params))(x_block)
        direction = np.zeros(x_block.shape)
        for k in range(prod(event)):
            at = np.unravel_index(k, event)
            direction[(Ellipsis, *at)] = 1.0
            hessian[(*index, Ellipsis, *(slice(None),) * event_ndim, *at)] = hessp(direction)
            direction[(Ellipsis, *at)] = 0.0
    return hessian


def scalar_partials(f: Callable, variables: tuple, *params) -> tuple:
    """``∂f/∂v_a`` ``(...)`` at every point, one per variable, by one reverse pass.

    Parameters
    ----------
    f : callable
        ``f(v₁, …, v_k, *params) -> (...)``, each ``v_a`` ``(...)`` one number per point.
    variables : tuple
        The ``k`` variables ``(...)`` each (plain or traced: a traced variable or
        parameter gives traced partials, differentiable again).
    *params
        Passed to ``f`` after the variables.

    Returns
    -------
    tuple
        ``k`` arrays ``(...)``.
    """
    return grad(_summed_partials(f, params), tuple(range(len(variables))))(*variables)


def scalar_partials_hessian(f: Callable, variables: tuple, *params) -> tuple:
    """``∂f/∂v_a`` ``(k, ...)`` and ``∂²f/∂v_a∂v_b`` ``(k, k, ...)`` at every point, plain.

    Per block of points (:data:`_BLOCK_BYTES`), one trace of the gradient of ``Σ f`` and
    ``k`` reverse sweeps of it (sweep ``b`` with ``v_b``'s unit direction at every point
    gives column ``b``); ``k`` is small (a law's invariants: 3), so the sweeps cost a few
    passes over ``(...)`` arrays.

    Parameters
    ----------
    f, variables, *params
        As for :func:`scalar_partials` (read through: the results are not traced). A
        parameter of as many axes as the points or more, whose first axis is theirs, is
        taken block by block with them.

    Returns
    -------
    tuple
        ``(gradient (k, ...), hessian (k, k, ...))``: one array per variable (pair).
    """
    shape = np.broadcast_shapes(*(np.shape(getval(v)) for v in variables))
    plain = tuple(np.broadcast_to(np.asarray(getval(v), dtype=float), shape)
                  for v in variables)
    k = len(plain)
    gradient, hessian = np.empty((k, *shape)), np.empty((k, k, *shape))
    for index, block_params in point_blocks(shape, 1, tuple(getval(p) for p in params)):
        block = tuple(v[index] for v in plain)
        _, g, hessp = value_grad_hvp(_summed_partials(f, block_params), tuple(range(k)))(
            *block)
        zeros, ones = np.zeros(block[0].shape), np.ones(block[0].shape)
        for b in range(k):
            gradient[(b, *index)] = g[b]
            column = hessp(tuple(ones if a == b else zeros for a in range(k)))
            for a in range(k):
                hessian[(a, b, *index)] = column[a]
    return gradient, hessian

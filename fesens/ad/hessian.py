"""Hessian-vector products: ``hvp`` and ``value_grad_hvp``.

``H v`` is the VJP of the gradient (reverse over reverse): the gradient ``∇f(x)`` is traced
once, its pullback ``w ↦ Hᵀ w = H w`` (``H`` is symmetric) is kept, and each product is one
more reverse sweep. Through a sparse solve ``K(x) u = b(x)`` the first sweep costs the
forward and the adjoint solve; each product then costs the two solves of the second-order
adjoint (the tangent ``K⁻¹(ḃ − K̇ u)`` and the second adjoint, the VJPs of
:func:`~fesens.ad.sparse.solve` and of its adjoint solve), all with the one factorization
of ``K`` (:meth:`~fesens.solvers.LinearSolver.factorize_once`). A compliance ``bᵀu`` is
self-adjoint: one solve per product.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps

import numpy as np

from fesens.ad.api import _argnums_tuple, _pullback, _trace, _unbox_output, _value_and_grad
from fesens.ad.numpy_wrapper import getval
from fesens.ad.pytree import flatten


def value_grad_hvp(fun: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """``f ↦ (x ↦ (f(x), ∇f(x), hessp))`` with ``hessp(v) = ∇²f(x) v``.

    One trace of ``f`` and of its reverse sweep at ``x``; ``hessp`` may then be called for
    many directions (a Newton–Krylov step), each call one reverse sweep of that trace, no
    new factorization. The trace is kept while ``hessp`` is alive.

    Parameters
    ----------
    fun : callable
        Returns a scalar (0-d array or float); twice differentiable in the arguments
        ``argnums``.
    argnums : int or sequence of int
        Which positional arguments to differentiate (as in :func:`~fesens.ad.grad`). With a
        sequence the gradient, ``v`` and ``H v`` are tuples with one entry per argument.

    Returns
    -------
    callable
        ``(*args) -> (value, gradient, hessp)``; the gradient and ``hessp(v)`` are shaped
        like the differentiated argument(s), ``v`` too.
    """
    nums = _argnums_tuple(argnums)
    single = isinstance(argnums, int)
    value_and_gradient = _value_and_grad(fun, argnums, with_value=True)

    def at(*args):
        values = []

        def gradient(*inner):
            value, g = value_and_gradient(*inner)
            values.append(value)
            return g

        g, trace, leaf_nodes, rebuild = _trace(gradient, args, nums)
        pull = _pullback(g, trace, leaf_nodes, rebuild, release=False)
        g_value = _unbox_output(g, trace)
        shapes = [np.shape(getval(leaf)) for leaf in flatten(g_value)[0]]

        def hessp(v):
            v_leaves = flatten(v)[0]
            got = [np.shape(leaf) for leaf in v_leaves]
            if got != shapes:
                raise ValueError(f"hvp: the direction v must be shaped like the gradient, "
                                 f"{shapes}; got {got}")
            product = pull(v)
            return product[0] if single else product

        return _unbox_output(values[0], trace), g_value, hessp

    return wraps(fun)(at)


def hvp(fun: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """``f ↦ ((*args, v) ↦ ∇²f(args) v)``, the Hessian-vector product.

    The last positional argument is the direction ``v``, shaped like the differentiated
    argument (a tuple of them with a sequence ``argnums``); the others are ``fun``'s.
    Costs about two gradients at most; for several directions at one point use
    :func:`value_grad_hvp`, which traces once.

    Examples
    --------
    >>> import numpy as np
    >>> from fesens.ad import hvp
    >>> hvp(lambda x: np.sum(x**3))(np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    at = value_grad_hvp(fun, argnums)

    def product(*args):
        if not args:
            raise TypeError("hvp needs the function's arguments and the direction v")
        return at(*args[:-1])[2](args[-1])

    return wraps(fun)(product)

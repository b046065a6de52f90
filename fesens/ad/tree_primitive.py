"""Primitives of a named tree of inputs: a VJP rule that asks for its inputs by name.

A primitive of :mod:`~fesens.ad.tracer` takes its inputs as positional arguments, and its
joint rule reads which are traced as argument numbers. A run with many inputs (matrices,
loads, prescribed values, the objective's arguments) reads better with them named, as
pyadjoint's blocks name their dependencies and JAX's ``custom_vjp`` takes a pytree:
:func:`tree_primitive` makes ``raw(context, inputs)`` traceable in every leaf of the tree
``inputs`` (a ``NamedTuple``, dict, list or tuple of arrays, :mod:`~fesens.ad.pytree`),
and :func:`defvjp_tree` registers its rule with the same tree::

    maker(traced, ans, context, inputs) -> (g -> cotangents)

``traced`` is ``inputs`` with every leaf replaced by whether it is traced (``traced.mass``
is ``True`` or ``False``), and ``cotangents`` a tree like ``inputs`` whose leaves are the
cotangents of the traced leaves (anything, ``None`` included, at the others; ``None`` in
place of a whole subtree none of whose leaves is traced). ``context`` is never traced.
"""

from __future__ import annotations

from collections.abc import Callable

from fesens.ad.pytree import flatten, flatten_like
from fesens.ad.registry import defvjp_joint
from fesens.ad.tracer import primitive

#: Positional arguments of the flat primitive before the leaves: the context and the
#: tree's rebuild.
_LEADING = 2


def tree_primitive(raw: Callable, name: str) -> Callable:
    """Make ``raw(context, inputs)`` traceable in the leaves of the tree ``inputs``.

    The returned function calls ``raw`` with ``inputs`` rebuilt from plain leaves when
    none is traced; otherwise it records one node of the flat primitive
    ``flat(context, rebuild, *leaves)`` (its attribute ``flat``, whose rule
    :func:`defvjp_tree` registers).
    """

    def flat(context, rebuild, *leaves):
        return raw(context, rebuild(leaves))

    flat_primitive = primitive(flat, name)

    def wrapped(context, inputs):
        leaves, rebuild = flatten(inputs)
        return flat_primitive(context, rebuild, *leaves)

    wrapped.__name__ = wrapped.__qualname__ = name
    wrapped.__doc__ = raw.__doc__
    wrapped.flat = flat_primitive
    wrapped.raw = raw
    return wrapped


def defvjp_tree(fun: Callable, maker: Callable) -> None:
    """Register the VJP of a :func:`tree_primitive`:
    ``maker(traced, ans, context, inputs) -> (g -> cotangents)`` (see the module)."""

    def joint(argnums, ans, context, rebuild, *leaves):
        positions = [argnum - _LEADING for argnum in argnums]
        wanted = set(positions)
        traced = rebuild([i in wanted for i in range(len(leaves))])
        pullback = maker(traced, ans, context, rebuild(leaves))

        def vjp(g):
            cotangents = flatten_like(pullback(g), traced)
            return tuple(cotangents[i] for i in positions)

        return vjp

    defvjp_joint(fun.flat, joint)

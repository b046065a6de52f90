"""VJP rules, kept apart from the tape (one registration per primitive).

A rule *maker* has the signature ``maker(ans, *args, **kwargs) -> (g -> cotangent)`` for
one argument. For primitives whose argument cotangents share work (a sparse solve: one
adjoint solve serves the matrix and the right-hand side) a joint maker
``maker(argnums, ans, *args, **kwargs) -> (g -> tuple of cotangents)`` is registered
with :func:`defvjp_joint`.
"""

from __future__ import annotations

from collections.abc import Callable


class NotDifferentiableError(TypeError):
    """A traced value reached an operation that has no VJP rule."""


_PER_ARGUMENT: dict[Callable, dict[int, Callable]] = {}
_JOINT: dict[Callable, Callable] = {}
_NO_RULES: dict[int, Callable] = {}


def defvjp(fun: Callable, *makers: Callable | None, argnums=None) -> None:
    """Register one maker per argument of the primitive ``fun``.

    ``makers[i]`` is for argument ``argnums[i]`` (default ``0, 1, ...``); ``None`` marks an
    argument that is not differentiable.
    """
    argnums = range(len(makers)) if argnums is None else argnums
    rules = _PER_ARGUMENT.setdefault(fun, {})
    for argnum, maker in zip(argnums, makers, strict=True):
        if maker is not None:
            rules[argnum] = maker


def defvjp_joint(fun: Callable, maker: Callable) -> None:
    """Register a maker that returns the cotangents of several arguments at once."""
    _JOINT[fun] = maker


def _missing(fun: Callable, argnum: int, rules: dict) -> NotDifferentiableError:
    return NotDifferentiableError(
        f"no VJP rule for argument {argnum} of primitive '{fun.__name__}'"
        + ("" if rules else " (it has no rules at all)")
    )


def node_cotangents(node, g) -> tuple:
    """Cotangents of a node's traced arguments (``node.argnums``) for output cotangent ``g``."""
    fun, argnums = node.fun, node.argnums
    joint = _JOINT.get(fun)
    if joint is not None:
        return joint(argnums, node.ans, *node.args, **node.kwargs)(g)
    rules = _PER_ARGUMENT.get(fun, _NO_RULES)
    out = []
    for argnum in argnums:
        if argnum not in rules:
            raise _missing(fun, argnum, rules)
        out.append(rules[argnum](node.ans, *node.args, **node.kwargs)(g))
    return out


def has_rule(fun: Callable, argnum: int) -> bool:
    """True when argument ``argnum`` of ``fun`` can be differentiated."""
    return fun in _JOINT or argnum in _PER_ARGUMENT.get(fun, {})

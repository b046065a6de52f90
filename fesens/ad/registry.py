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


def node_vjp(fun: Callable, argnums: tuple[int, ...]) -> Callable:
    """The function ``(g, ans, args, kwargs) -> cotangents for argnums`` of a node."""
    if fun in _JOINT:
        joint = _JOINT[fun]
        return lambda g, ans, args, kwargs: joint(argnums, ans, *args, **kwargs)(g)
    rules = _PER_ARGUMENT.get(fun, {})
    for argnum in argnums:
        if argnum not in rules:
            raise NotDifferentiableError(
                f"no VJP rule for argument {argnum} of primitive '{fun.__name__}'"
                + ("" if rules else " (it has no rules at all)")
            )
    if len(argnums) == 1:
        maker = rules[argnums[0]]
        return lambda g, ans, args, kwargs: (maker(ans, *args, **kwargs)(g),)
    return lambda g, ans, args, kwargs: tuple(
        rules[i](ans, *args, **kwargs)(g) for i in argnums
    )


def has_rule(fun: Callable, argnum: int) -> bool:
    """True when argument ``argnum`` of ``fun`` can be differentiated."""
    return fun in _JOINT or argnum in _PER_ARGUMENT.get(fun, {})

"""VJP rules, kept apart from the tape (one registration per primitive).

A rule *maker* has the signature ``maker(ans, *args, **kwargs) -> (g -> cotangent)`` for
one argument. For primitives whose argument cotangents share work (a sparse solve: one
adjoint solve serves the matrix and the right-hand side) a joint maker
``maker(argnums, ans, *args, **kwargs) -> (g -> tuple of cotangents)`` is registered
with :func:`defvjp_joint`. Variadic primitives (``einsum(subscripts, *operands)``,
``concatenate``) register one maker for every argument from ``first`` on with
:func:`defvjp_argnum`: ``maker(argnum, ans, *args, **kwargs) -> (g -> cotangent)``.

A maker registered with ``uses_ans=False`` promises not to read ``ans``: a node whose
traced arguments all have such rules does not keep its output alive (the output
of ``x**2`` is freed once the next operation consumed it), and those makers are called
with ``ans=None``.

Forward mode (:mod:`fesens.ad.forward`) reads the JVP rules registered with :func:`defjvp`:
``maker(t, ans, *args, **kwargs)`` returns the tangent contribution ``∂f/∂x_i · t`` of
argument ``i`` (its tangent ``t``); a primitive without one makes forward mode give way to
reverse mode. :func:`defjvp_linear` registers the rule of a function linear in an argument
(``f(..., t, ...)``: sums, reshapes, indexing, products).
"""

from __future__ import annotations

from collections.abc import Callable


class NotDifferentiableError(TypeError):
    """A traced value reached an operation that has no VJP rule."""


_PER_ARGUMENT: dict[Callable, dict[int, Callable]] = {}
_JOINT: dict[Callable, Callable] = {}
_ARGNUM: dict[Callable, tuple[int, Callable]] = {}  # fun -> (first argnum, maker)
_ANS_FREE: dict[Callable, set[int]] = {}  # argnums whose makers never read ``ans``
_NO_RULES: dict[int, Callable] = {}
#: ``fun -> {argnum: JVP maker}`` (:func:`defjvp`), read by forward mode on every call.
JVP_RULES: dict[Callable, dict[int, Callable]] = {}
_JVP_ARGNUM: dict[Callable, tuple[int, Callable]] = {}  # fun -> (first argnum, maker)
#: ``fun -> ans_flags(fun)``, read by the tape on every traced call; emptied by every
#: registration.
ANS_FLAGS: dict[Callable, tuple[bool, bool, bool]] = {}


def defvjp(fun: Callable, *makers: Callable | None, argnums=None, uses_ans: bool = True
           ) -> None:
    """Register one maker per argument of the primitive ``fun``.

    ``makers[i]`` is for argument ``argnums[i]`` (default ``0, 1, ...``); ``None`` marks an
    argument that is not differentiable. ``uses_ans=False`` declares that none of these
    makers reads its ``ans`` argument (it then receives ``None``).
    """
    argnums = range(len(makers)) if argnums is None else argnums
    ANS_FLAGS.clear()
    rules = _PER_ARGUMENT.setdefault(fun, {})
    for argnum, maker in zip(argnums, makers, strict=True):
        if maker is not None:
            rules[argnum] = maker
            if uses_ans:
                _ANS_FREE.get(fun, set()).discard(argnum)
            else:
                _ANS_FREE.setdefault(fun, set()).add(argnum)


def defvjp_joint(fun: Callable, maker: Callable) -> None:
    """Register a maker that returns the cotangents of several arguments at once."""
    ANS_FLAGS.clear()
    _JOINT[fun] = maker


def defvjp_argnum(fun: Callable, maker: Callable, *, first: int = 0) -> None:
    """Register one maker for every argument of ``fun`` from position ``first`` on.

    ``maker(argnum, ans, *args, **kwargs)`` returns the VJP ``g -> cotangent`` of argument
    ``argnum``; it suits variadic primitives (``einsum(subscripts, *operands)``: ``first=1``)
    and rules that differ per argument only by an index. Per-argument rules registered with
    :func:`defvjp` for the same primitive take precedence.
    """
    ANS_FLAGS.clear()
    _ARGNUM[fun] = (first, maker)


def defjvp(fun: Callable, *makers: Callable | None, argnums=None) -> None:
    """Register one JVP maker per argument of the primitive ``fun``.

    ``makers[i]`` is for argument ``argnums[i]`` (default ``0, 1, ...``):
    ``maker(t, ans, *args, **kwargs)`` returns argument ``i``'s contribution to the output's
    tangent, broadcastable to ``ans``; ``None`` marks an argument without a rule.
    """
    argnums = range(len(makers)) if argnums is None else argnums
    rules = JVP_RULES.setdefault(fun, {})
    for argnum, maker in zip(argnums, makers, strict=True):
        if maker is not None:
            rules[argnum] = maker


def defjvp_argnum(fun: Callable, maker: Callable, *, first: int = 0) -> None:
    """Register one JVP maker for every argument of ``fun`` from position ``first`` on:
    ``maker(argnum, t, ans, *args, **kwargs)`` (variadic primitives, as
    :func:`defvjp_argnum`)."""
    _JVP_ARGNUM[fun] = (first, maker)


def defjvp_linear(fun: Callable, *argnums: int) -> None:
    """Register the JVP of a function linear in each of ``argnums`` separately (the others
    held fixed): the tangent is ``fun`` applied with the argument replaced by its tangent."""

    def replacing(argnum):
        def maker(t, ans, *args, **kwargs):
            return fun(*args[:argnum], t, *args[argnum + 1:], **kwargs)
        return maker

    defjvp(fun, *map(replacing, argnums), argnums=argnums)


def jvp_maker(fun: Callable, argnum: int) -> Callable | None:
    """The JVP maker of argument ``argnum`` of ``fun`` (``maker(t, ans, *args, **kwargs)``),
    or ``None`` when it has none."""
    rules = JVP_RULES.get(fun)
    if rules is not None:
        maker = rules.get(argnum)
        if maker is not None:
            return maker
    by_argnum = _JVP_ARGNUM.get(fun)
    if by_argnum is None or argnum < by_argnum[0]:
        return None
    maker = by_argnum[1]
    return lambda t, ans, *args, **kwargs: maker(argnum, t, ans, *args, **kwargs)


def needs_ans(fun: Callable, argnums: tuple[int, ...]) -> bool:
    """True unless every rule for the traced arguments ``argnums`` of ``fun`` ignores ``ans``."""
    free = _ANS_FREE.get(fun)
    return free is None or fun in _JOINT or not free.issuperset(argnums)


def ans_flags(fun: Callable) -> tuple[bool, bool, bool]:
    """:func:`needs_ans` of ``fun`` for the traced arguments ``(0,)``, ``(1,)`` and
    ``(0, 1)``, kept in :data:`ANS_FLAGS` (where the tape looks first)."""
    flags = ANS_FLAGS[fun] = (needs_ans(fun, (0,)), needs_ans(fun, (1,)),
                              needs_ans(fun, (0, 1)))
    return flags


def _missing(fun: Callable, argnum: int, rules: dict) -> NotDifferentiableError:
    return NotDifferentiableError(
        f"no VJP rule for argument {argnum} of primitive '{fun.__name__}'"
        + ("" if rules else " (it has no rules at all)")
    )


def node_cotangents(node, g) -> list:
    """Cotangents of a node's traced arguments (``node.argnums``) for output cotangent ``g``."""
    fun, ans, args, kwargs = node.fun, node.ans, node.args, node.kwargs
    joint = _JOINT.get(fun)
    if joint is not None:
        return joint(node.argnums, ans, *args, **kwargs)(g)
    rules = _PER_ARGUMENT.get(fun)
    if rules is None:
        by_argnum = _ARGNUM.get(fun)
        if by_argnum is not None:
            return _argnum_cotangents(node, g, *by_argnum)
        rules = _NO_RULES
    argnums = node.argnums
    if len(argnums) == 1 and argnums[0] in rules:  # one traced argument: no loop, no list
        maker = rules[argnums[0]]
        return [(maker(ans, *args, **kwargs) if kwargs else maker(ans, *args))(g)]
    out = []
    for argnum in argnums:
        if argnum not in rules:
            raise _missing(fun, argnum, rules)
        # most primitives take no keyword arguments: skip the ``**`` of an empty dict
        vjp = rules[argnum](ans, *args, **kwargs) if kwargs else rules[argnum](ans, *args)
        out.append(vjp(g))
    return out


def _argnum_cotangents(node, g, first: int, maker: Callable) -> list:
    out = []
    for argnum in node.argnums:
        if argnum < first:
            raise _missing(node.fun, argnum, {first: maker})
        out.append(maker(argnum, node.ans, *node.args, **node.kwargs)(g))
    return out

"""A fixed linear map as a primitive: an object with ``apply(x)`` and ``apply_transpose(y)``.

``y = A x`` (:func:`apply_linear`) and ``x = Aᵀ y`` (:func:`apply_linear_transpose`) for a map
``A`` that does not depend on what is differentiated (a filter's stencil, a distributed
matrix). Each is the other's VJP, and both are their own JVP (``A ẋ``, ``Aᵀ ẏ``), so forward
mode and nested derivatives (``hvp``, ``grad`` of a ``grad``) are traced through them too.
"""

from __future__ import annotations

from fesens.ad.registry import defjvp_linear, defvjp
from fesens.ad.tracer import primitive


@primitive
def apply_linear(operator, x):
    """``A x`` with ``A = operator`` (its ``apply``); VJP ``Aᵀ ȳ``, JVP ``A ẋ``."""
    return operator.apply(x)


@primitive
def apply_linear_transpose(operator, y):
    """``Aᵀ y`` with ``A = operator`` (its ``apply_transpose``; the VJP of
    :func:`apply_linear`, whose own VJP is :func:`apply_linear`)."""
    return operator.apply_transpose(y)


defvjp(apply_linear, None,
       lambda ans, operator, x: lambda g: apply_linear_transpose(operator, g), uses_ans=False)
defvjp(apply_linear_transpose, None,
       lambda ans, operator, y: lambda g: apply_linear(operator, g), uses_ans=False)
defjvp_linear(apply_linear, 1)
defjvp_linear(apply_linear_transpose, 1)

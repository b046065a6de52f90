"""Route numpy ufuncs and functions applied to boxes to fesens primitives."""

from __future__ import annotations

from collections.abc import Callable

from fesens.ad.registry import NotDifferentiableError

UFUNCS: dict = {}
FUNCTIONS: dict = {}


def register_ufunc(ufunc, prim: Callable) -> None:
    """Let ``ufunc(box, ...)`` call the primitive ``prim``."""
    UFUNCS[ufunc] = prim


def register_function(func: Callable, prim: Callable) -> None:
    """Let ``func(box, ...)`` (a numpy function) call ``prim`` with the same signature."""
    FUNCTIONS[func] = prim


def _supported(table) -> str:
    return ", ".join(sorted(getattr(f, "__name__", str(f)) for f in table))


def dispatch_ufunc(ufunc, method: str, inputs, kwargs):
    prim = UFUNCS.get(ufunc)
    if method != "__call__" or prim is None or kwargs.get("out") is not None:
        what = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        if kwargs.get("out") is not None:
            what += " with out= (in-place writes cannot be traced)"
        raise NotDifferentiableError(
            f"{what} is not differentiable in fesens; supported ufuncs: {_supported(UFUNCS)}"
        )
    return prim(*inputs, **kwargs)


def dispatch_function(func, args, kwargs):
    prim = FUNCTIONS.get(func)
    if prim is None:
        raise NotDifferentiableError(
            f"numpy.{func.__name__} is not differentiable in fesens; supported functions: "
            f"{_supported(FUNCTIONS)}"
        )
    return prim(*args, **kwargs)

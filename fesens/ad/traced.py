"""What every traced value shares: the array facts, printing and numpy's dispatch.

Two kinds of traced values exist: the :class:`~fesens.ad.tracer.Box` of reverse mode, which
records a node of the tape, and the :class:`~fesens.ad.forward.Dual` of forward mode, which
carries its tangent along. Both behave like the array (or number) they wrap: numpy ufuncs,
functions and operators applied to them call the fesens primitive registered for that
numpy function (the tables of :mod:`fesens.ad.dispatch`, the operators set by
:mod:`fesens.ad.numpy_wrapper` on this class), and the primitive decides what to record.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.dispatch import FUNCTIONS, UFUNCS, dispatch_function, dispatch_ufunc


class Traced:
    """Base of :class:`~fesens.ad.tracer.Box` and :class:`~fesens.ad.forward.Dual`: a
    ``value`` of one ``trace`` (an id ordered by creation: a larger id is a newer trace)."""

    __slots__ = ()
    __array_priority__ = 100.0
    #: ``prim -> rule(x, trace)`` of a ufunc applied to one traced value whose value is of
    #: its own kind (a dual of a dual: :mod:`fesens.ad.second_order`), tried first; the
    #: rule returns the result or ``None``.
    nested_unary_rules: dict = {}  # read only here

    # array facts (never traced)
    shape = property(lambda self: np.shape(self.value))
    ndim = property(lambda self: np.ndim(self.value))
    size = property(lambda self: np.size(self.value))
    dtype = property(lambda self: np.result_type(self.value))

    def __len__(self) -> int:
        return len(self.value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r}, trace={self.trace})"

    def __format__(self, spec: str) -> str:
        # printing a traced value (progress lines inside an objective) formats its value
        return format(self.value, spec)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __float__(self) -> float:
        raise TypeError(
            "float() of a traced value would cut the gradient; keep it as an array, or use "
            "fesens.ad.stop_gradient(x) if the constant is what you want"
        )

    def __hash__(self) -> int:
        return id(self)

    def __array__(self, dtype=None, copy=None):
        # Seen from numpy a traced value is an opaque object, not a sequence: scipy.sparse's
        # ``A @ box`` then returns NotImplemented and Python calls ``box.__rmatmul__``.
        opaque = np.empty((), dtype=object)
        opaque[()] = self
        return opaque

    # numpy dispatch: the tables are filled by fesens.ad.numpy_wrapper
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        prim = UFUNCS.get(ufunc)
        if prim is None or kwargs or method != "__call__":
            return dispatch_ufunc(ufunc, method, inputs, kwargs)
        if len(inputs) == 1 and type(self.value) is type(self):
            rule = self.nested_unary_rules.get(prim)
            if rule is not None:
                out = rule(self, self.trace)
                if out is not None:
                    return out
        return prim(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        prim = FUNCTIONS.get(func)
        if prim is None:
            return dispatch_function(func, args, kwargs)
        return prim(*args, **kwargs)

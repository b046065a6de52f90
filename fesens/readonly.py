"""Frozen arrays: values a cache can hold by reference instead of copying.

Caches that must notice new values (the solver's sparsity pattern, the factorization of
a matrix) normally keep a copy and compare every new array with it, at O(size) cost per
use. An array is *frozen* when it and the array owning its memory are read-only: then
nothing can write to that memory (short of re-enabling the owner's ``writeable`` flag on
purpose), so a cache may keep a reference, and an array viewing the same memory, while
that reference keeps it alive, holds the same values.

fesens freezes the arrays it creates for reuse (cached patterns, assembled values); arrays
from users are never frozen behind their back: they are copied.
"""

from __future__ import annotations

import numpy as np

# Arrays that differ usually differ everywhere (new values of a matrix): compare this many
# leading entries first, so that most comparisons end without a full pass.
_HEAD = 8


def freeze(array: np.ndarray) -> np.ndarray:
    """Make ``array`` (which must own its memory) read-only, and return it."""
    array.flags.writeable = False
    return array


def is_frozen(array: np.ndarray) -> bool:
    """Whether ``array`` and the array owning its memory are both read-only."""
    owner = array if array.base is None else array.base
    return (isinstance(owner, np.ndarray) and owner.flags.owndata
            and not owner.flags.writeable and not array.flags.writeable)


def snapshot(array: np.ndarray) -> np.ndarray:
    """The values of ``array`` as of now: ``array`` itself if frozen, else a frozen copy."""
    return array if is_frozen(array) else freeze(array.copy())


def unchanged(kept: np.ndarray, array: np.ndarray) -> bool:
    """Whether ``array`` holds the values of ``kept``, a :func:`snapshot`.

    O(1) when ``array`` is frozen and views the memory of ``kept`` (which keeps that memory
    alive, so it cannot have been reused); otherwise the values are compared, leading
    entries first.
    """
    if _same_memory(kept, array) and is_frozen(array):
        return True
    return (kept.shape == array.shape
            and np.array_equal(kept[:_HEAD], array[:_HEAD])
            and np.array_equal(kept, array))


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` are the same view of the same memory."""
    if a is b:
        return True
    return (a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])

"""Which array library an array belongs to, so that kernels follow their inputs.

The matrix-free kernels (:mod:`fesens.solvers.lattice_operator`) are written against the
numpy API and take the module of their input arrays from :func:`namespace`: numpy for numpy
arrays, the array's own namespace (``x.__array_namespace__()``, the Python array API
standard's protocol) otherwise, and the ``cupy`` module for CuPy arrays, which lack it.
Such a kernel then allocates its results in the inputs' library (on the inputs' device)
and never copies them to the host.
No array library besides numpy is imported here.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import numpy as np


def namespace(*arrays: Any) -> ModuleType:
    """The array module of ``arrays``: numpy for numpy arrays and Python scalars, else the
    arrays' ``__array_namespace__()``.

    Raises
    ------
    TypeError
        If the arrays belong to different libraries (naming them).
    """
    found = {id(xp): xp for xp in (_namespace_of(a) for a in arrays)}
    if len(found) > 1:
        names = ", ".join(sorted(getattr(xp, "__name__", repr(xp)) for xp in found.values()))
        raise TypeError(f"arrays of different libraries in one operation: {names}; move them "
                        "to one library (and device) first")
    return next(iter(found.values()), np)


def _namespace_of(array: Any) -> ModuleType:
    if type(array) is np.ndarray:  # the common case, without a call
        return np
    protocol = getattr(array, "__array_namespace__", None)
    if protocol is not None:
        return protocol()
    # CuPy's arrays (to v14 at least) lack the protocol; CuPy's main module mirrors numpy 2's
    # and is already imported wherever one of its arrays exists
    library = type(array).__module__.partition(".")[0]
    return sys.modules["cupy"] if library == "cupy" else np

"""Physics-independent finite-element machinery: reference elements, quadrature, geometry,
kernels, the cached-pattern assembler, loads, the model base class and its solution.

The physics themselves (elasticity, heat conduction, ...) live in :mod:`fesens.physics`.
"""

from fesens.fem.assembler import Assembler, BlockPattern
from fesens.fem.buckling import Buckling, buckling
from fesens.fem.dofs import DofMap
from fesens.fem.model import LinearModel
from fesens.fem.parameters import Parameter
from fesens.fem.partitioned import split_model
from fesens.fem.solution import Solution

__all__ = [
    "Assembler",
    "BlockPattern",
    "Buckling",
    "DofMap",
    "LinearModel",
    "Parameter",
    "Solution",
    "buckling",
    "split_model",
]

_MOVED = {"Elasticity": "fesens.physics", "HeatConduction": "fesens.physics"}


def __getattr__(name: str):
    if name in _MOVED:  # an ImportError, so that `from fesens.fem import ...` shows it
        raise ImportError(f"fesens.fem.{name} moved to {_MOVED[name]}: use "
                          f"'from {_MOVED[name]} import {name}'")
    raise AttributeError(f"module 'fesens.fem' has no attribute {name!r}")

"""Physics-independent finite-element machinery: reference elements, quadrature, geometry,
kernels, the cached-pattern assembler, loads, the model base class and its solution.

The physics themselves (elasticity, heat conduction, ...) live in :mod:`fesens.physics`.
"""

from fesens.fem.analysis import (
    Analysis,
    Buckling,
    BucklingAnalysis,
    ModalAnalysis,
    Modes,
    StaticAnalysis,
)
from fesens.fem.analysis.buckling import buckling
from fesens.fem.assembly.assembler import Assembler, BlockGather
from fesens.fem.assembly.dofs import DofMap
from fesens.fem.model.linear import LinearModel
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.fem.model.nonlinear_solution import NonlinearSolution
from fesens.fem.model.parameters import Parameter
from fesens.fem.model.solution import Solution
from fesens.fem.partition.model_part import split_model

__all__ = [
    "Analysis",
    "Assembler",
    "BlockGather",
    "Buckling",
    "BucklingAnalysis",
    "DofMap",
    "LinearModel",
    "ModalAnalysis",
    "Modes",
    "NonlinearModel",
    "NonlinearSolution",
    "Parameter",
    "Solution",
    "StaticAnalysis",
    "buckling",
    "split_model",
]

_MOVED = {"Elasticity": "fesens.physics", "HeatConduction": "fesens.physics"}


def __getattr__(name: str):
    if name in _MOVED:  # an ImportError, so that `from fesens.fem import ...` shows it
        raise ImportError(f"fesens.fem.{name} moved to {_MOVED[name]}: use "
                          f"'from {_MOVED[name]} import {name}'")
    raise AttributeError(f"module 'fesens.fem' has no attribute {name!r}")

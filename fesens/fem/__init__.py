"""Finite-element physics: reference elements, kernels, assembly, boundary conditions."""

from fesens.fem.assembler import Assembler, BlockPattern
from fesens.fem.conduction import HeatConduction
from fesens.fem.dofs import DofMap
from fesens.fem.elasticity import Elasticity
from fesens.fem.model import LinearModel
from fesens.fem.solution import Solution

__all__ = [
    "Assembler",
    "BlockPattern",
    "DofMap",
    "Elasticity",
    "HeatConduction",
    "LinearModel",
    "Solution",
]

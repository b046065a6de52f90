"""Density-based design optimization: filters, interpolation, optimizers, the loop."""

from fesens.opt.filters import (
    DensityFilter,
    HelmholtzFilter,
    NoFilter,
    SensitivityFilter,
    make_filter,
)
from fesens.opt.interpolation import RAMP, SIMP, Continuation, Heaviside, NoProjection
from fesens.opt.loop import Result, load_checkpoint, optimize
from fesens.opt.oc import OC
from fesens.opt.problem import Constraint, DesignProblem, Evaluation

__all__ = [
    "OC",
    "RAMP",
    "SIMP",
    "Constraint",
    "Continuation",
    "DensityFilter",
    "DesignProblem",
    "Evaluation",
    "Heaviside",
    "HelmholtzFilter",
    "NoFilter",
    "NoProjection",
    "Result",
    "SensitivityFilter",
    "load_checkpoint",
    "make_filter",
    "optimize",
]

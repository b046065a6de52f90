"""Density-based design optimization: filters, interpolation, optimizers, the loop."""

from fesens.opt.augmented_lagrangian import AugmentedLagrangianProblem, LocalStress
from fesens.opt.checkpoint import (
    CheckpointError,
    load_checkpoint,
    load_evaluated_design,
    load_fingerprint,
)
from fesens.opt.design_maps import CellGroups, Extrusion, MirrorSymmetry
from fesens.opt.filters import (
    FILTERS,
    DensityFilter,
    Filter,
    HelmholtzFilter,
    NoFilter,
    SensitivityFilter,
    make_filter,
)
from fesens.opt.frequency import DuOlhoff, FrequencyProblem, Pedersen
from fesens.opt.interpolation import (
    INTERPOLATIONS,
    PROJECTIONS,
    RAMP,
    SIMP,
    Continuation,
    Heaviside,
    NoProjection,
    OrderedSIMP,
)
from fesens.opt.loop import Result, optimize
from fesens.opt.minmax import MinMaxProblem, case_state
from fesens.opt.mma import MMA
from fesens.opt.normalized import NormalizedConstraint
from fesens.opt.oc import OC
from fesens.opt.optimizers import (
    OPTIMIZERS,
    capable_optimizers,
    make_optimizer,
    optimizer_options,
)
from fesens.opt.overhang import OverhangFilter
from fesens.opt.problem import Constraint, DesignProblem, Evaluation
from fesens.opt.rank_filters import DistributedDensityFilter, DistributedSensitivityFilter
from fesens.opt.rank_problem import DistributedDesignProblem
from fesens.opt.robust import RobustProblem, RobustProjection
from fesens.opt.tolerance import AdaptiveTolerance

__all__ = [
    "DistributedDensityFilter",
    "DistributedDesignProblem",
    "DistributedSensitivityFilter",
    "FILTERS",
    "INTERPOLATIONS",
    "MMA",
    "OC",
    "OPTIMIZERS",
    "PROJECTIONS",
    "RAMP",
    "SIMP",
    "AdaptiveTolerance",
    "AugmentedLagrangianProblem",
    "CellGroups",
    "CheckpointError",
    "Constraint",
    "Continuation",
    "DensityFilter",
    "DesignProblem",
    "DuOlhoff",
    "Evaluation",
    "Extrusion",
    "Filter",
    "FrequencyProblem",
    "Heaviside",
    "HelmholtzFilter",
    "LocalStress",
    "MinMaxProblem",
    "MirrorSymmetry",
    "NormalizedConstraint",
    "NoFilter",
    "NoProjection",
    "OrderedSIMP",
    "OverhangFilter",
    "Pedersen",
    "Result",
    "RobustProblem",
    "RobustProjection",
    "SensitivityFilter",
    "case_state",
    "load_checkpoint",
    "load_fingerprint",
    "load_evaluated_design",
    "make_filter",
    "make_optimizer",
    "optimize",
    "optimizer_options",
    "capable_optimizers",
]

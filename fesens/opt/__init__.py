"""Density-based design optimization: filters, interpolation, optimizers, the loop."""

from fesens.opt.augmented_lagrangian import AugmentedLagrangianProblem, LocalStress
from fesens.opt.checkpoint import (
    CheckpointError,
    load_checkpoint,
    load_evaluated_design,
    load_fingerprint,
)
from fesens.opt.continuation import Continuation
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
from fesens.opt.interpolation import INTERPOLATIONS, RAMP, SIMP, Interpolation, OrderedSIMP
from fesens.opt.loop import Result, optimize
from fesens.opt.minmax import MinMaxProblem, case_state
from fesens.opt.mma import MMA
from fesens.opt.normalized import NormalizedConstraint
from fesens.opt.oc import OC
from fesens.opt.optimizer_base import Optimizer
from fesens.opt.optimizers import (
    OPTIMIZERS,
    capable_optimizers,
    make_optimizer,
    optimizer_options,
)
from fesens.opt.overhang import OverhangFilter
from fesens.opt.problem import DesignProblem
from fesens.opt.projection import PROJECTIONS, Heaviside, NoProjection, Projection
from fesens.opt.rank_filters import DistributedDensityFilter, DistributedSensitivityFilter
from fesens.opt.rank_problem import DistributedDesignProblem
from fesens.opt.responses import Constraint, Evaluation
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
    "Interpolation",
    "NoProjection",
    "Optimizer",
    "Projection",
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

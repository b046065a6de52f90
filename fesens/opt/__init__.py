"""Density-based design optimization: filters, interpolation, optimizers, the loop."""

import inspect

from fesens.opt.filters import (
    DensityFilter,
    HelmholtzFilter,
    NoFilter,
    SensitivityFilter,
    make_filter,
)
from fesens.opt.interpolation import RAMP, SIMP, Continuation, Heaviside, NoProjection
from fesens.opt.loop import Result, load_checkpoint, optimize
from fesens.opt.mma import MMA
from fesens.opt.oc import OC
from fesens.opt.problem import Constraint, DesignProblem, Evaluation

#: Optimizers by name (``make_optimizer``); each has ``step``, ``state`` and ``load_state``.
OPTIMIZERS = {"oc": OC, "mma": MMA}


def make_optimizer(name: str, **options) -> OC | MMA:
    """An optimizer by name (``oc`` or ``mma``) with its constructor's keyword options.

    Examples
    --------
    >>> make_optimizer("mma", move=0.2).move
    0.2
    """
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}")
    cls = OPTIMIZERS[name]
    accepted = set(inspect.signature(cls).parameters)
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} for the {name} optimizer; "
                         f"accepted: {', '.join(sorted(accepted))}")
    return cls(**options)


__all__ = [
    "MMA",
    "OC",
    "OPTIMIZERS",
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
    "make_optimizer",
    "optimize",
]

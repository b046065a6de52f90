"""``[constraints.stress]``: local stress constraints, one per designed cell, by the
augmented Lagrangian method (:mod:`fesens.opt.augmented_lagrangian`): the table's keys, its
checks, the combinations it refuses, and the :class:`~fesens.opt.augmented_lagrangian.
LocalStress` it builds.

The local constraints are not among ``[[constraints.extra]]`` (each of which is one
constraint of the optimizer with its own adjoint solve): the method folds them into the
objective, so the design problem becomes an
:class:`~fesens.opt.augmented_lagrangian.AugmentedLagrangianProblem`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from fesens.config.checks import (
    POSITIVE,
    REQUIRED,
    ConfigError,
    Key,
    check_table,
    choice,
    integer,
    join,
    number,
    show,
    string,
)
from fesens.config.frequency import eigen_kind
from fesens.config.time_sections import STATIC, analysis_type
from fesens.objectives.local_stress import RELAXATIONS
from fesens.opt.augmented_lagrangian import LocalStress
from fesens.opt.optimizers import OPTIMIZERS, capable_optimizers

if TYPE_CHECKING:
    from fesens.config.resolved import Config

#: The methods of ``[constraints.stress] method``.
METHODS = ("augmented_lagrangian",)
PATH = "constraints.stress"
#: ``q`` of the qp relaxation without ``stress_exponent`` (Le et al. 2010).
DEFAULT_EXPONENT = 0.5

STRESS_KEYS = {
    "limit": Key(POSITIVE, REQUIRED, "the von Mises stress limit σ_lim"),
    "method": Key(choice(*METHODS), METHODS[0],
                  "augmented_lagrangian: one constraint per designed cell in an augmented "
                  "Lagrangian (Giraldo-Londoño & Paulino 2021)"),
    "relaxation": Key(choice(*RELAXATIONS), RELAXATIONS[0],
                      "polynomial: ρ x (x² + 1), x = σ/σ_lim − 1 (PolyStress); qp: "
                      "ρ^q σ/σ_lim − 1 (Le et al. 2010)"),
    "stress_exponent": Key(number(0.0, 1.0, low_open=True), None,
                           f"relaxation = \"qp\": q of ρ^q (default {DEFAULT_EXPONENT})"),
    "penalty": Key(POSITIVE, 10.0, "the augmented Lagrangian's first penalty μ⁰"),
    "penalty_factor": Key(number(1.0), 1.1, "μ grows by this factor every iteration (≥ 1)"),
    "penalty_max": Key(POSITIVE, 10000.0, "the largest penalty μ_max (≥ penalty)"),
    "name": Key(string(), "stress", "the prefix of the history columns"),
    "iterations_per_step": Key(integer(1), 1, "optimizer iterations per augmented "
                                              "Lagrangian step (≥ 1)"),
    "max_steps": Key(integer(1), None, "the number of augmented Lagrangian steps, after "
                                       "which λ and μ stay (default: no limit)"),
}


def check_stress(path: str, raw: Any) -> dict:
    """The checked ``[constraints.stress]`` table (``path``), with its defaults.

    Raises
    ------
    ConfigError
        An unknown key or value, ``stress_exponent`` without the qp relaxation, a
        ``penalty_max`` below ``penalty``.
    """
    table = check_table(path, raw, STRESS_KEYS)
    if "stress_exponent" in table and table["relaxation"] != "qp":
        raise ConfigError(f"{join(path, 'stress_exponent')} = "
                          f"{show(table['stress_exponent'])} is read by relaxation = \"qp\" "
                          f"only (relaxation = {show(table['relaxation'])} bounds the stress "
                          "of the solid material): drop it or give relaxation = \"qp\"")
    if table["penalty_max"] < table["penalty"]:
        raise ConfigError(f"{join(path, 'penalty_max')} = {show(table['penalty_max'])} is below "
                          f"penalty = {show(table['penalty'])}: give penalty_max >= penalty")
    return table


def check_stress_physics(config: Config) -> None:
    """Refuse ``[constraints.stress]`` for a physics without stresses.

    Raises
    ------
    ConfigError
    """
    if not hasattr(config.physics_class.solution_class, "von_mises_squared"):
        raise ConfigError(f"{PATH}: the {config.physics} physics has no stresses; drop "
                          f"[{PATH}] (physics.type = \"elasticity\" has them)")


def check_stress_combinations(data: dict, physics: str) -> None:
    """Refuse what the augmented Lagrangian cannot run with: an optimizer that handles the
    volume constraint only (OC: its update needs an objective that falls as material is
    added, which the constraints' term is not), several load cases, the robust
    formulation, an eigen objective (of ``physics``), a time-dependent analysis, buckling
    constraints.

    Raises
    ------
    ConfigError
        Naming the key and the fix.
    """
    if not data.get("constraints", {}).get("stress"):
        return
    optimizer = data.get("optimizer")
    if optimizer is not None and not OPTIMIZERS[optimizer["type"]].general_constraints:
        capable = capable_optimizers("general_constraints")
        raise ConfigError(f"optimizer.type = {show(optimizer['type'])} is not offered with "
                          f"[{PATH}]: the augmented Lagrangian's objective has sensitivities "
                          f"of both signs; use optimizer.type = {capable}")
    refused = [
        (bool(data.get("load_cases")), "load_cases", "the stresses are of one load case; "
                                                     "drop the [[load_cases]] tables"),
        (bool(data.get("projection", {}).get("robust")), "projection.robust",
         "drop projection.robust"),
        (eigen_kind(data, physics) is not None, "objective.type",
         "local stress constraints are of a static solve; give a static objective, e.g. "
         "\"volume\""),
        (analysis_type(data) != STATIC, "analysis.type",
         "local stress constraints are of a static solve; give analysis.type = \"static\""),
        (any("modes" in item for item in data.get("constraints", {}).get("extra", [])),
         "constraints.extra", "a buckling constraint is not offered with them; drop it"),
    ]
    for refuse, key, fix in refused:
        if refuse:
            raise ConfigError(f"{key}: not offered with [{PATH}]: {fix}")


def local_stress(spec: dict, n_cells: int, passive_solid, passive_void) -> LocalStress:
    """The :class:`~fesens.opt.augmented_lagrangian.LocalStress` of a checked table: every
    designed cell constrained (the passive ones are not: their density is fixed)."""
    constrained = np.ones(n_cells, dtype=bool)
    for passive in (passive_solid, passive_void):
        if passive is not None:
            constrained[np.asarray(passive, dtype=np.intp)] = False
    return LocalStress(spec["limit"], np.flatnonzero(constrained), spec["relaxation"],
                       spec.get("stress_exponent", DEFAULT_EXPONENT), spec["penalty"],
                       spec["penalty_factor"], spec["penalty_max"], spec["name"],
                       spec["iterations_per_step"], spec.get("max_steps"))

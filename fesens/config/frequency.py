"""Frequency design from a config file: an eigen ``[objective]``, maximized by
``fesens optimize`` as a :class:`~fesens.opt.frequency.FrequencyProblem`.

The eigen objective types of a physics are its fragment's ``eigen_responses``, each mapped
to a kind of the eigen analysis (``eigenvalue``, ``frequency``, ``eigenvalue_sum``,
``eigenvalue_ks``; their records, keys and builders, in :mod:`fesens.config.objectives`). The
problem minimizes the negative of the objective (``−λ``, ``−KS``); MMA divides it by the
absolute value of its first evaluation (``objective_scale``), so the run does not depend on
the units of ``E`` and of the mass density (the physics' ``[material]`` key ``mass``,
e.g. ``density``). The mass and stiffness interpolation is ``[penalization]``
``du-olhoff`` or ``pedersen``. A frequency design has no loads, load cases, extra
constraints or adaptive solver tolerance, and needs MMA: :func:`check_frequency` refuses
them, naming the key and the fix. ``history.csv`` gets the eigenvalues and frequencies of
each iteration (``eigenvalue_<i>``, ``frequency_<i>``, ``i`` from 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from fesens.config.checks import ConfigError, show
from fesens.config.objectives import objective_kind
from fesens.opt import INTERPOLATIONS, OPTIMIZERS, capable_optimizers
from fesens.opt.frequency import FrequencyProblem
from fesens.physics import PHYSICS

if TYPE_CHECKING:
    from fesens.config.resolved import Config
    from fesens.fem import LinearModel

#: The mass density of the solid when the ``[material]`` table does not give it.
DEFAULT_DENSITY = 1.0


def eigen_kind(data: dict, physics: str) -> str | None:
    """The eigen objective (a kind of the eigen analysis) of a checked config's
    ``[objective]``, or None for a static objective (or none)."""
    objective = data.get("objective")
    if not objective:
        return None
    return PHYSICS.get(physics).config.eigen_responses.get(objective["type"])


def wants_modes(raw: dict) -> bool:
    """Whether an unchecked config's ``[objective]`` names an eigen objective of any
    physics (such a config needs no ``[[loads]]``)."""
    objective = raw.get("objective")
    return isinstance(objective, dict) and any(
        objective.get("type") in cls.config.eigen_responses for cls in PHYSICS)


def _needed_modes(objective: dict) -> tuple[int, int]:
    """``(least, default)`` number of computed modes for the objective: the ones it uses,
    and one more to see whether the last of them is repeated."""
    if "count" in objective:  # the lowest `count`: they check the gap above the last
        return objective["count"] + 1, objective["count"] + 1
    return objective["index"] + 1, objective["index"] + 2


def check_frequency(data: dict, physics: str, *, optimize: bool) -> None:
    """Refuse what a frequency design cannot do, and fill in ``objective.modes``.

    Raises
    ------
    ConfigError
        An eigen objective outside ``fesens optimize``, with ``[[loads]]``,
        ``[[load_cases]]``, a physics section, ``[[constraints.extra]]``, an optimizer
        without general constraints (OC), an interpolation without a mass, an adaptive or
        matrix-free solver, or too few ``modes``; each message names the key and the fix.
    """
    kind = eigen_kind(data, physics)
    if kind is None:
        return
    objective = data["objective"]
    what = f"objective.type = {show(objective['type'])} (a frequency design)"
    if not optimize:
        raise ConfigError(f"{what} is run by `fesens optimize` only; `fesens solve` and "
                          "`sensitivity` solve a static problem: give a static [objective] "
                          "(e.g. type = \"compliance\") and [[loads]]")
    for key, fix in (("loads", "drop the [[loads]] tables"),
                     ("load_cases", "drop the [[load_cases]] tables"),
                     *((name, f"drop the [{name}] section")
                       for name in _physics_sections(physics))):
        if data.get(key):
            raise ConfigError(f"{key}: {what} has no loads; {fix}")
    if data["constraints"]["extra"]:
        raise ConfigError(f"constraints.extra: {what} takes the volume constraint only; drop "
                          "the [[constraints.extra]] tables")
    _check_optimizer_and_penalization(data, what)
    _check_solver(data["solver"], what)
    least, default = _needed_modes(objective)
    objective.setdefault("modes", default)
    if objective["modes"] < least:
        uses = (f"the lowest {objective['count']} eigenvalues" if "count" in objective
                else f"eigenvalue {objective['index']}")
        raise ConfigError(f"objective.modes = {objective['modes']} is too few: {kind} of "
                          f"{uses} needs at least {least}" + (
                              " (one more, to see whether the last is repeated)"
                              if "count" in objective else "") + f"; give modes = {default}")


def _physics_sections(physics: str) -> list[str]:
    return [section.name for section in PHYSICS.get(physics).config.sections]


def _check_optimizer_and_penalization(data: dict, what: str) -> None:
    optimizer = data["optimizer"]["type"]
    if not OPTIMIZERS[optimizer].general_constraints:
        capable = capable_optimizers("general_constraints")
        raise ConfigError(f"optimizer.type = {show(optimizer)} cannot maximize an eigenvalue "
                          f"({what}: its update assumes an objective that falls as material "
                          f"is added, like compliance); use optimizer.type = {capable}")
    penalization = data["penalization"]["type"]
    if not INTERPOLATIONS[penalization].interpolates_mass:
        with_mass = " or ".join(f'"{name}"' for name, cls in INTERPOLATIONS.items()
                                if cls.interpolates_mass)
        raise ConfigError(f"penalization.type = {show(penalization)} has no mass "
                          f"interpolation, which {what} needs (with a linear mass, void "
                          "regions carry spurious low-frequency modes); use "
                          f"penalization.type = {with_mass}")


def _check_solver(solver: dict, what: str) -> None:
    if solver.get("adaptive_rtol"):
        raise ConfigError(f"solver.adaptive_rtol: {what} has no iterative solves to loosen "
                          "(its eigen solve factorizes or uses LOBPCG); drop adaptive_rtol")
    if solver["options"].get("matrix_free"):
        raise ConfigError(f"solver.options.matrix_free = true: the eigen solve of {what} needs "
                          "an assembled stiffness; drop matrix_free (or give solver.backend "
                          "= \"cholmod\")")


def modal_reports(n_modes: int) -> dict[str, Callable]:
    """The history columns of a frequency design: ``eigenvalue_<i>`` and ``frequency_<i>``
    of each computed mode, ``i`` from 1."""
    reports = {}
    for i in range(n_modes):
        reports[f"eigenvalue_{i + 1}"] = lambda modes, rho, i=i: modes.values[i]
        reports[f"frequency_{i + 1}"] = lambda modes, rho, i=i: np.sqrt(
            max(float(modes.values[i]), 0.0)) / (2 * np.pi)
    return reports


def build_frequency_problem(config: Config, model: LinearModel,
                            design: dict) -> FrequencyProblem:
    """The :class:`~fesens.opt.frequency.FrequencyProblem` of a config with an eigen
    objective; ``design``: the keywords every design problem takes (volume fraction,
    interpolation, filter, projection, passive cells, solver).

    Raises
    ------
    ConfigError
        More modes than free dofs, or a solver that the eigen solve cannot use.
    """
    data = config.data
    objective = data["objective"]
    free = model.free_dofs.size
    if objective["modes"] > free:
        raise ConfigError(f"objective.modes = {objective['modes']} is more than the model's "
                          f"{free} free dofs: give modes <= {free} (or a finer mesh)")
    density = data["material"].get(config.physics_class.config.mass, DEFAULT_DENSITY)
    problem = FrequencyProblem(
        model, objective_kind(eigen_kind(data, config.physics)).build(objective, config),
        n_modes=objective["modes"], density=density, lumped=objective["lumped"],
        reports=modal_reports(objective["modes"]), **design)
    if problem.differentiable.solver.matrix_free:
        raise ConfigError(f"solver.backend = {show(data['solver']['backend'])} chose a "
                          "matrix-free solver, but the eigen solve needs an assembled "
                          "stiffness: give solver.backend = \"cholmod\" (or \"cg\")")
    return problem

"""The sections of a nonlinear analysis: ``[newton]`` (the options of the load-stepped
Newton solve) and ``[load_path]`` (what the load–displacement curve monitors), the
``[objective]`` keys of several load levels (``load_factors``, ``weights``: a weighted sum
of the objective at the states of one solve at those load factors), and the checks that a
nonlinear physics' model can be solved as the config asks.

Whether an analysis is nonlinear is decided by the physics alone: its class is a
:class:`~fesens.fem.model.nonlinear.NonlinearModel` (``physics.type = "nonlinear_heat"``);
nothing here names a physics. A linear physics refuses both sections.
"""

from __future__ import annotations

from dataclasses import fields as dataclass_fields
from dataclasses import replace

import numpy as np

from fesens.config import selections
from fesens.config.checks import (
    ConfigError,
    Key,
    boolean,
    check_table,
    choice,
    component,
    integer,
    join,
    number,
    numbers,
    show,
)
from fesens.config.objectives import objective_kind, response_kind
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.fem.nonlinear.newton import LINE_SEARCHES, NewtonOptions
from fesens.opt.problem import Response
from fesens.physics import PHYSICS

#: The sections this module checks.
SECTIONS = ("newton", "load_path")

_DEFAULTS = {f.name: f.default for f in dataclass_fields(NewtonOptions)}
#: TOML has no null: ``line_search = "none"`` stands for full Newton steps.
_NO_LINE_SEARCH = "none"

NEWTON = {
    "steps": Key(integer(1), _DEFAULTS["steps"], "equal load steps from 0 to the full load"),
    "rtol": Key(number(0.0, 1.0, high_open=True), _DEFAULTS["rtol"],
                "converged when |R| <= atol + rtol * (size of the balanced loads)"),
    "atol": Key(number(0.0), _DEFAULTS["atol"], "absolute residual tolerance"),
    "max_iterations": Key(integer(1, 1000), _DEFAULTS["max_iterations"],
                          "Newton iterations per load step before it is cut back"),
    "line_search": Key(choice(*(name for name in LINE_SEARCHES if name), _NO_LINE_SEARCH),
                       _DEFAULTS["line_search"], "auto (full Newton steps, searched only "
                       "where they fail), backtracking on the residual norm, on the stored "
                       "energy, or none (default: the physics' own, else auto)"),
    "max_cutbacks": Key(integer(0, 50), _DEFAULTS["max_cutbacks"],
                        "halvings in a row of a failed step's load increment"),
    "adaptive": Key(boolean(), _DEFAULTS["adaptive"], "a step that converged in at most 4 "
                    "iterations doubles the next increment"),
}

LOAD_PATH = {
    "point": Key(numbers(), None, "the node whose value the curve follows (default: the "
                 "norm of the whole state)"),
    "component": Key(component(), None, "its component (vector fields; default 0)"),
}

#: ``[objective]`` keys of a nonlinear physics: the objective at several load levels.
OBJECTIVE_KEYS = {
    "load_factors": Key(numbers(), None, "nonlinear physics: the objective is the weighted "
                        "sum of its values at the states of these load factors, increasing "
                        "in (0, 1] (default: the full load only)"),
    "weights": Key(numbers(), None, "with load_factors: the weight of each level (default "
                   "1 each)"),
}


def newton_keys(physics: type) -> dict:
    """:data:`NEWTON` with the defaults of a nonlinear physics: its ``newton_defaults``
    where it has them (e.g. a line search on its stored energy), the options' own
    elsewhere."""
    keys = dict(NEWTON)
    for name, value in physics.newton_defaults.items():
        if name in keys:
            keys[name] = replace(keys[name], default=_NO_LINE_SEARCH
                                 if name == "line_search" and value is None else value)
    return keys


def is_nonlinear(physics: type) -> bool:
    """Whether a registered physics' equations are nonlinear (its class says so)."""
    return issubclass(physics, NonlinearModel)


def _nonlinear_names() -> str:
    return ", ".join(cls.name for cls in PHYSICS if is_nonlinear(cls)) or "none registered"


def check_nonlinear(raw: dict, data: dict, physics: type, mesh, label: str) -> dict:
    """The checked ``[newton]`` and ``[load_path]`` of a nonlinear physics (``[newton]``
    with its defaults filled in), and the refusals of what its solve cannot do.

    Parameters
    ----------
    raw : dict
        The parsed config.
    data : dict
        The resolved sections so far (``physics``, ``solver``, ``load_cases``).
    physics : type
        The registered physics of ``physics.type``.
    mesh : Mesh
    label : str
        The mesh's source for messages.

    Returns
    -------
    dict
        ``{"newton": {...}, "load_path": {...}}`` (``load_path`` only when given); empty
        for a linear physics.

    Raises
    ------
    ConfigError
        A section given to a linear physics, an option out of range, a line search the
        physics cannot do, load cases, a solver backend unfit for its tangent.
    """
    kind = data["physics"]["type"]
    objective = data.get("objective") or {}
    if not is_nonlinear(physics):
        given = [key for key in OBJECTIVE_KEYS if key in objective]
        if given:
            raise ConfigError(
                f"objective.{given[0]} applies to nonlinear physics only "
                f"({_nonlinear_names()}), and physics.type = {show(kind)} is linear: its "
                f"state at a load factor t is t times the full load's; remove "
                f"objective.{given[0]}")
        for section in SECTIONS:
            if section in raw:
                raise ConfigError(
                    f"[{section}] applies to nonlinear physics only ({_nonlinear_names()}), "
                    f"and physics.type = {show(kind)} is linear: remove [{section}]")
        return {}
    out = {"newton": check_table("newton", raw.get("newton", {}), newton_keys(physics))}
    if out["newton"]["rtol"] == 0 and out["newton"]["atol"] == 0:
        raise ConfigError("newton.rtol = 0 and newton.atol = 0: no residual can converge; "
                          "give newton.rtol > 0 (e.g. 1e-10) or newton.atol > 0")
    if out["newton"]["line_search"] == "energy" and \
            physics.energy is NonlinearModel.energy:
        raise ConfigError(f"newton.line_search = \"energy\" needs a stored energy, which "
                          f"physics.type = {show(kind)} does not declare: use \"residual\"")
    if "load_path" in raw:
        out["load_path"] = _check_load_path(raw["load_path"], physics, mesh, label)
    if data.get("load_cases"):
        raise ConfigError(f"[[load_cases]]: a nonlinear physics (physics.type = {show(kind)}) "
                          "solves one load case at a time (the states of several load "
                          "cases are separate nonlinear solves); remove [[load_cases]] and "
                          "run one config per case")
    _check_tangent_solver(data["solver"], physics, kind, data["loads"],
                          data.get("material", {}))
    _check_levels(raw, objective, physics)
    return out


def _check_levels(raw: dict, objective: dict, physics: type) -> None:
    """Check ``objective.load_factors`` and ``objective.weights`` in place (weights filled
    in, 1 each)."""
    if "load_factors" not in objective:
        if "weights" in objective:
            raise ConfigError("objective.weights needs objective.load_factors (the load "
                              "levels they weigh), e.g. load_factors = [0.5, 1.0]")
        return
    factors = np.asarray(objective["load_factors"], dtype=float)
    if factors.size == 0 or factors[0] <= 0 or factors[-1] > 1:
        raise ConfigError(f"objective.load_factors = {show(objective['load_factors'])} is "
                          "not allowed: expected at least one load factor, each in (0, 1], "
                          "e.g. [0.5, 1.0]")
    if np.any(np.diff(factors) <= 0):
        raise ConfigError(f"objective.load_factors = {show(objective['load_factors'])} is "
                          "not allowed: the load factors must increase strictly (each level "
                          "once, in the order the load steps reach them)")
    weights = objective.setdefault("weights", [1.0] * factors.size)
    if len(weights) != factors.size:
        raise ConfigError(f"objective.weights = {show(weights)} has {len(weights)} "
                          f"weight(s) for {factors.size} objective.load_factors: give one "
                          "per load factor")
    if not physics.path_independent:
        raise ConfigError(f"objective.load_factors: physics.type = {show(physics.name)} is "
                          "path dependent, so its state at a load factor is no equilibrium "
                          "of that load alone; remove objective.load_factors")
    analysis = raw.get("analysis", {}).get("type", "static")
    if analysis != "static":
        raise ConfigError(f"objective.load_factors applies to a static nonlinear solve, not "
                          f"analysis.type = {show(analysis)}; remove objective.load_factors")
    level = objective_kind(response_kind(physics.name, objective["type"]))
    if level.everywhere or level.analysis != "static":
        raise ConfigError(f"objective.load_factors: objective.type = "
                          f"{show(objective['type'])} is not a function of the state, so "
                          "it has no value per load level (use compliance, a value or a "
                          "stress aggregate)")


def load_factors(data: dict) -> list[float] | None:
    """The load factors of the objective's levels (``objective.load_factors``), or None:
    the objective reads the full load's state only."""
    return (data.get("objective") or {}).get("load_factors")


def level_values(spec: dict, single: Response, state, rho) -> list:
    """The values of ``single`` at the states of ``spec``'s load factors (``state.at(k)``,
    traced when ``state`` is), in their order."""
    return [single(state.at(k), rho) for k in range(len(spec["load_factors"]))]


def over_levels(spec: dict, single: Response) -> Response:
    """The response of a checked ``[objective]``: with ``load_factors``, the weighted sum
    ``Σ_k w_k j(u(t_k))`` of ``single`` at the states of those factors (the solve must
    keep them: ``at_load_factors``); else ``single`` itself."""
    if "load_factors" not in spec:
        return single
    weights = spec["weights"]

    def summed(state, rho):
        values = level_values(spec, single, state, rho)
        return sum(w * v for w, v in zip(weights, values, strict=True))

    return summed


def _check_load_path(raw, physics: type, mesh, label: str) -> dict:
    table = check_table("load_path", raw, LOAD_PATH)
    vector = physics.config.vector_field
    if "component" in table and "point" not in table:
        raise ConfigError(f"load_path.component = {table['component']} needs "
                          "load_path.point (the node it follows); without a point the "
                          "curve follows the norm of the whole state")
    if "point" in table:
        selections.nearest_node("load_path", table["point"], mesh)
        table.setdefault("component", 0)
        components = mesh.dim if vector else 1
        if table["component"] >= components:
            raise ConfigError(
                f"load_path.component = {table['component']} is not allowed: the field of "
                f"{physics.name} has {components} component(s) per node (0..{components - 1})"
                f" on this {mesh.dim}D mesh ({label})")
    return table


def _check_tangent_solver(solver: dict, physics: type, kind: str, loads: list[dict],
                          material: dict) -> None:
    """A backend for a symmetric matrix cannot solve a non-symmetric tangent (of the physics,
    or made so by a load such as a follower pressure), and a matrix-free backend cannot
    solve a tangent that is assembled at every iteration."""
    from fesens.solvers import SOLVER_ALIASES, available_solvers, solver_class
    from fesens.solvers.policy import is_auto

    name = solver["backend"]
    if solver["options"].get("matrix_free"):
        raise ConfigError(
            f"solver.options.matrix_free = true: a nonlinear physics (physics.type = "
            f"{show(kind)}) assembles its tangent at every Newton iteration, so it has no "
            "matrix-free solve; remove solver.options.matrix_free")
    if is_auto(name) or not solver_class(name).symmetric:
        return
    # auto picks LU for an unsymmetric tangent
    unsymmetric = ["auto", *(backend for backend in [*SOLVER_ALIASES, *available_solvers()]
                             if not solver_class(backend).symmetric)]
    instead = ", ".join(f'"{backend}"' for backend in unsymmetric[:-1]) + \
        f' or "{unsymmetric[-1]}"'
    if not physics.symmetric_tangent:
        raise ConfigError(
            f"solver.backend = {show(name)} assumes a symmetric matrix, but the tangent of "
            f"physics.type = {show(kind)} is not symmetric: use {instead}")
    for key in physics.config.unsymmetric_material:
        if np.any(np.asarray(material.get(key, 0.0), dtype=float) != 0):
            raise ConfigError(
                f"solver.backend = {show(name)} assumes a symmetric matrix, but "
                f"material.{key} = {show(material[key])} makes the tangent of physics.type = "
                f"{show(kind)} unsymmetric: use {instead}, or material.{key} = 0")
    for i, load in enumerate(loads):
        for flag in physics.config.load_kind(load["type"]).unsymmetric:
            if load.get(flag):
                raise ConfigError(
                    f"solver.backend = {show(name)} assumes a symmetric matrix, but "
                    f"{join('loads', i)}.{flag} = true makes the tangent of physics.type = "
                    f"{show(kind)} unsymmetric (the load's stiffness): use {instead}, or "
                    f"remove {flag}")


def newton_options(data: dict) -> dict | None:
    """The ``newton=`` argument of a nonlinear model's solve from the resolved config (None
    for a linear physics)."""
    newton = data.get("newton")
    if newton is None:
        return None
    options = dict(newton)
    if options["line_search"] == _NO_LINE_SEARCH:
        options["line_search"] = None
    return options


def monitored_dof(data: dict, mesh, n_components: int) -> int | None:
    """The dof the load–displacement curve follows (``[load_path]``), or None: the norm of
    the whole state."""
    table = data.get("load_path") or {}
    if "point" not in table:
        return None
    node = selections.nearest_node("load_path", table["point"], mesh)
    return node * n_components + table["component"]

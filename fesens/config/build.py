"""From a resolved :class:`~fesens.config.resolved.Config` to objects: the FEM model (its
physics sections applied, a section value that names another config file solved here,
:func:`apply_sections`), the objective and constraint responses, the
:class:`~fesens.opt.DesignProblem` and its optimizer.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from fesens.config import selections
from fesens.config.checks import ConfigError, join, show
from fesens.config.frequency import build_frequency_problem, eigen_kind
from fesens.config.increments import INCREMENTAL, build_increment_problem
from fesens.config.load_cases import combination, magnitudes, per_case, weighted
from fesens.config.loading import load_config
from fesens.config.manufacturing import problem_maps
from fesens.config.nonlinear import load_factors, newton_options, over_levels
from fesens.config.objectives import OBJECTIVES, objective_kind, response_kind
from fesens.config.optimization_sections import ROBUST, create_optimizer
from fesens.config.physics_keys import LOAD_SELECTIONS, constructor_material
from fesens.config.resolved import Config
from fesens.config.stress_constraints import local_stress
from fesens.config.time_design import build_time_problem
from fesens.config.time_sections import STATIC, analysis_type
from fesens.errors import FesensError, MaterialError, TooLargeError
from fesens.fem import LinearModel
from fesens.objectives.static import volume
from fesens.opt import (
    INTERPOLATIONS,
    PROJECTIONS,
    AdaptiveTolerance,
    Constraint,
    Continuation,
    DesignProblem,
    Filter,
    MinMaxProblem,
    make_filter,
)
from fesens.opt.augmented_lagrangian import AugmentedLagrangianProblem
from fesens.opt.buckling_design import BucklingProblem, load_factor_reports
from fesens.opt.normalized import NormalizedConstraint
from fesens.opt.problem import Response
from fesens.opt.robust import RobustProblem, RobustProjection
from fesens.physics.spec import Section


def solver_argument(config: Config):
    """The ``solver=`` argument for solves: a name, or ``(name, options)``."""
    solver = config.data["solver"]
    return (solver["backend"], dict(solver["options"])) if solver["options"] else \
        solver["backend"]


def build_model(config: Config) -> LinearModel:
    """The model with its material, supports and named loads.

    The physics' constructor gets the ``[physics]`` options and the ``[material]`` values
    as keywords (:mod:`fesens.physics.spec`).
    """
    data, mesh = config.data, config.mesh
    model = new_model(config, mesh)
    for i, support in enumerate(data["supports"]):
        where = selections.nodes(join("supports", i), support, mesh, config.label)
        model.fix(where, components=support.get("components"), value=support["value"])
    for i, load in enumerate(data["loads"]):
        _add_load(model, join("loads", i), load, config)
    apply_sections(model, data, mesh, config.label)
    return model


def new_model(config: Config, mesh) -> LinearModel:
    """The physics' model of ``mesh`` with the config's ``[physics]`` options and
    ``[material]`` values, without supports or loads."""
    data = config.data
    options = {key: value for key, value in data["physics"].items() if key != "type"}
    material = constructor_material(config.physics_class, data["material"])
    try:
        return config.physics_class(mesh, **options, **material)
    except MaterialError as exc:  # constants in range one by one, not together (softening)
        raise ConfigError(f"{config.source}: [material] is refused: {exc}") from None


def _add_load(model: LinearModel, path: str, load: dict, config: Config) -> None:
    """Call the model method of the load's kind (:class:`fesens.physics.spec.LoadKind`)."""
    kind = config.physics_class.config.load_kind(load["type"])
    value, name = load["value"], load["name"]
    add = getattr(model, kind.method)
    if kind.flags:
        add = partial(add, **{flag: load[flag] for flag, _ in kind.flags})
    _, select = LOAD_SELECTIONS[kind.on]
    if kind.on == "nodes" and "point" in load:
        add(load["point"], value, name=name)
    elif kind.on == "cells":
        add(value, cells=select(path, load, config.mesh, config.label), name=name)
    else:
        add(select(path, load, config.mesh, config.label), value, name=name)


def response(spec: dict, config: Config) -> Response:
    """``f(state, ρ)`` for an ``[objective]`` or ``[[constraints.extra]]`` table (built by
    the record of its kind, :mod:`fesens.config.objectives`); with ``load_factors`` (a
    nonlinear physics) the weighted sum over those load levels."""
    single = objective_kind(response_kind(config.physics, spec["type"])).build(spec, config)
    return over_levels(spec, single)


def _continuation(value) -> Continuation | float:
    if isinstance(value, dict):
        return Continuation(value["start"], value.get("final"), value["every"],
                            factor=value.get("factor"), step=value.get("step"),
                            final_iterations=value["final_iterations"])
    return value


def _from_registry(registry: dict[str, type], spec: dict):
    """``registry[spec["type"]]`` built with the table's other keys (schedules as
    :class:`~fesens.opt.Continuation`)."""
    options = {key: _continuation(value) for key, value in spec.items() if key != "type"}
    return registry[spec["type"]](**options)


def _passive(config: Config, kind: str) -> np.ndarray | None:
    ids = [config.mesh.cell_ids(selections.cells(join("design.passive", i), item, config.mesh,
                                                 config.label))
           for i, item in enumerate(config.data["design"]["passive"]) if item["type"] == kind]
    return np.unique(np.concatenate(ids)) if ids else None


def build_projection(spec: dict):
    """The ``[projection]`` of a config: a :class:`~fesens.opt.robust.RobustProjection` with
    ``robust = true``, else the projection of its ``type``."""
    if spec.get("robust"):
        return RobustProjection(**{key: _continuation(spec[key])
                                   for key in ("beta", "eta", "delta_eta") if key in spec})
    return _from_registry(PROJECTIONS, {key: value for key, value in spec.items()
                                        if key not in ROBUST})


def build_interpolation(config: Config):
    """The config's material interpolation (``[penalization]``) at its final penalty, or None
    when the config has no ``[penalization]`` table (the density is then the stiffness
    scale itself)."""
    spec = config.data.get("penalization")
    if spec is None:
        return None
    interpolation = _from_registry(INTERPOLATIONS, spec)
    schedule = interpolation.schedule
    interpolation.parameter = schedule.start if schedule.final is None else schedule.final
    return interpolation


def build_problem(config: Config, model: LinearModel | None = None) -> DesignProblem:
    """The design problem of an optimization config (builds the model if not given): with
    ``[[load_cases]]`` the weighted sum of the cases' objectives, or with ``[objective]
    combine = "max"`` a :class:`~fesens.opt.MinMaxProblem` of their worst; with
    ``[projection] robust = true`` a :class:`~fesens.opt.robust.RobustProblem` (the worst
    of its three designs, and of the load cases with ``combine = "max"``); with an eigen
    objective a :class:`~fesens.opt.frequency.FrequencyProblem`
    (:mod:`fesens.config.frequency`)."""
    data = config.data
    model = build_model(config) if model is None else model
    design = design_options(config, build_filter(config))
    if eigen_kind(data, config.physics) is not None:
        return build_frequency_problem(config, model, design)
    if analysis_type(data) == INCREMENTAL:
        return build_increment_problem(config, model, design)
    if analysis_type(data) != STATIC:
        return build_time_problem(config, model, design)
    if buckling_items(data):
        return build_buckling_problem(config, model, design)
    constraints = [constraint(item, config) for item in data["constraints"]["extra"]]
    constraints += cost_constraints(config, model, design["interpolation"])
    worst, objective = objective_of(config)
    common = {**design, "constraints": constraints, **case_options(config, objective),
              "adaptive_tolerance": adaptive_tolerance(config)}
    if isinstance(design["projection"], RobustProjection):
        every = data["projection"].get("volume_update_every")
        problem = RobustProblem(model, objective, worst_case_loads=worst, **common,
                                **({} if every is None else {"volume_update_every": every}))
    elif data["constraints"].get("stress"):  # refused with load cases and robust: checked
        stress = local_stress(data["constraints"]["stress"], model.mesh.n_cells,
                              design["passive_solid"], design["passive_void"])
        problem = AugmentedLagrangianProblem(model, objective, stress=stress, **common)
    else:
        problem = (MinMaxProblem if worst else DesignProblem)(model, objective, **common)
    _add_constraint_reports(problem)
    newton = newton_options(data)
    if newton is not None:  # every solve of the loop is Newton's with the config's options
        problem.differentiable.solve_options["newton"] = newton
    if load_factors(data):  # the objective reads the states at these load levels
        problem.differentiable.solve_options["at_load_factors"] = load_factors(data)
    return problem


def constraint(item: dict, config: Config,
               on: Callable[[Response], Response] = lambda f: f) -> Constraint:
    """The :class:`~fesens.opt.Constraint` of a checked ``[[constraints.extra]]`` table of a
    static kind: with ``normalization = "adaptive"`` a
    :class:`~fesens.opt.normalized.NormalizedConstraint` tracking the kind's ``maximum``.
    ``on`` maps a response ``f(state, ρ)`` to what the design problem's solve gives (a
    buckling problem's: ``f(result.solution, ρ)``)."""
    if item.get("normalization") == "adaptive":
        kind = objective_kind(response_kind(config.physics, item["type"]))
        return NormalizedConstraint(item["name"], on(response(item, config)), item["limit"],
                                    maximum=on(kind.maximum(item, config)),
                                    alpha=item["alpha"])
    return Constraint(item["name"], on(response(item, config)), item["limit"])


def _add_constraint_reports(problem: DesignProblem) -> None:
    """Add the history columns of the normalized constraints (their maximum, aggregate and
    factor) to the problem's reports."""
    for item in problem.constraints:
        if isinstance(item, NormalizedConstraint):
            problem.reports.update(item.reports())


def buckling_items(data: dict) -> list[dict]:
    """The ``[[constraints.extra]]`` tables of a checked config that constrain buckling load
    factors (a kind of the buckling analysis)."""
    return [item for item in data["constraints"]["extra"]
            if item["type"] in OBJECTIVES and OBJECTIVES[item["type"]].analysis == "buckling"]


def _on_solution(response: Response) -> Response:
    """``f(state, ρ)`` as ``f(result, ρ)`` of a buckling result's static solution."""
    return lambda result, rho: response(result.solution, rho)


def build_buckling_problem(config: Config, model: LinearModel,
                           design: dict) -> BucklingProblem:
    """The :class:`~fesens.opt.buckling_design.BucklingProblem` of a config with buckling
    constraints: its static objective and other constraints of the reference load's static
    solution, each buckling constraint ``limit / KS(μ) ≤ 1``, the load factors in the
    history (``load_factor_<i>``); the evaluation's state is the static solution.

    Raises
    ------
    ConfigError
        A solver the buckling analysis cannot use (it needs a direct factorization).
    """
    data = config.data
    items = data["constraints"]["extra"]
    buckling = buckling_items(data)
    constraints = [Constraint(item["name"], objective_kind(item["type"]).build(item, config), 1.0)
                   if item in buckling else constraint(item, config, _on_solution)
                   for item in items]
    n_modes = max(item["modes"] for item in buckling)
    try:
        problem = BucklingProblem(model, _on_solution(response(data["objective"], config)),
                                  n_modes=n_modes, static_state=True, constraints=constraints,
                                  reports=load_factor_reports(n_modes), **design)
    except ValueError as exc:
        raise ConfigError(f"solver.backend = {show(data['solver']['backend'])}: a buckling "
                          f"constraint needs a direct solver ({exc})") from None
    _add_constraint_reports(problem)
    return problem


def cost_constraints(config: Config, model: LinearModel, interpolation) -> list[Constraint]:
    """The ``[constraints] cost_fraction`` of a config as a constraint (none without it):
    the cost ``Σ_e x_e P(x_e) v_e`` of the ordered interpolation
    (:meth:`~fesens.opt.interpolation.OrderedSIMP.cost`) over that of the domain full of
    the densest phase, at most ``cost_fraction``; ``interpolation`` is the design problem's,
    whose penalty continuation the cost follows."""
    limit = config.data["constraints"].get("cost_fraction")
    if limit is None:
        return []
    return [Constraint("cost_fraction", lambda state, rho: volume(
        model, interpolation.cost(rho), fraction=True), limit)]


def build_filter(config: Config) -> Filter:
    """The config's ``[filter]`` on its mesh.

    Raises
    ------
    ConfigError
        Naming ``filter.radius`` when the filter of that radius is too large to build
        (:class:`~fesens.errors.TooLargeError`: its estimate and a suggested radius).
    """
    spec = config.data["filter"]
    try:
        return make_filter(spec["type"], config.mesh, spec.get("radius"))
    except TooLargeError as exc:
        raise ConfigError(f"{config.source}: filter.radius = {show(spec['radius'])} is too "
                          f"large: {exc}") from None


def objective_of(config: Config) -> tuple[bool, Response]:
    """Whether the config minimizes the worst of its load cases, and the objective
    ``f(state, ρ)`` of its design problem: the weighted sum over the load cases, or one
    case's (of a worst-case problem, or without load cases)."""
    data = config.data
    objective, cases = response(data["objective"], config), data.get("load_cases")
    worst = bool(cases) and combination(data) == "max"
    return worst, objective if worst or not cases else weighted(objective, cases)


def case_options(config: Config, objective: Response) -> dict:
    """The ``load_cases`` and ``reports`` (each case's objective) of a design problem."""
    data = config.data
    cases = data.get("load_cases")
    single = response(data["objective"], config)
    return {"load_cases": magnitudes(data),
            "reports": per_case(single, cases, data["objective"]["type"]) if cases else None}


def design_options(config: Config, density_filter) -> dict:
    """The keywords of a :class:`~fesens.opt.DesignProblem` the config gives besides the
    model and the responses: volume fraction, interpolation, ``density_filter``,
    projection, passive cells (global ids), solver, and the ``[manufacturing]`` maps
    (``design_map``, ``overhang``) where it has them."""
    data = config.data
    return {"volume_fraction": data["constraints"]["volume_fraction"],
            "interpolation": _from_registry(INTERPOLATIONS, data["penalization"]),
            "filter": density_filter,
            "projection": build_projection(data["projection"]),
            "passive_solid": _passive(config, "solid"), "passive_void": _passive(config, "void"),
            "solver": solver_argument(config), **problem_maps(config)}


def adaptive_tolerance(config: Config) -> AdaptiveTolerance | None:
    """The ``[solver] adaptive_rtol*`` keys as an :class:`AdaptiveTolerance` (None when off)."""
    solver = config.data["solver"]
    if not solver.get("adaptive_rtol"):
        return None
    keys = {"factor": "adaptive_rtol_factor", "rtol_max": "adaptive_rtol_max"}
    return AdaptiveTolerance(**{name: solver[key] for name, key in keys.items()
                                if key in solver})


def build_optimizer(config: Config):
    """The optimizer of the ``[optimizer]`` table."""
    return create_optimizer(config.data["optimizer"])


def apply_sections(model: LinearModel, data: dict, mesh, label: str) -> None:
    """Call the model method of each physics section in the checked config ``data``.

    Raises
    ------
    ConfigError
        What the model refuses (e.g. facets inside the mesh, a temperature file of the
        wrong length), naming the section.
    """
    for section in type(model).config.sections:
        if section.name not in data:
            continue
        tables = data[section.name] if section.many else [data[section.name]]
        method = getattr(model, section.method)
        for i, item in enumerate(tables):
            path = join(section.name, i) if section.many else section.name
            values = {key.name: _solved_if_config(path, key.name, item.get(key.name), section,
                                                  mesh)
                      for key in section.keys}
            try:
                if section.on == "facets":
                    method(selections.facets(path, item, mesh, label), **values,
                           name=item["name"])
                elif section.on == "nodes":
                    method(selections.nodes(path, item, mesh, label), **values)
                else:
                    method(**values)
            except (FesensError, ValueError) as exc:
                raise ConfigError(f"[{path}]: {exc}") from exc


def _solved_if_config(path: str, key: str, value: Any, section: Section, mesh) -> Any:
    """``value``, or for the path of a config file (``.toml``) the solution of that config
    (e.g. a heat solve whose temperature loads an elastic model); its mesh must be this
    config's mesh (same nodes), and it may not have the section itself."""
    if not (isinstance(value, str) and value.endswith(".toml")):
        return value
    where = f"{join(path, key)} = {show(value)}"
    other = load_config(value, optimize=False)
    if section.name in other.data:
        raise ConfigError(f"{where}: that config has a [{section.name}] section itself; "
                          "give a config without one (e.g. a heat solve)")
    same = (other.mesh.points.shape == mesh.points.shape
            and np.allclose(other.mesh.points, mesh.points))
    if not same:
        raise ConfigError(f"{where}: its mesh ({other.mesh.n_points} nodes) is not this "
                          f"config's mesh ({mesh.n_points} nodes); both must use the same mesh")
    return build_model(other).solve(solver=solver_argument(other))

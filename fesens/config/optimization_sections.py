"""The sections only ``fesens optimize`` reads: their keys, read from the registries of
:mod:`fesens.opt`, and their checks (design, objective and constraints, penalization, filter,
projection, optimizer).
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fesens.config import selections
from fesens.config.checks import (
    POSITIVE,
    REQUIRED,
    ConfigError,
    ConfigWarning,
    Key,
    boolean,
    check_table,
    check_typed,
    choice,
    integer,
    invalid,
    join,
    number,
    numbers,
    require_list_of_tables,
    show,
    string,
)
from fesens.config.frequency import eigen_kind
from fesens.config.initial_design import check_initial
from fesens.config.objectives import buckling_kinds, objective_kind, response_kind
from fesens.config.passive import passive_cells
from fesens.config.physics_keys import response_variants, selects_nodes
from fesens.config.schedules import SCHEDULE
from fesens.config.stress_constraints import check_stress, check_stress_physics
from fesens.config.time_sections import STATIC, analysis_type
from fesens.mesh import Mesh
from fesens.opt import (
    FILTERS,
    INTERPOLATIONS,
    OPTIMIZERS,
    PROJECTIONS,
    capable_optimizers,
    make_optimizer,
    optimizer_options,
)
from fesens.opt.filters import Filter, fits_mesh
from fesens.opt.robust import RobustProjection
from fesens.opt.status import CONSTRAINT_TOL

if TYPE_CHECKING:
    from fesens.config.resolved import Config



def strings() -> Callable:
    """A list of strings."""
    element = string()

    def check(path: str, value: Any) -> list[str]:
        if not isinstance(value, list):
            raise invalid(path, value, check.expected)
        return [element(join(path, i), item) for i, item in enumerate(value)]

    check.expected = "a list of strings"
    return check


#: How a config value of each constructor parameter the config exposes is checked, and its
#: doc. The choices and the defaults come from the registries in :mod:`fesens.opt`.
PARAMETER_CHECKS = {
    "penalty": (SCHEDULE, "penalty exponent (SIMP p, RAMP q), or a continuation table"),
    "minimum": (number(0.0, 1.0, high_open=True), "stiffness (conductivity) of void, relative"),
    "mass_minimum": (number(0.0, 1.0, low_open=True, high_open=True),
                     "mass of void, relative (du-olhoff, pedersen: frequency design)"),
    "radius": (POSITIVE, "filter radius in mesh units"),
    "beta": (SCHEDULE, "sharpness β, or a continuation table"),
    "eta": (number(0.0, 1.0, low_open=True, high_open=True), "threshold η"),
    "moduli": (numbers(low=0.0, low_open=True),
               "ordered: Young's modulus of each solid phase, lightest first"),
    "densities": (numbers(low=0.0, low_open=True),
                  "ordered: mass density of each solid phase, increasing"),
    "costs": (numbers(low=0.0, low_open=True), "ordered: cost per unit mass of each phase"),
    "names": (strings(), "ordered: name of each solid phase (outputs)"),
}


def _registry_variants(registry: Mapping[str, type]) -> dict[str, dict[str, Key]]:
    """The keys of each entry of a registry: its constructor's parameters that
    :data:`PARAMETER_CHECKS` lists, with the constructor's defaults (required if none)."""
    variants = {}
    for name, cls in registry.items():
        parameters = inspect.signature(cls).parameters
        variants[name] = {
            key: Key(check, REQUIRED if parameters[key].default is inspect.Parameter.empty
                     else parameters[key].default, doc)
            for key, (check, doc) in PARAMETER_CHECKS.items() if key in parameters
        }
    return variants


PENALIZATION = _registry_variants(INTERPOLATIONS)
FILTER = _registry_variants(FILTERS)
PROJECTION = _registry_variants(PROJECTIONS)
#: The robust formulation's keys of a Heaviside projection (:mod:`fesens.opt.robust`); absent
#: means off, and the defaults of :class:`~fesens.opt.robust.RobustProjection` and
#: :class:`~fesens.opt.robust.RobustProblem` apply.
ROBUST = {
    "robust": Key(boolean(), None, "the worst of an eroded, the intermediate and a dilated "
                                   "design (MMA; default false)"),
    "delta_eta": Key(number(0.0, 0.5, low_open=True, high_open=True), None,
                     "robust: thresholds η ± Δη of the eroded and dilated designs (0.1)"),
    "volume_update_every": Key(integer(1), None, "robust: iterations between two updates of "
                                                 "the dilated design's volume limit (5)"),
}
PROJECTION["heaviside"].update(ROBUST)

STOP = {
    "max_iter": Key(integer(1), 200, "iteration limit"),
    "tol_change": Key(number(0.0), 0.01, "stop when max |Δx| falls below this"),
    "constraint_tol": Key(number(0.0), CONSTRAINT_TOL,
                          "largest constraint violation of a converged run (scaled g_i)"),
}

OUTPUT = {"every": Key(integer(0), 10, "write a VTU every N iterations (0: final only)")}

# ------------------------------------------------------------------ optimizers
def _option_key(default: Any) -> Key:
    if isinstance(default, bool):
        return Key(boolean(), default)
    if isinstance(default, int):
        return Key(integer(), default)
    if isinstance(default, float):
        return Key(number(), default)
    if isinstance(default, str):
        return Key(string(), default)
    return Key(number(), None)  # e.g. None: optional number


def optimizer_variants() -> dict[str, dict[str, Key]]:
    """Each registered optimizer's options (:func:`fesens.opt.optimizer_options`)."""
    return {name: {option: _option_key(default)
                   for option, default in optimizer_options(name).items()}
            for name in OPTIMIZERS}


def create_optimizer(spec: dict):
    """The optimizer of a resolved ``[optimizer]`` table."""
    return make_optimizer(spec["type"], **{k: v for k, v in spec.items() if k != "type"})


def check_design(raw: Any, config: Config, base_dir: Path) -> dict:
    """``[design]``: passive regions and the ``initial`` design (a path relative to
    ``base_dir``, the config's folder, made absolute: :mod:`fesens.config.initial_design`)."""
    spec = {"passive": Key(require_list_of_tables, [], "passive regions"),
            "initial": Key(lambda path, value: check_initial(value, config.mesh, base_dir),
                           None, "the start: a uniform density or an earlier design")}
    design = check_table("design", raw, spec)
    variants = {kind: selections.selection_spec("group", "region") for kind in ("solid", "void")}
    passive = []
    for i, table in enumerate(design["passive"]):
        path = join("design.passive", i)
        item = check_typed(path, table, variants)
        selections.check_one_of(path, item, ("group", "region"), required=True)
        selections.cells(path, item, config.mesh, config.label)
        passive.append(item)
    passive_cells(passive, config.mesh, config.label)  # refuses a cell both solid and void
    design["passive"] = passive
    return design


def check_response(path: str, raw: Any, config: Config, variants: dict,
                    extra: Mapping[str, Key] | None = None, default: Any = REQUIRED) -> dict:
    if extra:
        variants = {name: {**spec, **extra} for name, spec in variants.items()}
    item = check_typed(path, raw, variants, default=default,
                       label=f"{config.physics} {path.split('[')[0]} type")
    if item["type"] not in _buckling_variants(config) and selects_nodes(config.physics,
                                                                         item["type"]):
        key = selections.check_one_of(path, item, ("point", "group"), required=True)
        if key == "point":
            selections.nearest_node(path, item["point"], config.mesh)
        else:
            selections.nodes(path, {"group": item["group"]}, config.mesh, config.label)
    if item.get("component", 0) >= config.dim:
        raise ConfigError(f"{path}.component = {item['component']} is not allowed: this mesh "
                          f"is {config.dim}D (components 0..{config.dim - 1})")
    return item


#: History columns an extra constraint may not be named after.
RESERVED_NAMES = ("iteration", "objective", "volume", "volume_fraction", "change", "seconds",
                  "penalty", "beta", "cost_fraction")


#: ``normalization`` of a ``[[constraints.extra]]`` of an aggregate (a kind with a
#: ``maximum``): ``"adaptive"`` tracks the maximum it approximates (:mod:`fesens.opt.normalized`).
NORMALIZATIONS = ("none", "adaptive")
NORMALIZED = {
    "normalization": Key(choice(*NORMALIZATIONS), "none",
                         "\"adaptive\": c·aggregate ≤ limit, c updated every iteration from "
                         "the max/aggregate ratio (Le et al. 2010)"),
    "alpha": Key(number(0.0, 1.0, low_open=True), 0.5,
                 "damping of the adaptive normalization's update, in (0, 1]"),
}


def _buckling_variants(config: Config) -> dict[str, dict[str, Key]]:
    """The constraint types of the buckling analysis the config's physics offers (under the
    kinds' names) and their keys."""
    return {kind.name: dict(kind.keys)
            for kind in buckling_kinds(config.physics_class.solution_class)}


def _normalized_variants(physics: str, variants: dict) -> dict:
    """``variants`` with the :data:`NORMALIZED` keys added to the aggregates (kinds with a
    ``maximum``)."""
    return {name: {**spec, **NORMALIZED} if name in variants and objective_kind(
        response_kind(physics, name)).maximum is not None else spec
        for name, spec in variants.items()}


def check_constraints(raw: Any, config: Config) -> dict:
    spec = {
        "volume_fraction": Key(number(0.0, 1.0, low_open=True), REQUIRED,
                               "upper bound of the material volume fraction"),
        "extra": Key(require_list_of_tables, [], "extra constraints response ≤ limit"),
        "cost_fraction": Key(number(0.0, 1.0, low_open=True), None,
                             "penalization.type = \"ordered\": upper bound of the cost, "
                             "relative to the domain full of the densest phase"),
        "stress": Key(check_stress, None, "local stress constraints, one per designed cell "
                                          "(an augmented Lagrangian)"),
    }
    constraints = check_table("constraints", raw, spec)
    if "stress" in constraints:
        check_stress_physics(config)
    variants = {k: v for k, v in response_variants(config.physics).items() if k != "volume"}
    variants = {**_normalized_variants(config.physics, variants), **_buckling_variants(config)}
    extra_keys = {"limit": Key(POSITIVE, REQUIRED, "upper bound of the response"),
                  "name": Key(string(), None, "name in the history (default: the type)")}
    items, names = [], set()
    for i, table in enumerate(constraints["extra"]):
        path = join("constraints.extra", i)
        item = check_response(path, table, config, variants, extra_keys)
        if item.get("normalization") == "none":
            item.pop("alpha")  # the damping of the adaptive normalization only
        elif item["type"] in _buckling_variants(config):  # enough load factors for its count
            _check_modes(path, item)
        item.setdefault("name", item["type"])
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", item["name"]):
            raise ConfigError(f"{path}.name = {show(item['name'])}: use letters, digits, "
                              "'_', '.' and '-' only (the name is a column of history.csv "
                              "and part of field names in design.vtu), e.g. \"max_stress\"")
        if item["name"] in names or item["name"] in RESERVED_NAMES:
            raise ConfigError(f"{path}.name = {show(item['name'])}: the name is taken; give "
                              "each extra constraint its own name (not one of "
                              f"{', '.join(RESERVED_NAMES)})")
        names.add(item["name"])
        items.append(item)
    constraints["extra"] = items
    return constraints


def _check_modes(path: str, item: dict) -> None:
    item.setdefault("modes", item["count"] + 1)
    if item["modes"] <= item["count"]:
        raise ConfigError(f"{path}.modes = {item['modes']} is too few for count = "
                          f"{item['count']}: one more load factor than the KS bound uses shows "
                          f"whether the last is repeated; give modes = {item['count'] + 1}")


def check_penalization(raw: Any) -> dict:
    """``[penalization]``; a penalty below the interpolation's ``least_penalty`` is refused."""
    item = check_typed("penalization", raw, PENALIZATION, default="simp")
    cls = INTERPOLATIONS[item["type"]]
    penalty = item["penalty"]
    values = ({join("penalization.penalty", key): penalty[key] for key in ("start", "final")
               if key in penalty} if isinstance(penalty, dict)
              else {"penalization.penalty": penalty})
    for path, value in values.items():
        if value < cls.least_penalty:
            raise ConfigError(f"{path} = {show(value)} is not allowed: {cls.name.upper()} needs "
                              f"a penalty ≥ {cls.least_penalty:g} (a smaller one rewards "
                              "intermediate densities); use e.g. 3")
    try:  # the constructor checks how the keys fit together (the phases' order, counts)
        cls(**{key: value for key, value in item.items() if key not in ("type", "penalty")})
    except ValueError as err:  # its messages begin with the parameter's name
        raise ConfigError(f"penalization.{err}") from None
    return item


#: ``filter.type`` when the config gives none.
DEFAULT_FILTER = "density"


def check_filter(raw: Any, mesh: Mesh) -> dict:
    """``[filter]``, refusing a filter that cannot work on the mesh (a density or Helmholtz
    filter on bars: :func:`fesens.opt.filters.fits_mesh`) before its keys are checked, so
    that a truss config without a ``[filter]`` table learns which filters it may use."""
    kind = raw.get("type", DEFAULT_FILTER) if isinstance(raw, dict) else None
    if isinstance(kind, str) and kind in FILTERS and not fits_mesh(FILTERS[kind], mesh):
        given = "" if "type" in raw else " (the default)"
        fitting = [name for name, cls in FILTERS.items() if fits_mesh(cls, mesh)]
        raise ConfigError(
            f"filter.type = {show(kind)}{given} is not allowed on this mesh of "
            f"{mesh.cell_type} cells (bars in {mesh.dim}D space): the {kind} filter needs "
            "cells that fill the domain; give filter.type = "
            f"{' or '.join(show(name) for name in fitting)}")
    return check_typed("filter", raw, FILTER, default=DEFAULT_FILTER)


def warn_about_filter(data: dict, mesh: Mesh, source: str) -> None:
    """Warn when ``filter.radius`` exceeds the domain's largest extent (everything is
    averaged with everything: the design stays gray)."""
    radius = data.get("filter", {}).get("radius")
    extent = float(np.max(np.ptp(mesh.points, axis=0)))
    if radius is not None and radius > extent:
        warnings.warn(f"{source}: filter.radius = {show(radius)} is larger than the domain's "
                      f"largest extent ({extent:g}): the filter averages over the whole design; "
                      "give a radius of 1.5 to 3 cell sizes", ConfigWarning, stacklevel=2)


def check_optimizer(raw: Any) -> dict:
    variants = optimizer_variants()
    item = check_typed("optimizer", raw, variants, default="oc")
    try:
        create_optimizer(item)
    except (TypeError, ValueError) as err:
        raise _optimizer_error(item, err) from None
    return item


def _optimizer_error(item: dict, err: Exception) -> ConfigError:
    """Name the option the optimizer's constructor rejected (tried one at a time)."""
    cls = OPTIMIZERS[item["type"]]
    for key, value in item.items():
        if key == "type":
            continue
        try:
            cls(**{key: value})
        except (TypeError, ValueError) as single:
            return ConfigError(f"optimizer.{key} = {show(value)} is not allowed: {single}")
    return ConfigError(f"optimizer ({item['type']}): {err}")


def check_cost(data: dict, physics: str) -> None:
    """Refuse a ``[constraints] cost_fraction`` the design cannot take: without an
    interpolation that has costs (``[penalization] type = "ordered"`` with ``costs``), with an
    optimizer that handles the volume constraint only, or in a frequency or time-dependent
    design.

    Raises
    ------
    ConfigError
        Naming the key and the fix.
    """
    constraints = data.get("constraints") or {}
    if "cost_fraction" not in constraints:
        return
    penalization = data.get("penalization", {})
    if not INTERPOLATIONS[penalization.get("type", "simp")].offers_cost \
            or "costs" not in penalization:
        raise ConfigError("constraints.cost_fraction needs the phases' costs: give "
                          "penalization.type = \"ordered\" with penalization.costs (one per "
                          "solid phase), or remove constraints.cost_fraction")
    if eigen_kind(data, physics) is not None or analysis_type(data) != STATIC:
        raise ConfigError("constraints.cost_fraction is offered for static designs only "
                          "(not a frequency or time-dependent one): remove it")
    optimizer = data.get("optimizer")
    if optimizer is not None and not OPTIMIZERS[optimizer["type"]].general_constraints:
        capable = capable_optimizers("general_constraints")
        raise ConfigError(f"constraints.cost_fraction is a second constraint, which "
                          f"optimizer.type = \"{optimizer['type']}\" cannot handle: use "
                          f"optimizer.type = {capable}")


def check_robust(data: dict, physics: str) -> None:
    """Refuse a robust ``[projection]`` the robust problem cannot run: its keys without
    ``robust = true``, thresholds ``η ± Δη`` outside ``(0, 1)``, an optimizer without bound
    constraints (the worst of the designs is minimized by the bound formulation), an eigen
    objective (a frequency design), a time-dependent analysis (the robust problem evaluates
    its three designs by static solves).

    Raises
    ------
    ConfigError
        Naming the key and the fix.
    """
    projection = data.get("projection")
    if projection is None:
        return
    given = [key for key in ("delta_eta", "volume_update_every") if key in projection]
    if not projection.get("robust"):
        if given:
            raise ConfigError(f"projection.{given[0]} applies to the robust formulation only: "
                              "add projection.robust = true, or remove it")
        return
    analysis = analysis_type(data)
    if analysis != STATIC:
        raise ConfigError(f"projection.robust = true is offered for a static analysis only, "
                          f"not analysis.type = {show(analysis)}: remove projection.robust "
                          "(or the [analysis] table)")
    if eigen_kind(data, physics) is not None:
        raise ConfigError(f"projection.robust = true is not offered for objective.type = "
                          f"{show(data['objective']['type'])} (a frequency design): remove "
                          "projection.robust")
    eta = projection["eta"]
    delta = projection.get("delta_eta", inspect.signature(RobustProjection).parameters[
        "delta_eta"].default)
    if not delta < min(eta, 1.0 - eta):
        raise ConfigError(f"projection.delta_eta = {show(delta)} is not allowed with projection."
                          f"eta = {show(eta)}: the eroded and dilated thresholds η ± Δη must "
                          f"lie in (0, 1), so Δη < {min(eta, 1.0 - eta):g}; e.g. 0.1")
    optimizer = data.get("optimizer")
    if optimizer is not None and not OPTIMIZERS[optimizer["type"]].bound_constraints:
        capable = capable_optimizers("bound_constraints")
        raise ConfigError(f"projection.robust = true minimizes the worst of three designs "
                          f"(the bound formulation): optimizer.type = \"{optimizer['type']}\" "
                          f"cannot; use optimizer.type = {capable}")

def _check_filter_with_constraints(data: dict) -> None:
    """Refuse ``[[constraints.extra]]`` with a filter that replaces the gradient (Sigmund's
    sensitivity filter): its smoothed objective gradient is the gradient of no function.
    Beside the constraints' exact gradients the design checkerboards; smoothed alike, theirs
    no longer predict the constraints' values (a minimum-volume MBB beam under a compliance
    limit, MMA: 160 checkerboard windows, and a singular stiffness;
    ``benchmarks/bench_mechanism.py``)."""
    extra = data.get("constraints", {}).get("extra", [])
    kind = data.get("filter", {}).get("type")
    if extra and kind in FILTERS and FILTERS[kind].filter_gradient is not Filter.filter_gradient:
        raise ConfigError(
            f"filter.type = {show(kind)} is not offered with [[constraints.extra]] "
            f"(constraints.extra[0].type = {show(extra[0]['type'])}): the {kind} filter "
            "replaces the objective's gradient by a smoothed one of no function, which the "
            "constraints' gradients cannot share consistently; give filter.type = "
            '"density" or "helmholtz", whose gradients are exact for every response')


def check_constraint_analyses(data: dict) -> None:
    """Refuse what an adaptive normalization or a buckling constraint cannot run with: the
    robust formulation (its constraints act on the blueprint, without either), and for a
    buckling constraint (one reference load, factorized for its eigen solve) load cases,
    an adaptive or matrix-free solver.

    Raises
    ------
    ConfigError
        Naming the key and the fix.
    """
    _check_filter_with_constraints(data)
    robust = bool(data.get("projection", {}).get("robust"))
    for i, item in enumerate(data.get("constraints", {}).get("extra", [])):  # solve: none
        path = join("constraints.extra", i)
        if robust and item.get("normalization") == "adaptive":
            raise ConfigError(f"{path}.normalization = \"adaptive\" is not offered with "
                              "projection.robust = true: give normalization = \"none\" or "
                              "drop projection.robust")
        if "modes" not in item:  # not a buckling constraint
            continue
        what = f"{path}.type = {show(item['type'])} (a buckling constraint)"
        if robust:
            raise ConfigError(f"projection.robust = true is not offered with {what}: drop "
                              "projection.robust")
        if data.get("load_cases"):
            raise ConfigError(f"load_cases: {what} buckles under one reference load, the "
                              "[[loads]]; drop the [[load_cases]] tables")
        solver = data["solver"]
        if solver.get("adaptive_rtol"):
            raise ConfigError(f"solver.adaptive_rtol: {what} factorizes the stiffness for its "
                              "eigen solve; drop adaptive_rtol")
        if solver["options"].get("matrix_free"):
            raise ConfigError(f"solver.options.matrix_free = true: {what} needs an assembled "
                              "stiffness; drop matrix_free (or give solver.backend = "
                              "\"cholmod\")")

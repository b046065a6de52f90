"""The config file format: one spec per section, and :func:`resolve` that checks a parsed
TOML document against them and against its mesh, before any work is done.

Sections (every key is documented in ``fesens/docs/config.md``)::

    name, description                 top-level strings
    [mesh]                            rectangle | box | ground_structure | file or packaged
                                      (+ groups)
    [physics], [material]             a registered physics (fesens.physics) and its keys
    [[supports]], [[loads]]           Dirichlet conditions and named loads, by selection
    [[load_cases]]                    optional: weighted load cases (fesens.config.load_cases)
    [design]                          passive solid/void regions, the initial design
    [manufacturing]                   symmetry, extrusion, overhang (fesens.config.manufacturing)
    [objective], [constraints]        what to minimise; volume fraction, extra constraints
    [penalization], [filter], [projection], [optimizer], [stop], [output], [solver]
    [analysis], [time], [damping],    a transient, dynamic or harmonic analysis
    [harmonic], [initial], [[probes]] (fesens.config.time_sections)

What a physics offers (its ``[physics]`` and ``[material]`` keys, load types, supports and
objectives) is read from its configuration fragment through the physics registry
(:mod:`fesens.physics.spec`); nothing here names a physics.

The resolved config is a plain dict (TOML-writable, defaults filled in, mesh file paths
absolute, a packaged mesh by its name); resolving it again gives the same dict, from any
folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fesens.config import selections
from fesens.config.checks import (
    ConfigError,
    Key,
    boolean,
    check_table,
    check_typed,
    choice,
    join,
    number,
    require_list_of_tables,
    require_table,
    show,
    string,
    table_of_scalars,
    unknown_key,
    variants_hint,
)
from fesens.config.frequency import check_frequency, wants_modes
from fesens.config.increments import OBJECTIVE_KEYS as INCREMENT_OBJECTIVE_KEYS
from fesens.config.increments import (
    check_increment_sections,
    is_incremental,
    offers_increments,
    refuse_increment_keys,
)
from fesens.config.load_cases import (
    COMBINE,
    check_load_case_use,
    check_load_cases,
)
from fesens.config.manufacturing import check_manufacturing
from fesens.config.mechanism import check_output_spring
from fesens.config.mesh_section import MESH, check_cells_fit, make_mesh, mesh_type
from fesens.config.nonlinear import OBJECTIVE_KEYS as LEVEL_OBJECTIVE_KEYS
from fesens.config.nonlinear import SECTIONS as NONLINEAR_SECTIONS
from fesens.config.nonlinear import check_nonlinear
from fesens.config.optimization_sections import (
    OUTPUT,
    PROJECTION,
    STOP,
    check_constraint_analyses,
    check_constraints,
    check_cost,
    check_design,
    check_filter,
    check_optimizer,
    check_penalization,
    check_response,
    check_robust,
    warn_about_filter,
)
from fesens.config.physics_keys import (
    LOAD_SELECTIONS,
    anchor_hint,
    anchors_the_field,
    check_sections,
    dims_text,
    eigen_variants,
    load_variants,
    loads_the_model,
    material_spec,
    material_variants,
    physics_variants,
    response_variants,
    section_names,
    support_spec,
)
from fesens.config.resolved import Config
from fesens.config.solver_needs import check_solver_needs
from fesens.config.stress_constraints import check_stress_combinations
from fesens.config.time_sections import OBJECTIVE_KEYS as TIME_OBJECTIVE_KEYS
from fesens.config.time_sections import SECTIONS as TIME_SECTIONS
from fesens.config.time_sections import check_time_sections, has_initial_state
from fesens.errors import FesensError
from fesens.opt import (
    OPTIMIZERS,
    AdaptiveTolerance,
    capable_optimizers,
)
from fesens.physics import PHYSICS
from fesens.physics.user_physics_entry_points import register_named_physics

# ------------------------------------------------------------------ section specs
#: Sections that only ``fesens optimize`` uses (``solve`` and ``sensitivity`` ignore them).
OPTIMIZATION_SECTIONS = ("design", "objective", "constraints", "penalization", "filter",
                         "projection", "optimizer", "stop", "output", "manufacturing")

TOP_LEVEL = ("name", "description", "mesh", "physics", "material", "supports", "loads",
             "load_cases", *section_names(), *OPTIMIZATION_SECTIONS, "solver",
             *NONLINEAR_SECTIONS, *TIME_SECTIONS)


def _check_physics(raw: dict, dim: int) -> dict:
    """``[physics]``: ``type`` among the registered physics (default: the first), and the
    options of that physics for this mesh dimension; a user's physics named by an installed
    package (``"package.module:Physics"``, an entry point) is registered first."""
    try:
        register_named_physics(raw.get("type") if isinstance(raw, dict) else None)
    except ValueError as exc:
        raise ConfigError(f"physics.type is not allowed: {exc}") from None
    hint = {option.name: f"it applies to {dims_text(option.dims)} meshes only (this mesh "
                         f"is {dim}D)"
            for cls in PHYSICS for option in cls.config.options if dim not in option.dims}
    return check_typed("physics", raw, physics_variants(dim), default=PHYSICS.default.name,
                       elsewhere=hint)


def _option_values_hint(raw: Any, options: tuple) -> dict[str, str]:
    """For a ``[material]`` key whose value is a choice of a ``[physics]`` option (a
    material law written ``[material] model = "neo-hookean"``), where that value goes."""
    if not isinstance(raw, dict):
        return {}
    return {key: f"{value!r} is a choice of the [physics] option {option.name!r}: write "
                 f"{option.name} = {value!r} in [physics]"
            for key, value in raw.items() for option in options
            if isinstance(value, str) and value in option.choices}


def _check_supports(raw: Any, config: Config, anchored: bool) -> list[dict]:
    """``[[supports]]``; none are needed when a physics section anchors the field
    (``anchored``: :func:`~fesens.config.physics_keys.anchors_the_field`)."""
    hint = anchor_hint(config.physics_class)
    if raw is None and not anchored:
        raise ConfigError(f"missing 'supports': the config needs [[supports]] tables{hint}")
    supports = require_list_of_tables("supports", [] if raw is None else raw)
    if not supports and not anchored:
        raise ConfigError(f"supports is empty: give at least one [[supports]] table{hint}; "
                          "without one the solution is not unique (a singular system)")
    spec, dim = support_spec(config.physics), config.dim
    out = []
    for i, table in enumerate(supports):
        path = join("supports", i)
        item = check_table(path, table, spec)
        selections.nodes(path, item, config.mesh, config.label)
        if config.physics_class.config.vector_field:
            comps = item.setdefault("components", list(range(dim)))
            if max(comps) >= dim:
                raise ConfigError(f"{path}.components = {show(comps)} is not allowed: this "
                                  f"mesh is {dim}D (components 0..{dim - 1})")
            value = item["value"]
            if isinstance(value, list) and len(value) != len(comps):
                raise ConfigError(f"{path}.value = {show(value)} is not allowed: expected one "
                                  f"value per fixed component ({len(comps)}) or one number")
        out.append(item)
    return out


def _check_loads(raw: Any, config: Config) -> list[dict]:
    loads = require_list_of_tables("loads", raw)
    variants = load_variants(config.physics, config.dim)
    fragment = config.physics_class.config
    out, names = [], set()
    for i, table in enumerate(loads):
        path = join("loads", i)
        item = check_typed(path, table, variants, label=f"{config.physics} load type")
        item.setdefault("name", f"{item['type']}{i}")
        if item["name"] in names:
            raise ConfigError(f"{path}.name = {show(item['name'])}: another load has this name")
        names.add(item["name"])
        _, select = LOAD_SELECTIONS[fragment.load_kind(item["type"]).on]
        select(path, item, config.mesh, config.label)
        out.append(item)
    return out


def _is_zero(value: float | list[float]) -> bool:
    return not any(value) if isinstance(value, list) else value == 0


def _check_loaded(supports: list[dict], loads: list[dict]) -> None:
    """Refuse a model that nothing loads: every load and every prescribed value zero."""
    if any(not _is_zero(item["value"]) for item in supports + loads):
        return
    what = (f"every load is zero (loads[0].value = {show(loads[0]['value'])})" if loads
            else "there are no loads")
    raise ConfigError(f"{what} and every support value is 0: the solution is zero, so there is "
                      "nothing to solve or optimize; give at least one [[loads]] a nonzero "
                      "value")


def _check_solver(raw: Any) -> dict:
    from fesens.solvers import SOLVER_ALIASES, available_solvers, make_solver, solver_class

    name = raw.get("backend") if isinstance(raw, dict) else None
    if isinstance(name, str) and name not in [*SOLVER_ALIASES, *available_solvers()]:
        try:  # a known backend whose optional library is missing: how to install it
            hint = solver_class(name).install_hint
        except ValueError:
            hint = ""
        if hint:
            raise ConfigError(f"solver.backend = {show(name)}: {hint}")

    spec = {"backend": Key(choice(*SOLVER_ALIASES, *available_solvers()), "auto",
                           "linear solver backend"),
            "options": Key(table_of_scalars(), {}, "backend options (rtol, preconditioner, "
                                                   "maxiter, ...)"),
            "adaptive_rtol": Key(boolean(), None, "optimize: rtol per iteration from the "
                                 "design change (iterative backends; default false)"),
            "adaptive_rtol_factor": Key(number(0.0, low_open=True), None,
                                        "rtol = factor * change (default 1e-2)"),
            "adaptive_rtol_max": Key(number(0.0, 1.0, low_open=True, high_open=True), None,
                                     "loosest rtol (default 1e-3)")}
    solver = check_table("solver", raw, spec)
    _check_distributes(solver["backend"])
    backend = None
    if solver["options"] or solver.get("adaptive_rtol"):
        try:
            backend = make_solver(solver["backend"], **solver["options"])
        except (TypeError, ValueError, FesensError) as err:
            raise ConfigError(f"solver.options = {show(solver['options'])}: {err}") from None
    if solver.get("adaptive_rtol"):
        _check_adaptive_rtol(solver, backend)
    return solver


def _check_distributes(name: str) -> None:
    """Under ``mpirun -n N`` the backend must solve across the ranks (fesens.mpi)."""
    from fesens.mpi import check_distributes
    from fesens.solvers.policy import distributes

    check_distributes(f"solver.backend = {show(name)}", distributes(name))


def _check_adaptive_rtol(solver: dict, backend) -> None:
    """``adaptive_rtol`` needs an iterative backend whose rtol is below the loosest one."""
    if backend.is_direct or not isinstance(backend.rtol, float):
        raise ConfigError(
            f"solver.adaptive_rtol = true needs an iterative backend, but solver.backend = "
            f"{show(solver['backend'])} is not one (it is or may pick a direct solver); "
            "set solver.backend = \"gmg\" (rectangle or box mesh) or \"cg\", or drop "
            "adaptive_rtol")
    loosest = solver.get("adaptive_rtol_max", AdaptiveTolerance.rtol_max)
    if backend.rtol > loosest:
        raise ConfigError(
            f"solver.adaptive_rtol_max = {loosest:g} is below the final tolerance, the "
            f"backend's rtol {backend.rtol:g}: give adaptive_rtol_max >= {backend.rtol:g} "
            "or a smaller solver.options.rtol")


def _check_consistency(data: dict) -> None:
    optimizer, constraints = data.get("optimizer"), data.get("constraints")
    objective = data.get("objective")
    if optimizer is None or constraints is None or objective is None:
        return
    general = OPTIMIZERS[optimizer["type"]].general_constraints
    if not general and constraints["volume_fraction"] >= 1.0:
        raise ConfigError(f"constraints.volume_fraction = {show(constraints['volume_fraction'])} "
                          f"leaves the {optimizer['type'].upper()} optimizer no design freedom "
                          "(every cell full meets it): give a value below 1, e.g. 0.5")
    capable = capable_optimizers("general_constraints")
    if not general and constraints["extra"]:
        raise ConfigError(f"optimizer.type = \"{optimizer['type']}\" handles the volume "
                          f"constraint only; use optimizer.type = {capable} for "
                          "constraints.extra")
    if objective["type"] == "volume":
        if not general:
            raise ConfigError(f"objective.type = \"volume\" needs optimizer.type = {capable}")
        if not constraints["extra"] and not constraints.get("stress"):
            raise ConfigError("objective.type = \"volume\" needs at least one "
                              "[[constraints.extra]] or a [constraints.stress] (e.g. a "
                              "stress limit)")


def resolve(raw: dict, *, base_dir: Path, source: str, default_name: str = "fesens",
            optimize: bool = True) -> Config:
    """Check a parsed config and build its mesh.

    Parameters
    ----------
    raw : dict
        The parsed TOML document.
    base_dir : Path
        Directory that relative mesh paths are relative to (the config file's).
    source : str
        For messages: the file name or ``preset 'mbb'``.
    default_name : str
        ``name`` when the config has none (the file's stem).
    optimize : bool
        Whether the optimization sections must be complete; ``False`` (``solve``,
        ``sensitivity``) checks only the sections that are present.

    Returns
    -------
    Config

    Raises
    ------
    ConfigError
        The first problem found, naming the key path, the value and what is allowed.
    """
    raw = require_table("", raw)
    for key in raw:
        if key not in TOP_LEVEL:
            raise unknown_key("", key, TOP_LEVEL)
    for key in ("mesh", "loads"):  # supports: after the sections, which may anchor the field
        if key not in raw and not (key == "loads" and (wants_modes(raw)
                                                       or has_initial_state(raw))):
            what = "a [mesh] table" if key == "mesh" else f"[[{key}]] tables"
            raise ConfigError(f"missing {key!r}: the config needs {what}")
    data: dict[str, Any] = {
        "name": string()("name", raw.get("name", default_name)),
        "description": string()("description", raw.get("description", "")),
    }
    data["mesh"] = check_typed("mesh", raw["mesh"], MESH, default=mesh_type(raw["mesh"]))
    solver = _check_solver(raw.get("solver", {}))  # the mesh's memory check reads it
    base_dir = Path(base_dir)
    mesh, label = make_mesh(data["mesh"], base_dir, solver)
    data["physics"] = _check_physics(raw.get("physics", {}), mesh.dim)
    kind = data["physics"]["type"]
    check_cells_fit(data["mesh"], mesh, kind)
    materials = material_variants()
    raw_material = raw.get("material", {})
    data["material"] = check_table(
        "material", raw_material, material_spec(PHYSICS.get(kind), data["physics"]),
        elsewhere={**variants_hint(materials, "physics.type", kind),
                   **_option_values_hint(raw_material, PHYSICS.get(kind).config.options)})
    config = Config(data, mesh, source, label)
    data["supports"] = []  # checked once the sections are known (the key keeps its place)
    data["loads"] = _check_loads(raw.get("loads", []), config)
    if "load_cases" in raw:  # absent: every load in one case, as without the key
        data["load_cases"] = check_load_cases(raw["load_cases"], data["loads"])
    sections = check_sections(raw, config.physics_class, mesh, label, base_dir)
    data["supports"] = _check_supports(raw.get("supports"), config,
                                       anchors_the_field(config.physics_class, sections))
    check_solver_needs(solver, data["supports"], mesh, label, [
        section for section in config.physics_class.config.sections if section.name in sections])
    data.update(sections)
    # a convection or thermal section loads the model too; modes need no loads
    if not loads_the_model(config.physics_class, sections) and not wants_modes(raw) \
            and not has_initial_state(raw):  # a transient run may start from a field
        _check_loaded(data["supports"], data["loads"])
    objectives = {**response_variants(kind), **eigen_variants(kind)}
    checks = {
        "design": lambda r: check_design(r, config, base_dir),
        "objective": lambda r: check_response("objective", r, config, objectives,
                                               {"combine": COMBINE, **TIME_OBJECTIVE_KEYS,
                                                **INCREMENT_OBJECTIVE_KEYS,
                                                **LEVEL_OBJECTIVE_KEYS},
                                               default="compliance"),
        "constraints": lambda r: check_constraints(r, config),
        "penalization": check_penalization,
        "filter": lambda r: check_filter(r, mesh),
        "projection": lambda r: check_typed("projection", r, PROJECTION, default="none"),
        "optimizer": check_optimizer,
        "stop": lambda r: check_table("stop", r, STOP),
        "output": lambda r: check_table("output", r, OUTPUT),
    }
    for section, check in checks.items():
        if optimize or section in raw:
            data[section] = check(raw.get(section, {}))
    if "manufacturing" in raw:  # optional: absent, the resolved config has no such table
        data["manufacturing"] = check_manufacturing(
            raw["manufacturing"], mesh, data.get("filter", {}).get("type"),
            data.get("design", {}).get("passive"), label)
    data["solver"] = solver
    data.update(check_nonlinear(raw, data, config.physics_class, mesh, label))
    if is_incremental(raw) or offers_increments(config.physics_class):
        data.update(check_increment_sections(raw, data, config.physics_class))
    else:
        refuse_increment_keys(data.get("objective"), raw)
        data.update(check_time_sections(raw, data, config.physics_class, mesh, label,
                                        optimize))
    check_frequency(data, kind, optimize=optimize)
    check_robust(data, kind)
    check_cost(data, kind)
    check_constraint_analyses(data)
    if optimize:
        check_output_spring(data, kind, config.physics_class, mesh)
    check_stress_combinations(data, kind)
    _check_consistency(data)
    check_load_case_use(data)
    warn_about_filter(data, mesh, source)
    return config

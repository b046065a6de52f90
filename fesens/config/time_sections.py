"""The sections of a time-dependent analysis: ``[analysis]`` (static, transient, dynamic or
harmonic), ``[time]`` (the time levels, the scheme, output and checkpointing),
``[damping]`` (Rayleigh), ``[harmonic]`` (the driving frequencies), ``[initial]`` (the
initial field and velocity), ``[[probes]]`` (nodes whose history is written), a load's
``history`` table and the objective's time aggregate (``[objective] over_time``).

Which analyses a physics offers is read from its fragment
(:class:`~fesens.physics.spec.PhysicsConfig`): a physics with an ``inertia`` key (the
``[material]`` coefficient of its time derivative) of ``time_order`` 1 offers a transient
analysis (``M Ṫ + K T = f``), of ``time_order`` 2 a dynamic and a harmonic one
(``M ü + C u̇ + K u = f``); nothing here names a physics.
"""

from __future__ import annotations

import math
from typing import Any

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
    require_list_of_tables,
    show,
    string,
)
from fesens.config.objectives import objective_kind, response_kind
from fesens.config.solver_needs import check_assembled_system
from fesens.config.time_memory import check_time_memory
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.fem.transient.schemes import (
    DEFAULT_SCHEMES,
    TIME_SCHEMES,
    schemes_of_order,
    time_scheme,
)
from fesens.fem.transient.time_levels import interval, step_count, time_grid

#: The top-level sections this module checks.
SECTIONS = ("analysis", "time", "damping", "harmonic", "initial", "probes")

STATIC = "static"
#: The analyses a physics offers by the order of its time derivative.
ANALYSES_OF_ORDER = {1: ("transient",), 2: ("dynamic", "harmonic")}
#: The analyses that step in time.
STEPPED = ("transient", "dynamic")
#: The matrix a stepped analysis gives its solver at every step (its scheme's coefficients
#: a and b; Rayleigh damping adds to both), assembled: not the stiffness alone.
STEP_MATRIX = "the assembled step matrix a M + b K at every time step"
#: The time-dependent analyses a nonlinear physics offers (each step a Newton solve).
NONLINEAR_ANALYSES = ("transient",)
#: The order of the equation each stepped analysis integrates (:data:`ANALYSES_OF_ORDER`).
STEPPED_ORDER = {kind: order for order, kinds in ANALYSES_OF_ORDER.items()
                 for kind in kinds if kind in STEPPED}
#: The schemes a config names for each stepped analysis (the records of
#: :data:`~fesens.fem.transient.schemes.TIME_SCHEMES` whose options are config keys, or
#: have defaults), and the default.
SCHEMES_OF = {kind: tuple(s.name for s in schemes_of_order(order, config=True))
              for kind, order in STEPPED_ORDER.items()}
DEFAULT_SCHEME = {kind: DEFAULT_SCHEMES[order] for kind, order in STEPPED_ORDER.items()}
#: The schemes' options that are ``[time]`` keys, with the schemes that take each.
SCHEME_KEYS = {key: (option, tuple(s.name for s in TIME_SCHEMES.values() if key in s.options))
               for s in TIME_SCHEMES.values() for key, option in s.options.items()
               if option.config}
#: Time aggregates of an objective's value per time level.
OVER_TIME = ("final", "integral", "ks")

ANALYSIS = {"type": Key(choice(STATIC, *(a for names in ANALYSES_OF_ORDER.values()
                                         for a in names)), STATIC,
                        "static, transient (first time derivative), dynamic or harmonic "
                        "(second)")}

TIME = {
    "start": Key(number(), 0.0, "the first time level"),
    "end": Key(number(), None, "the last time level (required)"),
    "step": Key(number(0.0, low_open=True), None, "the constant time step Δt (it must "
                "divide end − start); or steps"),
    "steps": Key(integer(1), None, "the number of equal time steps; or step"),
    "scheme": Key(choice(*(name for names in SCHEMES_OF.values() for name in names)), None,
                  "; ".join(f"{kind}: " + ", ".join(
                      name + (" (default)" if name == DEFAULT_SCHEME[kind] else "")
                      for name in names) for kind, names in SCHEMES_OF.items())),
    **{key: Key(number(option.low, None if np.isinf(option.high) else option.high), None,
                f"{', '.join(owners)}: {option.doc}")
       for key, (option, owners) in SCHEME_KEYS.items()},
    "lumped": Key(boolean(), False, "lumped (HRZ) instead of consistent mass"),
    "output_every": Key(integer(1), 1, "fields written every this many steps (and the "
                        "last)"),
    "max_states": Key(integer(2), None, "states the gradient keeps (>= 2): the others are "
                      "recomputed from checkpoints (default: all kept)"),
}

DAMPING = {
    "mass": Key(number(0.0), 0.0, "Rayleigh c_M of C = c_M M + c_K K"),
    "stiffness": Key(number(0.0), 0.0, "Rayleigh c_K of C = c_M M + c_K K"),
}

HARMONIC = {"frequencies": Key(numbers(low=0.0), None,
                               "driving frequencies in Hz (cycles per unit time; ω = 2π f), "
                               "required")}

PROBE = {
    "point": Key(numbers(), None, "the node whose history is written (required)"),
    "component": Key(component(), None, "its component (vector fields; default 0)"),
    "name": Key(string(), None, "column name (default: field and node)"),
}

#: ``[objective]`` keys of a time-dependent analysis.
OBJECTIVE_KEYS = {
    "over_time": Key(choice(*OVER_TIME), None, "transient/dynamic: the objective's value "
                     "at the last level (final), its time integral (integral) or a KS "
                     "maximum over the levels (ks); default final"),
    "time_rho": Key(number(0.0, low_open=True), None, "over_time = \"ks\": the KS "
                    "parameter (default 50)"),
    "power": Key(number(1.0), None, "the value per level is raised to this power before "
                 "the aggregate (e.g. 2: ∫ T² dt; default 1)"),
}
DEFAULT_TIME_RHO = 50.0


def _history(path: str, value: Any) -> list[list[float]]:
    """A piecewise linear time function: ``[[t0, v0], [t1, v1], ...]``, times increasing."""
    expected = "a table [[t0, v0], [t1, v1], ...] of at least two rows, times increasing"
    if not isinstance(value, list) or len(value) < 2:
        raise ConfigError(f"{path} = {show(value)} is not allowed: expected {expected}")
    pair = numbers(2)
    rows = [pair(join(path, i), row) for i, row in enumerate(value)]
    for i in range(1, len(rows)):
        if rows[i][0] <= rows[i - 1][0]:
            raise ConfigError(f"{path}: the times must increase, but row {i} has t = "
                              f"{rows[i][0]:g} after t = {rows[i - 1][0]:g}; give the rows "
                              "in increasing time")
    return rows


_history.expected = "a table [[t0, v0], [t1, v1], ...] of at least two rows"

#: The ``history`` key of a ``[[loads]]`` table.
HISTORY = Key(_history, None, "transient/dynamic: the load's factor in time, a table "
                              "[[t0, v0], [t1, v1], ...] interpolated linearly, constant "
                              "beyond its ends (default 1)")

#: The ``history`` key of a ``[[supports]]`` table.
SUPPORT_HISTORY = Key(_history, None, "transient/dynamic: the factor in time of the "
                      "support's value, a table [[t0, v0], [t1, v1], ...] interpolated "
                      "linearly, constant beyond its ends (default 1); every support with a "
                      "nonzero value follows the same one; a dynamic run's support starts "
                      "from rest")


def offered_analyses(physics: type) -> tuple[str, ...]:
    """The analyses a registered physics offers (its fragment's ``inertia`` and
    ``time_order``; a nonlinear physics steps a first time derivative by Newton, and has
    no frequency response or Newmark run)."""
    fragment = physics.config
    if fragment.inertia is None:
        return (STATIC,)
    offered = ANALYSES_OF_ORDER[fragment.time_order]
    if issubclass(physics, NonlinearModel):
        offered = tuple(a for a in offered if a in NONLINEAR_ANALYSES)
    return (STATIC, *offered)


def analysis_type(data: dict) -> str:
    """The analysis of a resolved config (``static`` without ``[analysis]``)."""
    return data.get("analysis", {}).get("type", STATIC)


def initial_spec(physics: type) -> dict[str, Key]:
    """``[initial]`` keys of a physics: its field (e.g. ``temperature``) and, for a second
    time derivative, ``velocity``."""
    spec = {physics.field_name: Key(number(), 0.0, f"initial {physics.field_name} "
                                    "(uniform; default 0)")}
    if physics.config.time_order == 2:
        spec["velocity"] = Key(number(), 0.0, "initial velocity (uniform; default 0)")
    return spec


def has_initial_state(raw: dict) -> bool:
    """Whether an unchecked config starts from a nonzero initial field (such a transient
    run needs no loads)."""
    initial = raw.get("initial")
    return isinstance(initial, dict) and any(
        isinstance(v, int | float) and v != 0 for v in initial.values())


def _refuse(raw: dict, sections: tuple[str, ...], kind: str, why: str) -> None:
    for section in sections:
        if section in raw:
            raise ConfigError(f"[{section}] does not apply to analysis.type = {show(kind)} "
                              f"({why}): remove [{section}] or change analysis.type")


def check_time_sections(raw: dict, data: dict, physics: type, mesh, label: str,
                        optimize: bool = False) -> dict:
    """The checked sections of a time-dependent analysis, and the refusals of what the
    analysis cannot do.

    Parameters
    ----------
    raw : dict
        The parsed config.
    data : dict
        The resolved sections so far (``loads``, ``supports``, ``objective``, ...);
        the objective's time keys are filled in there.
    physics : type
        The registered physics of ``physics.type``.
    mesh : Mesh
    label : str
        The mesh's source for messages.
    optimize : bool
        Read for ``fesens optimize``: the memory check counts the states of its gradient
        (:func:`~fesens.config.time_memory.check_time_memory`).

    Returns
    -------
    dict
        The resolved ``analysis``, ``time``, ``damping``, ``harmonic``, ``initial`` and
        ``probes`` that apply (none for a static config without ``[analysis]``).

    Raises
    ------
    ConfigError
        An analysis the physics does not offer, a section of another analysis, a time
        step <= 0 or one that does not divide the interval, an end before the start, a
        scheme of another analysis, a load or support history or objective aggregate of a
        static or harmonic run, supports with a nonzero value but different histories, a
        history on a support held at 0, a harmonic run's nonzero support, a run beyond
        the available memory, a stepped run with a solver of the stiffness operator only
        (:func:`~fesens.config.solver_needs.check_assembled_system`).
    """
    out: dict[str, Any] = {}
    if "analysis" in raw:
        out["analysis"] = check_table("analysis", raw["analysis"], ANALYSIS)
    kind = out.get("analysis", {}).get("type", STATIC)
    offered = offered_analyses(physics)
    if kind not in offered:
        raise ConfigError(f"analysis.type = {show(kind)} is not offered by physics.type = "
                          f"{show(physics.name)}: it offers {', '.join(offered)}")
    stepped = kind in STEPPED
    if not stepped:
        _refuse(raw, ("time", "initial"), kind, "it does not step in time")
        for section in ("loads", "supports"):
            for i, item in enumerate(data[section]):
                if "history" in item:
                    raise ConfigError(f"{join(section, i)}.history applies to a transient "
                                      f"or dynamic analysis, not analysis.type = "
                                      f"{show(kind)}: remove it or set [analysis] type")
    if kind in (STATIC, "transient"):
        _refuse(raw, ("damping", "harmonic"), kind, "damping and driving frequencies "
                "belong to dynamic and harmonic analyses")
    if kind == "dynamic":
        _refuse(raw, ("harmonic",), kind, "driving frequencies belong to "
                "analysis.type = \"harmonic\"")
    if kind == STATIC:
        _refuse(raw, ("probes",), kind, "probes follow a field in time or frequency")
        _check_objective(data, kind, physics)
        return out
    if data.get("load_cases"):
        raise ConfigError(f"[[load_cases]] do not apply to analysis.type = {show(kind)}: "
                          "give each load its own history instead, or run one config per "
                          "case")
    if stepped:
        check_assembled_system(data["solver"], f"analysis.type = {show(kind)}",
                               STEP_MATRIX)
        out["time"] = _check_time(raw.get("time"), kind)
        out["initial"] = check_table("initial", raw.get("initial", {}), initial_spec(physics))
        _check_support_histories(data["supports"])
    if kind != "transient":
        out["damping"] = check_table("damping", raw.get("damping", {}), DAMPING)
    if kind == "harmonic":
        moving = [i for i, s in enumerate(data["supports"]) if np.any(s["value"])]
        if moving:
            path = join("supports", moving[0])
            raise ConfigError(f"{path}.value = {show(data['supports'][moving[0]]['value'])} "
                              "is a nonzero value: "
                              "analysis.type = \"harmonic\" takes supports fixed at 0 only "
                              "(a harmonic base excitation is not offered); set the value "
                              "to 0, or move the support in time with analysis.type = "
                              "\"dynamic\" and a history")
    if kind == "harmonic":
        out["harmonic"] = check_table("harmonic", raw.get("harmonic", {}), HARMONIC)
        if "frequencies" not in out["harmonic"] or not out["harmonic"]["frequencies"]:
            raise ConfigError("missing key 'harmonic.frequencies': the driving frequencies "
                              "in Hz, e.g. frequencies = [10.0, 20.0]")
    if "probes" in raw:
        out["probes"] = _check_probes(raw["probes"], physics, mesh)
    _check_objective(data, kind, physics)
    if stepped:
        check_time_memory(kind, out["time"], len(data["loads"]), len(out.get("probes", ())),
                          mesh, physics, optimize=optimize)
    return out


def _check_support_histories(supports: list[dict]) -> None:
    """The run moves every prescribed value by one factor in time, so the supports with a
    nonzero value share one history (or none has one); a zero value has nothing to move."""
    moving = [i for i, s in enumerate(supports) if np.any(s["value"])]
    for i, support in enumerate(supports):
        if "history" in support and i not in moving:
            raise ConfigError(f"{join('supports', i)}.history moves nothing: the support's "
                              "value is 0; give it a nonzero value or remove the history")
    if not moving:
        return
    first = supports[moving[0]].get("history")
    for i in moving[1:]:
        if supports[i].get("history") != first:
            raise ConfigError(f"{join('supports', i)}.history differs from "
                              f"{join('supports', moving[0])}.history: every support with a "
                              "nonzero value follows one factor in time; give them all the "
                              "same history (or none)")


def _check_time(raw: Any, kind: str) -> dict:
    if raw is None:
        raise ConfigError(f"missing [time]: analysis.type = {show(kind)} needs [time] with "
                          "end and step (or steps)")
    time = check_table("time", raw, TIME)
    if "end" not in time:
        raise ConfigError("missing key 'time.end': the last time level")
    try:  # the rules of a time grid live in fesens.fem.transient.time_levels
        interval(time["start"], time["end"])
    except ValueError as exc:
        raise ConfigError(f"time.end = {time['end']:g} is refused: {exc}") from None
    if ("step" in time) == ("steps" in time):
        raise ConfigError("[time]: give exactly one of step (the time step) and steps (their "
                          "number)")
    if "step" in time:
        try:
            step_count(time["start"], time["end"], time["step"],
                       fix="give a step that does, or steps")
        except ValueError as exc:
            raise ConfigError(f"time.step = {time['step']:g} is refused: {exc}") from None
    time.setdefault("scheme", DEFAULT_SCHEME[kind])
    if time["scheme"] not in SCHEMES_OF[kind]:
        raise ConfigError(f"time.scheme = {show(time['scheme'])} is not a scheme of "
                          f"analysis.type = {show(kind)}: choose one of "
                          f"{', '.join(SCHEMES_OF[kind])}")
    options = time_scheme(time["scheme"]).options
    for key, (_, owners) in SCHEME_KEYS.items():
        if key in time and key not in options:
            raise ConfigError(f"time.{key} applies to time.scheme = "
                              f"{' or '.join(show(name) for name in owners)}, not "
                              f"{show(time['scheme'])}")
    return time


def _check_probes(raw: Any, physics: type, mesh) -> list[dict]:
    out, names = [], set()
    vector = physics.config.vector_field
    for i, table in enumerate(require_list_of_tables("probes", raw)):
        path = join("probes", i)
        item = check_table(path, table, PROBE)
        if "point" not in item:
            raise ConfigError(f"missing key '{path}.point': the node whose history is "
                              "written")
        node = selections.nearest_node(path, item["point"], mesh)
        item.setdefault("component", 0)
        if item["component"] >= (mesh.dim if vector else 1):
            raise ConfigError(f"{path}.component = {item['component']} is not allowed: the "
                              f"field of {physics.name} has "
                              f"{mesh.dim if vector else 1} component(s) per node")
        item.setdefault("name", probe_name(physics, node, item["component"], vector))
        if item["name"] in names:
            raise ConfigError(f"{path}.name = {show(item['name'])}: another probe has it")
        names.add(item["name"])
        out.append(item)
    return out


def probe_name(physics: type, node: int, comp: int, vector: bool) -> str:
    """``temperature_node4`` or ``displacement_y_node4``."""
    axis = f"_{'xyz'[comp]}" if vector else ""
    return f"{physics.field_name}{axis}_node{node}"


def _check_objective(data: dict, kind: str, physics: type) -> None:
    """The objective's time keys apply to stepped analyses, whose objective is a function
    of the state at each level (:func:`check_step_objective`); a harmonic objective is
    linear in the field, refused here for every command (``solve`` too, which does not
    evaluate it) as ``sensitivity`` and ``optimize`` would refuse it."""
    objective = data.get("objective")
    if objective is None:
        return
    given = [key for key in OBJECTIVE_KEYS if key in objective]
    if kind not in STEPPED:
        if given:
            raise ConfigError(f"objective.{given[0]} applies to a transient or dynamic "
                              f"analysis, not analysis.type = {show(kind)}")
        if kind == "harmonic":
            check_step_objective(response_kind(physics.name, objective["type"]),
                                 objective["type"], linear=True)
        return
    check_step_objective(response_kind(physics.name, objective["type"]), objective["type"],
                         nonlinear=issubclass(physics, NonlinearModel))
    objective.setdefault("over_time", "final")
    objective.setdefault("power", 1.0)
    if objective["over_time"] == "ks":
        objective.setdefault("time_rho", DEFAULT_TIME_RHO)
    elif "time_rho" in objective:
        raise ConfigError(f"objective.time_rho applies to over_time = \"ks\", not "
                          f"{show(objective['over_time'])}")


def check_step_objective(kind_name: str, type_name: str, *, linear: bool = False,
                         nonlinear: bool = False) -> None:
    """Refuse an objective kind that a time level cannot evaluate: one that does not
    depend on the level's state (volume, the eigen kinds); with ``linear`` (a harmonic
    response's functional, linear in the field) or ``nonlinear`` (a Newton run, whose level
    has no solution of its physics to read) also one that reads more of a solve than its
    field and load (a stress, a stored energy: the kind's ``reads``)."""
    kind = objective_kind(kind_name)
    if kind.everywhere or kind.analysis != "static":
        raise ConfigError(f"objective.type = {show(type_name)} cannot be aggregated over "
                          "time: a transient or dynamic objective is a function of the "
                          "state at each time level (e.g. compliance, a value at a point, a "
                          "stress aggregate)")
    if kind.reads and linear:
        raise ConfigError(f"objective.type = {show(type_name)} does not apply to "
                          "analysis.type = \"harmonic\": its objective is linear in the "
                          "field (e.g. compliance or a value at a point); run the load in "
                          "time with analysis.type = \"dynamic\" instead")
    if kind.reads and nonlinear:
        raise ConfigError(f"objective.type = {show(type_name)} of a nonlinear physics' run: "
                          "its time objective is a function of the field and the load at "
                          "each level (e.g. compliance or a value at a point)")


def time_levels(time: dict) -> np.ndarray:
    """The time levels ``(N + 1,)`` of a resolved ``[time]``: its ``steps``, or as many as
    its ``step`` makes, equal from ``start`` to ``end``."""
    steps = (time["steps"] if "steps" in time
             else step_count(time["start"], time["end"], time["step"]))
    return time_grid(t_start=time["start"], t_end=time["end"], steps=steps)


def load_histories(data: dict) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{load name: (times, values)}`` of the loads with a ``history`` table."""
    return {load["name"]: tuple(np.asarray(load["history"], dtype=float).T)
            for load in data["loads"] if "history" in load}


def support_history(data: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """``(times, values)`` of the supports' ``history`` table (one, shared by every support
    with a nonzero value), or None without one."""
    tables = [s["history"] for s in data["supports"] if "history" in s]
    return tuple(np.asarray(tables[0], dtype=float).T) if tables else None


def angular_frequencies(data: dict) -> np.ndarray:
    """``ω = 2π f`` ``(n,)`` of ``[harmonic] frequencies`` (Hz)."""
    return 2 * math.pi * np.asarray(data["harmonic"]["frequencies"], dtype=float)

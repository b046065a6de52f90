"""The axes a config can combine, read from the records that declare them, and the tiny
config of one point of their product.

Each :class:`Axis` takes its values from a registry of fesens (the physics, their
``[physics]`` options with choices, the line searches, the generated meshes, the analyses,
the time schemes, the objective kinds a physics offers, ``--wrt`` targets, optimizers,
filters, projections and the robust switch, manufacturing constraints, solver backends and
their aliases, the multigrid's devices, the commands of the ``fesens`` group); nothing here
lists a choice by hand. What cannot come from a registry is *data*: the size of a tiny mesh
of each generator and a value for each required key. :data:`TINY_MESHES` and
:func:`key_value` give those, and ``test_every_registered_choice_has_its_data`` fails for a
registry entry that has none, so a new physics, mesh generator or objective with a new
required key joins the walk or fails it.

The data are mirror symmetric: a cantilever clamped on its left face, loaded by a point
force along x at the middle of its right face, so that every design of it is symmetric about
the mid-plane ``y = ly / 2`` (and ``z = lz / 2`` in 3D) unless a constraint breaks that.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fesens.cli import cli
from fesens.config.checks import REQUIRED
from fesens.config.increments import INCREMENTAL, offers_increments
from fesens.config.manufacturing import MANUFACTURING
from fesens.config.mesh_section import MESH
from fesens.config.objectives import OBJECTIVES, everywhere
from fesens.config.optimization_sections import FILTER, PROJECTION, ROBUST
from fesens.config.stress_constraints import METHODS as STRESS_METHODS
from fesens.config.stress_constraints import STRESS_KEYS
from fesens.config.time_sections import (
    ANALYSES_OF_ORDER,
    SCHEMES_OF,
    STATIC,
    STEPPED,
    offered_analyses,
)
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.fem.nonlinear.line_search import LINE_SEARCHES
from fesens.opt import OPTIMIZERS
from fesens.opt.filters import FILTERS
from fesens.physics import PHYSICS
from fesens.solvers import SOLVER_ALIASES, available_solvers, solver_class
from fesens.solvers.multigrid import DEVICES
from fesens.workflow.analysis import wrt_choices

#: A generator's tiny mesh: its ``[mesh]`` keys besides ``type`` (12x6 in 2D, 4x2x2 in 3D).
TINY_MESHES: dict[str, dict[str, Any]] = {
    "rectangle": {"size": [2.0, 1.0], "cells": [12, 6]},
    "box": {"size": [2.0, 1.0, 1.0], "cells": [4, 2, 2]},
    "ground_structure": {"size": [2.0, 1.0], "cells": [4, 2]},
}
#: ``[mesh]`` types that read a file rather than generate a mesh: no tiny mesh of their own.
FILE_MESHES = ("file",)
#: The manufacturing constraints' tables that keep the data's mirror symmetry about y: a
#: mirror plane normal to y, columns and a build direction along x (the overhang at a
#: critical angle other than the default 45°, two cells sideways per layer on the tiny
#: meshes' cubic cells).
MANUFACTURING_VALUES: dict[str, dict[str, Any]] = {
    "symmetry": {"symmetry": ["y"]}, "extrusion": {"extrusion": "x"},
    "overhang": {"overhang": "+x", "overhang_angle": 26.57}}
#: Time levels of a stepped analysis and the driving frequency of a harmonic one (Hz), far
#: below the first eigenfrequency of the tiny cantilevers (about 0.035 for E = ρ = 1).
TIME = {"end": 0.3, "steps": 3}
HARMONIC = {"frequencies": [0.01]}
#: The load factors of an incremental analysis: loading, partial unloading.
INCREMENTS = (0.0, 0.5, 1.0, 0.5)
#: Optimization iterations of one run, and of the first part of a resumed one.
ITERATIONS = 4
RESUME_AFTER = 2
#: The ``fesens`` commands whose argument is a config (the study's is a study file naming
#: one as its base).
CONFIG_ARGUMENTS = ("config_path", "study_path")


@dataclass(frozen=True)
class Axis:
    """One axis of the product: its values and the commands that read it.

    Attributes
    ----------
    name : str
    values : tuple
        Every choice its registry offers (``None``: the key is absent, the default).
    source : str
        The registry the values are read from, for the report.
    commands : tuple of str
        The commands whose result the axis can change; for the others it is inert and
        not varied (e.g. ``solve`` reads no ``[optimizer]``).
    """

    name: str
    values: tuple
    source: str
    commands: tuple[str, ...]


def config_commands() -> tuple[str, ...]:
    """The commands of the ``fesens`` group that run a config."""
    return tuple(name for name, command in cli.commands.items()
                 if any(param.name in CONFIG_ARGUMENTS for param in command.params))


def objective_types() -> tuple[str, ...]:
    """Every objective type name some physics offers (static and eigen), and the kinds
    every physics offers, in registry order."""
    names = [kind.name for kind in everywhere()]
    for cls in PHYSICS:
        names += [*cls.config.responses, *cls.config.eigen_responses]
    return tuple(dict.fromkeys(names))


def _switches(spec: dict) -> tuple[str, ...]:
    """The keys of a section that switch a feature on, not the options of another key
    (``overhang_p`` is an option of ``overhang``)."""
    return tuple(key for key in spec if not any(key.startswith(f"{other}_") for other in spec))


def _robust_switches() -> tuple[str, ...]:
    """The boolean keys of the robust formulation (its other keys are its parameters)."""
    switches = []
    for key, spec in ROBUST.items():
        try:
            spec.check(key, True)
        except Exception:  # a parameter: its check refuses a boolean
            continue
        switches.append(key)
    return tuple(switches)


def _physics_choices() -> tuple[tuple[str, str], ...]:
    """Every ``[physics]`` key with a choice of strings and each of its choices (a plane,
    a material law, a treatment of void cells), over the registered physics."""
    return tuple(dict.fromkeys((option.name, choice) for cls in PHYSICS
                               for option in cls.config.options for choice in option.choices))


def _offered_choices(physics: type, dim: int) -> tuple:
    return (None, *((option.name, choice) for option in physics.config.options
                    if dim in option.dims for choice in option.choices))


#: ``[newton] line_search`` as a config spells it (TOML has no null: "none").
LINE_SEARCH_KEYS = tuple(name or "none" for name in LINE_SEARCHES)


def _solvers() -> tuple[str, ...]:
    return (*SOLVER_ALIASES, *available_solvers())


def axes() -> tuple[Axis, ...]:
    """Every axis, values read from the registries."""
    commands = config_commands()
    optimize = tuple(c for c in commands if c == "optimize")
    sensitivity = tuple(c for c in commands if c == "sensitivity")
    with_objective = tuple(c for c in commands if c != "solve")
    projections = (*PROJECTION, *((name, switch) for name, spec in PROJECTION.items()
                                  for switch in _robust_switches() if switch in spec))
    return (
        Axis("command", commands, "fesens.cli.cli.commands", commands),
        Axis("physics", PHYSICS.names(), "fesens.physics.PHYSICS", commands),
        Axis("physics_choice", (None, *_physics_choices()),
             "fesens.physics: each physics' config.options with choices", commands),
        Axis("line_search", (None, *LINE_SEARCH_KEYS),
             "fesens.fem.nonlinear.line_search.LINE_SEARCHES", commands),
        Axis("mesh", tuple(t for t in MESH if t not in FILE_MESHES),
             "fesens.config.mesh_section.MESH", commands),
        Axis("analysis", (STATIC, *(a for names in ANALYSES_OF_ORDER.values() for a in names),
                          INCREMENTAL),
             "fesens.config.time_sections: STATIC, ANALYSES_OF_ORDER; "
             "fesens.config.increments.INCREMENTAL", commands),
        Axis("scheme", (None, *dict.fromkeys(n for names in SCHEMES_OF.values() for n in names)),
             "fesens.config.time_sections.SCHEMES_OF (TIME_SCHEMES)", commands),
        Axis("objective", objective_types(),
             "PhysicsConfig.responses, eigen_responses; objectives.everywhere()",
             with_objective),
        Axis("wrt", wrt_choices(), "fesens.workflow.analysis.wrt_choices", sensitivity),
        Axis("optimizer", tuple(OPTIMIZERS), "fesens.opt.OPTIMIZERS", optimize),
        Axis("filter", tuple(FILTERS), "fesens.opt.filters.FILTERS", optimize),
        Axis("projection", projections, "fesens.opt.projection.PROJECTIONS, ROBUST",
             optimize),
        Axis("manufacturing", (None, *_switches(MANUFACTURING)),
             "fesens.config.manufacturing.MANUFACTURING", optimize),
        Axis("local_stress", (None, *STRESS_METHODS),
             "fesens.config.stress_constraints.METHODS", optimize),
        Axis("solver", _solvers(), "fesens.solvers: SOLVER_ALIASES, available_solvers()",
             commands),
        Axis("device", (None, *DEVICES), "fesens.solvers.multigrid.DEVICES "
             "(backends that offer matrix_free)", commands),
        Axis("ranks", (1,), "fesens.mpi: one process (mpirun is not walked here)", commands),
    )


def applies(axis: Axis, point: dict) -> bool:
    """Whether ``axis`` can change the result at ``point`` (the axes before it drawn)."""
    if point["command"] not in axis.commands:
        return False
    if axis.name == "physics_choice":  # keys of the physics that has such options
        return any(option.choices for option in PHYSICS.get(point["physics"]).config.options)
    if axis.name == "scheme":  # a key of the stepped analyses' [time]
        return point["analysis"] in SCHEMES_OF
    if axis.name == "line_search":  # a key of [newton], which the nonlinear physics read
        return issubclass(PHYSICS.get(point["physics"]), NonlinearModel)
    if axis.name == "device":  # an option of the backends that offer a matrix-free level
        return point["solver"] not in SOLVER_ALIASES and \
            solver_class(point["solver"]).offers_matrix_free
    return True


def offered(axis: Axis, point: dict) -> tuple:
    """The values of ``axis`` that the point's physics declares it offers (all of them for
    an axis no physics record narrows): where a sample finds the points that run."""
    if "physics" not in point:
        return axis.values
    physics = PHYSICS.get(point["physics"])
    fragment = physics.config
    narrowed = {
        "analysis": lambda: ((INCREMENTAL,) if offers_increments(physics)
                             else (STATIC, *offered_analyses(physics))),
        "objective": lambda: (*fragment.responses, *(
            (*fragment.eigen_responses, *(kind.name for kind in everywhere()))
            if point["command"] == "optimize" else ())),
        "wrt": lambda: wrt_choices(physics),
        "physics_choice": lambda: _offered_choices(
            physics, len(TINY_MESHES[point["mesh"]]["size"]) if "mesh" in point else 2),
        "scheme": lambda: (None, *SCHEMES_OF.get(point.get("analysis"), ())),
    }
    return narrowed[axis.name]() if axis.name in narrowed else axis.values


def combinations(command: str | None = None) -> Iterator[dict]:
    """Every point of the product, an axis held at its first value where it is inert.

    Parameters
    ----------
    command : str, optional
        Only this command's points.

    Yields
    ------
    dict
        ``{axis name: value}``.
    """
    all_axes = axes()
    commands = all_axes[0].values if command is None else (command,)

    def walk(point: dict, rest: tuple[Axis, ...]) -> Iterator[dict]:
        if not rest:
            yield dict(point)
            return
        axis, *others = rest
        values = axis.values if applies(axis, point) else axis.values[:1]
        for value in values:
            point[axis.name] = value
            yield from walk(point, tuple(others))
        del point[axis.name]

    for name in commands:
        yield from walk({"command": name}, all_axes[1:])


#: The axes whose values :func:`applies` reads: the count of the rest of the product
#: depends on these alone.
READ_BY_APPLIES = ("command", "physics", "analysis", "solver")


def count(command: str | None = None) -> int:
    """The number of points :func:`combinations` yields, counted axis by axis (the rest of
    the product after each axis depends only on the values :func:`applies` reads, so the
    counts of equal states are shared, not walked again)."""
    all_axes = axes()

    @functools.cache
    def rest(index: int, state: tuple) -> int:
        if index == len(all_axes):
            return 1
        axis = all_axes[index]
        values = axis.values if applies(axis, dict(state)) else axis.values[:1]
        return sum(rest(index + 1, (*state, (axis.name, value))
                        if axis.name in READ_BY_APPLIES else state) for value in values)

    commands = all_axes[0].values if command is None else (command,)
    return sum(rest(1, (("command", name),)) for name in commands)


def load_point(mesh: dict) -> list[float]:
    """The loaded node: the middle of the right face (x = lx)."""
    size = mesh["size"]
    return [size[0], *(s / 2 for s in size[1:])]


def key_value(key: str, mesh: dict) -> Any:
    """A value for a required key of an objective, filter or projection table.

    Raises
    ------
    KeyError
        For a key it has no value for (``test_every_registered_choice_has_its_data``).
    """
    cell = mesh["size"][0] / mesh["cells"][0]
    # limit: a stress limit near the tiny cantilevers' stresses (E = 1, a unit force)
    values = {"point": load_point(mesh), "component": "x", "radius": 1.5 * cell,
              "limit": 1.0}
    return values[key]


def _required(spec: dict, mesh: dict) -> dict:
    return {key: key_value(key, mesh) for key, item in spec.items() if item.default is REQUIRED}


def _objective(name: str, physics: type, mesh: dict) -> dict:
    fragment = physics.config
    kind_name = {**fragment.responses, **fragment.eigen_responses}.get(name, name)
    kind = OBJECTIVES.get(kind_name)
    table = {"type": name}
    if kind is not None:
        table.update(_required(dict(kind.keys), mesh))
        if fragment.vector_field:
            table.update(_required(dict(kind.vector_keys), mesh))
    return table


def _chosen_constants(physics: type, key: str, choice: str) -> dict:
    """The ``[material]`` parameters a ``[physics]`` choice asks for instead of the
    physics' own (a material law's constants); empty where it asks for none or is not an
    option of ``physics`` (the check then refuses the key)."""
    options = {option.name: option.default for option in physics.config.options}
    if physics.config.material_of is None or key not in options:
        return {}
    return physics.config.material_of({**options, key: choice}) or {}


#: Material constants whose generic value (1) is not a material's: Gent's locking
#: invariant ``J_m`` of 1 locks the chains at the tiny cantilever's strains (rubbers: tens);
#: an Ogden exponent of 1 makes the tensile nominal stress saturate (incompressible
#: uniaxial ``P = μ (1 − λ^{−3/2})``), a limit load below the walk's load (rubbers fit
#: exponents near 2 or above for the leading term; 2 is neo-Hookean).
CONSTANT_VALUES = {"Jm": 50.0, "alpha1": 2.0, "alpha2": 2.0, "alpha3": 2.0}


def constant_value(name: str, parameter) -> float:
    """A value inside a parameter's admissible range: :data:`CONSTANT_VALUES`, else 1, or
    one above a lower bound of 1 or more (e.g. a chain's locking stretch > 1)."""
    if name in CONSTANT_VALUES:
        return CONSTANT_VALUES[name]
    lower = parameter.lower
    return 1.0 if lower is None or lower < 1.0 else float(lower) + 1.0


def _off_its_bound(physics: type, wrt: str | None) -> dict:
    """The differentiated ``[material]`` parameter moved off a closed lower bound its
    default sits on (a hardening modulus of 0): a central difference there would step
    outside its range. Empty for any other target."""
    parameter = physics.parameters.get(wrt) if wrt is not None else None
    if parameter is None or wrt not in physics.config.material or parameter.lower is None \
            or parameter.lower_open:
        return {}
    default = inspect.signature(physics).parameters[wrt].default
    if default is None or default != parameter.lower:
        return {}
    return {wrt: constant_value(wrt, parameter)}


def config_for(point: dict) -> dict:
    """The config (a TOML-writable dict) of a point of :func:`combinations`.

    A physics or mesh that a choice does not fit still gets a config: the check must refuse
    it, naming the key.
    """
    physics = PHYSICS.get(point["physics"])
    fragment = physics.config
    mesh = {"type": point["mesh"], **TINY_MESHES[point["mesh"]]}
    dim = len(mesh["size"])
    node_load = next(kind for kind in fragment.loads if kind.on == "nodes")
    value = [1.0] + [0.0] * (dim - 1) if node_load.vector else 1.0
    config: dict[str, Any] = {
        "name": "combination",
        "mesh": mesh,
        "physics": {"type": point["physics"]},
        "material": {key: 1.0 for key in (fragment.inertia, fragment.mass) if key},
        "supports": [{"group": "left"}],
        "loads": [{"type": node_load.type, "name": "F", "point": load_point(mesh),
                   "value": value}],
    }
    if point.get("physics_choice") is not None:
        key, choice = point["physics_choice"]
        config["physics"][key] = choice
        config["material"].update({name: constant_value(name, parameter) for name, parameter in
                                   _chosen_constants(physics, key, choice).items()})
    moved = _off_its_bound(physics, point.get("wrt"))
    config["material"].update(moved)
    if point.get("line_search") is not None:
        config["newton"] = {"line_search": point["line_search"]}
    if point["analysis"] != STATIC:
        config["analysis"] = {"type": point["analysis"]}
        if point["analysis"] == INCREMENTAL:
            config["analysis"]["factors"] = list(INCREMENTS)
        elif point["analysis"] in STEPPED:
            config["time"] = dict(TIME)
            if point.get("scheme") is not None:
                config["time"]["scheme"] = point["scheme"]
        else:
            config["harmonic"] = dict(HARMONIC)
    if "objective" in point:
        config["objective"] = _objective(point["objective"], physics, mesh)
    if point["command"] == "optimize":
        config.update(_optimization(point, mesh))
    if point["solver"] is not None:
        config["solver"] = {"backend": point["solver"]}
        if point.get("device") is not None:
            config["solver"]["options"] = {"matrix_free": True, "device": point["device"]}
    return config


def _optimization(point: dict, mesh: dict) -> dict:
    """The optimize-only sections of a point."""
    projection = point["projection"]
    name, switch = projection if isinstance(projection, tuple) else (projection, None)
    sections: dict[str, Any] = {
        "constraints": {"volume_fraction": 0.5},
        "filter": {"type": point["filter"], **_required(FILTER.get(point["filter"], {}), mesh)},
        "projection": {"type": name, **_required(PROJECTION[name], mesh)},
        "optimizer": {"type": point["optimizer"]},
        "stop": {"max_iter": ITERATIONS},
        "output": {"every": 0},
    }
    if switch is not None:
        sections["projection"][switch] = True
    if point["manufacturing"] is not None:
        key = point["manufacturing"]
        sections["manufacturing"] = dict(MANUFACTURING_VALUES[key])
    if point.get("local_stress") is not None:
        sections["constraints"]["stress"] = {"method": point["local_stress"],
                                             **_required(STRESS_KEYS, mesh)}
    return sections

"""Study files (``fesens study STUDY.toml``): a base config, parameters, a design, outputs.

The format (documented with an example in ``fesens/docs/study.md``)::

    name = "bracket-study"            # default: the file name without .toml
    base = "bracket.toml"             # a config of `fesens solve` (relative to this file)
    # preset = "cantilever3d"         # or a built-in problem instead of base

    [design]
    type = "lhs"                      # grid | lhs | sobol | table
    samples = 64                      # lhs, sobol (a power of two)
    seed = 0                          # lhs, sobol
    # file = "samples.csv"            # table: one column per parameter (+ optional sample)

    [[parameters]]
    target = "material.E"             # material.E | material.nu | material.conductivity |
                                      # loads.NAME.magnitude | loads.NAME.angle
    name = "E"                        # column name (default: E, nu, NAME.magnitude, ...)
    range = [60e3, 80e3]              # or values = [...] (grid) or value = 0.3 (fixed)
    levels = 3                        # grid over range
    scale = "linear"                  # or "log"
    # axes = ["z", "y"]               # angle: rotation plane, from the first axis to the second

    [[outputs]]
    type = "stress_pnorm"             # compliance | thermal_compliance | displacement |
    name = "stress"                   # temperature | stress_pnorm | stress_ks, with their keys
    p = 8.0

Parsing is :mod:`tomllib` (nothing executes) and every problem raises
:class:`~fesens.config.ConfigError` naming the key path, before any sample runs.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fesens.config import Config, ConfigError, load_config, load_preset
from fesens.config.checks import (
    REQUIRED,
    Key,
    check_table,
    check_typed,
    choice,
    did_you_mean,
    integer,
    join,
    number,
    numbers,
    require_list_of_tables,
    require_table,
    show,
    string,
    unknown_key,
)
from fesens.config.evaluation import analysis_spec
from fesens.config.fingerprint import data_fingerprint, problem_fingerprint
from fesens.config.loading import read_toml
from fesens.config.objectives import objective_kind
from fesens.config.physics_keys import response_variants, selects_nodes
from fesens.config.selections import nearest_node, nodes
from fesens.config.time_sections import OBJECTIVE_KEYS as TIME_KEYS
from fesens.config.time_sections import STEPPED, analysis_type
from fesens.errors import read_failure
from fesens.fem.assembly.dofs import AXES
from fesens.study.config_model import ConfigEvaluate, ConfigSetup, Target, is_vector_load
from fesens.study.designs import (
    Design,
    DesignError,
    Parameter,
    from_table,
    full_factorial,
    latin_hypercube,
    sobol,
)
from fesens.study.parametric import ParametricModel
from fesens.study.tablefiles import read_table

TOP_LEVEL = ("name", "description", "base", "preset", "design", "parameters", "outputs")

#: Most samples a study may have (one solve each; split a larger study into several).
MAX_SAMPLES = 1_000_000

DESIGNS = {
    "grid": {},
    "lhs": {"samples": Key(integer(1, MAX_SAMPLES), REQUIRED, "number of samples"),
            "seed": Key(integer(0), 0, "random seed")},
    "sobol": {"samples": Key(integer(1, MAX_SAMPLES), REQUIRED,
                             "number of samples (a power of two)"),
              "seed": Key(integer(0), 0, "random seed")},
    "table": {"file": Key(string(), REQUIRED, "CSV file, one column per parameter")},
}


def _axis_pair() -> Any:
    expected = 'two different axes, e.g. ["z", "y"]'

    def check(path: str, value: Any) -> list[int]:
        if (not isinstance(value, list) or len(value) != 2
                or not all(isinstance(v, str) and v in AXES for v in value)
                or value[0] == value[1]):
            raise ConfigError(f"{path} = {show(value)} is not allowed: expected {expected}")
        return [AXES.index(v) for v in value]

    check.expected = expected
    return check


PARAMETER = {
    "target": Key(string(), REQUIRED, "what the parameter sets"),
    "name": Key(string(), None, "column name (default: the target without 'material.' or "
                                "'loads.')"),
    "range": Key(numbers(2), None, "[low, high] (sampled designs, grids with levels)"),
    "values": Key(numbers(), None, "grid values"),
    "value": Key(number(), None, "fixed value (the same in every sample)"),
    "levels": Key(integer(1), None, "grid: number of values over range"),
    "scale": Key(choice("linear", "log"), "linear", "how range is filled"),
    "axes": Key(_axis_pair(), None, "angle: rotation plane"),
}

@dataclass
class StudySpec:
    """A checked study file.

    Attributes
    ----------
    name : str
    data : dict
        The resolved study (defaults filled in; base config inlined as ``base_config``), for
        ``study.json`` and to check that a resumed study is the same.
    config : Config
        The base configuration.
    design : Design
    model : ParametricModel
    """

    name: str
    data: dict
    config: Config
    design: Design
    model: ParametricModel

    @property
    def fingerprint(self) -> str:
        """The hash of what the study computes: its base config's problem (mesh content
        and sections, :mod:`fesens.config.fingerprint`) and its design, parameters and
        outputs; not its name and description."""
        labels = ("name", "description")
        base = {part: digest for part, digest in problem_fingerprint(self.config).items()
                if part not in labels}
        study = {key: value for key, value in self.data.items()
                 if key not in (*labels, "base_config")}
        return data_fingerprint({"base_config": base, "study": study})


# ------------------------------------------------------------------ pieces
def _base(raw: dict, folder: Path) -> Config:
    if ("base" in raw) == ("preset" in raw):
        raise ConfigError("give the base configuration: either base = \"config.toml\" or "
                          "preset = \"NAME\" (not both)")
    if "preset" in raw:
        return load_preset(string()("preset", raw["preset"]), optimize=False)
    path = Path(string()("base", raw["base"])).expanduser()
    path = path if path.is_absolute() else folder / path
    if not path.is_file():
        raise ConfigError(f"base = {show(raw['base'])}: no such config file ({path})")
    return load_config(path, optimize=False)


def _target(path: str, text: str, config: Config, axes: list[int] | None) -> Target:
    parts = text.split(".")
    materials = config.physics_class.config.material
    loads = {load["name"]: load for load in config.data["loads"]}
    allowed = ([f"material.{m}" for m in materials]
               + [f"loads.{n}.{k}" for n in loads for k in ("magnitude", "angle")])
    if len(parts) == 2 and parts[0] == "material" and parts[1] in materials:
        target = Target("material", parts[1])
    elif len(parts) >= 3 and parts[0] == "loads" and parts[-1] in ("magnitude", "angle"):
        name = ".".join(parts[1:-1])
        if name not in loads:
            raise ConfigError(f"{path} = {show(text)}: the base config has no load named "
                              f"{name!r}{did_you_mean(name, loads)} (loads: "
                              f"{', '.join(loads) or 'none'})")
        target = Target(parts[-1], name)
        if target.kind == "angle":
            target = _angle(path, target, loads[name], config, axes)
    else:
        raise ConfigError(f"{path} = {show(text)} is not allowed: expected one of "
                          f"{', '.join(allowed)}{did_you_mean(text, allowed)}")
    if axes is not None and target.kind != "angle":
        raise ConfigError(f"{join(path.rsplit('.', 1)[0], 'axes')} applies to angle "
                          "targets only")
    return target


def _angle(path: str, target: Target, load: dict, config: Config,
           axes: list[int] | None) -> Target:
    if not is_vector_load(config, load):
        vectors = ", ".join(kind.type for kind in config.physics_class.config.loads
                            if kind.vector) or "none here"
        raise ConfigError(f"{path}: load {target.key!r} ({load['type']}) has no direction "
                          f"to rotate; angles apply to vector loads ({vectors})")
    if config.data.get("load_cases"):
        raise ConfigError(f"{path}: the base config's [[load_cases]] scale the load "
                          f"{target.key!r} as a whole, so its angle cannot be a parameter; "
                          "study each direction with its own base config, or remove "
                          "[[load_cases]] from the base")
    if axes is None:
        if config.dim == 3:
            raise ConfigError(f"{join(path.rsplit('.', 1)[0], 'axes')}: a 3D angle needs the "
                              'rotation plane, e.g. axes = ["z", "y"]')
        axes = [0, 1]
    if max(axes) >= config.dim:
        raise ConfigError(f"{join(path.rsplit('.', 1)[0], 'axes')}: the mesh is "
                          f"{config.dim}D (axes {', '.join(AXES[:config.dim])})")
    return Target("angle", target.key, (axes[0], axes[1]))


def _parameter(path: str, raw: Any, config: Config,
               design_type: str) -> tuple[str, Target, Parameter | None]:
    """``(name, target, parameter)``; the parameter is None for a column of a table design."""
    item = check_table(path, raw, PARAMETER)
    target = _target(join(path, "target"), item["target"], config, item.get("axes"))
    name = item.get("name") or (target.key if target.kind == "material"
                                else f"{target.key}.{target.kind}")
    given = [k for k in ("range", "values", "value") if k in item]
    if design_type == "table":
        if given and given != ["value"]:
            raise ConfigError(f"{path}: a table design takes the values from its file; give "
                              f"no {given[0]} (or a fixed value)")
        return name, target, Parameter(name, value=item["value"]) if given else None
    if len(given) != 1:
        raise ConfigError(f"{path}: give exactly one of range, values or value (got "
                          f"{', '.join(given) or 'none'})")
    if design_type in ("lhs", "sobol") and "values" in item:
        raise ConfigError(f"{join(path, 'values')}: a {design_type} design samples a range; "
                          "give range = [low, high] (values are for grid designs)")
    if design_type == "grid" and "range" in item and "levels" not in item:
        raise ConfigError(f"{path}: a grid over a range needs levels (the number of values)")
    if "levels" in item and "range" not in item:
        raise ConfigError(f"{join(path, 'levels')} goes with a range")
    try:
        parameter = Parameter(name, range=tuple(item["range"]) if "range" in item else None,
                              values=tuple(item["values"]) if "values" in item else None,
                              value=item.get("value"), levels=item.get("levels"),
                              scale=item["scale"])
    except DesignError as err:
        raise ConfigError(f"{path}: {err}") from None
    return name, target, parameter


def _output(path: str, raw: Any, config: Config) -> dict:
    raw = require_table(path, raw)
    # the physics' objectives (functions of the solution; volume is constant here)
    offered = config.physics_class.config.responses
    variants = {kind: {k: v for k, v in spec.items()
                       if k not in objective_kind(offered[kind]).design_keys}
                for kind, spec in response_variants(config.physics).items() if kind in offered}
    # a run's output is aggregated over its time levels as an [objective] is
    timed = TIME_KEYS if analysis_type(config.data) in STEPPED else {}
    variants = {kind: {**spec, **timed, "name": Key(string(), None, "column name")}
                for kind, spec in variants.items()}
    item = check_typed(path, raw, variants, label=f"{config.physics} output type")
    item.setdefault("name", item["type"])
    if "point" in item:
        nearest_node(path, item["point"], config.mesh)
    elif "group" in item:
        nodes(path, {"group": item["group"]}, config.mesh, config.label)
    elif selects_nodes(config.physics, item["type"]):
        raise ConfigError(f"{path}: missing the selection: give point = [...] or group = "
                          "\"...\"")
    if item.get("component", 0) >= config.dim:
        raise ConfigError(f"{path}.component = {item['component']} is not allowed: this mesh "
                          f"is {config.dim}D (components 0..{config.dim - 1})")
    try:  # what the base's analysis cannot evaluate is refused before any sample runs
        return {**analysis_spec(config, item), "name": item["name"]}
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def _unique(path: str, names: list[str], what: str) -> None:
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ConfigError(f"{join(path, i)}: another {what} is named {name!r}; give each "
                              "its own name")


def _check_grid_size(parameters: list[Parameter]) -> None:
    """Refuse a grid of more than :data:`MAX_SAMPLES` samples before it is built."""
    levels = [1 if p is None or p.fixed else len(p.values) if p.values is not None
              else p.levels or 1 for p in parameters]
    size = math.prod(levels)
    if size > MAX_SAMPLES:
        raise ConfigError(f"design: a grid of {size} samples ({' x '.join(map(str, levels))}) "
                          f"is more than the limit of {MAX_SAMPLES}: use fewer levels, or a "
                          "lhs or sobol design with samples ≤ the limit")


def _design(spec: dict, names: list[str], parameters: list[Parameter | None],
            folder: Path) -> Design:
    kind = spec["type"]
    try:
        if kind == "grid":
            _check_grid_size(parameters)
            return full_factorial(parameters)
        if kind == "lhs":
            return latin_hypercube(parameters, spec["samples"], spec["seed"])
        if kind == "sobol":
            return sobol(parameters, spec["samples"], spec["seed"])
    except DesignError as err:
        raise ConfigError(f"design: {err}") from None
    return _table_design(spec, names, parameters, folder)


def _table_design(spec: dict, names: list[str], parameters: list[Parameter | None],
                  folder: Path) -> Design:
    path = Path(spec["file"]).expanduser()
    path = path if path.is_absolute() else folder / path
    where = f"design.file = {show(spec['file'])}"
    if path.suffix.lower() != ".csv" or not path.is_file():
        raise ConfigError(f"{where}: expected an existing .csv file ({path})")
    try:
        columns = read_table(path)
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{where}: cannot read {path} as a CSV table: "
                          f"{read_failure(err)}") from None
    except (csv.Error, ValueError) as err:  # the reader's words and read_table's: no text
        raise ConfigError(f"{where}: cannot read {path} as a CSV table: {err}") from None
    rows = len(next(iter(columns.values()), []))
    table = {}
    for name, parameter in zip(names, parameters, strict=True):
        if parameter is not None:
            table[name] = [parameter.value] * rows
        elif name in columns:
            table[name] = [_cell(where, name, i, v) for i, v in enumerate(columns[name])]
        else:
            # the header row is the file's text: its names are not echoed
            raise ConfigError(f"{where}: no column {name!r} in the header row of {path} "
                              f"({len(columns)} columns); give one per parameter")
    if "sample" in columns:
        table["sample"] = [int(_cell(where, "sample", i, v)) for i, v in
                           enumerate(columns["sample"])]
    if not next(iter(table.values()), []):
        raise ConfigError(f"{where}: the table has no rows")
    try:
        return from_table(table, names)
    except DesignError as err:
        raise ConfigError(f"{where}: {err}") from None


def _cell(where: str, column: str, row: int, value: str) -> float:
    try:
        number_value = float(value)
    except ValueError:
        number_value = math.nan
    if not math.isfinite(number_value):
        raise ConfigError(f"{where}: row {row + 1}, column {column!r} is not a finite "
                          "number")
    return number_value


# ------------------------------------------------------------------ the file
def resolve_study(raw: dict, *, folder: Path, default_name: str) -> StudySpec:
    """Check a parsed study file and build its design and model.

    Raises
    ------
    ConfigError
        The first problem, naming the key path.
    """
    raw = require_table("", raw)
    for key in raw:
        if key not in TOP_LEVEL:
            raise unknown_key("", key, TOP_LEVEL)
    for key in ("design", "parameters", "outputs"):
        if key not in raw:
            what = "a [design] table" if key == "design" else f"[[{key}]] tables"
            raise ConfigError(f"missing {key!r}: a study needs {what}")
    name = string()("name", raw.get("name", default_name))
    description = string()("description", raw.get("description", ""))
    config = _base(raw, folder)
    design_spec = check_typed("design", raw["design"], DESIGNS)
    items = require_list_of_tables("parameters", raw["parameters"])
    if not items:
        raise ConfigError("parameters is empty: give at least one [[parameters]] table")
    checked = [_parameter(join("parameters", i), item, config, design_spec["type"])
               for i, item in enumerate(items)]
    names = [name for name, _, _ in checked]
    _unique("parameters", names, "parameter")
    targets = [raw_item["target"] for raw_item in items]
    for i, (_, target, _) in enumerate(checked):
        if target in [t for _, t, _ in checked[:i]]:
            raise ConfigError(f"parameters[{i}].target = {show(targets[i])}: another parameter "
                              "sets this already")
    outputs_raw = require_list_of_tables("outputs", raw["outputs"])
    if not outputs_raw:
        raise ConfigError("outputs is empty: give at least one [[outputs]] table")
    outputs = [_output(join("outputs", i), item, config) for i, item in enumerate(outputs_raw)]
    _unique("outputs", [o["name"] for o in outputs], "output")
    clash = set(names) & {o["name"] for o in outputs}
    if clash:
        raise ConfigError(f"names used by both a parameter and an output: {sorted(clash)}")
    design = _design(design_spec, names, [p for _, _, p in checked], folder)
    rotated = tuple(target.key for _, target, _ in checked if target.kind == "angle")
    setup = ConfigSetup(config.data, config.source,
                        tuple((o["name"], o) for o in outputs), rotated)
    evaluate = ConfigEvaluate(tuple((name, target) for name, target, _ in checked))
    model = ParametricModel(setup, evaluate, outputs=[o["name"] for o in outputs], name=name)
    data = {"name": name, "description": description, "design": design_spec,
            "parameters": [dict(item) for item in items], "outputs": outputs,
            "base_config": config.data}
    return StudySpec(name, data, config, design, model)


def load_study(path: str | Path) -> StudySpec:
    """Read and check a study file; paths in it are relative to its folder.

    Raises
    ------
    ConfigError
        Missing or unreadable file, invalid TOML, or a failed check (``"<file>: ..."``).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"study file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read study file {path}: {err}") from None
    raw = read_toml(text, source=str(path))
    try:
        return resolve_study(raw, folder=path.resolve().parent, default_name=path.stem)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None

"""Built-in problems: commented TOML files in ``fesens/config/presets/``.

``fesens presets`` lists them, ``fesens optimize --preset NAME`` runs one and
``--dump-config`` prints it as shipped: a preset's mesh is a generator or a packaged mesh
(``[mesh] packaged = "lbracket"``), so the printed file runs from any folder and gives the
same result.

Each preset describes itself from its keys (:func:`summary_line`): its mesh, physics,
analysis, objective, constraints, penalization, filter, projection, manufacturing
constraints and optimizer, as the file sets them; the free-text ``description`` is not
listed, so the listing cannot say what the file does not do.

This module reads the preset files only; :func:`load_preset` imports the checks and the
models when it is called, so that listing the presets stays quick.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fesens.config.checks import ConfigError, did_you_mean

if TYPE_CHECKING:
    from fesens.config.resolved import Config

PRESET_DIR = Path(__file__).resolve().parent / "presets"


def preset_names() -> list[str]:
    """Names of the built-in presets, sorted."""
    return sorted(path.stem for path in PRESET_DIR.glob("*.toml"))


def _path(name: str) -> Path:
    path = PRESET_DIR / f"{name}.toml"
    if name not in preset_names():
        raise ConfigError(f"unknown preset {name!r}{did_you_mean(name, preset_names())} "
                          f"(presets: {', '.join(preset_names())})")
    return path


#: What the resolved config holds where a file leaves a section's ``type`` out (the defaults
#: of the checks in :mod:`fesens.config.schema`, ``analysis`` from
#: :mod:`fesens.config.time_sections`, ``physics`` the first registered one). Listing the
#: presets reads their files only, since importing the checks takes about a second;
#: ``tests/config/test_presets_summary.py`` checks every entry against a resolved config.
ABSENT_TYPES = {"analysis": "static", "objective": "compliance",
                "penalization": "simp", "filter": "density", "projection": "none",
                "optimizer": "oc"}
#: The cells of a generated mesh without ``mesh.cell_type`` (checked as :data:`ABSENT_TYPES`).
ABSENT_CELL_TYPES = {"rectangle": "quad4", "box": "hex8"}
#: A continuation's ``every`` where the file leaves it out (checked as :data:`ABSENT_TYPES`).
ABSENT_EVERY = 20
#: The parameters the line shows of each interpolation and projection where the file leaves
#: them out: their constructors' defaults (:mod:`fesens.opt.interpolation`; checked as
#: :data:`ABSENT_TYPES`, for every registered one).
ABSENT_PARAMETERS = {"simp": {"penalty": 3.0}, "ramp": {"penalty": 8.0},
                     "du-olhoff": {"penalty": 3.0}, "pedersen": {"penalty": 3.0},
                     "ordered": {"penalty": 3.0}, "none": {},
                     "heaviside": {"beta": 1.0, "eta": 0.5}}
#: The objective kinds of the eigen analysis (``analysis = "eigen"`` in
#: :mod:`fesens.config.objectives`; checked as :data:`ABSENT_TYPES`): a frequency design,
#: which maximizes them.
EIGEN_KINDS = ("eigenvalue", "frequency", "eigenvalue_sum", "eigenvalue_ks")


def preset_summaries() -> dict[str, str]:
    """``{name: line}`` of every preset, each line generated from the preset's keys
    (:func:`summary_line`)."""
    return {name: summary_line(tomllib.loads(preset_text(name))) for name in preset_names()}


def summary_line(config: Mapping[str, Any]) -> str:
    """One line stating what a config sets up, from its keys only: dimension and mesh,
    physics and analysis; objective (minimized or maximized) and constraints; penalization,
    filter and projection; manufacturing constraints; optimizer.

    Parameters
    ----------
    config : mapping
        A config file's tables as TOML reads them, or a resolved config's data: a section
        or type the file leaves out is the resolved config's default (:data:`ABSENT_TYPES`).

    Returns
    -------
    str
        E.g. ``"2D rectangle 60x20 quad4, elasticity, static; minimize compliance, volume
        fraction ≤ 0.5; simp p = 3, density filter r = 2.4; optimizer OC"``.
    """
    groups = [[_mesh(config.get("mesh", {})), _physics(config), _analysis(config)],
              [_objective(config.get("objective", {})), *_constraints(config)],
              [_penalization(config.get("penalization", {})),
               _filter(config.get("filter", {})), _projection(config.get("projection", {}))],
              [f"{key} {_value(value)}" for key, value in config.get("manufacturing",
                                                                    {}).items()],
              [f"optimizer {_type(config, 'optimizer').upper()}"]]
    return "; ".join(", ".join(part for part in group if part) for group in groups if
                     any(group))


def _type(config: Mapping[str, Any], section: str) -> str:
    return config.get(section, {}).get("type", ABSENT_TYPES[section])


def _physics(config: Mapping[str, Any]) -> str:
    """``[physics] type``; a file without it gets the physics registry's first, which this
    listing does not import (every preset states its physics)."""
    return config.get("physics", {}).get("type", "the default physics")


def _analysis(config: Mapping[str, Any]) -> str:
    """``[analysis] type``, or ``eigen`` for a frequency design (an eigen objective)."""
    if "analysis" not in config and config.get("objective", {}).get("type") in EIGEN_KINDS:
        return "eigen"
    return _type(config, "analysis")


def _value(value: Any) -> str:
    """A key's value as the line shows it: numbers by ``%g``, lists joined by commas."""
    if isinstance(value, bool) or not isinstance(value, int | float | list):
        return str(value)
    if isinstance(value, list):
        return ", ".join(map(_value, value))
    return f"{value:g}"


def _parameter(table: Mapping[str, Any], kind: str, key: str) -> Any:
    """``table[key]``, else the default of ``kind``'s parameter ``key`` (None: unknown)."""
    return table.get(key, ABSENT_PARAMETERS.get(kind, {}).get(key))


def _schedule(value: Any) -> str:
    """A number, or a continuation ``start→final (+step or ×factor every N)``."""
    if not isinstance(value, Mapping):
        return _value(value)
    if "final" not in value:
        return _value(value["start"])
    raise_by = (f"×{_value(value['factor'])}" if "factor" in value
                else f"+{_value(value['step'])}" if "step" in value else "")
    every = f"every {value.get('every', ABSENT_EVERY)}"
    return f"{_value(value['start'])}→{_value(value['final'])} ({raise_by} {every})".replace(
        "( ", "(")


def _mesh(mesh: Mapping[str, Any]) -> str:
    if "packaged" in mesh:
        return f"packaged mesh {mesh['packaged']}"
    if "file" in mesh:
        return f"mesh file {Path(mesh['file']).name}"
    kind, cells = mesh.get("type", ""), mesh.get("cells", [])
    cell_type = mesh.get("cell_type", ABSENT_CELL_TYPES.get(kind, ""))
    return " ".join(part for part in (f"{len(cells)}D", kind.replace("_", " "),
                                      "x".join(map(str, cells)), cell_type) if part)


def _objective(objective: Mapping[str, Any]) -> str:
    kind = objective.get("type", ABSENT_TYPES["objective"])
    maximized = (kind in EIGEN_KINDS) != (objective.get("weight", 1.0) < 0)
    # "final" (the default of a time-dependent analysis) is the value at the end
    over_time = (f" ({objective['over_time']} over time)"
                 if objective.get("over_time", "final") != "final" else "")
    return f"{'maximize' if maximized else 'minimize'} {kind}{over_time}"


def _constraints(config: Mapping[str, Any]) -> list[str]:
    constraints = config.get("constraints", {})
    # a number bounds a fraction (volume_fraction, cost_fraction), a table (e.g. [constraints.
    # stress]) is a constraint with its own limit
    parts = [f"{key.replace('_', ' ')} ≤ {_value(value)}" for key, value in
             sorted(constraints.items(), key=lambda item: item[0] != "volume_fraction")
             if isinstance(value, int | float)]
    parts += [(f"{key} limit {_value(value['limit'])}" if "limit" in value else key)
              + (f" ({value['method'].replace('_', ' ')})" if "method" in value else "")
              for key, value in constraints.items() if isinstance(value, Mapping)]
    # the limit's sense is the kind's (a buckling load factor's is a lower bound)
    parts += [f"{extra.get('name', extra['type'])} limit {_value(extra['limit'])}"
              + (f" ({extra['normalization']})" if extra.get("normalization", "none")
                 != "none" else "") for extra in constraints.get("extra", [])]
    return parts


def _penalization(penalization: Mapping[str, Any]) -> str:
    kind = penalization.get("type", ABSENT_TYPES["penalization"])
    penalty = _parameter(penalization, kind, "penalty")
    penalty = "" if penalty is None else f" p = {_schedule(penalty)}"
    phases = penalization.get("names", penalization.get("densities"))
    return kind + penalty + (f" ({len(phases)} phases: {_value(phases)})" if phases else "")


def _filter(filter_: Mapping[str, Any]) -> str:
    kind = filter_.get("type", ABSENT_TYPES["filter"])
    if kind == "none":
        return "no filter"
    return f"{kind} filter" + (f" r = {_value(filter_['radius'])}" if "radius" in filter_
                               else "")


def _projection(projection: Mapping[str, Any]) -> str:
    kind = projection.get("type", ABSENT_TYPES["projection"])
    if kind == "none":
        return ""
    beta, eta = (_parameter(projection, kind, key) for key in ("beta", "eta"))
    keys = [f"β = {_schedule(beta)}" if beta is not None else "",
            f"η = {_value(eta)}" if eta is not None else "",
            "robust" if projection.get("robust") else "",
            f"Δη = {_value(projection['delta_eta'])}" if "delta_eta" in projection else ""]
    return " ".join([f"{kind} projection", *filter(None, keys)])


def preset_text(name: str) -> str:
    """The preset file's text, as shipped."""
    return _path(name).read_text(encoding="utf-8")


def load_preset(name: str, *, optimize: bool = True) -> Config:
    """The resolved config of a preset."""
    from fesens.config.loading import parse_config

    path = _path(name)
    return parse_config(path.read_text(encoding="utf-8"), source=f"preset {name!r}",
                        base_dir=path.parent, default_name=name, optimize=optimize)

"""The config keys each physics offers, built from its fragment (:mod:`fesens.physics.spec`).

``[physics]`` options, ``[material]`` keys, load types and their selections, ``[[supports]]``
keys and the objective types with their keys: everything of the config file that depends on
the physics, read through the physics registry. :mod:`fesens.config.schema` assembles these
with the physics-independent sections.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fesens.config import selections
from fesens.config.checks import (
    POSITIVE,
    REQUIRED,
    ConfigError,
    Key,
    boolean,
    check_table,
    choice,
    components,
    join,
    number,
    number_or_numbers,
    numbers,
    require_list_of_tables,
    show,
    string,
)
from fesens.config.objectives import (
    checked_fragment,
    everywhere,
    objective_kind,
    response_kind,
    static_kind,
)
from fesens.config.time_sections import HISTORY, SUPPORT_HISTORY
from fesens.fem.model.linear import LinearModel
from fesens.fem.model.parameters import Parameter
from fesens.physics import PHYSICS
from fesens.physics.spec import Option, Section, SectionKey

#: ``[material]`` mass density of a physics with eigen objectives (PhysicsConfig.mass).
MASS_DENSITY = Key(POSITIVE, None, "mass density ρ₀ of the solid, for the eigen objectives "
                                   "(frequency design; default 1)")

#: ``[material]`` coefficient of the time derivative of a physics that offers
#: time-dependent analyses (PhysicsConfig.inertia) when it is not its mass density.
INERTIA = Key(POSITIVE, None, "coefficient of the field's time derivative (e.g. the "
                              "volumetric heat capacity ρ c), for transient analyses "
                              "(default 1)")

NAME = Key(string(), None, "load name (default: type and index, e.g. point0)")

#: What the selection of a load selects (:data:`fesens.physics.spec.LOAD_SUPPORTS`): the
#: selection keys it takes and the function that checks them against the mesh.
LOAD_SELECTIONS = {
    "nodes": (("group", "region", "point"), selections.nodes),
    "facets": (("group", "region"), selections.facets),
    "cells": (("group", "region"), selections.cells),
}


def dims_text(dims: tuple[int, ...]) -> str:
    """``(2, 3)`` → ``"2D or 3D"``."""
    return " or ".join(f"{d}D" for d in dims)


def _option_check(option: Option) -> Callable:
    if option.extends is not None:
        return _extended_choice(option)
    return choice(*option.choices) if option.choices else number(option.lower, low_open=True)


def _extended_choice(option: Option) -> Callable:
    """One of ``option.choices``, or a string that ``option.extends`` accepts."""
    listed = choice(*option.choices)

    def check(path: str, value: Any) -> str:
        if value in option.choices or not isinstance(value, str):
            return listed(path, value)
        try:
            option.extends(value)
        except ValueError as exc:
            raise ConfigError(f"{path} = {show(value)} is not allowed: {exc}") from None
        return value

    check.expected = f"{listed.expected} or a name option {option.name!r} extends to"
    return check


def physics_variants(dim: int) -> dict[str, dict[str, Key]]:
    """Each registered physics' ``[physics]`` keys (besides ``type``) for a ``dim``-D mesh."""
    return {cls.name: {option.name: Key(_option_check(option), option.default, option.doc)
                       for option in cls.config.options if dim in option.dims}
            for cls in PHYSICS}


def _parameter_check(parameter: Parameter) -> Callable:
    return number(parameter.lower, parameter.upper, low_open=parameter.lower_open,
                  high_open=parameter.upper_open)


def material_spec(cls: type[LinearModel], options: dict | None = None) -> dict[str, Key]:
    """The ``[material]`` keys of a physics: its parameters' ranges and descriptions, the
    defaults of its constructor (required if none), or with the checked ``[physics]``
    ``options`` those they choose (:attr:`~fesens.physics.spec.PhysicsConfig.material_of`,
    required: a law's constants); and the mass density of its eigen solves
    (:attr:`~fesens.physics.spec.PhysicsConfig.mass`, not a constructor keyword)."""
    chosen = (None if options is None or cls.config.material_of is None
              else cls.config.material_of(options))
    if chosen is not None:
        spec = {key: Key(_parameter_check(parameter), REQUIRED, parameter.description)
                for key, parameter in chosen.items()}
    else:
        signature = inspect.signature(cls).parameters
        spec = {}
        for key in cls.config.material:
            default = signature[key].default
            parameter = cls.parameters[key]
            spec[key] = Key(_parameter_check(parameter),
                            REQUIRED if default is inspect.Parameter.empty else default,
                            parameter.description)
    if cls.config.mass is not None:
        spec[cls.config.mass] = MASS_DENSITY
    if cls.config.inertia is not None and cls.config.inertia != cls.config.mass:
        spec[cls.config.inertia] = INERTIA
    return spec


def constructor_material(cls: type[LinearModel], material: dict) -> dict:
    """The ``[material]`` values that are constructor keywords (the mass density and the
    coefficient of the time derivative are not)."""
    return {key: value for key, value in material.items()
            if key not in (cls.config.mass, cls.config.inertia)}


def material_variants() -> dict[str, dict[str, Key]]:
    """Each registered physics' ``[material]`` keys (:func:`material_spec`)."""
    return {cls.name: material_spec(cls) for cls in PHYSICS}


def load_variants(physics: str, dim: int) -> dict[str, dict[str, Key]]:
    """Load types of a physics and their keys (selection keys included)."""
    variants = {}
    for load in PHYSICS.get(physics).config.loads:
        value = (Key(numbers(dim), REQUIRED, f"{load.doc} ({dim} components)") if load.vector
                 else Key(number(), REQUIRED, load.doc))
        keys, _ = LOAD_SELECTIONS[load.on]
        variants[load.type] = {"name": NAME, "value": value, "history": HISTORY,
                               **selections.selection_spec(*keys),
                               **{flag: Key(boolean(), False, doc) for flag, doc in load.flags}}
    return variants


def support_spec(physics: str) -> dict[str, Key]:
    """Keys of one ``[[supports]]`` table."""
    cls = PHYSICS.get(physics)
    spec = dict(selections.selection_spec("group", "region", "point"))
    if cls.config.vector_field:
        spec["components"] = Key(components(), None, "fixed components (default: all)")
        spec["value"] = Key(number_or_numbers(), 0.0, "prescribed value(s)")
    else:
        spec["value"] = Key(number(), 0.0, f"prescribed {cls.field_name}")
    spec["history"] = SUPPORT_HISTORY
    return spec


def selects_nodes(physics: str, type_name: str) -> bool:
    """Whether the table of a response type of a physics selects nodes (``point`` or
    ``group``, one of them required)."""
    kind = static_kind(response_kind(physics, type_name))
    return kind is not None and kind.selection


def eigen_variants(physics: str) -> dict[str, dict[str, Key]]:
    """The eigen objective types of a physics (``[objective]`` of ``fesens optimize``
    only) and their keys."""
    return {name: dict(objective_kind(kind).keys)
            for name, kind in checked_fragment(physics).eigen_responses.items()}


def response_variants(physics: str) -> dict[str, dict[str, Key]]:
    """Objective (and extra-constraint) types of a physics and their keys."""
    fragment = checked_fragment(physics)
    variants = {}
    for name, kind_name in fragment.responses.items():
        kind = objective_kind(kind_name)
        variants[name] = {**kind.keys, **(kind.vector_keys if fragment.vector_field else {})}
    for kind in everywhere():
        variants[kind.name] = dict(kind.keys)
    return variants


# ------------------------------------------------------------------ physics sections
def section_names() -> tuple[str, ...]:
    """The top-level sections of every registered physics (:class:`~fesens.physics.spec.
    Section`), e.g. ``convection``, ``thermal``."""
    return tuple(dict.fromkeys(section.name for cls in PHYSICS
                               for section in cls.config.sections))


def _section_key_check(key: SectionKey, base_dir: Path | None) -> Callable:
    if key.value == "components":
        return components()
    if key.value == "numbers":
        return number_or_numbers(key.lower, low_open=key.lower_open)
    check_number = number(key.lower, low_open=key.lower_open)
    if not key.file:
        return check_number
    expected = f"{check_number.expected}, or the path of a file (a string)"

    def check(path: str, value: Any):
        if not isinstance(value, str):
            return check_number(path, value)
        file = Path(value) if base_dir is None else Path(base_dir) / value
        if base_dir is not None and not file.is_file():
            raise ConfigError(f"{path} = {show(value)}: there is no file {file} (paths are "
                              "relative to the config file)")
        return str(file.resolve()) if base_dir is not None else value

    check.expected = expected
    return check


def _named(section: Section) -> bool:
    """Whether each table of a section names its term (facet terms of a ``[[section]]``)."""
    return section.many and section.on != "nodes"


def section_spec(section: Section, base_dir: Path | None = None) -> dict[str, Key]:
    """The keys of one table of a physics section (selection keys first)."""
    spec = {}
    if section.on is not None:
        keys, _ = LOAD_SELECTIONS[section.on]
        spec.update(selections.selection_spec(*keys))
    if _named(section):
        spec["name"] = Key(string(), None, f"name (default: {section.name}<index>)")
    for key in section.keys:
        default = None if key.optional else REQUIRED if key.default is None else key.default
        spec[key.name] = Key(_section_key_check(key, base_dir), default, key.doc)
    return spec


def check_sections(raw: dict, physics: type[LinearModel], mesh, label: str,
                   base_dir: Path) -> dict[str, Any]:
    """The physics sections present in ``raw``, checked (files resolved against
    ``base_dir``, selections against the mesh); a section of another physics is refused."""
    own = {section.name: section for section in physics.config.sections}
    out: dict[str, Any] = {}
    for name in section_names():
        if name not in raw:
            continue
        if name not in own:
            owners = [cls.name for cls in PHYSICS
                      if any(section.name == name for section in cls.config.sections)]
            raise ConfigError(f"[{name}] applies to physics {' | '.join(owners)} only; this "
                              f"config's physics.type is {show(physics.name)}")
        section, spec = own[name], section_spec(own[name], base_dir)
        tables = require_list_of_tables(name, raw[name]) if section.many else [raw[name]]
        items = []
        for i, table in enumerate(tables):
            path = join(name, i) if section.many else name
            item = check_table(path, table, spec)
            if section.on is not None:
                LOAD_SELECTIONS[section.on][1](path, item, mesh, label)
            if _named(section):
                item.setdefault("name", f"{name}{i}")
            items.append(item)
        out[name] = items if section.many else items[0]
    return out


def anchors_the_field(physics: type[LinearModel], sections: dict[str, Any]) -> bool:
    """Whether the checked ``sections`` (of :func:`check_sections`) remove the null space of
    the stiffness, so that the model needs no support: a table of a section that declares
    ``anchors`` with that key > 0 (its facets are never empty: the selection is checked)."""
    for section in physics.config.sections:
        if section.anchors is None or section.name not in sections:
            continue
        tables = sections[section.name] if section.many else [sections[section.name]]
        if any(item[section.anchors] > 0 for item in tables):
            return True
    return False


def loads_the_model(physics: type[LinearModel], sections: dict[str, Any]) -> bool:
    """Whether the checked ``sections`` (of :func:`check_sections`) load the model: one of
    them is present whose term is a load (:attr:`~fesens.physics.spec.Section.loads`)."""
    return any(section.loads and section.name in sections
               for section in physics.config.sections)


def anchor_hint(physics: type[LinearModel]) -> str:
    """What anchors the field besides a support (for messages), e.g. ``" or a
    [[convection]] table with h > 0"``; empty when the physics has no such section."""
    return "".join(
        f" or a {f'[[{s.name}]]' if s.many else f'[{s.name}]'} table with {s.anchors} > 0"
        for s in physics.config.sections if s.anchors is not None)



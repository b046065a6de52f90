"""Every key a config may hold, section by section: what the documentation test compares
with the guides, and what the check of a key written below a table header
(:mod:`fesens.config.stray_keys`) reads."""

from __future__ import annotations

from collections.abc import Mapping

from fesens.config import increments, selections, time_sections
from fesens.config.checks import Key
from fesens.config.load_cases import LOAD_CASE
from fesens.config.manufacturing import MANUFACTURING
from fesens.config.mesh_section import MESH
from fesens.config.nonlinear import LOAD_PATH, NEWTON
from fesens.config.nonlinear import OBJECTIVE_KEYS as LEVEL_OBJECTIVE_KEYS
from fesens.config.optimization_sections import (
    FILTER,
    OUTPUT,
    PENALIZATION,
    PROJECTION,
    STOP,
    optimizer_variants,
)
from fesens.config.physics_keys import (
    eigen_variants,
    load_variants,
    material_variants,
    physics_variants,
    response_variants,
    section_spec,
    support_spec,
)
from fesens.config.schema import TOP_LEVEL
from fesens.config.time_sections import OBJECTIVE_KEYS as TIME_OBJECTIVE_KEYS
from fesens.config.time_sections import initial_spec
from fesens.physics import PHYSICS


def documented_keys() -> dict[str, set[str]]:
    """Every key of every section, every optimizer's options included (for the
    documentation test, and for the check of keys written below a table header)."""
    def keys(*specs: Mapping[str, Key]) -> set[str]:
        return {key for spec in specs for key in spec}

    names = PHYSICS.names()
    loads = [spec for name in names for spec in load_variants(name, 2).values()]
    responses = [spec for name in names for spec in (*response_variants(name).values(),
                                                     *eigen_variants(name).values())]
    return {
        "": set(TOP_LEVEL),
        "mesh": keys(*MESH.values()) | {"type"},
        "physics": keys(*physics_variants(2).values()) | {"type"},
        "material": keys(*material_variants().values()),
        "supports": keys(*(support_spec(name) for name in names)),
        "loads": keys(*loads) | {"type"},
        "load_cases": set(LOAD_CASE),
        **{section.name: keys(section_spec(section)) for cls in PHYSICS
           for section in cls.config.sections},
        "design": {"passive", "type", "group", "region", "initial"},
        "manufacturing": set(MANUFACTURING),
        "objective": keys(*responses) | {"type", "combine", *TIME_OBJECTIVE_KEYS,
                                         *LEVEL_OBJECTIVE_KEYS, *increments.OBJECTIVE_KEYS},
        "constraints": {"volume_fraction", "extra", "limit", "name", "cost_fraction"},
        "penalization": keys(*PENALIZATION.values()) | {"type"},
        "filter": keys(*FILTER.values()) | {"type"},
        "projection": keys(*PROJECTION.values()) | {"type"},
        "optimizer": keys(*optimizer_variants().values()) | {"type"},
        "stop": set(STOP),
        "output": set(OUTPUT),
        "solver": {"backend", "options", "adaptive_rtol", "adaptive_rtol_factor",
                   "adaptive_rtol_max"},
        "schedule": {"start", "final", "every", "step", "factor", "final_iterations"},
        "region": set(selections.REGION),
        "newton": set(NEWTON),
        "load_path": set(LOAD_PATH),
        **time_keys(),
    }


def time_keys() -> dict[str, set[str]]:
    """The keys of the sections of a time-dependent analysis (for the documentation test)."""
    return {"analysis": set(time_sections.ANALYSIS) | set(increments.ANALYSIS),
            "time": set(time_sections.TIME),
            "damping": set(time_sections.DAMPING), "harmonic": set(time_sections.HARMONIC),
            "initial": {key for cls in PHYSICS if cls.config.inertia is not None
                        for key in initial_spec(cls)},
            "probes": set(time_sections.PROBE)}

"""A user's physics by name in a config: ``[physics] type = "mypackage.module:Physics"``.

The name is an entry point of the group :data:`ENTRY_POINT_GROUP` that an installed
distribution declares (``[project.entry-points."fesens.physics"] my-physics =
"mypackage.module:Physics"``) or ``"module:attribute"`` of an installed distribution,
checked and imported exactly as a law's name is
(:func:`~fesens.physics.law_entry_points.check_reference`,
:func:`~fesens.physics.law_entry_points.load_reference`): a file path is refused, so a
config never runs a script. The object named is a class made by
:func:`~fesens.physics.user_physics.energy_physics`,
:func:`~fesens.physics.user_physics.weak_form_physics` or
:func:`~fesens.physics.user_physics_small_strain.small_strain_physics` of a scalar field
or of one component per space dimension.

:func:`register_named_physics` registers it in :data:`~fesens.physics.registry.PHYSICS`
under the config's name, with a configuration fragment: its parameters (and ``scale``'s
density is the design's) are the ``[material]`` keys, the loads are ``point``,
``surface`` and ``volume`` (a vector of ``dim`` numbers for a vector field), the
responses ``compliance`` and ``value``.
"""

from __future__ import annotations

import inspect

from fesens.physics.law_entry_points import check_reference, entry_point, load_reference
from fesens.physics.registry import PHYSICS, register_physics
from fesens.physics.spec import LoadKind, PhysicsConfig
from fesens.physics.user_physics import UserPhysics

#: The entry-point group of the physics that installed packages offer.
ENTRY_POINT_GROUP = "fesens.physics"


def register_named_physics(name: object) -> None:
    """Register the user physics a config's ``[physics] type`` names, unless the name is a
    registered physics already or names none (then the config check lists the known
    physics).

    Raises
    ------
    ValueError
        A file path, a package that is not installed, or an object that is no user
        physics of a scalar field or of ``dim`` components.
    """
    if not isinstance(name, str) or name in PHYSICS:
        return
    known = f"choose one of {', '.join(PHYSICS.names())}"
    looks_like_path = "/" in name or "\\" in name or name.endswith(".py")
    if ":" not in name and not looks_like_path and entry_point(name, ENTRY_POINT_GROUP) is None:
        return  # an unknown physics: the config check names the known ones
    check_reference(name, ENTRY_POINT_GROUP, "physics", "physics", known)
    target = load_reference(name, ENTRY_POINT_GROUP, "physics")
    if not (isinstance(target, type) and issubclass(target, UserPhysics)):
        raise ValueError(f"physics {name!r} names {target!r}, not a physics made by "
                         "energy_physics, weak_form_physics or small_strain_physics "
                         "(fesens.physics.user_physics)")
    if target.components not in (1, "dim"):
        raise ValueError(f"physics {name!r} has {target.components} components; a config "
                         "takes a scalar field or one component per space dimension "
                         "(components='dim')")
    register_physics(_configured(target, name))


def _configured(target: type[UserPhysics], name: str) -> type[UserPhysics]:
    """``target`` under the config's ``name``, with its configuration fragment and a
    constructor signature that names its parameters (what the config checks read)."""
    vector = target.components == "dim"
    what = "vector of dim numbers" if vector else "number"
    config = PhysicsConfig(
        material=tuple(target.defaults),
        vector_field=vector,
        loads=(LoadKind("point", "point_load", "nodes", vector, f"{what} per node"),
               LoadKind("surface", "surface_load", "facets", vector,
                        f"{what} per unit area"),
               LoadKind("volume", "volume_load", "cells", vector, f"{what} per unit volume")),
        responses={"compliance": "compliance", "value": "value"},
    )
    keyword = inspect.Parameter.KEYWORD_ONLY
    signature = inspect.Signature([
        inspect.Parameter("mesh", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("thickness", keyword, default=1.0),
        inspect.Parameter("quadrature_order", keyword, default=None),
        *(inspect.Parameter(k, keyword, default=v) for k, v in target.defaults.items())])
    return type(target.__name__, (target,), {"name": name, "config": config,
                                             "__signature__": signature,
                                             "__module__": target.__module__})

"""The check of a compliant-mechanism design: its output port needs a spring.

A design whose objective is the field's value at one point (``[objective] type =
"displacement"``, ``point``) where no load acts, driven by loads at other points only, is a
compliant mechanism: the load is its input port, the objective's point its output port
(Sigmund 1997, Mech. Struct. Mach. 25; Bendsøe & Sigmund 2003, §2.6). Without a stiffness
at the output (the workpiece: a ``[[springs]]`` entry, or another section a physics
declares as a stiffness to the ground at nodes) the design is free to make the port's
support as soft as the void allows: its displacement then grows without bound as the
hinges empty, and the optimum moves the port but can push nothing. Refused at check time,
for ``fesens optimize`` only (``solve`` and ``sensitivity`` may evaluate any point's value).

Not a mechanism here, so not checked: a load acting at the objective's point (a stiffness
design: a loaded point's deflection), loads on facets or cells (their nodes are many; the
objective's point is then usually among them), ``[[load_cases]]``, time-dependent and
harmonic analyses, and a physics without a nodal stiffness section (its objective's point
cannot get one).
"""

from __future__ import annotations

from fesens.config.checks import ConfigError, show
from fesens.config.objectives import response_kind
from fesens.config.selections import nodes
from fesens.config.time_sections import STATIC
from fesens.mesh.mesh import Mesh

#: The generic objective kind of a field's value at nodes (a physics names it its way:
#: elasticity's ``displacement``).
VALUE_KIND = "value"


def check_output_spring(data: dict, physics: str, physics_class, mesh: Mesh) -> None:
    """Refuse a mechanism objective (see the module docstring) with no stiffness section
    entry holding the objective's point in the objective's component.

    Parameters
    ----------
    data : dict
        The checked config's sections (``objective``, ``loads``, the physics' sections).
    physics : str
        The physics' name.
    physics_class : type
        Its model class (its config fragment declares the loads and sections).
    mesh : Mesh

    Raises
    ------
    ConfigError
        Naming ``objective.point``, the section's key and the entry to add.
    """
    objective = data.get("objective") or {}
    analysis = (data.get("analysis") or {}).get("type", STATIC)
    if "point" not in objective or data.get("load_cases") or analysis != STATIC:
        return
    if response_kind(physics, objective["type"]) != VALUE_KIND:
        return
    fragment = physics_class.config
    holding = [s for s in fragment.sections if s.stiffness and s.on == "nodes"]
    nodal_loads = {kind.type for kind in fragment.loads if kind.on == "nodes"}
    loads = data.get("loads") or []
    if not holding or not loads or any(load["type"] not in nodal_loads for load in loads):
        return
    port = mesh.nearest_node(objective["point"])
    if any(port in mesh.nodes(nodes("loads", load, mesh)) for load in loads):
        return
    component = objective.get("component")
    for section in holding:
        for entry in data.get(section.name) or []:
            components = entry.get("components")
            if port in mesh.nodes(nodes(section.name, entry, mesh)) and (
                    component is None or components is None or component in components):
                return
    section = holding[0]
    axis = "" if component is None else f", components = [{show('xyz'[component])}]"
    raise ConfigError(
        f"objective.point = {show(objective['point'])}: an objective of type "
        f"{show(objective['type'])} at a point where no load acts is a compliant mechanism's "
        f"output port, and no [[{section.name}]] entry holds it there: the design could "
        "detach the port, which then moves without bound as its hinges empty (the optimum "
        f"pushes nothing); add [[{section.name}]] with point = {show(objective['point'])}"
        f"{axis} and the workpiece's stiffness (e.g. the input's), or put the objective where"
        " a load acts")


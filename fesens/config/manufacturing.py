"""``[manufacturing]``: mirror symmetry, extrusion and the overhang filter of a design.

The keys name what a part's making asks of its design; each becomes a map of
:class:`~fesens.opt.DesignProblem`: ``symmetry`` and ``extrusion`` tie cells to one design
variable (:class:`~fesens.opt.design_maps.MirrorSymmetry`,
:class:`~fesens.opt.design_maps.Extrusion`, combined by
:meth:`~fesens.opt.design_maps.CellGroups.combine`: the ``design_map``, before the filter),
``overhang`` makes the printed densities of Langelaar's filter the physical ones
(:class:`~fesens.opt.overhang.OverhangFilter`, after filter and projection; along an
oblique unit vector :class:`~fesens.opt.overhang_oblique.ObliqueOverhangFilter`). The maps are
built while the config is checked, so a mesh they do not fit (not symmetric, not a lattice
of quad4/hex8 cells) is refused before any work, naming the key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fesens.config.checks import (
    ConfigError,
    Key,
    check_table,
    invalid,
    join,
    number,
    show,
    string,
)
from fesens.config.passive import check_passive_ties, passive_cells
from fesens.errors import MeshError
from fesens.mesh import Mesh
from fesens.mpi import launched
from fesens.opt import CellGroups, Extrusion, MirrorSymmetry
from fesens.opt.filters import FILTERS, Filter
from fesens.opt.overhang import OverhangAngleError
from fesens.opt.overhang_oblique import overhang_filter

if TYPE_CHECKING:
    from fesens.config.resolved import Config


def _axes(path: str, value: Any) -> list[str]:
    """A list of distinct axis names."""
    expected = _axes.expected
    if not isinstance(value, list) or not value or len(set(map(str, value))) != len(value) \
            or not all(isinstance(axis, str) for axis in value):
        raise invalid(path, value, expected)
    return list(value)


_axes.expected = 'a list of distinct axes, e.g. ["x"] or ["x", "z"]'


def _build_direction(path: str, value: Any) -> str | list[float]:
    """A build direction: its name (``"+z"``) or a vector of numbers (``[0, 0, 1]``); the
    filter checks it on the mesh (a unit vector; one oblique to the axes takes the filter of
    :mod:`fesens.opt.overhang_oblique`)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not value \
            or not all(isinstance(c, int | float) and not isinstance(c, bool) for c in value):
        raise invalid(path, value, _build_direction.expected)
    return [float(c) for c in value]


_build_direction.expected = 'a build direction: "+x", "-y", ... or a unit vector such as [0, 1]'

#: The keys that tie cells to one design variable, with the map each builds on a mesh.
_GROUPINGS = {"symmetry": MirrorSymmetry, "extrusion": Extrusion}

MANUFACTURING = {
    "symmetry": Key(_axes, None, "mirror planes, by the axis normal to each, through the "
                    "middle of the mesh's bounding box"),
    "extrusion": Key(string(), None, "the axis the design is constant along"),
    "overhang": Key(_build_direction, None, "build direction of Langelaar's overhang filter "
                    "(an axis or a unit vector, oblique ones too)"),
    "overhang_angle": Key(number(0.0, 90.0, low_open=True), None,
                          "critical overhang angle in degrees from the build plate (default "
                          "45; one the lattice realizes)"),
    "overhang_p": Key(number(1.0), None, "exponent P of the smooth maximum (default 40)"),
    "overhang_epsilon": Key(number(0.0, low_open=True), None,
                            "smoothing ε of the smooth minimum (default 1e-4)"),
}


def check_manufacturing(raw: Any, mesh: Mesh, filter_type: str | None,
                        passive: list[dict] | None = None, label: str = "") -> dict:
    """``[manufacturing]``, checked by building its maps on ``mesh``, with the checked
    ``[[design.passive]]`` tables ``passive``.

    Raises
    ------
    ConfigError
        Naming the key: an axis or build direction the mesh does not have, a mesh that is
        not symmetric about the plane or not a lattice of quad4/hex8 cells, overhang
        options without ``overhang``, a filter that replaces the gradient with a design map,
        a passive region the map does not map onto itself (naming it too), or a launch on
        several MPI ranks.
    """
    table = check_table("manufacturing", raw, MANUFACTURING)
    for option in ("overhang_angle", "overhang_p", "overhang_epsilon"):
        if option in table and "overhang" not in table:
            raise ConfigError(f"manufacturing.{option} = {show(table[option])} applies to the "
                              "overhang filter: give manufacturing.overhang too (the build "
                              "direction, e.g. \"+y\")")
    if table and launched().distributed:
        key = next(iter(table))
        raise ConfigError(
            f"manufacturing.{key} is not available under mpirun: symmetry, extrusion and the "
            "overhang filter work on the whole mesh (mirror images, columns, layers below) "
            f"while each of the {launched().size} ranks holds its part; run without mpirun")
    built = _built_maps(table, mesh)
    if passive:
        cells = passive_cells(passive, mesh, label)
        for key in _GROUPINGS:
            if key in built:
                check_passive_ties(key, table[key], built[key], cells, mesh)
    if any(key in built for key in _GROUPINGS) and filter_type in FILTERS and \
            FILTERS[filter_type].filter_gradient is not Filter.filter_gradient:
        key = "symmetry" if "symmetry" in table else "extrusion"
        raise ConfigError(f"manufacturing.{key} needs a filter of the densities: the "
                          f"{filter_type} filter replaces the gradient of each cell's density, "
                          "which the design map's shared variables do not have; give "
                          'filter.type = "density" or "helmholtz"')
    return table


def manufacturing_maps(table: dict, mesh: Mesh) -> dict:
    """The keywords ``design_map`` and ``overhang`` of a design problem for a checked
    ``[manufacturing]`` table (only those it asks for).

    Raises
    ------
    ConfigError
        Naming the key whose map does not fit ``mesh``.
    """
    built = _built_maps(table, mesh)
    maps: dict = {}
    if "overhang" in built:
        maps["overhang"] = built.pop("overhang")
    if built:
        groups = list(built.values())
        maps["design_map"] = groups[0] if len(groups) == 1 else CellGroups.combine(*groups)
    return maps


def _built_maps(table: dict, mesh: Mesh) -> dict:
    """Each map a checked ``[manufacturing]`` table asks for, by its key, built on ``mesh``.

    Raises
    ------
    ConfigError
        Naming the key whose map does not fit ``mesh``.
    """
    makers = {**_GROUPINGS, "overhang": lambda mesh, value: overhang_filter(
        mesh, value, angle=table.get("overhang_angle", 45.0), P=table.get("overhang_p", 40.0),
        epsilon=table.get("overhang_epsilon", 1e-4))}
    built: dict = {}
    for key, make in makers.items():
        if key not in table:
            continue
        try:
            built[key] = make(mesh, table[key])
        except (MeshError, ValueError) as err:
            # An angle the lattice does not realize is the angle's fault, not the direction's.
            named = "overhang_angle" if isinstance(err, OverhangAngleError) else key
            # The default angle (45) is refused along directions that do not realize it.
            value = show(table[named]) if named in table else "45 (the default)"
            raise ConfigError(f"{join('manufacturing', named)} = {value} is not "
                              f"allowed: {err}") from None
    return built


def problem_maps(config: Config) -> dict:
    """The ``design_map`` and ``overhang`` keywords of ``config``'s design problem (none
    without a ``[manufacturing]`` table)."""
    table = config.data.get("manufacturing")
    return manufacturing_maps(table, config.mesh) if table else {}

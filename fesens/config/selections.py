"""Where a support, load or passive region applies: a named group, a box region or a point.

A *selection* is a config table with exactly one of

* ``group = "top"``: a named set of the mesh (Gmsh physical group, generated side);
* ``region = { min = [x0, y0], max = [x1, y1] }``: an axis-aligned box (inclusive, with a
  small tolerance): nodes inside it, boundary facets with all nodes inside it, or cells
  whose centroid is inside it;
* ``point = [x, y]``: the node nearest to a point (inside the mesh's bounding box).

The functions here check a selection against a mesh (naming the key path, the available
groups and the nearest name on failure) and turn it into what :mod:`fesens.fem` accepts:
a set name or a coordinate predicate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from fesens.config.checks import (
    REQUIRED,
    ConfigError,
    Key,
    did_you_mean,
    join,
    numbers,
    show,
    string,
    sub_table,
)
from fesens.fem.post import probe
from fesens.mesh.mesh import Mesh

REGION = {
    "min": Key(numbers(), REQUIRED, "lower corner of the box"),
    "max": Key(numbers(), REQUIRED, "upper corner of the box"),
}

#: Spec entries of the three selection keys.
SELECTION_KEYS = {
    "group": Key(string(), None, "name of a mesh group (Gmsh physical group or generated side)"),
    "region": Key(sub_table(REGION, "a table { min = [...], max = [...] }"), None,
                  "axis-aligned box { min = [x0, y0(, z0)], max = [x1, y1(, z1)] }"),
    "point": Key(numbers(), None, "coordinates; the nearest node is used"),
}


def selection_spec(*keys: str) -> dict[str, Key]:
    """The spec entries for the allowed selection keys."""
    return {key: SELECTION_KEYS[key] for key in keys}


def check_one_of(path: str, table: dict, keys: Iterable[str], *, required: bool) -> str | None:
    """The selection key used in ``table`` (exactly one of ``keys``; none if not required)."""
    keys = list(keys)
    given = [k for k in keys if k in table]
    if len(given) > 1:
        raise ConfigError(f"{path}: give only one of {', '.join(keys)} (got {', '.join(given)})")
    if not given:
        if required:
            raise ConfigError(f"{path}: missing the selection: give one of "
                              f"{', '.join(keys)}")
        return None
    return given[0]


def _available(kind: str, names: Iterable[str]) -> str:
    names = sorted(names)
    return f"available {kind} groups: {', '.join(names) if names else 'none'}"


def _group_error(path: str, name: str, kind: str, names: Iterable[str], label: str):
    names = list(names)
    where = f"the mesh ({label})" if label else "the mesh"
    return ConfigError(f"{path} = {show(name)}: {where} has no {kind} group "
                       f"of that name{did_you_mean(name, names)} ({_available(kind, names)})")


def _box_predicate(path: str, region: dict, mesh: Mesh) -> Callable[[np.ndarray], np.ndarray]:
    lower, upper = np.asarray(region["min"]), np.asarray(region["max"])
    for key, corner in (("min", lower), ("max", upper)):
        if corner.shape != (mesh.dim,):
            raise ConfigError(f"{join(join(path, 'region'), key)} = {show(corner.tolist())} "
                              f"is not allowed: expected {mesh.dim} coordinates (the mesh is "
                              f"{mesh.dim}D)")
    if np.any(lower > upper):
        raise ConfigError(f"{join(path, 'region')}: min {show(lower.tolist())} must not exceed "
                          f"max {show(upper.tolist())}")
    tol = 1e-8 * float(np.ptp(mesh.points, axis=0).max())

    def inside(coords: np.ndarray) -> np.ndarray:
        return np.all((coords >= lower - tol) & (coords <= upper + tol), axis=1)

    return inside


def _empty_region(path: str, what: str, mesh: Mesh) -> ConfigError:
    low, high = mesh.bounding_box()
    return ConfigError(f"{join(path, 'region')} selects no {what} (the mesh spans "
                       f"{show(low.tolist())} to {show(high.tolist())})")


def nearest_node(path: str, point: list[float], mesh: Mesh) -> int:
    """Id of the node at ``point``, which must lie in the mesh's bounding box and hit a
    node (within :data:`~fesens.fem.post.probe.NODE_TOLERANCE` of the mesh's extent)."""
    coords = np.asarray(point, dtype=float)
    full = join(path, "point")
    if coords.shape != (mesh.dim,):
        raise ConfigError(f"{full} = {show(point)} is not allowed: expected {mesh.dim} "
                          f"coordinates (the mesh is {mesh.dim}D)")
    low, high = mesh.bounding_box()
    node, distance, tolerance = probe.nearest_node(mesh, coords)
    if probe.beyond_bounding_box(mesh, coords, tolerance):
        raise ConfigError(f"{full} = {show(point)} is outside the mesh, which spans "
                          f"{show(low.tolist())} to {show(high.tolist())}")
    if distance > tolerance:
        raise ConfigError(f"{full} = {show(point)} is not on a node: the nearest node is "
                          f"{show(mesh.points[node].tolist())}, {distance:.6g} away; give a "
                          f"node's coordinates, or a region or group")
    return node


def nodes(path: str, table: dict, mesh: Mesh, label: str = ""):
    """A node-set name or predicate for ``model.fix`` / ``point_load``."""
    key = check_one_of(path, table, ("group", "region", "point"), required=True)
    if key == "group":
        name = table["group"]
        if name not in mesh.node_sets and name not in mesh.facet_sets:
            raise _group_error(join(path, "group"), name, "node or facet",
                               {*mesh.node_sets, *mesh.facet_sets}, label)
        return name
    if key == "region":
        inside = _box_predicate(path, table["region"], mesh)
        if not inside(mesh.points).any():
            raise _empty_region(path, "node", mesh)
        return inside
    node = nearest_node(path, table["point"], mesh)
    return lambda coords: np.arange(len(coords)) == node


def facets(path: str, table: dict, mesh: Mesh, label: str = ""):
    """A facet-set name or predicate for tractions, pressures and fluxes."""
    key = check_one_of(path, table, ("group", "region"), required=True)
    if key == "group":
        name = table["group"]
        if name not in mesh.facet_sets:
            raise _group_error(join(path, "group"), name, "facet", mesh.facet_sets,
                               label)
        return name
    inside = _box_predicate(path, table["region"], mesh)
    boundary = mesh.boundary_facets()
    if not inside(mesh.points)[boundary.facets].all(axis=1).any():
        raise _empty_region(path, "boundary facet", mesh)
    return inside


def cells(path: str, table: dict, mesh: Mesh, label: str = ""):
    """A cell-set name or centroid predicate (None: no selection given, i.e. all cells)."""
    key = check_one_of(path, table, ("group", "region"), required=False)
    if key is None:
        return None
    if key == "group":
        name = table["group"]
        if name not in mesh.cell_sets:
            raise _group_error(join(path, "group"), name, "cell", mesh.cell_sets,
                               label)
        return name
    inside = _box_predicate(path, table["region"], mesh)
    if not inside(mesh.cell_centroids()).any():
        raise _empty_region(path, "cell (centroid)", mesh)
    return inside

"""``[[design.passive]]`` as one kind per cell, and the refusals that need it.

A cell is designed, passive solid or passive void (:data:`~fesens.opt.design_maps.PASSIVE_KINDS`).
Two regions of opposite types may not share a cell, and a design map of ``[manufacturing]``
(mirror symmetry, extrusion) may not tie cells of different kinds: the design problem sets
the passive values after the map, so a one-sided passive region would silently break the
symmetry (the extrusion) the user asked for. Both are refused while the config is checked,
naming the keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fesens.config import selections
from fesens.config.checks import ConfigError, join, show
from fesens.mesh import Mesh
from fesens.opt.design_maps import PASSIVE_KINDS, CellGroups

#: A passive region's ``type`` as its cells' index in :data:`PASSIVE_KINDS`.
_CODES = {"solid": 1, "void": 2}

#: What ties a cell to the other cells of its group, and how to make a region fit it, per
#: ``[manufacturing]`` key.
_TIES = {
    "symmetry": ("mirror image", "mirror the passive region (a [[design.passive]] of the same "
                 "type over its image)"),
    "extrusion": ("cell of the same column along the extrusion axis", "extend the passive "
                  "region through whole columns along the extrusion axis"),
}


@dataclass(frozen=True)
class PassiveCells:
    """The passive regions of a config on its mesh.

    Attributes
    ----------
    kinds : numpy.ndarray
        ``(n_cells,)`` 0 designed, 1 passive solid, 2 passive void (indices of
        :data:`~fesens.opt.design_maps.PASSIVE_KINDS`).
    regions : numpy.ndarray
        ``(n_cells,)`` the index in ``[[design.passive]]`` of the region holding each cell
        (the last one listed), −1 for a designed cell.
    """

    kinds: np.ndarray
    regions: np.ndarray

    def describe(self, cell: int) -> str:
        """What ``cell`` is, naming its region: ``passive solid (design.passive[0])``."""
        kind = PASSIVE_KINDS[self.kinds[cell]]
        if self.regions[cell] < 0:
            return f"{kind} (in no passive region)"
        return f"{kind} ({join('design.passive', int(self.regions[cell]))})"


def passive_cells(passive: list[dict], mesh: Mesh, label: str = "") -> PassiveCells:
    """The kind of each cell under checked ``[[design.passive]]`` tables.

    Raises
    ------
    ConfigError
        A solid and a void region that share a cell, naming both.
    """
    kinds = np.zeros(mesh.n_cells, dtype=np.int8)
    regions = np.full(mesh.n_cells, -1, dtype=np.int64)
    for i, item in enumerate(passive):
        path = join("design.passive", i)
        cells = mesh.cell_ids(selections.cells(path, item, mesh, label))
        kind = _CODES[item["type"]]
        clash = cells[(kinds[cells] != 0) & (kinds[cells] != kind)]
        if clash.size:
            cell = int(clash[0])
            other = int(regions[cell])
            raise ConfigError(
                f"{path} (type = {show(item['type'])}) and {join('design.passive', other)} "
                f"(type = {show(passive[other]['type'])}) share {clash.size} cells, "
                f"e.g. cell {cell} (centroid {_centroid(mesh, cell)}): a cell is solid or "
                "void, not both; shrink one of the two regions")
        kinds[cells] = kind
        regions[cells] = i
    return PassiveCells(kinds, regions)


def check_passive_ties(key: str, value: Any, groups: CellGroups, cells: PassiveCells,
                       mesh: Mesh) -> None:
    """Refuse a ``[manufacturing]`` map ``groups`` (of ``key = value``) that ties cells of
    different kinds.

    Raises
    ------
    ConfigError
        Naming ``manufacturing.<key>``, the passive region and a cell whose tied cell is of
        another kind, with the fix.
    """
    pair = groups.mixed_pair(cells.kinds)
    if pair is None:
        return
    # name the passive cell first: it is the one whose region needs the fix
    cell, other = pair if cells.kinds[pair[0]] else pair[::-1]
    tie, fix = _TIES[key]
    raise ConfigError(
        f"{join('manufacturing', key)} = {show(value)} does not map the passive regions onto "
        f"themselves: cell {cell} (centroid {_centroid(mesh, cell)}) is "
        f"{cells.describe(cell)} but its {tie}, cell {other} (centroid "
        f"{_centroid(mesh, other)}), is {cells.describe(other)}; {fix}, or remove "
        f"{join('manufacturing', key)}")


def _centroid(mesh: Mesh, cell: int) -> str:
    """A cell's centroid as ``[x, y]``, rounded for a message."""
    return show([round(float(c), 6) for c in mesh.cell_centroids()[cell]])

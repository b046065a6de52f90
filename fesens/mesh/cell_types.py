"""Cell types known to fesens: names, dimensions, node counts and facet topology.

Node ordering follows VTK/meshio for every type (so meshes convert at the I/O edge only).
Reference coordinates: simplices on the unit simplex (vertex 0 at the origin),
quadrilaterals and hexahedra on ``[-1, 1]^d``.

Local facets are listed with outward normals for the reference element
(counter-clockwise seen from outside); higher-order facets list the corner nodes
first, then the mid-edge nodes, in the facet type's own ordering.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from fesens.errors import MeshError


@dataclass(frozen=True)
class CellType:
    """Static description of one cell type.

    Attributes
    ----------
    name : str
        fesens name (``"tri3"``, ``"hex8"``, ...).
    meshio_name : str
        meshio / VTK block name (``"triangle"``, ``"hexahedron"``, ...).
    dim : int
        Topological dimension.
    n_nodes : int
        Nodes per cell.
    n_corners : int
        Vertex nodes per cell (the first ``n_corners`` nodes).
    facet_type : str or None
        fesens name of the facet cell type (None for points).
    local_facets : tuple of tuple of int
        Local node indices of each facet, shape ``(n_facets, n_facet_nodes)``.
    """

    name: str
    meshio_name: str
    dim: int
    n_nodes: int
    n_corners: int
    facet_type: str | None
    local_facets: tuple[tuple[int, ...], ...]


_QUAD_SIDES = ((0, 1), (1, 2), (2, 3), (3, 0))
_HEX_FACES = (
    (0, 3, 2, 1),  # z = -1 (back in VTK's sense: bottom)
    (4, 5, 6, 7),  # z = +1
    (0, 1, 5, 4),  # y = -1
    (2, 3, 7, 6),  # y = +1
    (0, 4, 7, 3),  # x = -1
    (1, 2, 6, 5),  # x = +1
)
# VTK order of the hexahedron's mid-edge nodes: bottom ring, top ring, then the verticals.
_HEX_EDGES = (
    (0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4), (0, 4), (1, 5), (2, 6),
    (3, 7),
)

_TYPES = [
    CellType("point1", "vertex", 0, 1, 1, None, ()),
    CellType("line2", "line", 1, 2, 2, "point1", ((0,), (1,))),
    CellType("line3", "line3", 1, 3, 2, "point1", ((0,), (1,))),
    CellType("tri3", "triangle", 2, 3, 3, "line2", ((0, 1), (1, 2), (2, 0))),
    CellType("tri6", "triangle6", 2, 6, 3, "line3", ((0, 1, 3), (1, 2, 4), (2, 0, 5))),
    CellType("quad4", "quad", 2, 4, 4, "line2", _QUAD_SIDES),
    CellType(
        "tet4", "tetra", 3, 4, 4, "tri3", ((0, 2, 1), (0, 1, 3), (1, 2, 3), (0, 3, 2))
    ),
    CellType(
        "tet10",
        "tetra10",
        3,
        10,
        4,
        "tri6",
        ((0, 2, 1, 6, 5, 4), (0, 1, 3, 4, 8, 7), (1, 2, 3, 5, 9, 8), (0, 3, 2, 7, 9, 6)),
    ),
    CellType(
        "hex8",
        "hexahedron",
        3,
        8,
        8,
        "quad4",
        _HEX_FACES,
    ),
]

#: Corner pair of the edge each mid-edge node sits on, in node order (VTK): node
#: ``n_corners + k`` of a quadratic cell lies on the edge ``MIDSIDE_EDGES[name][k]``.
MIDSIDE_EDGES: dict[str, tuple[tuple[int, int], ...]] = {
    "line3": ((0, 1),),
    "tri6": ((0, 1), (1, 2), (2, 0)),
    "quad8": ((0, 1), (1, 2), (2, 3), (3, 0)),
    "quad9": ((0, 1), (1, 2), (2, 3), (3, 0)),
    "tet10": ((0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3)),
    "hex20": _HEX_EDGES,
    "hex27": _HEX_EDGES,
}

#: Corners whose centroid each face- or body-centre node sits at, in node order (VTK): node
#: ``n_corners + len(MIDSIDE_EDGES[name]) + k`` is the centre of ``CENTRE_NODES[name][k]``
#: (quad9: the cell centre; hex27: faces x = -1, x = +1, y = -1, y = +1, z = -1, z = +1,
#: then the cell centre).
CENTRE_NODES: dict[str, tuple[tuple[int, ...], ...]] = {
    "quad9": ((0, 1, 2, 3),),
    "hex27": (
        (0, 4, 7, 3), (1, 2, 6, 5), (0, 1, 5, 4), (3, 2, 6, 7), (0, 3, 2, 1), (4, 5, 6, 7),
        (0, 1, 2, 3, 4, 5, 6, 7),
    ),
}


def _quadratic_facets(name: str, corner_facets: tuple[tuple[int, ...], ...]
                      ) -> tuple[tuple[int, ...], ...]:
    """Facets of the quadratic type ``name`` from its corner facets: the corners, then the
    mid-edge nodes of the facet's edges in order, then (quad9 facets) its centre node."""
    edges = [frozenset(edge) for edge in MIDSIDE_EDGES[name]]
    centres = [frozenset(group) for group in CENTRE_NODES.get(name, ())]
    first_edge = 8 if name.startswith("hex") else 4  # the number of corners
    facets = []
    for corners in corner_facets:
        ring = list(corners) + ([] if len(corners) == 2 else [corners[0]])
        mids = [first_edge + edges.index(frozenset(pair)) for pair in pairwise(ring)]
        centre = [first_edge + len(edges) + centres.index(frozenset(corners))] \
            if frozenset(corners) in centres else []
        facets.append((*corners, *mids, *centre))
    return tuple(facets)


_TYPES += [
    CellType("quad8", "quad8", 2, 8, 4, "line3", _quadratic_facets("quad8", _QUAD_SIDES)),
    CellType("quad9", "quad9", 2, 9, 4, "line3", _quadratic_facets("quad9", _QUAD_SIDES)),
    CellType("hex20", "hexahedron20", 3, 20, 8, "quad8", _quadratic_facets("hex20", _HEX_FACES)),
    CellType("hex27", "hexahedron27", 3, 27, 8, "quad9", _quadratic_facets("hex27", _HEX_FACES)),
]

CELL_TYPES: dict[str, CellType] = {t.name: t for t in _TYPES}
MESHIO_TO_FESENS: dict[str, str] = {t.meshio_name: t.name for t in _TYPES}

#: Cell types that can carry a finite-element discretisation (the rest are facets only).
VOLUME_CELL_TYPES = (
    "tri3", "tri6", "quad4", "quad8", "quad9", "tet4", "tet10", "hex8", "hex20", "hex27"
)

#: Cell types that carry a bar (truss) discretisation: 1D cells in 2D or 3D space
#: (:class:`fesens.physics.truss.Truss`).
BAR_CELL_TYPES = ("line2",)


def cell_type(name: str) -> CellType:
    """Return the :class:`CellType` called ``name`` (fesens or meshio spelling).

    Raises
    ------
    MeshError
        If the name is unknown; the message lists the supported names.
    """
    key = MESHIO_TO_FESENS.get(name, name)
    try:
        return CELL_TYPES[key]
    except KeyError:
        raise MeshError(
            f"unknown cell type {name!r}; supported: {', '.join(VOLUME_CELL_TYPES)} "
            f"(facets: line2, line3)"
        ) from None

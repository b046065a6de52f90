"""Which nodes a mesh's cells join into one piece, and nodes that coincide.

Both are vectorised (a sparse graph of the cells' nodes, a k-d tree of the points) and cost
about as much as reading the mesh.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

#: Points closer than this fraction of the mesh's extent count as coincident.
COINCIDENT_TOLERANCE = 1e-9


def node_parts(cells: np.ndarray, n_points: int) -> tuple[int, np.ndarray]:
    """The connected parts of a mesh: their number and the part of each node ``(n_points,)``.

    Two nodes are in one part when a chain of cells joins them (each cell joins its first
    node to its others); a node of no cell is a part of its own.
    """
    first = np.repeat(cells[:, 0], cells.shape[1] - 1)
    graph = sp.coo_matrix((np.ones(first.size, dtype=np.int8), (first, cells[:, 1:].ravel())),
                          shape=(n_points, n_points))
    return connected_components(graph, directed=False)


def coincident_nodes(points: np.ndarray) -> np.ndarray:
    """Pairs of distinct nodes at the same place (within :data:`COINCIDENT_TOLERANCE` of the
    extent), ``(n_pairs, 2)``."""
    extent = float(np.max(np.ptp(points, axis=0))) if len(points) > 1 else 0.0
    return cKDTree(points).query_pairs(COINCIDENT_TOLERANCE * max(extent, 1e-300),
                                       output_type="ndarray")

"""Shared mesh factories for the physics tests."""

import numpy as np

from fesens.mesh import Mesh, box, rectangle
from fesens.mesh.cell_types import CENTRE_NODES, MIDSIDE_EDGES

CELL_TYPES_2D = ["tri3", "tri6", "quad4", "quad8", "quad9"]
CELL_TYPES_3D = ["tet4", "tet10", "hex8", "hex20", "hex27"]
ALL_CELL_TYPES = CELL_TYPES_2D + CELL_TYPES_3D


def unit_mesh(cell_type: str, n: int = 3) -> Mesh:
    """A unit square or cube with ``n`` cells per side of the given type."""
    if cell_type in CELL_TYPES_2D:
        return rectangle(n, n, 1.0, 1.0, cell_type=cell_type)
    return box(n, n, n, 1.0, 1.0, 1.0, cell_type=cell_type)


def distorted(mesh: Mesh, amount: float = 0.15, seed: int = 0) -> Mesh:
    """Move interior nodes randomly by up to ``amount`` times the spacing (valid cells).

    Mid-side nodes of quadratic cells are put back at their edge midpoints (face and cell
    centres at their corner averages), so cells stay straight-sided (the setting in which
    the patch test must pass exactly).
    """
    rng = np.random.default_rng(seed)
    boundary = np.unique(mesh.boundary_facets().facets)
    interior = np.setdiff1d(np.arange(mesh.n_points), boundary)
    h = np.ptp(mesh.points, axis=0).max() / round(mesh.n_cells ** (1 / mesh.dim))
    points = mesh.points.copy()
    points[interior] += amount * h * rng.uniform(-1, 1, (interior.size, mesh.dim))
    n_corners = mesh.type_info.n_corners
    groups = [*MIDSIDE_EDGES.get(mesh.cell_type, ()), *CENTRE_NODES.get(mesh.cell_type, ())]
    for k, group in enumerate(groups):
        points[mesh.cells[:, n_corners + k]] = points[mesh.cells[:, list(group)]].mean(axis=1)
    return Mesh(points, mesh.cells, mesh.cell_type, mesh.node_sets, mesh.facet_sets,
                mesh.cell_sets)

"""MacNeal-Harder patch tests for every element type: a linear displacement imposed on the
boundary of a patch of distorted cells gives the exact constant stress in every cell.

Source: R. H. MacNeal and R. L. Harder, "A proposed standard set of problems to test finite
element accuracy", Finite Elements in Analysis and Design 1 (1985) 3-20, Fig. 2 (membrane
patch, 0.24 x 0.12, E = 1e6, ν = 0.25, u = 1e-3 (x + y/2), v = 1e-3 (y + x/2):
σx = σy = 1333, τxy = 400) and Fig. 3 (solid patch, unit cube, 7 hexahedra, E = 1e6, ν = 0.25,
u = 1e-3 (2x + y + z)/2, v = 1e-3 (x + 2y + z)/2, w = 1e-3 (x + y + 2z)/2: σx = σy = σz = 2000,
τxy = τyz = τzx = 400).

Simplices split the patch cells (quadrilaterals along a diagonal, hexahedra into 24
tetrahedra around their face and cell centres); quadratic cells have their mid-side nodes
at the edge midpoints and their face and cell centres at the corner averages.
"""

import numpy as np
import pytest

from fesens.mesh import Mesh
from fesens.mesh.cell_types import CELL_TYPES, CENTRE_NODES, MIDSIDE_EDGES
from fesens.mesh.validation import corner_jacobian_ratios
from fesens.physics import Elasticity

E, NU = 1.0e6, 0.25

MEMBRANE_POINTS = np.array([
    [0.0, 0.0], [0.24, 0.0], [0.24, 0.12], [0.0, 0.12],
    [0.04, 0.02], [0.18, 0.03], [0.16, 0.08], [0.08, 0.08],
])
MEMBRANE_QUADS = np.array([[4, 5, 6, 7], [0, 1, 5, 4], [1, 2, 6, 5], [2, 3, 7, 6], [3, 0, 4, 7]])

# Interior node k + 8 lies near the cube corner k (VTK hexahedron order).
SOLID_POINTS = np.array([
    [0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1],
    [0.249, 0.342, 0.192], [0.826, 0.288, 0.288], [0.850, 0.649, 0.263],
    [0.273, 0.750, 0.230], [0.320, 0.186, 0.643], [0.677, 0.305, 0.683],
    [0.788, 0.693, 0.644], [0.165, 0.745, 0.702],
])


def _solid_hexes() -> np.ndarray:
    """The inner hexahedron and the six between a cube face and the inner one, ``(7, 8)``."""
    hexes = [np.arange(8, 16)]
    for face in CELL_TYPES["hex8"].local_facets:  # outward: reversed, it faces inwards
        bottom = np.array(face[::-1])
        hexes.append(np.concatenate([bottom, bottom + 8]))
    return np.array(hexes)


def _split_quads(quads: np.ndarray) -> np.ndarray:
    return np.vstack([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])


def _split_hexes(points: np.ndarray, hexes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """24 tetrahedra per hexahedron: each face split into 4 triangles around its centre,
    each triangle joined to the cell centre (conforming: face centres are shared)."""
    points = [*points]
    centre_ids: dict[tuple[int, ...], int] = {}

    def centre(corners) -> int:
        key = tuple(sorted(int(c) for c in corners))
        if key not in centre_ids:
            centre_ids[key] = len(points)
            points.append(np.mean([points[c] for c in corners], axis=0))
        return centre_ids[key]

    tets = []
    for cell in hexes:
        body = centre(cell)
        for face in CELL_TYPES["hex8"].local_facets:  # outward
            corners = cell[list(face)]
            middle = centre(corners)
            for a, b in zip(corners, np.roll(corners, -1), strict=True):
                tets.append([a, middle, b, body])  # positive: the face triangle is outward
    return np.array(points), np.array(tets)


def _add_higher_nodes(points: np.ndarray, cells: np.ndarray, name: str
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Mid-edge nodes at the edge midpoints, face and cell centres at the corner averages."""
    groups = [list(edge) for edge in MIDSIDE_EDGES[name]]
    groups += [list(group) for group in CENTRE_NODES.get(name, ())]
    points = [*points]
    ids: dict[tuple[int, ...], int] = {}
    extra = np.empty((len(cells), len(groups)), dtype=np.int64)
    for c, cell in enumerate(cells):
        for g, group in enumerate(groups):
            key = tuple(sorted(int(n) for n in cell[group]))
            if key not in ids:
                ids[key] = len(points)
                points.append(np.mean([points[n] for n in key], axis=0))
            extra[c, g] = ids[key]
    return np.array(points), np.hstack([cells, extra])


def membrane_patch(name: str) -> Mesh:
    cells = _split_quads(MEMBRANE_QUADS) if name.startswith("tri") else MEMBRANE_QUADS
    points = MEMBRANE_POINTS
    if CELL_TYPES[name].n_nodes > CELL_TYPES[name].n_corners:
        points, cells = _add_higher_nodes(points, cells, name)
    return Mesh(points, cells, name)


def solid_patch(name: str) -> Mesh:
    points, cells = SOLID_POINTS, _solid_hexes()
    if name.startswith("tet"):
        points, cells = _split_hexes(points, cells)
    if CELL_TYPES[name].n_nodes > CELL_TYPES[name].n_corners:
        points, cells = _add_higher_nodes(points, cells, name)
    return Mesh(points, cells, name)


def membrane_displacement(x: np.ndarray) -> np.ndarray:
    return 1e-3 * np.column_stack([x[:, 0] + x[:, 1] / 2, x[:, 1] + x[:, 0] / 2])


def solid_displacement(x: np.ndarray) -> np.ndarray:
    return 1e-3 * (x + x.sum(axis=1, keepdims=True)) / 2


def _solve_patch(mesh: Mesh, displacement, plane: str | None):
    model = Elasticity(mesh, E=E, nu=NU, plane=plane)
    on_boundary = np.zeros(mesh.n_points, dtype=bool)
    on_boundary[np.unique(mesh.boundary_facets().facets)] = True
    model.fix(lambda p: on_boundary, value=displacement)
    return model.solve()


def _worst_relative_error(solution, exact: np.ndarray) -> float:
    cell_mean = solution.stress()  # (n_cells, dim, dim)
    at_points = solution.stress_at_quadrature()  # (n_cells, n_qp, dim, dim)
    scale = np.abs(exact).max()
    return max(np.abs(cell_mean - exact).max(), np.abs(at_points - exact).max()) / scale


@pytest.mark.parametrize("name", ["tri3", "tri6", "quad4", "quad8", "quad9"])
def test_membrane_patch(name):
    mesh = membrane_patch(name)
    solution = _solve_patch(mesh, membrane_displacement, "stress")
    assert not np.isin([4, 5, 6, 7], mesh.boundary_facets().facets).any()  # free
    exact = np.array([[4000 / 3, 400.0], [400.0, 4000 / 3]])  # MacNeal-Harder: 1333, 400
    error = _worst_relative_error(solution, exact)
    print(f"{name}: max relative stress error {error:.1e}")
    assert error < 1e-8
    assert np.abs(solution.displacement - membrane_displacement(mesh.points)).max() < 1e-15


@pytest.mark.parametrize("name", ["tet4", "tet10", "hex8", "hex20", "hex27"])
def test_solid_patch(name):
    mesh = solid_patch(name)
    solution = _solve_patch(mesh, solid_displacement, None)
    assert not np.isin(np.arange(8, 16), mesh.boundary_facets().facets).any()  # free
    exact = np.full((3, 3), 400.0) + np.eye(3) * 1600.0  # MacNeal-Harder: 2000, 400
    error = _worst_relative_error(solution, exact)
    print(f"{name}: max relative stress error {error:.1e}")
    assert error < 1e-8
    assert np.abs(solution.displacement - solid_displacement(mesh.points)).max() < 1e-15


def test_solid_patch_hexes_have_a_negative_corner_jacobian_but_are_valid():
    """The cell the corner-only check refused: a warped hexahedron, valid at its Gauss points."""
    ratios = corner_jacobian_ratios(SOLID_POINTS, _solid_hexes(), "hex8")
    assert ratios.min() < 0
    assert solid_patch("hex8").n_cells == 7

"""The meshes shipped in ``meshes/``: groups, measures, where the facet sets lie, a solve each.

Exact measures, from the generating scripts:

* ``plate_hole``: quarter plate ``L² − πa²/4`` (``L = 100``, ``a = 10``);
* ``cook``: the panel ``(0, 0), (48, 44), (48, 60), (0, 44)``, 1440 by the shoelace formula;
* ``heatsink``: the square ``100²``, base strip ``5 · 20``, void disk ``π 10²``;
* ``bracket3d``: plate + shelf + gusset − 2 bolt holes ``= 46080 − 256π``;
* ``annulus``: ``π (r_o² − r_i²) / 4`` with ``r_i = 1``, ``r_o = 2``.

Curved boundaries are exact up to the discretisation: chords for linear cells,
quadratic arcs (mid-edge nodes on the curve) for tri6 and tet10.

Solves checked against known values: Kirsch's stress concentration 3 at the top of the
hole (a 200 x 200 plate with a hole of diameter 20 has a concentration of about 3.03
(Howland, 1930), the mesh loses about 2% to stress averaging); Lamé's thick cylinder;
Cook's membrane (23.96 at the midpoint of the loaded edge); statics for the heat sink
and the bracket.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from fesens.fem.integrals.geometry import cell_geometry, facet_geometry
from fesens.mesh import Mesh, read_mesh
from fesens.physics import Elasticity, HeatConduction

MESHES = Path(__file__).resolve().parents[2] / "meshes"

L, A = 100.0, 10.0  # plate_hole.py: HALF_WIDTH, RADIUS
R_INNER, R_OUTER = 1.0, 2.0  # annulus.py
HOLE_AXES, HOLE_RADIUS, PLATE_THICKNESS = [(9.0, 20.0), (31.0, 20.0)], 4.0, 8.0  # bracket3d.py
SHELF_TIP, LOAD_FACE_AREA = 68.0, 8.0 * 40.0  # bracket3d.py: the face x = 68 of the shelf
COOK = np.array([[0.0, 0.0], [48.0, 44.0], [48.0, 60.0], [0.0, 44.0]])


def shoelace(vertices: np.ndarray) -> float:
    """Area of a simple polygon with counter-clockwise vertices ``(n, 2)``."""
    x, y = vertices.T
    return 0.5 * float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))


# ------------------------------------------------------------------ what each file holds
PointMap = Callable[[np.ndarray], np.ndarray]  # points (n, dim) -> (n,) or (n, dim)


class Side(NamedTuple):
    """Where a facet set lies.

    ``on``: mask of the points that are exactly its nodes; ``normal``: the outward unit
    normal at points ``(n, dim) -> (n, dim)``; ``measure``: its exact length/area, met to
    ``rtol``.
    """

    on: PointMap
    normal: PointMap
    measure: float
    rtol: float = 1e-12


class Bundled(NamedTuple):
    script: str
    cell_type: str
    n_cells: int
    n_points: int
    measure: float  # exact area/volume
    rtol: float  # discretisation error of the measure allowed
    sides: dict[str, Side]
    cell_sets: tuple[str, ...] = ("domain",)


def _close(values, target) -> np.ndarray:
    return np.isclose(values, target, rtol=0.0, atol=1e-9)


def _constant(*normal: float) -> PointMap:
    return lambda p: np.broadcast_to(np.array(normal), p.shape)


def _radial(p: np.ndarray) -> np.ndarray:
    return p / np.linalg.norm(p, axis=1, keepdims=True)


def _towards_hole_axis(p: np.ndarray) -> np.ndarray:
    """Unit vector from ``p`` to the nearer bolt-hole axis (along x), ``(n, 3)``."""
    offsets = np.stack([p[:, 1:] - axis for axis in HOLE_AXES])  # (2, n, 2)
    nearer = np.linalg.norm(offsets, axis=2).argmin(axis=0)
    offset = offsets[nearer, np.arange(len(p))]
    return -np.pad(offset, ((0, 0), (1, 0))) / np.linalg.norm(offset, axis=1, keepdims=True)


def _on_bolt_holes(p: np.ndarray) -> np.ndarray:
    distance = np.linalg.norm(p[:, 1:] - np.array(HOLE_AXES)[:, None], axis=2).min(axis=0)
    return _close(distance, HOLE_RADIUS) & (p[:, 0] <= PLATE_THICKNESS)


def _on_heatsink_square(p: np.ndarray) -> np.ndarray:
    return (_close(p, 0.0) | _close(p, 100.0)).any(axis=1)


def _on_sink(p: np.ndarray) -> np.ndarray:
    return _close(p[:, 0], 0.0) & (p[:, 1] >= 45.0) & (p[:, 1] <= 55.0)


def _on_heatsink_boundary(p: np.ndarray) -> np.ndarray:
    """The square's outline but the inside of the sink (its end points are in both)."""
    inside_sink = _close(p[:, 0], 0.0) & (p[:, 1] > 45.0) & (p[:, 1] < 55.0)
    return _on_heatsink_square(p) & ~inside_sink


def _heatsink_normal(p: np.ndarray) -> np.ndarray:
    """Outward normal of the square ``[0, 100]²`` at points on its sides (not corners)."""
    return np.where(_close(p, 100.0), 1.0, 0.0) - np.where(_close(p, 0.0), 1.0, 0.0)


PLATE_SIDES = {
    "hole": Side(lambda p: _close(np.hypot(*p.T), A), lambda p: -_radial(p), np.pi * A / 2),
    "x_axis": Side(lambda p: _close(p[:, 1], 0.0), _constant(0.0, -1.0), L - A),
    "y_axis": Side(lambda p: _close(p[:, 0], 0.0), _constant(-1.0, 0.0), L - A),
    "right": Side(lambda p: _close(p[:, 0], L), _constant(1.0, 0.0), L),
    "top": Side(lambda p: _close(p[:, 1], L), _constant(0.0, 1.0), L),
}
PLATE_AREA = L**2 - np.pi * A**2 / 4
BRACKET_SIDES = {
    # two cylinders of radius 4 through the 8 mm plate
    "fixed": Side(_on_bolt_holes, _towards_hole_axis, 2 * (2 * np.pi * HOLE_RADIUS) * 8.0),
    "load": Side(lambda p: _close(p[:, 0], SHELF_TIP), _constant(1.0, 0.0, 0.0), LOAD_FACE_AREA),
}
BRACKET_VOLUME = 46080 - 256 * np.pi

BUNDLED = {
    "plate_hole.msh": Bundled(
        "plate_hole.py", "tri6", 1372, 2857, PLATE_AREA, 1e-7,
        {**PLATE_SIDES, "hole": PLATE_SIDES["hole"]._replace(rtol=1e-7)},
    ),
    "plate_hole_tri3.msh": Bundled(
        "plate_hole.py", "tri3", 1372, 743, PLATE_AREA, 1e-5,
        {**PLATE_SIDES, "hole": PLATE_SIDES["hole"]._replace(rtol=2e-4)},
    ),
    "cook.msh": Bundled(
        "cook.py", "quad4", 1024, 1089, shoelace(COOK), 1e-12,
        {
            "left": Side(lambda p: _close(p[:, 0], 0.0), _constant(-1.0, 0.0), 44.0),
            "right": Side(lambda p: _close(p[:, 0], 48.0), _constant(1.0, 0.0), 16.0),
        },
    ),
    "heatsink.msh": Bundled(
        "heatsink.py", "tri3", 3253, 1708, 100.0**2, 1e-12,
        {
            "sink": Side(_on_sink, _constant(-1.0, 0.0), 10.0),
            "boundary": Side(_on_heatsink_boundary, _heatsink_normal, 390.0),
        },
        ("domain", "base", "void", "design"),
    ),
    "bracket3d.msh": Bundled(
        "bracket3d.py", "tet4", 5360, 1586, BRACKET_VOLUME, 1e-3,
        {**BRACKET_SIDES, "fixed": BRACKET_SIDES["fixed"]._replace(rtol=0.02)},  # chords
    ),
    "bracket3d_tet10.msh": Bundled(
        "bracket3d.py", "tet10", 1908, 3794, BRACKET_VOLUME, 1e-5,
        {**BRACKET_SIDES, "fixed": BRACKET_SIDES["fixed"]._replace(rtol=1e-4)},
    ),
    "annulus.msh": Bundled(
        "annulus.py", "quad4", 512, 561, np.pi * (R_OUTER**2 - R_INNER**2) / 4, 1e-3,
        {
            "inner": Side(lambda p: _close(np.hypot(*p.T), R_INNER), lambda p: -_radial(p),
                          np.pi * R_INNER / 2, 2e-4),
            "outer": Side(lambda p: _close(np.hypot(*p.T), R_OUTER), _radial,
                          np.pi * R_OUTER / 2, 2e-4),
            "x_axis": Side(lambda p: _close(p[:, 1], 0.0), _constant(0.0, -1.0), 1.0),
            "y_axis": Side(lambda p: _close(p[:, 0], 0.0), _constant(-1.0, 0.0), 1.0),
        },
    ),
}


@pytest.fixture(scope="module")
def meshes() -> dict[str, Mesh]:
    """Every bundled mesh, read once (the tests do not modify them)."""
    return {name: read_mesh(MESHES / name) for name in BUNDLED}


def cell_measures(mesh: Mesh) -> np.ndarray:
    """Area/volume of each cell (isoparametric, so curved tri6/tet10 edges count), (n_cells,)."""
    return np.broadcast_to(cell_geometry(mesh).volumes, (mesh.n_cells,))


# ------------------------------------------------------------------ files and groups
@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_files_are_small_with_their_script_alongside(name):
    assert (MESHES / name).stat().st_size < 500_000
    assert (MESHES / BUNDLED[name].script).is_file()
    assert name in (MESHES / "README.md").read_text()


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_groups_exist_and_are_not_empty(meshes, name):
    mesh, spec = meshes[name], BUNDLED[name]
    assert (mesh.cell_type, mesh.n_cells, mesh.n_points) == (
        spec.cell_type, spec.n_cells, spec.n_points
    )
    assert sorted(mesh.facet_sets) == sorted(spec.sides)
    assert sorted(mesh.cell_sets) == sorted(spec.cell_sets)
    assert sorted(mesh.node_sets) == sorted([*spec.sides, *spec.cell_sets])
    assert all(len(mesh.facets(side)) > 0 for side in spec.sides)
    assert all(len(mesh.cell_ids(cells)) > 0 for cells in spec.cell_sets)
    assert np.array_equal(mesh.cell_ids("domain"), np.arange(mesh.n_cells))
    assert np.array_equal(mesh.nodes("domain"), np.arange(mesh.n_points))


# ------------------------------------------------------------------ geometry
@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_total_measure(meshes, name):
    mesh, spec = meshes[name], BUNDLED[name]
    assert cell_measures(mesh).sum() == pytest.approx(spec.measure, rel=spec.rtol)


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_facet_sets_lie_where_they_should(meshes, name):
    mesh, spec = meshes[name], BUNDLED[name]
    for side, where in spec.sides.items():
        facets = mesh.facets(side)
        assert np.array_equal(facets.nodes, np.flatnonzero(where.on(mesh.points))), side
        geometry = facet_geometry(mesh, facets)
        assert geometry.dS.sum() == pytest.approx(where.measure, rel=where.rtol), side
        points = geometry.x.reshape(-1, mesh.dim)
        alignment = np.einsum("ni,ni->n", geometry.normal.reshape(-1, mesh.dim),
                              where.normal(points))
        assert alignment.min() > 0.95, side  # flat facets on curves tilt


def test_named_sides_cover_the_boundary(meshes):
    """Every boundary facet of the 2D meshes with closed outlines is in a named side."""
    for name in ("plate_hole.msh", "heatsink.msh", "annulus.msh"):
        mesh = meshes[name]
        named = sum(len(mesh.facets(side)) for side in BUNDLED[name].sides)
        assert named == len(mesh.boundary_facets()), name


def test_heatsink_regions_partition_the_square(meshes):
    mesh = meshes["heatsink.msh"]
    regions = [mesh.cell_ids(region) for region in ("base", "void", "design")]
    assert np.array_equal(np.sort(np.concatenate(regions)), np.arange(mesh.n_cells))
    base, void, _ = (cell_measures(mesh)[cells].sum() for cells in regions)
    assert base == pytest.approx(5.0 * 20.0, rel=1e-12)
    assert void == pytest.approx(np.pi * 10.0**2, rel=0.02)  # chords of a 10 mm circle
    centroids = mesh.cell_centroids()
    assert (centroids[regions[0]] <= [5.0, 60.0]).all()
    assert (centroids[regions[0]] >= [0.0, 40.0]).all()
    assert (np.hypot(*(centroids[regions[1]] - [70.0, 50.0]).T) < 10.0).all()


# ------------------------------------------------------------------ solves
@pytest.mark.parametrize("name", ["plate_hole.msh", "plate_hole_tri3.msh"])
def test_plate_hole_kirsch_concentration(meshes, name):
    mesh = meshes[name]
    model = Elasticity(mesh, E=210e3, nu=0.3, plane="stress")
    model.fix("x_axis", components=1).fix("y_axis", components=0)
    model.traction("right", (1.0, 0.0))
    stress = model.solve().nodal_stress()
    top, side = mesh.nearest_node((0.0, A)), mesh.nearest_node((A, 0.0))
    assert stress[top, 0, 0] == pytest.approx(3.0, rel=0.05)
    assert stress[side, 1, 1] == pytest.approx(-1.0, rel=0.1)  # Kirsch: σ_yy = −σ there


def test_annulus_lame_radial_displacement(meshes):
    E, nu, p = 1000.0, 0.3, 1.0
    mesh = meshes["annulus.msh"]
    model = Elasticity(mesh, E=E, nu=nu, plane="strain")
    model.fix("x_axis", components=1).fix("y_axis", components=0)
    model.pressure("inner", p)
    u = model.solve().displacement
    r = np.hypot(*mesh.points.T)
    u_r = np.einsum("ni,ni->n", u, mesh.points / r[:, None])
    # Lamé, plane strain: u_r = (1+ν)/E · p r_i²/(r_o² − r_i²) · ((1 − 2ν) r + r_o²/r)
    exact = (1 + nu) / E * p * R_INNER**2 / (R_OUTER**2 - R_INNER**2) * (
        (1 - 2 * nu) * r + R_OUTER**2 / r
    )
    np.testing.assert_allclose(u_r, exact, rtol=0.01)


def test_cook_membrane_deflection(meshes):
    mesh = meshes["cook.msh"]
    model = Elasticity(mesh, E=1.0, nu=1 / 3, plane="stress").fix("left")
    model.traction("right", (0.0, 1.0 / 16.0))  # total vertical load 1
    u = model.solve().displacement
    midpoint = mesh.nearest_node((48.0, 52.0))
    np.testing.assert_allclose(mesh.points[midpoint], [48.0, 52.0])
    assert u[midpoint, 1] == pytest.approx(23.96, rel=0.01)


def test_heatsink_sink_takes_all_the_heat(meshes):
    mesh = meshes["heatsink.msh"]
    conductivity = np.ones(mesh.n_cells)
    conductivity[mesh.cell_ids("base")] = 10.0
    conductivity[mesh.cell_ids("void")] = 1e-3
    model = HeatConduction(mesh, conductivity).fix("sink")
    model.heat_source(1.0, cells="design")
    solution = model.solve()
    heat = cell_measures(mesh)[mesh.cell_ids("design")].sum()
    assert solution.reaction_force("sink")[0] == pytest.approx(-heat, rel=1e-9)
    hottest = mesh.points[np.argmax(solution.temperature)]
    assert hottest[0] == 100.0  # the far side from the sink


@pytest.mark.parametrize("name", ["bracket3d.msh", "bracket3d_tet10.msh"])
def test_bracket_reactions_balance_the_load(meshes, name):
    mesh = meshes[name]
    traction = np.array([0.0, 0.0, -1.0])
    model = Elasticity(mesh, E=210e3, nu=0.3).fix("fixed")
    model.traction("load", traction)
    solution = model.solve()
    np.testing.assert_allclose(solution.reaction_force("fixed"), -LOAD_FACE_AREA * traction,
                               rtol=1e-9, atol=1e-6)
    # Moment about the origin: the load face x = 68, 0 <= y <= 40, 52 <= z <= 60.
    load_moment = LOAD_FACE_AREA * np.cross([SHELF_TIP, 20.0, 56.0], traction)
    moment = np.cross(mesh.points, solution.reactions()).sum(axis=0)
    np.testing.assert_allclose(moment, -load_moment, rtol=1e-9, atol=1e-6)
    assert solution.displacement[mesh.nodes("load"), 2].max() < 0  # the shelf bends down

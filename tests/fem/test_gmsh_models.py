"""Models on Gmsh meshes: the L-bracket benchmark and a tet10 block.

Checked against statics (the reactions balance the applied traction's force and moment)
and, for the L-bracket, the location of the stress peak: the re-entrant corner, where the
elastic field is singular (Williams, 1952).
"""

from pathlib import Path

import numpy as np
import pytest

from fesens.mesh import read_mesh
from fesens.physics import Elasticity

ROOT = Path(__file__).resolve().parents[2]
LBRACKET = ROOT / "fesens" / "data" / "meshes" / "lbracket.msh"
DATA = ROOT / "tests" / "data"
CORNER_CELL_SIZE = 1.0  # mm, lbracket.py: SIZE_AT_CORNER


@pytest.fixture(scope="module")
def lbracket():
    """L-bracket (mm, plane stress, 5 mm thick) clamped on top, pulled down at the tip."""
    mesh = read_mesh(LBRACKET)
    model = Elasticity(mesh, E=210e3, nu=0.3, plane="stress", thickness=5.0).fix("top")
    model.traction("load", (2.0, -10.0))  # N/mm² on x = 100, 28 <= y <= 40
    return mesh, model.solve()


def test_lbracket_reactions_balance_the_load(lbracket):
    mesh, sol = lbracket
    thickness, tx, ty = 5.0, 2.0, -10.0
    load = thickness * 12.0 * np.array([tx, ty])
    # ∫ (x t_y − y t_x) dy over x = 100, y in [28, 40]
    load_moment = thickness * (100.0 * ty * 12.0 - tx * (40.0**2 - 28.0**2) / 2)
    reactions = sol.reactions()
    np.testing.assert_allclose(sol.reaction_force("top"), -load, rtol=1e-9)
    np.testing.assert_allclose(reactions.sum(axis=0), -load, rtol=1e-9)
    x, y = mesh.points.T
    moment = np.sum(x * reactions[:, 1] - y * reactions[:, 0])
    assert moment == pytest.approx(-load_moment, rel=1e-9)
    assert not reactions[y < 100.0].any()


def test_lbracket_stress_peaks_at_the_reentrant_corner(lbracket):
    mesh, sol = lbracket
    corner = mesh.points[mesh.nodes("corner")[0]]
    np.testing.assert_array_equal(corner, [40.0, 40.0])
    peak = np.argmax(sol.von_mises())
    distance = np.linalg.norm(mesh.cell_centroids()[peak] - corner)
    assert distance < 3 * CORNER_CELL_SIZE
    assert corner.tolist() in mesh.points[mesh.cells[peak]].tolist()


@pytest.mark.parametrize("version", ["v22", "v41"])
def test_tet10_block_reactions_balance_the_load(version):
    mesh = read_mesh(DATA / f"box_tet10_{version}.msh")
    assert mesh.cell_type == "tet10"
    model = Elasticity(mesh, E=100.0, nu=0.25).fix("left")
    traction = np.array([1.0, -0.5, 2.0])
    model.traction("right", traction)
    sol = model.solve()
    # The face x = 1 of the unit cube: area 1, centroid (1, 1/2, 1/2).
    load_moment = np.cross([1.0, 0.5, 0.5], traction)
    reactions = sol.reactions()
    np.testing.assert_allclose(sol.reaction_force("left"), -traction, rtol=1e-10)
    np.testing.assert_allclose(np.cross(mesh.points, reactions).sum(axis=0), -load_moment,
                               rtol=1e-10, atol=1e-12)
    assert not reactions[mesh.points[:, 0] > 0].any()
    # Pulled along +x, the loaded face moves along +x on average.
    assert sol.displacement[mesh.nodes("right"), 0].mean() > 0

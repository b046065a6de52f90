"""Self-weight and uniform heat sources on 1D-like slabs against their closed forms.

Hanging bar: clamped at ``x = 0``, gravity along ``+x`` (body force ``ρg``), free
elsewhere; with ``ν = 0`` nothing couples the axes, so the 3D / plane-stress solution is
the 1D one: ``σ_xx = ρg (L − x)``, ``u_x = ρg (L x − x²/2) / E``, other components 0, tip
displacement ``u_x(L) = ρg L² / (2E)``.

Heat slab: ``T = 0`` at ``x = 0`` and ``x = L``, source ``Q``, insulated sides:
``T = Q x (L − x) / (2κ)``, ``q_x = −κ T' = −Q (L − 2x) / 2``; half the heat leaves at each end.

Both fields are quadratic in ``x``: quadratic elements hold them exactly. Linear elements
on a structured slab reduce to 1D linear elements, which are exact at the nodes for a
constant load (the 1D Green's function is piecewise linear), and their constant cell
gradient is the difference quotient over the cell's extent in ``x``: the exact (linear)
gradient at the middle of that extent. Quadratic cells average the exact linear gradient:
its value at the centroid.
"""

import numpy as np
import pytest

from fesens.mesh import Mesh, box, rectangle
from fesens.physics import Elasticity, HeatConduction

E, RHO_G, L, WIDTH = 50.0, 3.0, 4.0, 0.5
KAPPA, Q = 2.0, 5.0
TIP = RHO_G * L**2 / (2 * E)


def slab(cell_type: str, n_long: int, n_across: int) -> Mesh:
    if cell_type in ("tri3", "tri6", "quad4"):
        return rectangle(n_long, n_across, L, WIDTH, cell_type=cell_type)
    return box(n_long, n_across, n_across, L, WIDTH, WIDTH, cell_type=cell_type)


def gradient_abscissa(mesh: Mesh) -> np.ndarray:
    """Where the cell-averaged gradient of a quadratic-in-x field is exact, ``(n_cells,)``."""
    if mesh.type_info.n_corners < mesh.type_info.n_nodes:
        return mesh.cell_centroids()[:, 0]
    x = mesh.points[mesh.cells, 0]
    return (x.min(axis=1) + x.max(axis=1)) / 2


def hanging_bar(mesh: Mesh):
    """Solve the hanging bar (plane stress with thickness 0.3 in 2D)."""
    if mesh.dim == 2:
        model = Elasticity(mesh, E=E, nu=0.0, plane="stress", thickness=0.3)
    else:
        model = Elasticity(mesh, E=E, nu=0.0)
    model.fix("left")
    model.body_force(np.eye(mesh.dim)[0] * RHO_G)
    return model.solve()


@pytest.mark.parametrize(("cell_type", "n_long"),
                         [("tri6", 3), ("tet10", 2), ("quad4", 8), ("hex8", 6)])
def test_hanging_bar_is_reproduced_exactly(cell_type, n_long):
    mesh = slab(cell_type, n_long, 1)
    sol = hanging_bar(mesh)
    x = mesh.points[:, 0]
    exact = np.zeros_like(mesh.points)
    exact[:, 0] = RHO_G * (L * x - x**2 / 2) / E
    assert np.abs(sol.displacement - exact).max() < 1e-10 * TIP
    tip = sol.displacement[mesh.nodes("right"), 0]
    np.testing.assert_allclose(tip, TIP, rtol=1e-10)
    stress = np.zeros((mesh.n_cells, mesh.dim, mesh.dim))
    stress[:, 0, 0] = RHO_G * (L - gradient_abscissa(mesh))
    assert np.abs(sol.stress() - stress).max() < 1e-10 * RHO_G * L


@pytest.mark.parametrize(("cell_type", "sizes"), [
    ("tri3", [(16, 2), (32, 4), (64, 8)]),
    ("tet4", [(4, 1), (8, 2), (16, 4)]),
])
def test_hanging_bar_tip_displacement_converges_at_second_order(cell_type, sizes):
    errors = []
    for n_long, n_across in sizes:
        mesh = slab(cell_type, n_long, n_across)
        sol = hanging_bar(mesh)
        tip = sol.displacement[mesh.nodes("right"), 0].mean()
        errors.append(abs(tip / TIP - 1))
    rates = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(rates > 1.8), (errors, rates)
    assert errors[-1] < 1e-5


@pytest.mark.parametrize("cell_type", ["tri3", "tri6", "quad4", "tet4", "tet10", "hex8"])
def test_heat_slab_with_uniform_source(cell_type):
    mesh = slab(cell_type, 6 if cell_type in ("tri6", "tet10") else 8, 2)
    model = HeatConduction(mesh, conductivity=KAPPA)
    model.fix("left").fix("right")
    model.heat_source(Q)
    sol = model.solve()
    x = mesh.points[:, 0]
    peak = Q * L**2 / (8 * KAPPA)
    assert np.abs(sol.temperature - Q * x * (L - x) / (2 * KAPPA)).max() < 1e-10 * peak
    flux = np.zeros((mesh.n_cells, mesh.dim))
    flux[:, 0] = -Q * (L - 2 * gradient_abscissa(mesh)) / 2
    assert np.abs(sol.heat_flux() - flux).max() < 1e-10 * Q * L
    # Heat generated Q V leaves through both ends equally; reactions are K T − f.
    volume = L * WIDTH ** (mesh.dim - 1)
    assert sol.reaction_force("left")[0] == pytest.approx(-Q * volume / 2, rel=1e-10)
    assert sol.reaction_force("right")[0] == pytest.approx(-Q * volume / 2, rel=1e-10)

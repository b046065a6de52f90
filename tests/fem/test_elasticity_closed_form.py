"""Forward solutions against closed-form elasticity solutions.

* Cantilever: Timoshenko & Goodier's exact plane-stress solution of an end-loaded beam
  (in the form of Augarde & Deeks, Finite Elem. Anal. Des. 44 (2008) 595-601), imposed as
  Dirichlet data on the clamped edge with the parabolic shear traction at the tip. Its tip
  deflection is beam theory plus the shear term: ``PL³/(3EI) + (4+5ν) P D² L / (24 E I)``.
* Plate with a hole: Kirsch's solution (stress concentration 3 at the top of the hole),
  with the exact tractions on the outer edges of a quarter plate.
* Lamé's thick cylinder under internal pressure, plane strain.

The formulas were checked symbolically (equilibrium, boundary tractions) when written.
"""

import numpy as np
import pytest

from fesens.mesh import plate_with_hole, quarter_annulus, rectangle
from fesens.physics import Elasticity

E, NU = 1000.0, 0.3


# ---------------------------------------------------------------- cantilever
def cantilever_exact(points, P=1.0, L=10.0, D=2.0):
    x, y = points[:, 0], points[:, 1] - D / 2
    I = D**3 / 12
    ux = -P * y / (6 * E * I) * ((6 * L - 3 * x) * x + (2 + NU) * (y**2 - D**2 / 4))
    uy = P / (6 * E * I) * (3 * NU * y**2 * (L - x) + (4 + 5 * NU) * D**2 * x / 4
                            + (3 * L - x) * x**2)
    return np.column_stack([ux, uy])


def solve_cantilever(nx, ny, cell_type, P=1.0, L=10.0, D=2.0):
    mesh = rectangle(nx, ny, L, D, cell_type=cell_type)
    model = Elasticity(mesh, E=E, nu=NU, plane="stress")
    model.fix("left", value=lambda p: cantilever_exact(p, P, L, D))
    I = D**3 / 12
    model.traction(
        "right",
        lambda p: np.column_stack(
            [np.zeros(len(p)), P / (2 * I) * (D**2 / 4 - (p[:, 1] - D / 2) ** 2)]
        ),
    )
    return mesh, model.solve()


def l2_error(mesh, u, exact):
    """Nodal RMS error relative to the RMS of the exact field (a discrete L2 norm)."""
    return np.sqrt(np.mean((u - exact(mesh.points)) ** 2) / np.mean(exact(mesh.points) ** 2))


@pytest.mark.parametrize(
    ("cell_type", "sizes", "rate"),
    [("quad4", [(20, 4), (40, 8), (80, 16)], 2.0),
     ("tri3", [(20, 4), (40, 8), (80, 16)], 2.0),
     ("tri6", [(10, 2), (20, 4), (40, 8)], 3.0)],
)
def test_cantilever_displacement_converges_at_expected_rate(cell_type, sizes, rate):
    """Displacement error O(h^(p+1)): the observed rate on the finest pair is within 0.15."""
    errors = []
    for nx, ny in sizes:
        mesh, sol = solve_cantilever(nx, ny, cell_type)
        errors.append(l2_error(mesh, sol.displacement, cantilever_exact))
    rates = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(rates > 1.5) and rates[-1] > rate - 0.15, (errors, rates)


def test_cantilever_tip_deflection_matches_beam_theory_with_shear():
    P, L, D = 1.0, 10.0, 2.0
    I = D**3 / 12
    beam = P * L**3 / (3 * E * I) + (4 + 5 * NU) * P * D**2 * L / (24 * E * I)
    deflections = []
    for n in (1, 2, 4):
        mesh, sol = solve_cantilever(10 * n, 2 * n, "tri6", P, L, D)
        tip = mesh.nearest_node((L, D / 2))
        deflections.append(sol.displacement[tip, 1])
    errors = np.abs(np.array(deflections) / beam - 1)
    assert errors[-1] < 1e-3
    assert np.all(np.diff(errors) < 0)


# ---------------------------------------------------------------- Kirsch
def kirsch_stress(points, sigma=1.0, a=1.0):
    r = np.hypot(points[:, 0], points[:, 1])
    t = np.arctan2(points[:, 1], points[:, 0])
    q2, q4 = a**2 / r**2, a**4 / r**4
    sxx = sigma * (1 - q2 * (1.5 * np.cos(2 * t) + np.cos(4 * t)) + 1.5 * q4 * np.cos(4 * t))
    syy = sigma * (-q2 * (0.5 * np.cos(2 * t) - np.cos(4 * t)) - 1.5 * q4 * np.cos(4 * t))
    sxy = sigma * (-q2 * (0.5 * np.sin(2 * t) + np.sin(4 * t)) + 1.5 * q4 * np.sin(4 * t))
    return sxx, syy, sxy


def solve_kirsch(n, cell_type, a=1.0, L=5.0):
    mesh = plate_with_hole(n, n, a, L, cell_type=cell_type, grading=1.1)
    model = Elasticity(mesh, E=E, nu=NU, plane="stress")
    model.fix("x_axis", components=1).fix("y_axis", components=0)

    def on_right(p):
        sxx, _, sxy = kirsch_stress(p, a=a)
        return np.column_stack([sxx, sxy])

    def on_top(p):
        _, syy, sxy = kirsch_stress(p, a=a)
        return np.column_stack([sxy, syy])

    model.traction("right", on_right)
    model.traction("top", on_top)
    return mesh, model.solve()


@pytest.mark.parametrize("cell_type", ["quad4", "tri6"])
def test_plate_with_hole_converges_to_kirsch_concentration_of_3(cell_type):
    concentrations = []
    for n in (8, 16, 32):
        mesh, sol = solve_kirsch(n, cell_type)
        top_of_hole = mesh.nearest_node((0.0, 1.0))
        # cell averaging converges monotonically here; patch recovery (the default) is
        # within 0.01 % from n = 16 on (tests/fem/test_stress_benchmarks.py)
        concentrations.append(sol.nodal_stress("average")[top_of_hole, 0, 0])
    errors = np.abs(np.array(concentrations) - 3.0)
    assert np.all(np.diff(errors) < 0), concentrations
    assert errors[-1] < 0.06 * 3, concentrations


# ---------------------------------------------------------------- Lamé
def lame_radial_displacement(r, p=1.0, ri=1.0, ro=2.0):
    return (1 + NU) / E * p * ri**2 / (ro**2 - ri**2) * ((1 - 2 * NU) * r + ro**2 / r)


@pytest.mark.parametrize(("cell_type", "min_rate"), [("quad4", 1.8), ("tri6", 2.7)])
def test_thick_cylinder_matches_lame(cell_type, min_rate):
    errors = []
    for n in (4, 8, 16):
        mesh = quarter_annulus(n, 2 * n, 1.0, 2.0, cell_type=cell_type)
        model = Elasticity(mesh, E=E, nu=NU, plane="strain")
        model.fix("x_axis", components=1).fix("y_axis", components=0)
        model.pressure("inner", 1.0)
        u = model.solve().displacement
        r = np.hypot(mesh.points[:, 0], mesh.points[:, 1])
        u_r = np.einsum("ni,ni->n", u, mesh.points / r[:, None])
        exact = lame_radial_displacement(r)
        errors.append(np.sqrt(np.mean((u_r - exact) ** 2) / np.mean(exact**2)))
    rates = np.log2(np.array(errors[:-1]) / errors[1:])
    # Curved boundary: geometric error also converges (isoparametric mapping).
    assert np.all(rates > min_rate), (errors, rates)
    assert errors[-1] < 2e-3

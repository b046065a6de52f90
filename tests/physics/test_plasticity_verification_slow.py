"""The structural plasticity verification on more cell types and meshes (slow): the
thick-walled cylinder of Hill (1950, *The Mathematical Theory of Plasticity*, ch. V) with
tri6 cells and as a hex8 slice held at ``w = 0`` on both faces (plane strain in 3D), and
the perforated strip's plane-strain limit load (net section at ``2k``, exact by the bound
theorems, Hill 1950 ch. VIII) approached under mesh refinement. The closed forms are in
``plastic_references.py``; the quad8 cases in ``test_plasticity_verification.py``.
"""

import numpy as np
import pytest
from plastic_references import (
    HILL_DISPLACEMENT_TOL,
    HILL_PRESSURE_TOL,
    cylinder_mesh,
    cylinder_slice,
    elastic_limit_pressure,
    hill_outer_displacement,
    hill_pressure_at,
    hill_radius,
    lame_outer_displacement,
    limit_pressure,
    outer_displacement,
    plastic_pressures,
    solve_cylinder,
    solve_strip,
    strip_limit_load,
    strip_mesh,
)

from fesens.errors import NewtonError

#: Lamé's outer displacement on a ring of straight-sided cells (4 per quarter circle: the
#: polygon's radius is 0.4 % short of the circle's between its nodes); curved cells 1e-4.
LAME_STRAIGHT, LAME_CURVED = 6e-3, 1e-4


def cylinder_curve(mesh, **options):
    """The outer displacement at half the first yield and from the first yield to
    0.98 p_lim: ``(pressures, u)``."""
    pressures = np.concatenate([[0.0, 0.5 * elastic_limit_pressure()], plastic_pressures(6)[1:]])
    _, solution = solve_cylinder(mesh, pressures, **options)
    return pressures, outer_displacement(mesh, solution.displacements)


def check_hill(pressures, u, lame_tol) -> None:
    """Lamé at half the first yield; Hill above the first yield (``pressures[3:]``)."""
    assert u[1] == pytest.approx(lame_outer_displacement(pressures[1]), rel=lame_tol)
    np.testing.assert_allclose(hill_pressure_at(u[3:]), pressures[3:], rtol=HILL_PRESSURE_TOL)
    hill = [hill_outer_displacement(hill_radius(p)) for p in pressures[3:]]
    np.testing.assert_allclose(u[3:], hill, rtol=HILL_DISPLACEMENT_TOL)


@pytest.mark.slow
def test_cylinder_with_tri6_cells_follows_hill_and_collapses_at_the_limit():
    mesh = cylinder_mesh(16, 8, "tri6")
    pressures, u = cylinder_curve(mesh)
    check_hill(pressures, u, LAME_CURVED)
    with pytest.raises(NewtonError):
        solve_cylinder(mesh, [*pressures, 1.02 * limit_pressure()])


@pytest.mark.slow
def test_cylinder_as_a_hex8_slice_is_plane_strain_and_follows_hill():
    """The slice with ``w = 0`` on both faces is the 2D quad4 ring of the same lattice
    (plane strain), and follows Hill. Fully integrated linear cells lock at collapse
    (they carry pressures above the limit), so the collapse is the quadratic cells'."""
    pressures, u = cylinder_curve(cylinder_slice(16, 4))
    check_hill(pressures, u, LAME_STRAIGHT)
    _, u_2d = cylinder_curve(cylinder_mesh(16, 4, "quad4"))
    np.testing.assert_allclose(u, u_2d, rtol=1e-8)


@pytest.mark.slow
def test_perforated_strip_limit_load_is_approached_under_refinement():
    """quad8 (reduced rule) and tri6 with 4, 8 and 16 cells from the hole outwards: the
    end reaction after the stretch lies above the net-section limit load (the discrete
    mechanism is stiffer than the true one) and about halves its distance to it with each
    refinement, to 0.6 % (quad8) and 1.1 % (tri6) on the finest mesh."""
    factors = np.linspace(0.0, 1.0, 9) ** 1.5
    limit = strip_limit_load()
    for cell_type, options, finest in (("quad8", {"quadrature_order": 2}, 0.008),
                                       ("tri6", {}, 0.013)):
        excess = np.array([solve_strip(strip_mesh(n, n, cell_type), 0.4, factors,
                                       **options)[2][-1] / limit - 1 for n in (4, 8, 16)])
        assert np.all(excess > 0), (cell_type, excess)
        assert np.all(excess[1:] < 0.6 * excess[:-1]), (cell_type, excess)
        assert excess[-1] < finest, (cell_type, excess)

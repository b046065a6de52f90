"""J2 plasticity on structures against closed forms, plane strain, perfectly plastic:

* the thick-walled cylinder under internal pressure (Hill 1950, *The Mathematical Theory of
  Plasticity*, ch. V): Lamé's elastic range, first yield at the bore, the pressure against
  the outer displacement of the partly plastic tube, and the limit pressure ``2k ln(b/a)``;
* the perforated strip in tension: first yield at the hole's edge at the load of Howland's
  (1930) elastic stress concentration, then the limit load ``2k`` times the net section,
  exact by the bound theorems of limit analysis (Hill 1950, ch. VIII; derivation in
  ``strip_limit_load``), with the plastic zone across the ligament.

quad8 cells here, with the reduced 2 x 2 rule (``quadrature_order=2``) where the plastic
flow must be incompressible at collapse: the full 3 x 3 rule locks there (Nagtegaal, Parks &
Rice 1974), carrying loads beyond the limit. tri6, a hex8 slice and the mesh convergence
are at the end (slow); the closed forms in ``examples/plastic_verification.py``, what the
tests add to them in ``plastic_references.py``.
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
    strip_first_yield_load,
    strip_limit_load,
    strip_mesh,
)

from fesens.errors import NewtonError

REDUCED = {"quadrature_order": 2}


def test_cylinder_elastic_range_is_lame_and_first_yield_is_at_the_bore():
    """Lamé's displacement below p_e; no plastic point at 0.99 p_e, plastic points at
    1.1 p_e (the quadrature points nearest the bore lie a little outside it), all within a
    cell of Hill's elastic–plastic boundary."""
    mesh = cylinder_mesh(8, 4)
    p_e = elastic_limit_pressure()
    _, solution = solve_cylinder(mesh, [0.0, 0.5 * p_e, 0.99 * p_e, 1.1 * p_e])
    u = outer_displacement(mesh, solution.displacements)
    assert u[1] == pytest.approx(lame_outer_displacement(0.5 * p_e), rel=1e-4)
    assert u[2] == pytest.approx(lame_outer_displacement(0.99 * p_e), rel=1e-4)
    plastic = solution.equivalent_plastic_strain
    assert np.all(plastic[2] == 0.0)
    assert plastic[3].max() > 0.0
    centroids = np.linalg.norm(mesh.cell_centroids(), axis=1)
    outermost = centroids[plastic[3].max(axis=1) > 0].max()
    assert outermost < hill_radius(1.1 * p_e) + 1.0 / 8


def test_cylinder_pressure_against_outer_displacement_follows_hill():
    """From the first yield to 0.98 p_lim: the pressure at fesens's outer displacement
    against Hill's, and the displacement at each pressure."""
    mesh = cylinder_mesh(8, 4)
    pressures = plastic_pressures(6)
    _, solution = solve_cylinder(mesh, pressures, **REDUCED)
    u = outer_displacement(mesh, solution.displacements)[2:]
    np.testing.assert_allclose(hill_pressure_at(u), pressures[2:], rtol=HILL_PRESSURE_TOL)
    hill = [hill_outer_displacement(hill_radius(p)) for p in pressures[2:]]
    np.testing.assert_allclose(u, hill, rtol=HILL_DISPLACEMENT_TOL)


def test_cylinder_carries_0_98_p_lim_and_fails_beyond_the_limit():
    """Below the limit pressure Newton converges; above it no equilibrium exists, and the
    failure keeps the last converged increment."""
    mesh = cylinder_mesh(8, 4)
    pressures = [*plastic_pressures(6), 1.02 * limit_pressure()]
    with pytest.raises(NewtonError) as failure:
        solve_cylinder(mesh, pressures, **REDUCED)
    assert failure.value.last_converged == len(pressures) - 2
    assert failure.value.partial.factors[-1] == pytest.approx(0.98 * limit_pressure())


def test_perforated_strip_reaches_the_net_section_limit_load():
    """The end reaction levels off just above ``2k`` times the ligament (a displacement
    method's discrete limit load lies above the true one; 8 x 8 quad8 cells: 1.3 %), and at
    the limit every cell on the ligament ``y = 0`` is plastic."""
    mesh = strip_mesh(8, 8)
    factors = np.linspace(0.0, 1.0, 9) ** 1.5
    _, solution, reaction = solve_strip(mesh, 0.4, factors, **REDUCED)
    limit = strip_limit_load()
    assert limit < reaction[-1] < 1.02 * limit
    assert reaction[-1] - reaction[-2] < 0.002 * limit        # a plateau
    assert np.all(np.diff(reaction) > 0)
    on_ligament = np.unique(mesh.facet_sets["x_axis"].cells)
    assert np.all(solution.equivalent_plastic_strain[-1][on_ligament].max(axis=1) > 0)


def test_perforated_strip_first_yields_at_the_hole_at_howlands_load():
    """The plastic zone starts at the hole's edge on the ligament (cells on the hole only),
    between 0.97 and 1.05 of the load of Howland's stress concentration (the strip here is
    1.8 widths long, Howland's infinitely; the quadrature points nearest the edge lie a
    little inside)."""
    mesh = strip_mesh(16, 16)
    first_yield = strip_first_yield_load()
    _, _, elastic = solve_strip(mesh, 1e-3, [0.0, 1.0], **REDUCED)
    end = first_yield / (elastic[1] / 1e-3)       # the end displacement of that load
    _, solution, reaction = solve_strip(mesh, end, [0.0, 0.97, 1.05], **REDUCED)
    np.testing.assert_allclose(reaction[1:], [0.97 * first_yield, 1.05 * first_yield],
                               rtol=1e-3)
    plastic = solution.equivalent_plastic_strain.max(axis=2)
    assert np.all(plastic[1] == 0.0) and plastic[2].max() > 0.0
    on_hole = mesh.facet_sets["hole"].cells
    at_edge = np.intersect1d(on_hole, mesh.facet_sets["x_axis"].cells)
    assert np.all(plastic[2][at_edge] > 0)
    assert np.all(np.isin(np.flatnonzero(plastic[2] > 0), on_hole))


# --- slow: tri6 cells, a hex8 slice and the strip's mesh convergence ------------------

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
    for cell_type, options, finest in (("quad8", REDUCED, 0.008),
                                       ("tri6", {}, 0.013)):
        excess = np.array([solve_strip(strip_mesh(n, n, cell_type), 0.4, factors,
                                       **options)[2][-1] / limit - 1 for n in (4, 8, 16)])
        assert np.all(excess > 0), (cell_type, excess)
        assert np.all(excess[1:] < 0.6 * excess[:-1]), (cell_type, excess)
        assert excess[-1] < finest, (cell_type, excess)

"""Outward facet normals on curved quadratic cells (fesens/fem/integrals/geometry.py).

A curved cell's corner centroid can lie outside it, or nearly in its facet's tangent plane,
so a normal oriented away from that centroid may point into the cell: a pressure then pulls
instead of pushing. The normals must point out of the owner everywhere, for any curvature:
checked here on quarter annuli with as few as one cell per 90° (the arcs' exact normals are
``±e_r``), on a box mapped onto a cylindrical shell (hex20, tet10) and through Lamé's thick
cylinder, whose solution changes sign with the normals.
"""

import numpy as np
import pytest

from fesens.ad import grad
from fesens.ad.numpy_wrapper import getval
from fesens.errors import MeshError
from fesens.fem.integrals.geometry import facet_geometry
from fesens.mesh import FacetSet, Mesh, box, quarter_annulus
from fesens.physics import Elasticity

E, NU = 1000.0, 0.3


def radial(x):
    """Unit vectors ``e_r`` in the xy-plane at points ``x`` ``(..., dim)``."""
    planar = x[..., :2]
    return planar / np.linalg.norm(planar, axis=-1, keepdims=True)


def annulus_outward(side, x):
    """The exact outward normal of the quarter annulus's side ``side`` at points ``x``."""
    if side == "inner":
        return -radial(x)
    if side == "outer":
        return radial(x)
    if side == "x_axis":
        return np.broadcast_to([0.0, -1.0], x.shape)
    return np.broadcast_to([-1.0, 0.0], x.shape)  # y_axis


@pytest.mark.parametrize("cell_type", ["quad8", "quad9", "tri6"])
@pytest.mark.parametrize(("n_radial", "n_angular"), [(1, 1), (8, 1), (1, 8), (4, 2), (4, 8)])
def test_annulus_normals_point_out_of_every_side(cell_type, n_radial, n_angular):
    mesh = quarter_annulus(n_radial, n_angular, 1.0, 2.0, cell_type)
    for side in ("inner", "outer", "x_axis", "y_axis"):
        g = facet_geometry(mesh, mesh.facet_sets[side])
        alignment = np.einsum("fqi,fqi->fq", g.normal, annulus_outward(side, g.x))
        # one quadratic per 90° of arc: its normal is within ~10° of e_r, cos > 0.9
        assert alignment.min() > 0.9, (side, alignment.min())


def cylindrical_shell(cell_type, n_angular):
    """A box ``[0, 1]³`` mapped onto the shell ``1 <= r <= 2``, ``0 <= θ <= 90°``,
    ``0 <= z <= 1`` (``r = 1 + x``, ``θ = 90° y``), every node (mid-edge ones too) on it:
    the cells are curved isoparametric cells."""
    flat = box(1, n_angular, 1, cell_type=cell_type)
    x, y, z = flat.points.T
    r, theta = 1.0 + x, 0.5 * np.pi * y
    points = np.column_stack([r * np.cos(theta), r * np.sin(theta), z])
    return Mesh(points, flat.cells, flat.cell_type, facet_sets=dict(flat.facet_sets))


def shell_outward(side, x):
    """The exact outward normal of the shell's side ``side`` (box side names) at ``x``."""
    e_r = radial(x)
    e_theta = np.stack([-e_r[..., 1], e_r[..., 0], np.zeros(e_r.shape[:-1])], axis=-1)
    e_r = np.concatenate([e_r, np.zeros(e_r.shape[:-1] + (1,))], axis=-1)
    e_z = np.broadcast_to([0.0, 0.0, 1.0], x.shape)
    return {"left": -e_r, "right": e_r, "bottom": -e_theta, "top": e_theta,
            "back": -e_z, "front": e_z}[side]


@pytest.mark.parametrize("cell_type", ["hex20", "hex27", "tet10"])
@pytest.mark.parametrize("n_angular", [1, 2])
def test_cylindrical_shell_normals_point_out_of_every_side(cell_type, n_angular):
    mesh = cylindrical_shell(cell_type, n_angular)
    for side in ("left", "right", "bottom", "top", "back", "front"):
        g = facet_geometry(mesh, mesh.facet_sets[side])
        alignment = np.einsum("fqi,fqi->fq", g.normal, shell_outward(side, g.x))
        assert alignment.min() > 0.9, (side, alignment.min())


def test_traced_points_keep_the_orientation_and_differentiate():
    """With traced coordinates the normals are the same (to round-off), and the gradient of a
    smooth function of them matches a central difference (the orientation is decided on
    the values, so it stays fixed under a small perturbation)."""
    mesh = quarter_annulus(4, 1, 1.0, 2.0, "quad8")
    inner = mesh.facet_sets["inner"]
    reference = facet_geometry(mesh, inner).normal

    def pull(points):
        g = facet_geometry(mesh, inner, points=points)
        return np.sum(g.dS * np.einsum("fqi,fqi->fq", g.normal, g.x))

    seen = []

    def recorded(points):
        seen.append(facet_geometry(mesh, inner, points=points).normal)
        return pull(points)

    gradient = grad(recorded)(mesh.points)
    np.testing.assert_allclose(getval(seen[0]), reference, atol=1e-14)  # round-off only
    direction = np.random.default_rng(0).uniform(-1, 1, mesh.points.shape)
    h = 1e-6
    central = (pull(mesh.points + h * direction) - pull(mesh.points - h * direction)) / (2 * h)
    assert np.sum(gradient * direction) == pytest.approx(central, rel=1e-7)


def test_owner_that_does_not_hold_the_facet_is_refused():
    mesh = quarter_annulus(2, 2, 1.0, 2.0, "quad8")
    inner = mesh.facet_sets["inner"]
    wrong = FacetSet(inner.facet_type, inner.facets, (inner.cells + 1) % mesh.n_cells)
    with pytest.raises(MeshError, match="not nodes of their owner cell"):
        facet_geometry(mesh, wrong)


# ---------------------------------------------------------------- Lamé
def lame_radial_displacement(r, p=1.0, a=1.0, b=2.0):
    """Radial displacement of a thick cylinder ``a <= r <= b`` under bore pressure ``p``,
    plane strain: ``u(r) = (1 + ν) p a² / (E (b² − a²)) ((1 − 2ν) r + b²/r)`` (Timoshenko
    & Goodier, *Theory of Elasticity*, 3rd ed., §33, with ``ε_z = 0``)."""
    return (1 + NU) / E * p * a**2 / (b**2 - a**2) * ((1 - 2 * NU) * r + b**2 / r)


@pytest.mark.parametrize(("n_radial", "n_angular", "tolerance"), [
    # one quadratic per 90° of arc: the chord of the bore bulges ~1 % off the circle
    (2, 1, 2e-2), (8, 1, 2e-2),
    # one per 45°: that geometric error falls eightfold or more (h³)
    (4, 2, 2e-3), (8, 2, 2e-3),
])
def test_bore_pressure_pushes_the_thick_cylinder_outwards(n_radial, n_angular, tolerance):
    mesh = quarter_annulus(n_radial, n_angular, 1.0, 2.0, "quad8")
    model = Elasticity(mesh, E=E, nu=NU, plane="strain")
    model.fix("x_axis", components=1).fix("y_axis", components=0)
    model.pressure("inner", 1.0)
    u = model.solve().displacement
    r = np.hypot(mesh.points[:, 0], mesh.points[:, 1])
    u_r = np.einsum("ni,ni->n", u, mesh.points / r[:, None])
    for radius in (1.0, 2.0):
        on = np.isclose(r, radius)
        np.testing.assert_allclose(u_r[on], lame_radial_displacement(radius), rtol=tolerance)


@pytest.mark.parametrize("shape, cell", [((8, 1), "quad8"), ((1, 1), "tri6"), ((4, 2), "quad9")])
def test_follower_pressure_pushes_outward_on_curved_quadratic_cells(shape, cell):
    """A follower pressure's facets face out of the owner cell (the bore's outward normal is
    −e_r), also where a curved cell's corner centroid lies outside it."""
    from fesens.fem.integrals.follower import _raw_normals, follower_facets

    mesh = quarter_annulus(*shape, 1.0, 2.0, cell)
    facets = follower_facets(mesh, mesh.facet_sets["inner"], "a follower pressure")
    x = mesh.points[facets.owned.facets.facets]
    from fesens.fem.elements import reference_element

    element = reference_element(mesh.facet_sets["inner"].facet_type)
    xi, _ = element.quadrature(element.mass_order)
    normal = facets.orientation[:, None, None] * _raw_normals(x, element.shape_gradients(xi))
    at = np.einsum("qa,fai->fqi", element.shape(xi), x)
    radial = at / np.linalg.norm(at, axis=-1, keepdims=True)
    assert (np.einsum("fqi,fqi->fq", normal, radial) < 0).all()

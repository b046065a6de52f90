"""Consistent load vectors against closed-form integrals, load magnitudes and load errors.

For isoparametric elements ``Σ_a N_a = 1`` and ``Σ_a N_a x_a = x``, so a consistent load
``f_a = ∫ N_a t dS`` has the resultant ``Σ_a f_a = ∫ t dS`` and the first moment
``Σ_a x_a ⊗ f_a = ∫ x ⊗ t dS`` exactly whenever the quadrature is exact, which the
mass-order rules are for densities linear in ``x`` on straight facets. The reference
integrals over the faces of a block ``[0, l_x] x [0, l_y] (x [0, l_z])`` are the moments
of a uniform distribution: mean ``l/2`` and second moment ``l²/3`` along each side.
"""

import numpy as np
import pytest
from fem_helpers import ALL_CELL_TYPES, CELL_TYPES_2D, distorted, unit_mesh

from fesens.errors import BoundaryConditionError
from fesens.fem.post.probe import OffNodeWarning
from fesens.mesh import Mesh, box, quarter_annulus, rectangle
from fesens.physics import Elasticity, HeatConduction

LENGTHS = np.array([2.0, 1.5, 0.5])
THICKNESS = 0.3
SIDES = {"left": (0, 0.0), "right": (0, 1.0), "bottom": (1, 0.0), "top": (1, 1.0),
         "back": (2, 0.0), "front": (2, 1.0)}


def stretched(mesh: Mesh, lengths) -> Mesh:
    """``mesh`` scaled by ``lengths`` along the axes (an affine map: cells stay valid)."""
    return Mesh(mesh.points * np.asarray(lengths), mesh.cells, mesh.cell_type,
                mesh.node_sets, mesh.facet_sets, mesh.cell_sets)


def block(cell_type: str, n: int = 3, amount: float = 0.0) -> Mesh:
    """The block ``[0, LENGTHS]`` in 2D or 3D, optionally with distorted interior nodes."""
    mesh = unit_mesh(cell_type, n)
    if amount:
        mesh = distorted(mesh, amount)
    return stretched(mesh, LENGTHS[: mesh.dim])


def elasticity(mesh: Mesh) -> Elasticity:
    if mesh.dim == 2:
        return Elasticity(mesh, E=10.0, nu=0.3, plane="stress", thickness=THICKNESS)
    return Elasticity(mesh, E=10.0, nu=0.3)


def out_of_plane(dim: int) -> float:
    return THICKNESS if dim == 2 else 1.0


def side_moments(side: str, dim: int) -> tuple[float, np.ndarray, np.ndarray]:
    """``∫ dS``, ``∫ x dS (dim,)`` and ``∫ x ⊗ x dS (dim, dim)`` over a side of the block."""
    axis, fraction = SIDES[side]
    lengths = LENGTHS[:dim]
    measure = np.prod(np.delete(lengths, axis))
    mean = lengths / 2
    mean[axis] = fraction * lengths[axis]
    second = np.outer(mean, mean)
    square = lengths**2 / 3
    square[axis] = mean[axis] ** 2
    np.fill_diagonal(second, square)
    return measure, measure * mean, measure * second


def nodal(model, name: str) -> np.ndarray:
    """A load term as nodal values, ``(n_points, n_components)``."""
    return model.loads[name].reshape(model.mesh.n_points, model.n_components)


# ------------------------------------------------------------------ surface loads
@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_constant_traction_totals_traction_times_facet_measure(cell_type):
    mesh = block(cell_type)
    traction = np.array([1.5, -2.0, 0.75])[: mesh.dim]
    for side in list(SIDES)[: 2 * mesh.dim]:
        model = elasticity(mesh)
        name = model.traction(side, traction)
        measure = side_moments(side, mesh.dim)[0] * out_of_plane(mesh.dim)
        np.testing.assert_allclose(nodal(model, name).sum(axis=0), traction * measure,
                                   rtol=1e-13, err_msg=side)


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_heat_flux_totals_flux_times_facet_measure(cell_type):
    mesh = block(cell_type)
    thickness = out_of_plane(mesh.dim)
    model = HeatConduction(mesh, thickness=thickness)
    name = model.flux("top", 4.0)
    expected = 4.0 * side_moments("top", mesh.dim)[0] * thickness
    assert model.loads[name].sum() == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_linear_traction_has_exact_resultant_and_first_moment(cell_type):
    mesh = block(cell_type)
    dim = mesh.dim
    t0 = np.array([1.0, -2.0, 0.5])[:dim]
    G = np.array([[0.3, -1.2, 0.7], [2.0, 0.4, -0.6], [-0.5, 1.1, 0.9]])[:dim, :dim]
    model = elasticity(mesh)
    name = model.traction("right", lambda x: t0 + x @ G.T)
    f = nodal(model, name)
    measure, first, second = (m * out_of_plane(dim) for m in side_moments("right", dim))
    # t = t0 + G x:  ∫ t dS = t0 S + G ∫x,  ∫ x_i t_j dS = ∫x_i t0_j + Σ_k ∫x_i x_k G_jk
    np.testing.assert_allclose(f.sum(axis=0), measure * t0 + G @ first, rtol=1e-12)
    np.testing.assert_allclose(mesh.points.T @ f, np.outer(first, t0) + second @ G.T,
                               rtol=1e-12, atol=1e-14)
    off_side = ~np.isclose(mesh.points[:, 0], LENGTHS[0])
    assert not f[off_side].any()


@pytest.mark.parametrize("cell_type", CELL_TYPES_2D)
def test_pressure_on_a_quarter_annulus_gives_the_chord_resultants(cell_type):
    """∫ −p n dS over an arc is p times the rotated chord, whatever the arc's facets.

    Internal pressure on the inner quarter circle of radius r pushes outwards:
    (p r t, p r t); external pressure on the outer one (radius R) pushes inwards.
    """
    r, R, p = 1.5, 3.0, 2.0
    mesh = quarter_annulus(2, 5, r, R, cell_type=cell_type)
    model = Elasticity(mesh, plane="strain", thickness=THICKNESS)
    inner = model.pressure("inner", p)
    outer = model.pressure("outer", p)
    np.testing.assert_allclose(nodal(model, inner).sum(axis=0),
                               [p * r * THICKNESS, p * r * THICKNESS], rtol=1e-13)
    np.testing.assert_allclose(nodal(model, outer).sum(axis=0),
                               [-p * R * THICKNESS, -p * R * THICKNESS], rtol=1e-13)


def test_pressure_on_a_predicate_facet_set_equals_the_named_set():
    mesh = quarter_annulus(2, 6, 1.0, 2.0, cell_type="tri6")
    model = Elasticity(mesh, plane="stress")
    named = model.pressure("inner", 3.0)
    by_predicate = model.pressure(lambda x: np.hypot(x[:, 0], x[:, 1]) < 1.0 + 1e-9, 3.0)
    np.testing.assert_allclose(model.loads[by_predicate], model.loads[named], atol=1e-15)


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_pressure_acts_against_the_outward_normal(cell_type):
    mesh = block(cell_type)
    model = elasticity(mesh)
    name = model.pressure("right", 5.0)
    expected = np.zeros(mesh.dim)
    expected[0] = -5.0 * side_moments("right", mesh.dim)[0] * out_of_plane(mesh.dim)
    np.testing.assert_allclose(nodal(model, name).sum(axis=0), expected, atol=1e-13)


# ------------------------------------------------------------------ volume loads
@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_body_force_totals_force_times_volume_with_exact_first_moment(cell_type):
    mesh = block(cell_type, amount=0.2)
    dim = mesh.dim
    b = np.array([1.0, -3.0, 2.0])[:dim]
    model = elasticity(mesh)
    f = nodal(model, model.body_force(b))
    volume = np.prod(LENGTHS[:dim]) * out_of_plane(dim)
    centroid = LENGTHS[:dim] / 2
    np.testing.assert_allclose(f.sum(axis=0), b * volume, rtol=1e-12)
    np.testing.assert_allclose(mesh.points.T @ f, volume * np.outer(centroid, b), rtol=1e-12)


def test_body_force_on_a_cell_subset_totals_force_times_its_volume():
    mesh = block("hex8", n=4)
    model = elasticity(mesh)
    name = model.body_force((0.0, 0.0, -9.0), cells=lambda c: c[:, 0] < LENGTHS[0] / 2)
    f = nodal(model, name)
    np.testing.assert_allclose(f.sum(axis=0), [0.0, 0.0, -9.0 * np.prod(LENGTHS) / 2],
                               atol=1e-13)
    assert not f[mesh.points[:, 0] > LENGTHS[0] / 2 + 1e-12].any()


@pytest.mark.parametrize("cell_type", ALL_CELL_TYPES)
def test_heat_source_totals_source_times_volume(cell_type):
    mesh = block(cell_type, amount=0.2)
    dim = mesh.dim
    thickness = out_of_plane(dim)
    model = HeatConduction(mesh, thickness=thickness)
    volume = np.prod(LENGTHS[:dim]) * thickness
    constant = model.heat_source(2.5)
    assert model.loads[constant].sum() == pytest.approx(2.5 * volume, rel=1e-12)
    # Q = q0 + g·x integrates to V (q0 + g·centroid)
    g = np.array([0.5, -1.0, 2.0])[:dim]
    linear = model.heat_source(lambda x: 1.0 + x @ g)
    expected = volume * (1.0 + g @ (LENGTHS[:dim] / 2))
    assert model.loads[linear].sum() == pytest.approx(expected, rel=1e-12)


# ------------------------------------------------------------------ point loads
def test_point_load_at_coordinates_lands_on_the_nearest_node():
    mesh = rectangle(4, 4, 2.0, 1.0, cell_type="tri6")  # nodes every 0.25 in x, 0.125 in y
    model = Elasticity(mesh, plane="stress", thickness=THICKNESS)
    with pytest.warns(OffNodeWarning, match=r"\[0.52, 0.3\] is not on a node.* 0.0538516 away"):
        name = model.point_load((0.52, 0.30), (1.0, -2.0))
    node = np.flatnonzero(np.all(np.isclose(mesh.points, (0.5, 0.25)), axis=1))
    expected = np.zeros((mesh.n_points, 2))
    expected[node] = (1.0, -2.0)  # a concentrated force: not scaled by the thickness
    assert np.array_equal(nodal(model, name), expected)


def test_heat_point_load_at_coordinates_in_3d():
    mesh = box(2, 2, 2, cell_type="tet4")  # nodes every 0.5
    model = HeatConduction(mesh)
    with pytest.warns(OffNodeWarning, match=r"nearest node \d+ at \[1.0, 0.0, 0.5\], 0.229129"):
        name = model.point_load((0.9, 0.2, 0.45), 5.0)
    node = np.flatnonzero(np.all(np.isclose(mesh.points, (1.0, 0.0, 0.5)), axis=1))
    expected = np.zeros(mesh.n_points)
    expected[node] = 5.0
    assert np.array_equal(model.loads[name], expected)


def test_point_load_on_a_node_set_applies_the_value_at_each_node():
    mesh = box(2, 3, 2, cell_type="hex8")
    model = Elasticity(mesh)
    name = model.point_load("right", (0.0, 1.0, -1.5))
    expected = np.zeros((mesh.n_points, 3))
    expected[mesh.points[:, 0] == 1.0] = (0.0, 1.0, -1.5)
    assert np.array_equal(nodal(model, name), expected)


def test_point_load_on_a_predicate_evaluates_a_function_value_per_node():
    mesh = rectangle(3, 2, cell_type="quad4")
    model = Elasticity(mesh, plane="stress")
    name = model.point_load(lambda x: x[:, 1] == 0.0,
                            lambda x: np.column_stack([x[:, 0], -2 * x[:, 0]]))
    bottom = mesh.points[:, 1] == 0.0
    expected = np.zeros((mesh.n_points, 2))
    expected[bottom, 0] = mesh.points[bottom, 0]
    expected[bottom, 1] = -2 * mesh.points[bottom, 0]
    assert np.array_equal(nodal(model, name), expected)


# ------------------------------------------------------------------ magnitudes
def cantilever_with_two_loads() -> Elasticity:
    mesh = rectangle(6, 2, 3.0, 1.0, cell_type="quad4")
    model = Elasticity(mesh, E=100.0, nu=0.3, plane="stress", thickness=THICKNESS).fix("left")
    model.traction("right", (0.0, -1.0), name="tip")
    model.body_force((0.0, -2.0), name="weight")
    return model


def test_load_magnitudes_scale_named_loads_linearly():
    model = cantilever_with_two_loads()
    u_tip = model.solve(loads={"weight": 0.0}).u
    u_weight = model.solve(loads={"tip": 0.0}).u
    assert np.abs(u_tip).max() > 0 and np.abs(u_weight).max() > 0
    doubled = model.solve(loads={"tip": 2.0, "weight": 0.0})
    np.testing.assert_allclose(doubled.u, 2 * u_tip, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(model.solve().u, u_tip + u_weight, rtol=1e-12, atol=1e-15)
    combined = model.solve(loads={"tip": 3.0, "weight": -0.5})
    np.testing.assert_allclose(combined.u, 3 * u_tip - 0.5 * u_weight, rtol=1e-11, atol=1e-15)
    # The reactions balance the scaled loads: tip traction 1 on a side of length 1.
    np.testing.assert_allclose(doubled.reaction_force("left"), [0.0, 2.0 * THICKNESS],
                               atol=1e-12)
    weight = 2.0 * 3.0 * 1.0 * THICKNESS
    np.testing.assert_allclose(combined.reaction_force("left"),
                               [0.0, 3.0 * THICKNESS - 0.5 * weight], atol=1e-12)


# ------------------------------------------------------------------ errors
def test_unknown_load_name_in_magnitudes_is_named():
    model = cantilever_with_two_loads()
    with pytest.raises(BoundaryConditionError, match=r"unknown load name.*'tpi'.*'tip'"):
        model.solve(loads={"tpi": 2.0})


def test_duplicate_load_name_is_rejected_and_the_first_load_kept():
    model = cantilever_with_two_loads()
    before = model.loads["tip"].copy()
    with pytest.raises(BoundaryConditionError, match="a load named 'tip' exists already"):
        model.body_force((1.0, 0.0), name="tip")
    assert np.array_equal(model.loads["tip"], before)
    assert sorted(model.loads) == ["tip", "weight"]


@pytest.mark.parametrize("add", [
    lambda m: m.traction("right", (1.0, 0.0, 0.0)),
    lambda m: m.body_force((1.0,)),
    lambda m: m.body_force(1.0),
    lambda m: m.point_load("right", (1.0, 2.0, 3.0)),
    lambda m: m.pressure("right", (1.0, 2.0)),
], ids=["traction", "body-force", "scalar-body-force", "point-load", "vector-pressure"])
def test_wrong_number_of_components_is_rejected(add):
    model = Elasticity(rectangle(2, 2), plane="stress")
    with pytest.raises(BoundaryConditionError, match="component"):
        add(model)
    assert model.loads == {}


def test_heat_source_with_two_components_is_rejected():
    model = HeatConduction(rectangle(2, 2))
    with pytest.raises(BoundaryConditionError, match="1 component"):
        model.heat_source((1.0, 2.0))


@pytest.mark.parametrize("wrong", [
    lambda x: np.ones(len(x)),
    lambda x: np.ones((len(x), 3)),
], ids=["one-value-per-point", "three-components"])
def test_traction_function_returning_the_wrong_shape_is_rejected(wrong):
    model = Elasticity(rectangle(3, 3), plane="stress")
    with pytest.raises(BoundaryConditionError, match="2 value"):
        model.traction("right", wrong)


@pytest.mark.parametrize("apply", [
    lambda m, f: m.traction("right", f),
    lambda m, f: m.body_force(f),
    lambda m, f: m.point_load("right", f),
    lambda m, f: m.fix("left", value=f),
], ids=["traction", "body-force", "point-load", "prescribed-value"])
def test_transposed_function_result_is_rejected(apply):
    """``(n_components, n)`` instead of ``(n, n_components)`` must not be reshaped silently."""
    model = Elasticity(rectangle(3, 3), plane="stress")
    with pytest.raises(BoundaryConditionError, match="2 value"):
        apply(model, lambda x: np.stack([x[:, 1], -x[:, 0]]))

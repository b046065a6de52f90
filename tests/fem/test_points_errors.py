"""Bad node coordinates for ``model.solve(points=X)`` and ``volume(model, points=X)``: each
raises a specific error naming the parameter, the expected shape, the nodes or the cells,
before any assembly, traced (inside :func:`fesens.ad.grad`) or not."""

import re

import numpy as np
import pytest

from fesens.ad import grad
from fesens.errors import DegenerateElementError, NonFiniteError
from fesens.mesh import box, rectangle
from fesens.objectives import compliance, volume
from fesens.physics import Elasticity, HeatConduction


def beam() -> Elasticity:
    """A 2 x 1 clamped beam, 4 x 2 quad4 cells (15 nodes), traction on ``right``."""
    model = Elasticity(rectangle(4, 2, 2.0, 1.0, cell_type="quad4"), E=1.0, nu=0.3,
                       plane="stress")
    model.fix("left").traction("right", (0.0, -1.0))
    return model


def plain_and_traced(model):
    """The two ways to pass coordinates: a plain solve and a traced one (gradient)."""
    return [lambda X: model.solve(points=X),
            lambda X: grad(lambda Y: compliance(model.solve(points=Y)))(X)]


def test_unknown_parameter_names_are_listed_with_the_accepted_ones():
    model = beam()
    with pytest.raises(TypeError) as info:
        model.solve(points=model.mesh.points.copy(), Young=2.0, thickness=1.0)
    message = str(info.value)
    assert "unknown parameter(s) ['Young', 'thickness']" in message
    assert "E, nu, scale" in message and "points" in message


def test_unknown_heat_parameter_is_named():
    model = HeatConduction(rectangle(2, 2), conductivity=1.0)
    model.fix("left")
    with pytest.raises(TypeError, match=r"\['kappa'\].*conductivity, scale"):
        model.solve(points=model.mesh.points.copy(), kappa=2.0)


@pytest.mark.parametrize("shape", ["one_column", "transposed", "three_columns", "fewer_nodes"])
def test_points_of_the_wrong_shape_name_the_expected_shape(shape):
    model = beam()
    X = model.mesh.points
    bad = {"one_column": X[:, :1], "transposed": X.T, "fewer_nodes": X[:-1],
           "three_columns": np.column_stack([X, np.zeros(len(X))])}[shape]
    expected = re.escape(f"points must have shape (15, 2) (n_points, dim) like mesh.points, "
                         f"got {np.shape(bad)}")
    for call in plain_and_traced(model):
        with pytest.raises(ValueError, match=expected):
            call(bad)
    with pytest.raises(ValueError, match=r"shape \(15, 2\)"):
        volume(model, points=bad)


def test_3d_points_of_the_wrong_shape():
    model = Elasticity(box(2, 1, 1, cell_type="hex8"), E=1.0, nu=0.3)
    model.fix("left")
    with pytest.raises(ValueError, match=r"shape \(12, 3\) .*got \(12, 2\)"):
        model.solve(points=model.mesh.points[:, :2])


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_coordinates_name_the_nodes(value):
    model = beam()
    X = model.mesh.points.copy()
    X[7, 1] = value
    X[11, 0] = value
    for call in plain_and_traced(model):
        with pytest.raises(NonFiniteError, match=r"NaN or infinity at node\(s\) \[7, 11\]$"):
            call(X)
    with pytest.raises(NonFiniteError, match=r"node\(s\) \[7, 11\]"):
        volume(model, points=X)


def test_many_non_finite_nodes_are_listed_up_to_twenty():
    model = HeatConduction(rectangle(6, 4), conductivity=1.0)  # 35 nodes
    model.fix("left")
    X = np.full_like(model.mesh.points, np.nan)
    with pytest.raises(NonFiniteError, match=r"\[0, 1, .*, 19\] \.\.\.$"):
        model.solve(points=X)


def test_an_inverted_element_names_its_cells():
    """The interior node at (1, 0.5) pushed past the cells' far corners: the four cells
    around it fold over; the two it crosses into are inverted, and named."""
    model = beam()
    X = model.mesh.points.copy()
    node = model.mesh.nearest_node((1.0, 0.5))
    X[node] = (1.8, 0.9)
    for call in [*plain_and_traced(model), lambda X: volume(model, points=X)]:
        with pytest.raises(DegenerateElementError,
                           match=r"2 cells have a non-positive Jacobian .*cell ids: \[2, 6\]"
                           ) as info:
            call(X)
        np.testing.assert_array_equal(info.value.cell_ids, [2, 6])
        assert set(info.value.cell_ids) <= set(np.flatnonzero((model.mesh.cells == node)
                                                              .any(axis=1)))


def test_a_collapsed_element_is_degenerate_too():
    """Zero area (det J = 0 at the quadrature points) is rejected like inversion."""
    model = HeatConduction(rectangle(2, 1, 2.0, 1.0, cell_type="tri3"))
    model.fix("left")
    X = model.mesh.points.copy()
    X[:, 1] = 0.0  # every triangle flat
    with pytest.raises(DegenerateElementError, match=r"cell ids: \[0, 1, 2, 3\]"):
        model.solve(points=X)


def test_an_inverted_3d_element_names_its_cell():
    model = Elasticity(box(2, 1, 1, 2.0, 1.0, 1.0, cell_type="tet4"), E=1.0, nu=0.3)
    model.fix("left").traction("right", (0.0, -1.0, 0.0))
    X = model.mesh.points.copy()
    node = model.mesh.nearest_node((1.0, 1.0, 1.0))
    X[node] = (1.0, -1.0, -1.0)  # through the opposite faces of its cells
    with pytest.raises(DegenerateElementError, match="cell ids") as info:
        model.solve(points=X)
    cells_of_node = np.flatnonzero((model.mesh.cells == node).any(axis=1))
    assert set(info.value.cell_ids) <= set(cells_of_node)
    assert str(info.value.cell_ids.tolist()) in str(info.value)


def test_coordinates_as_nested_lists_are_accepted():
    """``points`` is array_like: a nested list gives the solve of the array."""
    model = beam()
    from_list = model.solve(points=model.mesh.points.tolist())
    np.testing.assert_allclose(from_list.u, model.solve().u, rtol=1e-12, atol=1e-14)
    assert volume(model, points=model.mesh.points.tolist()) == pytest.approx(2.0)


def test_volume_of_a_bare_mesh_is_not_differentiable_in_points():
    model = beam()
    with pytest.raises(TypeError, match="give a model"):
        volume(model.mesh, points=model.mesh.points)

"""Clear errors for bad model input and numerical failure."""

import numpy as np
import pytest
from fem_helpers import unit_mesh

from fesens.errors import (
    BoundaryConditionError,
    NonFiniteError,
    SingularMatrixError,
    UnknownGroupError,
)
from fesens.mesh import Mesh, rectangle
from fesens.physics import Elasticity, HeatConduction


def test_missing_dirichlet_names_free_rigid_motions():
    model = Elasticity(rectangle(4, 2, cell_type="quad4"), plane="stress")
    model.traction("right", (1.0, 0.0))
    with pytest.raises(SingularMatrixError, match="Dirichlet conditions are missing") as info:
        model.solve()
    for motion in ("translation in x", "translation in y", "rotation about z"):
        assert motion in str(info.value)


def test_single_pinned_node_leaves_rotation_free():
    model = Elasticity(rectangle(4, 2, cell_type="quad4"), plane="stress")
    model.fix(lambda p: (p[:, 0] == 0) & (p[:, 1] == 0))
    with pytest.raises(SingularMatrixError) as info:
        model.solve()
    assert "free rigid-body motion(s): rotation about z." in str(info.value)


def test_3d_fix_one_component_reports_free_motions():
    model = Elasticity(unit_mesh("hex8", 2))
    model.fix("left", components=0)
    with pytest.raises(SingularMatrixError) as info:
        model.solve()
    message = str(info.value)
    assert "translation in y" in message and "translation in z" in message
    assert "rotation about x" in message


def test_heat_without_prescribed_temperature_is_singular():
    model = HeatConduction(unit_mesh("tri3"))
    model.flux("right", 1.0)
    with pytest.raises(SingularMatrixError, match="uniform shift"):
        model.solve()


def test_unknown_group_lists_available_names():
    model = Elasticity(rectangle(2, 2, cell_type="quad4"), plane="stress")
    with pytest.raises(UnknownGroupError, match="no node or facet set named 'lft'.*left"):
        model.fix("lft")


def test_bad_component_is_named():
    model = Elasticity(rectangle(2, 2, cell_type="quad4"), plane="stress")
    with pytest.raises(BoundaryConditionError, match="component 2 does not exist"):
        model.fix("left", components=2)


@pytest.mark.parametrize(("components", "fixed"), [
    ("x", [0]), (["y"], [1]), (["x", "y"], [0, 1]), ([1, "x"], [1, 0]), (np.array([0]), [0])])
def test_components_by_name_as_in_config_files(components, fixed):
    """``"x"``, ``"y"``, ``"z"`` name components as they do in config files."""
    model = Elasticity(rectangle(2, 2, cell_type="quad4"), plane="stress")
    model.fix("left", components=components)
    left = model.mesh.nodes("left")
    expected = np.sort((left[:, None] * 2 + np.array(fixed)).ravel())
    np.testing.assert_array_equal(model.constrained_dofs, expected)


@pytest.mark.parametrize(("components", "message"), [
    ("z", "component 'z' does not exist: this problem has 2 component"),
    (["x", "w"], "component 'w' is not a component: give 0..1 or 'x', 'y'"),
    ([0.5], "component 0.5 is not a component: give 0..1 or 'x', 'y'"),
    ([True], "component True is not a component"),
])
def test_bad_component_names_are_named(components, message):
    model = Elasticity(rectangle(2, 2, cell_type="quad4"), plane="stress")
    with pytest.raises(BoundaryConditionError, match=message):
        model.fix("left", components=components)


def test_wrong_traction_length_is_named():
    model = Elasticity(rectangle(2, 2, cell_type="quad4"), plane="stress")
    with pytest.raises(BoundaryConditionError, match="2 component"):
        model.traction("right", (1.0, 0.0, 0.0))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"E": -1.0}, "Young's modulus E must be > 0"),
    ({"nu": 0.5}, r"Poisson's ratio nu must lie in \(-1, 0.5\)"),
])
def test_bad_material_constants(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Elasticity(rectangle(2, 2, cell_type="quad4"), plane="stress", **kwargs)


def test_nan_parameter_raises_nonfinite():
    mesh = rectangle(2, 2, cell_type="quad4")
    model = Elasticity(mesh, plane="stress").fix("left")
    model.traction("right", (1.0, 0.0))
    scale = np.ones(mesh.n_cells)
    scale[1] = np.nan
    with pytest.raises(NonFiniteError, match="scale"):
        model.solve(scale=scale)


def test_unknown_solve_parameter_is_named():
    model = Elasticity(rectangle(2, 2, cell_type="quad4"), plane="stress").fix("left")
    with pytest.raises(TypeError, match="unknown parameter.*'density'.*E, nu, scale"):
        model.solve(density=np.ones(4))


def test_the_old_import_path_of_a_physics_names_the_new_one():
    with pytest.raises(ImportError, match=r"from fesens\.physics import Elasticity"):
        from fesens.fem import Elasticity  # noqa: F401


@pytest.mark.parametrize("physics", [Elasticity, HeatConduction])
def test_a_part_joined_to_nothing_supported_is_refused_naming_it(physics):
    """A cell that shares no node with the supported rest: its stiffness rows are singular
    on their own, whatever holds the rest."""
    mesh = rectangle(4, 2, 4.0, 2.0)
    n = mesh.n_points
    detached = Mesh(np.vstack([mesh.points, [[10, 10], [11, 10], [11, 11], [10, 11]]]),
                    np.vstack([mesh.cells, [[n, n + 1, n + 2, n + 3]]]), "quad4")
    model = physics(detached)
    model.fix(lambda x: x[:, 0] < 1e-9)
    with pytest.raises(SingularMatrixError, match=r"part 2 of the 2 parts of the mesh \(1 "
                       r"cells, 4 nodes, around \(10.5, 10.5\)\) is joined to the rest by no "
                       r"cell and its Dirichlet conditions leave free: .*Merge its nodes"):
        model.solve()
    model.fix(lambda x: x[:, 0] > 10.9)  # the part held on its own: a valid model
    assert np.all(np.isfinite(model.solve().u))

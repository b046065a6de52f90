"""Loads, supports and values given at coordinates that miss every node say so: a warning
with the distance in the API, an error naming the key in config files."""

import warnings

import numpy as np
import pytest

from fesens.config.checks import ConfigError
from fesens.config.selections import nearest_node
from fesens.fem.post.probe import OffNodeWarning
from fesens.mesh import rectangle
from fesens.objectives import value_at
from fesens.physics import Elasticity


def model():
    return Elasticity(rectangle(4, 2, 4.0, 1.0), E=1.0, nu=0.3, plane="stress")


def test_point_load_off_a_node_warns_with_the_distance():
    m = model()
    with pytest.warns(OffNodeWarning, match=r"point load 'point0' at \[4.0, 0.2\] is not on a "
                      r"node: using the nearest node \d+ at \[4.0, 0.0\], 0.2 away"):
        m.point_load((4.0, 0.2), (0.0, -1.0))


def test_fix_at_a_point_off_a_node_warns_and_fixes_the_nearest_node():
    m = model()
    with pytest.warns(OffNodeWarning, match=r"fixed point at \[0.1, 0.0\].*0.1 away"):
        m.fix((0.1, 0.0))
    np.testing.assert_array_equal(m.constrained_dofs, [0, 1])


def test_value_at_off_a_node_warns_with_the_distance():
    m = model().fix("left")
    m.point_load((4.0, 1.0), (0.0, -1.0))
    state = m.solve()
    with pytest.warns(OffNodeWarning, match=r"value_at at \[3.9, 1.0\].*\[4.0, 1.0\], 0.1 away"):
        off = value_at(state, (3.9, 1.0), 1)
    assert off == value_at(state, (4.0, 1.0), 1)


def test_points_on_nodes_are_silent():
    m = model()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.fix((0.0, 0.0)).fix((0.0, 1.0 + 1e-12)).fix("left")
        m.point_load((4.0, 0.5), (0.0, -1.0))
        value_at(m.solve(), (4.0, 0.5), 1)


def test_config_point_off_a_node_is_an_error_naming_the_key():
    mesh = rectangle(4, 2, 4.0, 1.0)
    assert nearest_node("loads[0]", [4.0, 0.5], mesh) == mesh.nearest_node((4.0, 0.5))
    with pytest.raises(ConfigError, match=r"loads\[0\].point = \[4.0, 0.3\] is not on a node: "
                                          r"the nearest node is \[4.0, 0.5\], 0.2 away"):
        nearest_node("loads[0]", [4.0, 0.3], mesh)

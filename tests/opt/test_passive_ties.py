"""A design map (mirror symmetry, extrusion) and passive cells from Python: the passive
values are set after the map, so a passive cell tied to a cell of another kind is refused
with :class:`~fesens.errors.PassiveRegionError` naming both cells."""

import numpy as np
import pytest

from fesens.errors import PassiveRegionError
from fesens.mesh import rectangle
from fesens.objectives import compliance
from fesens.opt import DesignProblem, Extrusion, MirrorSymmetry
from fesens.opt.design_maps import CellGroups
from fesens.physics import Elasticity


def test_mixed_pair_names_a_cell_whose_kind_differs_from_its_group():
    groups = CellGroups(np.array([0, 0, 1, 1, 2]))
    assert groups.mixed_pair(np.array([1, 1, 0, 0, 2])) is None
    # group 1 is cells 2 and 3 (representative 2): cell 3 differs
    assert groups.mixed_pair(np.array([1, 1, 0, 2, 2])) == (3, 2)


def cantilever(**options) -> DesignProblem:
    """A 6 x 4 cantilever (cells numbered row by row from the bottom left)."""
    mesh = rectangle(6, 4, 6.0, 4.0)
    model = Elasticity(mesh)
    model.fix("left")
    model.point_load([6.0, 2.0], [0.0, -1.0], name="F")
    design_map = options.pop("design_map")(mesh)
    return DesignProblem(model, lambda s, rho: compliance(s), volume_fraction=0.5,
                         design_map=design_map, **options)


@pytest.mark.parametrize("options, named", [
    # cell 2 (bottom row) solid, its image about y = 2 is cell 20 (top row)
    ({"passive_solid": [2]}, ["cell 20 (designed", "cell 2 (passive solid"]),
    ({"passive_solid": [2], "passive_void": [20]},
     ["cell 20 (passive void", "cell 2 (passive solid"]),
])
def test_symmetry_refuses_a_passive_set_it_does_not_map_onto_itself(options, named):
    with pytest.raises(PassiveRegionError) as raised:
        cantilever(design_map=lambda mesh: MirrorSymmetry(mesh, "y"), **options)
    for fragment in [*named, "passive_solid and passive_void", "give no design_map"]:
        assert fragment in str(raised.value)


def test_extrusion_refuses_a_passive_cell_of_part_of_a_column():
    with pytest.raises(PassiveRegionError, match="cell 8 .designed.* cell 2 .passive void"):
        cantilever(design_map=lambda mesh: Extrusion(mesh, "y"), passive_void=[2])


def test_a_passive_set_mapped_onto_itself_is_accepted_and_held():
    problem = cantilever(design_map=lambda mesh: MirrorSymmetry(mesh, "y"),
                         passive_solid=[2, 20], passive_void=[5, 23])
    rho = problem.density(np.full(problem.n_design, 0.5))
    assert rho[2] == rho[20] == 1.0 and rho[5] == rho[23] == 0.0
    np.testing.assert_array_equal(rho.reshape(4, 6), rho.reshape(4, 6)[::-1])

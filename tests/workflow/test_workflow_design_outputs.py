"""What a run writes of a design with a design map, and the grayness measure's closed forms
(Sigmund 2007, SMO 33, 401–424: M_nd = Σ 4 ρ (1 − ρ) v_e / Σ v_e · 100 %)."""

import numpy as np
import pytest

from fesens.config import build_problem, load_preset
from fesens.mesh import rectangle
from fesens.objectives import compliance
from fesens.opt import DesignProblem, MirrorSymmetry
from fesens.physics import Elasticity
from fesens.workflow.design_fields import design_fields, design_on_cells, grayness_report


def _cantilever(design_map=None, passive_void=None) -> DesignProblem:
    mesh = rectangle(12, 4, 12.0, 4.0)
    model = Elasticity(mesh)
    model.fix("left")
    model.point_load([12.0, 2.0], [0.0, -1.0], name="F")
    map_ = None if design_map is None else design_map(mesh)
    return DesignProblem(model, lambda s, rho: compliance(s), volume_fraction=0.5,
                         design_map=map_, passive_void=passive_void)


def test_design_fields_put_each_reduced_variable_on_every_cell_of_its_group():
    # cell 0 and its mirror image, cell 36, passive void
    problem = _cantilever(lambda mesh: MirrorSymmetry(mesh, ["y"]), passive_void=[0, 36])
    assert problem.n_design == 24
    evaluation = problem.evaluate(problem.initial_design())
    _, cells = design_fields(problem, evaluation, "compliance")
    gradient = cells["d_compliance_d_design"].reshape(4, 12)
    np.testing.assert_array_equal(gradient, gradient[::-1])
    assert gradient[0, 0] == 0.0 and gradient[3, 0] == 0.0 and gradient[0, 1] < 0.0
    owner = problem.design_map.owner
    designed = np.ones(48, dtype=bool)
    designed[[0, 36]] = False
    np.testing.assert_array_equal(cells["d_compliance_d_design"][designed],
                                  evaluation.gradient[owner][designed])
    np.testing.assert_array_equal(design_on_cells(problem, np.arange(24.0))[designed],
                                  owner[designed].astype(float))


def test_grayness_is_100_at_a_uniform_half_and_0_for_a_black_and_white_design():
    problem = _cantilever()
    report = grayness_report(problem)
    n = problem.mesh.n_cells
    assert report(None, np.full(n, 0.5)) == pytest.approx(100.0)
    assert report(None, (np.arange(n) % 2).astype(float)) == 0.0
    # 4 ρ (1 − ρ) at ρ = 0.25 is 3/4, on half of the (equal) cells
    half = np.where(np.arange(n) < n // 2, 0.25, 1.0)
    assert report(None, half) == pytest.approx(37.5)


def test_the_grayness_of_a_robust_problem_is_its_intermediate_designs():
    problem = _cantilever()
    designs = np.vstack([np.zeros(48), np.full(48, 0.5), np.ones(48)])
    assert grayness_report(problem)(None, designs) == pytest.approx(100.0)


def test_a_config_with_symmetry_and_extrusion_builds_their_combined_map():
    config = load_preset("mbb")
    config.data["manufacturing"] = {"symmetry": ["y"], "extrusion": "x"}
    problem = build_problem(config)
    assert problem.n_design == 10  # 20 rows, mirrored about y = 10

"""From configs to models and design problems: the same numbers as the Python API."""

import copy
import tomllib
from pathlib import Path

import numpy as np
import pytest

from fesens.config import build_model, build_optimizer, build_problem, load_preset, resolve
from fesens.mesh import box, rectangle
from fesens.objectives import compliance
from fesens.opt import OC, SIMP, Continuation, DesignProblem, Heaviside, make_filter, optimize
from fesens.physics import Elasticity, HeatConduction

ROOT = Path(__file__).resolve().parents[2]
SMALL = tomllib.loads((ROOT / "tests" / "data" / "small_mbb.toml").read_text())


def test_mbb_preset_is_top88():
    """The preset builds exactly the problem of the Python API (and top88's first step)."""
    config = load_preset("mbb")
    config.data["filter"]["type"] = "sensitivity"
    problem = build_problem(config)
    from_config = optimize(problem, build_optimizer(config), max_iter=4).history

    mesh = rectangle(60, 20, 60.0, 20.0, cell_type="quad4")
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress")
    model.fix("left", components=0)
    model.fix(lambda p: (p[:, 0] == 60) & (p[:, 1] == 0), components=1)
    model.point_load((0.0, 20.0), (0.0, -1.0), name="F")
    direct = DesignProblem(model, lambda s, rho: compliance(s), volume_fraction=0.5,
                           interpolation=SIMP(3.0, 1e-9),
                           filter=make_filter("sensitivity", mesh, 2.4))
    by_hand = optimize(direct, OC(0.2), max_iter=4).history
    for a, b in zip(from_config, by_hand, strict=True):
        assert a["objective"] == pytest.approx(b["objective"], rel=1e-12)
        assert a["change"] == pytest.approx(b["change"], rel=1e-12)
    # top88 (Andreassen et al. 2011), MBB 60 x 20 at x = 0.5 everywhere: c = 1007.02
    assert from_config[0]["objective"] == pytest.approx(1007.02, abs=0.01)


def test_python_and_config_default_to_the_same_2d_elasticity():
    """Neither names plane nor thickness: both are plane stress, thickness 1."""
    raw = tomllib.loads("""
        [mesh]
        type = "rectangle"
        size = [3.0, 1.0]
        cells = [6, 2]
        [material]
        E = 7.0
        nu = 0.35
        [[supports]]
        group = "left"
        [[loads]]
        type = "traction"
        group = "right"
        value = [0.0, -1.0]
        """)
    from_config = build_model(resolve(raw, base_dir=ROOT, source="test", optimize=False))
    by_hand = Elasticity(rectangle(6, 2, 3.0, 1.0), 7.0, 0.35)
    by_hand.fix("left").traction("right", (0.0, -1.0))
    assert (by_hand.plane, by_hand.thickness) == (from_config.plane, from_config.thickness) \
        == ("stress", 1.0)
    plane_stress = Elasticity(rectangle(6, 2, 3.0, 1.0), 7.0, 0.35, plane="stress",
                              thickness=1.0).fix("left")
    plane_stress.traction("right", (0.0, -1.0))
    u = [model.solve().displacement for model in (from_config, by_hand, plane_stress)]
    np.testing.assert_array_equal(u[0], u[1])
    np.testing.assert_array_equal(u[1], u[2])


def test_elasticity_refuses_an_unknown_plane_and_a_plane_in_3d():
    with pytest.raises(ValueError, match=r"plane='stres' is not a 2D assumption: give "
                                         r"plane='stress' \(the default\) or plane='strain'"):
        Elasticity(rectangle(2, 1), plane="stres")
    with pytest.raises(ValueError, match="plane='stress' applies to 2D meshes only"):
        Elasticity(box(1, 1, 1), plane="stress")
    assert Elasticity(box(1, 1, 1)).plane is None


def test_heatsink_preset_fixes_the_middle_of_the_left_edge():
    config = load_preset("heatsink")
    model = build_model(config)
    assert isinstance(model, HeatConduction)
    fixed = config.mesh.points[model.constrained_dofs]
    assert np.all(fixed[:, 0] == 0.0)
    assert fixed[:, 1].min() == pytest.approx(0.45) and fixed[:, 1].max() == pytest.approx(0.55)
    assert len(fixed) == 7
    problem = build_problem(config, model)
    assert problem.interpolation.minimum == 1e-3
    total_heat = model.load_vector().sum()
    assert total_heat == pytest.approx(0.01)        # Q = 0.01 on the unit square


def test_lbracket_preset_keeps_the_loaded_corner_solid():
    config = load_preset("lbracket")
    problem = build_problem(config)
    centroids = config.mesh.cell_centroids()[problem.solid]
    assert problem.solid.sum() > 0 and not problem.void.any()
    assert np.all(centroids[:, 0] >= 96.0) and np.all(centroids[:, 1] >= 28.0)
    assert problem.n_design == config.mesh.n_cells - problem.solid.sum()


def test_schedules_projection_and_void_regions_are_built():
    raw = copy.deepcopy(SMALL)
    raw["penalization"] = {"type": "ramp",
                           "penalty": {"start": 2.0, "final": 8.0, "every": 5, "factor": 2.0}}
    raw["projection"] = {"type": "heaviside", "beta": {"start": 1.0, "final": 8.0, "every": 10,
                                                        "factor": 2.0}}
    raw["design"] = {"passive": [{"type": "void", "region": {"min": [0.0, 0.0],
                                                              "max": [4.0, 2.0]}}]}
    config = resolve(raw, base_dir=ROOT, source="test")
    problem = build_problem(config)
    assert problem.interpolation.name == "ramp"
    assert problem.interpolation.schedule == Continuation(2.0, 8.0, 5, factor=2.0)
    assert isinstance(problem.projection, Heaviside)
    assert problem.projection.schedule.value(31) == 8.0
    assert problem.void.sum() == 8                   # 4 x 2 unit cells


@pytest.mark.parametrize("objective", [
    {"type": "displacement", "point": [0.0, 8.0], "component": "y", "weight": -1.0},
    {"type": "stress_pnorm", "p": 6.0, "stress_exponent": 0.5},
    {"type": "stress_ks", "rho": 20.0},
])
def test_objectives_have_consistent_gradients(objective):
    """Each objective builds, and its design gradient matches a finite difference."""
    raw = copy.deepcopy(SMALL)
    raw["objective"] = objective
    raw["filter"] = {"type": "none"}
    problem = build_problem(resolve(raw, base_dir=ROOT, source="test"))
    rng = np.random.default_rng(0)
    x = rng.uniform(0.3, 0.9, problem.n_design)
    evaluation = problem.evaluate(x)
    direction = rng.standard_normal(problem.n_design)
    h = 1e-6
    finite = (problem.evaluate(x + h * direction).objective
              - problem.evaluate(x - h * direction).objective) / (2 * h)
    assert evaluation.gradient @ direction == pytest.approx(finite, rel=1e-5)
    if objective["type"] == "displacement":
        assert evaluation.objective > 0             # −u_y at the loaded point

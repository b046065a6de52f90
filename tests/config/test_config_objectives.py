"""The objective kinds of the config files: one record each (fesens.config.objectives).

A new objective is its traced function and its record; the toy one here is registered on a
copy of the registry (no state leaks to other tests) and run from a TOML file.
"""

from types import MappingProxyType

import numpy as np
import pytest

import fesens.config.objectives as objectives
from fesens.ad import check_grad
from fesens.config import ConfigError, build_model, load_config
from fesens.config.build import response
from fesens.config.checks import Key, number
from fesens.config.mpi_run import distributed_refusal
from fesens.config.objectives import (
    OBJECTIVES,
    ObjectiveKind,
    check_offered_kinds,
    fragment_kinds,
    objective_kind,
    response_kind,
)
from fesens.config.physics_keys import response_variants
from fesens.objectives import Differentiable
from fesens.physics import PHYSICS
from fesens.physics.spec import PhysicsConfig

TOY = """
[mesh]
type = "rectangle"
size = [4.0, 1.0]
cells = [8, 2]
[material]
E = 1.0
nu = 0.3
[[supports]]
group = "left"
[[loads]]
type = "traction"
group = "right"
value = [0.0, -1.0]
[objective]
type = "field_square"
weight = 2.5
"""


def field_square(state, weight: float):
    """The toy objective: ``w Σ u²`` over every dof, in traced numpy."""
    return weight * np.sum(state.u * state.u)


def _build_field_square(spec: dict, config) -> objectives.Response:
    return lambda state, rho: field_square(state, spec["weight"])


@pytest.fixture
def toy_objective(monkeypatch):
    """The registry with one more record, offered by every physics, for one test."""
    record = ObjectiveKind("field_square", _build_field_square,
                           {"weight": Key(number(), 1.0, "factor of the sum")}, everywhere=True)
    monkeypatch.setattr(objectives, "OBJECTIVES",
                        MappingProxyType({**OBJECTIVES, record.name: record}))
    return record


def test_a_registered_objective_runs_from_a_toml_file(toy_objective, tmp_path):
    path = tmp_path / "toy.toml"
    path.write_text(TOY)
    config = load_config(path, optimize=False)
    assert config.data["objective"] == {"type": "field_square", "weight": 2.5}
    model = build_model(config)
    J = response(config.data["objective"], config)
    problem = Differentiable(model)
    u = problem.solve().u
    assert J(problem.solve(), None) == pytest.approx(2.5 * np.sum(u * u), rel=1e-12)

    def of_scale(scale):
        return J(problem.solve(scale=scale), scale)

    scale = np.ones(config.mesh.n_cells)
    # step and tolerance from the round-off measured on the function itself: a fixed
    # step's central difference drifts past a fixed tolerance with the floating-point
    # kernels of the machine
    check_grad(of_scale, scale, n_directions=1, rtol=1e-6)
    # not a sum the distributed model knows how to split: refused there, with the reason
    design = tmp_path / "design.toml"
    design.write_text(TOY + "[constraints]\nvolume_fraction = 0.5\n[filter]\nradius = 1.0\n")
    assert "compliance only" in distributed_refusal(load_config(design))


def test_every_physics_offers_the_registered_everywhere_kinds(toy_objective):
    for cls in PHYSICS:
        assert response_variants(cls.name)["field_square"] == {"weight": toy_objective.keys[
            "weight"]}
        assert response_kind(cls.name, "field_square") == "field_square"


def test_an_unknown_objective_type_is_refused_not_read_as_volume():
    assert "field_square" not in OBJECTIVES  # the toy record stayed in its test
    with pytest.raises(ConfigError, match="no objective type 'field_square'"):
        response_kind("elasticity", "field_square")
    with pytest.raises(KeyError, match="no objective kind 'nothing'"):
        objective_kind("nothing")


def test_each_physics_response_names_a_registered_kind():
    for cls in PHYSICS:
        for name, kind in cls.config.responses.items():
            assert objective_kind(kind).name == response_kind(cls.name, name)


def test_the_kinds_a_fragment_may_name_are_the_registered_ones():
    assert fragment_kinds("static") == ("compliance", "value", "stress_pnorm", "stress_ks",
                                        "strain_energy", "plastic_work")
    assert fragment_kinds("eigen") == ("eigenvalue", "frequency", "eigenvalue_sum",
                                       "eigenvalue_ks")
    for cls in PHYSICS:
        check_offered_kinds(cls.config, cls.solution_class)
        for name, kind in cls.config.eigen_responses.items():
            assert response_kind(cls.name, name) == kind
            assert objective_kind(kind).analysis == "eigen"


def test_a_fragment_naming_no_registered_kind_is_refused_where_the_config_reads_it(
        monkeypatch):
    with pytest.raises(ValueError, match="response 'heat': 'flux' is not a generic objective; "
                                         "expected one of compliance, value, stress_pnorm, "
                                         "stress_ks, strain_energy, plastic_work$"):
        check_offered_kinds(PhysicsConfig(responses={"heat": "flux"}))
    expected = "eigenvalue, frequency, eigenvalue_sum, eigenvalue_ks"
    with pytest.raises(ValueError, match=f"eigen response 'mode': 'value' is not an eigen "
                                         f"objective \\({expected}\\) or the name is taken"):
        check_offered_kinds(PhysicsConfig(mass="density", eigen_responses={"mode": "value"}))
    with pytest.raises(ValueError, match="eigen response 'frequency': 'frequency' is not"):
        check_offered_kinds(PhysicsConfig(responses={"frequency": "value"}, mass="density",
                                          eigen_responses={"frequency": "frequency"}))
    # a registry without a kind that elasticity offers: its objective types are refused
    monkeypatch.setattr(objectives, "OBJECTIVES", MappingProxyType(
        {name: kind for name, kind in OBJECTIVES.items() if name != "stress_ks"}))
    with pytest.raises(ValueError, match="response 'stress_ks': 'stress_ks' is not a generic"):
        response_kind("elasticity", "compliance")


def test_an_objective_kind_names_what_it_is_a_function_of():
    with pytest.raises(ValueError, match="analysis='harmonic'"):
        ObjectiveKind("load_factor", _build_field_square, analysis="harmonic")


def test_a_stress_objective_needs_a_solution_that_recovers_stresses():
    class Stressless:  # a solution with no von_mises_squared
        pass

    fragment = PhysicsConfig(responses={"peak": "stress_pnorm", "mean": "value"})
    with pytest.raises(ValueError, match=r"response 'peak': 'stress_pnorm' reads "
                                         r"von_mises_squared, which Stressless does not "
                                         r"recover$"):
        check_offered_kinds(fragment, Stressless)
    check_offered_kinds(PhysicsConfig(responses={"mean": "value"}), Stressless)


def test_a_study_offers_stress_objectives_without_the_design_keys():
    assert objective_kind("stress_pnorm").design_keys == ("stress_exponent",)
    with pytest.raises(ValueError, match=r"design_keys \['q'\] are not among its keys"):
        ObjectiveKind("toy", lambda spec, config: None, {"p": Key(number(), 1.0, "")},
                      design_keys=("q",))

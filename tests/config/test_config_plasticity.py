"""The config of an elastoplastic model (``[physics] type = "elastoplasticity"``): its
``[material]`` hardening keys, the incremental analysis' table of load factors and the
objective over the increments, each refusal naming the key."""

import copy
import math
import tomllib

import numpy as np
import pytest

from fesens.config import ConfigError, build_model, build_problem, resolve
from fesens.config.increments import aggregate_increments, increment_factors
from fesens.config.mpi_run import distributed_refusal

BASE = """
name = "bar"
loads = []
[mesh]
type = "rectangle"
size = [4.0, 1.0]
cells = [4, 1]
[physics]
type = "elastoplasticity"
[material]
E = 200e3
nu = 0.3
yield_stress = 250.0
[[supports]]
group = "left"
[[supports]]
group = "right"
components = ["x"]
value = 0.01
[analysis]
type = "incremental"
factors = [0.0, 0.5, 1.0, 0.0, -1.0]
[objective]
type = "compliance"
"""


def _resolve(tmp_path, edit=None, optimize=False):
    raw = tomllib.loads(BASE)
    if edit is not None:
        edit(raw)
    return resolve(copy.deepcopy(raw), base_dir=tmp_path, source="test", optimize=optimize)


def test_the_table_and_the_objective_defaults(tmp_path):
    config = _resolve(tmp_path)
    assert list(increment_factors(config.data)) == [0.0, 0.5, 1.0, 0.0, -1.0]
    assert config.data["objective"]["over_increments"] == "final"
    model = build_model(config)
    assert model.name == "elastoplasticity"
    assert np.all(model.yield_stress == 250.0) and np.all(model.isotropic_modulus == 0.0)


def test_hardening_is_given_by_its_moduli(tmp_path):
    def voce(raw):
        raw["material"].update(isotropic_modulus=100.0, kinematic_modulus=500.0,
                               saturation_stress=400.0, saturation_rate=20.0)

    model = build_model(_resolve(tmp_path, voce))
    assert np.all(model.saturation_stress == 400.0) and np.all(model.kinematic_modulus == 500.0)


@pytest.mark.parametrize("edit, message", [
    (lambda raw: raw["material"].update(hardening="linear"), "material.hardening"),
    (lambda raw: raw["analysis"].update(factors=[0.1, 1.0]), "must start at 0"),
    (lambda raw: raw["analysis"].update(factors=[0.0]), "at least two"),
    (lambda raw: raw["analysis"].update(dirichlet_factors=[0.0, 1.0]), "one per increment"),
    (lambda raw: raw["analysis"].pop("factors"), "analysis.factors"),
    (lambda raw: raw["objective"].update(increment=5), "increment = 5 does not exist"),
    (lambda raw: raw["objective"].update(increment=1, over_increments="sum"), "give one"),
    (lambda raw: raw["objective"].update(increment_rho=10.0), "increment_rho"),
    (lambda raw: raw["objective"].update(over_time="ks"), "over_time"),
    (lambda raw: raw["objective"].update(type="volume"), "per increment"),
    (lambda raw: raw.update(newton={"steps": 4}), "newton.steps"),
    (lambda raw: raw.update(time={"end": 1.0, "steps": 2}), "[time]"),
    (lambda raw: raw["supports"][1].update(history=[[0.0, 0.0], [1.0, 1.0]]), "history"),
    (lambda raw: raw.pop("analysis"), 'type = "incremental"'),
    (lambda raw: raw["analysis"].update(type="dynamic"), "incremental"),
])
def test_refusals_name_the_key(tmp_path, edit, message):
    with pytest.raises(ConfigError) as error:
        _resolve(tmp_path, edit)
    assert message in str(error.value)


def test_increment_keys_of_another_physics_are_refused(tmp_path):
    def elastic(raw):
        raw["physics"]["type"] = "elasticity"
        raw["material"].pop("yield_stress")
        raw.pop("analysis")
        raw["objective"]["over_increments"] = "sum"

    with pytest.raises(ConfigError, match="objective.over_increments applies to "
                                          'analysis.type = "incremental"'):
        _resolve(tmp_path, elastic)


def test_the_aggregates_over_the_increments():
    values = [0.0, 1.0, 3.0, 2.0]
    assert aggregate_increments(values, {"over_increments": "final"}) == 2.0
    assert aggregate_increments(values, {"increment": 2}) == 3.0
    assert aggregate_increments(np.array(values),
                                {"over_increments": "sum"}) == 6.0
    ks = aggregate_increments(np.array(values),
                              {"over_increments": "ks", "increment_rho": 50.0})
    # the KS bound lies within log(N + 1) / ρ above the largest (Kreisselmeier &
    # Steinhauser 1979)
    assert 3.0 <= ks <= 3.0 + math.log(4) / 50.0


def test_an_elastoplastic_design_is_not_split_among_mpi_ranks(tmp_path):
    """Under ``mpirun`` a path-dependent design runs replicated: the distributed model has
    no load history."""
    def design(raw):
        raw.update(constraints={"volume_fraction": 0.5}, filter={"radius": 1.0})

    refusal = distributed_refusal(_resolve(tmp_path, design, optimize=True))
    assert refusal == "the load history of the path-dependent elastoplasticity physics"


def _design(raw):
    raw.update(constraints={"volume_fraction": 0.5}, filter={"radius": 1.0})


def test_a_design_passes_the_densities_to_the_model_s_own_interpolation(tmp_path):
    """Without ``[penalization]`` the densities reach the model as they are (above the floor
    1e-3), and the model raises them once: ``E(ρ) = E ρ^penal`` of the scale
    ``s = 1e-3 + ρ (1 − 1e-3)`` (SIMP p = 1), ``σ_y(ρ) = σ_y s^yield_penal``."""
    config = _resolve(tmp_path, _design, optimize=True)
    assert config.data["penalization"] == {"type": "simp", "penalty": 1.0, "minimum": 1e-3}
    problem = build_problem(config)
    rho = np.array([0.0, 0.25, 0.5, 1.0])
    scale = problem.interpolation(rho)
    assert np.allclose(scale, 1e-3 + rho * (1 - 1e-3), rtol=1e-15, atol=0)
    fields = problem.model.material_fields(scale=np.full(4, 0.5))
    assert np.allclose(fields["E"], 200e3 * 0.5 ** 3, rtol=1e-14)
    assert np.allclose(fields["yield_stress"], 250.0 * 0.5 ** 2.5, rtol=1e-14)


@pytest.mark.parametrize("penalization", [
    {"penalty": 3.0},
    {"type": "ramp"},
    {"penalty": {"start": 1.0, "final": 3.0, "every": 10}},
])
def test_a_second_interpolation_is_refused(tmp_path, penalization):
    def penalized(raw):
        _design(raw)
        raw["penalization"] = penalization

    with pytest.raises(ConfigError) as error:
        _resolve(tmp_path, penalized, optimize=True)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("[penalization] type =")
    assert "[physics] penal and yield_penal" in message and "penalty = 1" in message


def test_a_given_floor_and_penalty_1_are_kept(tmp_path):
    def floor(raw):
        _design(raw)
        raw["penalization"] = {"penalty": 1.0, "minimum": 1e-4}

    config = _resolve(tmp_path, floor, optimize=True)
    assert config.data["penalization"] == {"type": "simp", "penalty": 1.0, "minimum": 1e-4}


def test_a_symmetric_backend_is_refused_for_armstrong_frederick_s_tangent(tmp_path):
    """Dynamic recovery of the back stress makes the consistent tangent unsymmetric: a
    backend for symmetric matrices is refused before any work, naming the material key;
    without recovery the same backend is accepted."""
    def recovery(raw):
        raw["material"].update(kinematic_modulus=1e4, kinematic_recovery=50.0)
        raw["solver"] = {"backend": "cholmod"}

    with pytest.raises(ConfigError, match="material.kinematic_recovery = 50.0 makes the "
                                          "tangent .* unsymmetric"):
        _resolve(tmp_path, recovery)

    def linear(raw):
        raw["material"].update(kinematic_modulus=1e4)
        raw["solver"] = {"backend": "cholmod"}

    assert _resolve(tmp_path, linear).data["solver"]["backend"] == "cholmod"

"""Time-dependent analyses from a config file: ``[analysis]``, ``[time]``, ``[damping]``,
``[harmonic]``, ``[initial]``, ``[[probes]]``, a load's ``history`` and the objective's
``over_time`` (checked, with their defaults); what each physics offers, read from its
fragment; and the refusals, each naming its key."""

import copy
import math

import numpy as np
import pytest

from fesens.config import ConfigError, build_model, resolve
from fesens.config.time_design import time_problem
from fesens.config.time_sections import (
    SCHEMES_OF,
    angular_frequencies,
    load_histories,
    offered_analyses,
    time_levels,
)
from fesens.fem.transient import time_scheme
from fesens.physics import PHYSICS

#: A plate heated by a pulsed source, cooled through its left side.
PLATE = {
    "mesh": {"type": "rectangle", "size": [1.0, 0.5], "cells": [4, 2]},
    "physics": {"type": "heat"},
    "material": {"conductivity": 2.0, "heat_capacity": 3.0},
    "supports": [{"group": "left"}],
    "loads": [{"type": "heat_source", "value": 5.0,
               "history": [[0.0, 0.0], [0.05, 1.0], [0.1, 0.0]]}],
    "analysis": {"type": "transient"},
    "time": {"end": 0.2, "step": 0.01},
}

#: A cantilever under a tip load, for the dynamic and harmonic analyses.
BEAM = {
    "mesh": {"type": "rectangle", "size": [2.0, 0.5], "cells": [4, 1]},
    "physics": {"type": "elasticity"},
    "material": {"E": 100.0, "nu": 0.3, "density": 2.0},
    "supports": [{"group": "left"}],
    "loads": [{"type": "point", "point": [2.0, 0.0], "value": [0.0, -1.0]}],
}


def resolved(raw: dict, tmp_path):
    return resolve(raw, base_dir=tmp_path, source="test", optimize=False)


def with_(base: dict, **sections) -> dict:
    raw = copy.deepcopy(base)
    for key, value in sections.items():
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    return raw


def test_a_transient_config_resolves_with_defaults_and_again_to_itself(tmp_path):
    config = resolved(PLATE, tmp_path)
    data = config.data
    assert data["time"] == {"start": 0.0, "end": 0.2, "step": 0.01, "scheme": "bdf2",
                            "lumped": False, "output_every": 1}
    assert data["initial"] == {"temperature": 0.0}
    np.testing.assert_allclose(time_levels(data["time"]), np.linspace(0.0, 0.2, 21),
                               atol=1e-15)
    (times, values), = load_histories(data).values()
    np.testing.assert_array_equal(times, [0.0, 0.05, 0.1])
    np.testing.assert_array_equal(values, [0.0, 1.0, 0.0])
    assert resolved(copy.deepcopy(data), tmp_path).data == data


def test_each_physics_offers_the_analyses_of_its_time_derivative():
    """Conduction's heat capacity is a first time derivative, elasticity's density a
    second; a physics without one (and a nonlinear one) solves statically only."""
    offered = {cls.name: offered_analyses(cls) for cls in PHYSICS}
    assert offered["heat"] == ("static", "transient")
    assert offered["elasticity"] == ("static", "dynamic", "harmonic")
    for cls in PHYSICS:
        if cls.config.inertia is None:
            assert offered[cls.name] == ("static",)


def test_dynamic_and_harmonic_configs(tmp_path):
    dynamic = resolved(with_(BEAM, analysis={"type": "dynamic"},
                             time={"end": 1.0, "steps": 10, "scheme": "generalized_alpha",
                                   "rho_inf": 0.8},
                             damping={"stiffness": 0.01},
                             initial={"velocity": 0.5}), tmp_path).data
    assert dynamic["damping"] == {"mass": 0.0, "stiffness": 0.01}
    assert dynamic["initial"] == {"displacement": 0.0, "velocity": 0.5}
    harmonic = resolved(with_(BEAM, analysis={"type": "harmonic"},
                              harmonic={"frequencies": [0.5, 2.0]}), tmp_path).data
    np.testing.assert_allclose(angular_frequencies(harmonic), [math.pi, 4 * math.pi])


def test_a_transient_run_from_an_initial_field_needs_no_loads(tmp_path):
    resolved(with_(PLATE, loads=None, initial={"temperature": 1.0}), tmp_path)
    with pytest.raises(ConfigError, match="loads"):
        resolved(with_(PLATE, loads=None), tmp_path)


def test_objective_time_keys(tmp_path):
    objective = {"type": "temperature", "point": [1.0, 0.5], "over_time": "ks"}
    data = resolved(with_(PLATE, objective=objective), tmp_path).data
    assert data["objective"]["time_rho"] == 50.0 and data["objective"]["power"] == 1.0
    data = resolved(with_(PLATE, objective={"type": "compliance"}), tmp_path).data
    assert data["objective"]["over_time"] == "final"


STEP = {"end": 0.2, "step": 0.01}


@pytest.mark.parametrize("base, sections, key", [
    (PLATE, {"time": {**STEP, "step": 0.0}}, "time.step"),
    (PLATE, {"time": {**STEP, "step": -0.01}}, "time.step"),
    (PLATE, {"time": {**STEP, "step": 0.03}}, "time.step"),
    (PLATE, {"time": {**STEP, "step": float("nan")}}, "time.step"),
    (PLATE, {"time": {"end": 0.2, "start": 0.5, "steps": 4}}, "time.end"),
    (PLATE, {"time": {"end": 0.2, "steps": 4, "step": 0.05}}, "step"),
    (PLATE, {"time": {"steps": 4}}, "time.end"),
    (PLATE, {"time": {**STEP, "max_states": 1}}, "time.max_states"),
    (PLATE, {"time": {**STEP, "scheme": "newmark"}}, "time.scheme"),
    (PLATE, {"time": {**STEP, "rho_inf": 0.5}}, "time.rho_inf"),
    (PLATE, {"time": {**STEP, "output_every": 0}}, "time.output_every"),
    (PLATE, {"time": None}, "[time]"),
    (PLATE, {"analysis": {"type": "dynamic"}}, "analysis.type"),
    (PLATE, {"damping": {"mass": 1.0}}, "[damping]"),
    (PLATE, {"initial": {"temperature": float("nan")}}, "initial.temperature"),
    (PLATE, {"initial": {"velocity": 1.0}}, "initial.velocity"),
    (PLATE, {"probes": [{"point": [0.3, 0.1]}]}, "probes[0].point"),
    (PLATE, {"objective": {"type": "compliance", "over_time": "peak"}},
     "objective.over_time"),
    (PLATE, {"objective": {"type": "compliance", "time_rho": 5.0}}, "objective.time_rho"),
    (PLATE, {"load_cases": [{"name": "a", "loads": ["heat_source0"]}]},
     "[[load_cases]]"),
    (BEAM, {"analysis": {"type": "harmonic"}}, "harmonic.frequencies"),
    (BEAM, {"analysis": {"type": "harmonic"}, "harmonic": {"frequencies": [-1.0]}},
     "harmonic.frequencies"),
    (BEAM, {"analysis": {"type": "harmonic"}, "harmonic": {"frequencies": [1.0]},
            "supports": [{"group": "left", "value": 0.1}]}, "nonzero value"),
    (BEAM, {"analysis": {"type": "dynamic"}, "time": STEP,
            "objective": {"type": "volume"}}, "objective.type"),
    (BEAM, {"time": STEP}, "[time]"),
    (BEAM, {"harmonic": {"frequencies": [1.0]}}, "[harmonic]"),
    (BEAM, {"objective": {"type": "compliance", "over_time": "final"}},
     "objective.over_time"),
])
def test_refusals_name_the_key(tmp_path, base, sections, key):
    with pytest.raises(ConfigError) as error:
        resolved(with_(base, **sections), tmp_path)
    assert key in str(error.value)


@pytest.mark.parametrize("history, match", [
    ([[0.0, 1.0], [0.1, 2.0], [0.1, 3.0]], "increase"),
    ([[0.0, 1.0], [0.2, 2.0], [0.1, 3.0]], "increase"),
    ([[0.0, 1.0]], "at least two rows"),
    ([[0.0, 1.0], [0.1, float("nan")]], "loads[0].history[1]"),
    ([[0.0, 1.0, 2.0], [0.1, 2.0]], "loads[0].history[0]"),
])
def test_bad_histories_are_refused(tmp_path, history, match):
    raw = with_(PLATE)
    raw["loads"][0]["history"] = history
    with pytest.raises(ConfigError) as error:
        resolved(raw, tmp_path)
    assert "loads[0].history" in str(error.value) and match in str(error.value)


def test_a_history_of_a_static_run_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"loads\[0\]\.history"):
        resolved(with_(PLATE, analysis=None, time=None), tmp_path)


@pytest.mark.parametrize("scheme", SCHEMES_OF["transient"])
def test_every_first_order_scheme_of_the_registry_runs_from_a_config(tmp_path, scheme):
    """``time.scheme`` offers the registry's records (BDF3 among them) and the config's run
    takes the record's coefficients."""
    config = resolved(with_(PLATE, time={"end": 0.2, "step": 0.01, "scheme": scheme}),
                      tmp_path)
    problem = time_problem(config, build_model(config))
    expected = time_scheme(scheme).coefficients(problem.times)
    assert np.array_equal(problem.coefficients.alpha, expected.alpha)
    assert problem.coefficients.alpha.shape[1] == time_scheme(scheme).levels + 1


def test_the_scheme_choices_and_keys_come_from_the_registry(tmp_path):
    assert "bdf3" in SCHEMES_OF["transient"] and "theta" not in SCHEMES_OF["transient"]
    with pytest.raises(ConfigError, match="bdf3"):
        resolved(with_(PLATE, time={**STEP, "scheme": "bdf4"}), tmp_path)

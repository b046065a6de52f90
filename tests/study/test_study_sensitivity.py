"""Normalised sensitivities S = (∂y/∂p)·(p/y) against closed forms."""

import numpy as np
import pytest
from study_helpers import power_model

from fesens.study import (
    Parameter,
    ParametricModel,
    latin_hypercube,
    normalized_sensitivities,
    run_study,
)


@pytest.fixture(scope="module")
def results():
    design = latin_hypercube([Parameter("a", range=(0.5, 2.0)), Parameter("b", range=(1.0, 4.0))],
                             32, seed=5)
    return run_study(power_model(), design, workers=0, progress=False)


def test_power_law_sensitivities_are_its_exponents(results):
    sensitivities = normalized_sensitivities(results)
    assert sensitivities.mean("y", "a") == pytest.approx(2.0, rel=1e-14)
    assert sensitivities.mean("y", "b") == pytest.approx(-1.0, rel=1e-14)
    row = sensitivities.for_output("y")[0]
    assert row["parameter"] == "a" and row["samples"] == 32 and row["std"] < 1e-14


def test_sensitivities_average_the_closed_form_over_samples(results):
    a, b = results.value("a"), results.value("b")
    z = np.sin(a) + b
    sensitivities = results.sensitivities()
    expected_a = np.cos(a) * a / z
    expected_b = b / z
    assert sensitivities.mean("z", "a") == pytest.approx(expected_a.mean(), rel=1e-12)
    assert sensitivities.mean("z", "b") == pytest.approx(expected_b.mean(), rel=1e-12)
    row = next(r for r in sensitivities.rows if r["output"] == "z" and r["parameter"] == "b")
    assert row["std"] == pytest.approx(expected_b.std(), rel=1e-10)
    assert row["min"] == pytest.approx(expected_b.min()) and row["max"] == pytest.approx(
        expected_b.max())


def test_zero_outputs_and_failed_samples_are_left_out():
    def evaluate(_, p):
        if p["a"] > 1.8:
            raise ValueError("fails")
        return {"linear": 3.0 * p["a"], "zero": 0.0 * p["a"]}

    design = latin_hypercube([Parameter("a", range=(1.0, 2.0))], 10, seed=1)
    results = run_study(ParametricModel(lambda: None, evaluate), design, workers=0,
                        progress=False)
    failed = results.n_errors
    assert 0 < failed < 10
    sensitivities = results.sensitivities()
    linear = sensitivities.for_output("linear")[0]
    assert linear["mean"] == pytest.approx(1.0, rel=1e-15) and linear["samples"] == 10 - failed
    zero = sensitivities.for_output("zero")[0]
    assert zero["samples"] == 0 and np.isnan(zero["mean"])

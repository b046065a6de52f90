"""The gradient columns of a study are exact: they equal fesens.ad.grad of each output
computed on its own, and central finite differences."""

import numpy as np
import pytest
from study_helpers import (
    FE_PARAMETERS,
    cantilever,
    cantilever_model,
    cantilever_outputs,
    power_model,
)

from fesens.ad import grad
from fesens.study import (
    OutputError,
    Parameter,
    ParametricModel,
    gradient_column,
    latin_hypercube,
    run_study,
)


@pytest.fixture(scope="module")
def fe_results():
    design = latin_hypercube(FE_PARAMETERS, 6, seed=2)
    return run_study(cantilever_model(), design, workers=0, progress=False)


def test_gradients_equal_independent_grad(fe_results):
    problem = cantilever()
    assert fe_results.n_errors == 0
    table = fe_results.columns()
    for i, record in enumerate(fe_results.records):
        params = record["inputs"]
        for output in fe_results.outputs:
            expected = grad(lambda p, o=output: cantilever_outputs(problem, p)[o])(params)
            for name in fe_results.parameters:
                assert table[gradient_column(output, name)][i] == pytest.approx(
                    float(expected[name]), rel=1e-12, abs=1e-14)


def test_gradients_match_finite_differences(fe_results):
    problem = cantilever()
    record = fe_results.records[3]
    params = record["inputs"]
    for name in fe_results.parameters:
        h = 1e-6 * abs(params[name])
        up = cantilever_outputs(problem, {**params, name: params[name] + h})
        down = cantilever_outputs(problem, {**params, name: params[name] - h})
        for output in fe_results.outputs:
            fd = (float(up[output]) - float(down[output])) / (2 * h)
            scale = abs(record["outputs"][output] / params[name])  # what S = 1 would give
            assert record["gradients"][output][name] == pytest.approx(fd, rel=1e-6,
                                                                       abs=1e-6 * scale)


def test_values_equal_an_untraced_evaluation(fe_results):
    model = cantilever_model()
    for record in fe_results.records[:2]:
        values = model.values(record["inputs"])
        for output, value in values.items():
            assert record["outputs"][output] == pytest.approx(value, rel=1e-13)


def test_analytic_gradients_in_table():
    design = latin_hypercube([Parameter("a", range=(1.0, 2.0)), Parameter("b", range=(1.0, 3.0))],
                             8, seed=0)
    results = run_study(power_model(), design, workers=0, progress=False)
    a, b = results.value("a"), results.value("b")
    np.testing.assert_allclose(results.gradient("y", "a"), 2.0 * 2 * a / b, rtol=1e-14)
    np.testing.assert_allclose(results.gradient("y", "b"), -2.0 * a**2 / b**2, rtol=1e-14)
    np.testing.assert_allclose(results.gradient("z", "a"), np.cos(a), rtol=1e-14)
    np.testing.assert_allclose(results.gradient("z", "b"), 1.0, rtol=1e-14)


def test_constant_output_has_zero_gradient():
    model = ParametricModel(lambda: None, lambda _, p: {"one": 1.0, "a": p["a"]})
    evaluation = model.values_and_gradients({"a": 3.0})
    assert evaluation.values == {"one": 1.0, "a": 3.0}
    assert evaluation.gradients == {"one": {"a": 0.0}, "a": {"a": 1.0}}


@pytest.mark.parametrize("evaluate, message", [
    (lambda _, p: [p["a"]], "must return a dict"),
    (lambda _, p: {"v": np.stack([p["a"], p["a"]])}, "'v' must be a scalar, got shape \\(2,\\)"),
    (lambda _, p: {"y": p["a"]}, "expected \\['y', 'z'\\] \\(missing \\['z'\\]\\)"),
    (lambda _, p: {"y": p["a"], "z": 1.0, "w": 2.0}, "unexpected \\['w'\\]"),
])
def test_bad_outputs_are_named(evaluate, message):
    model = ParametricModel(lambda: None, evaluate,
                            outputs=None if "dict" in message or "shape" in message
                            else ("y", "z"))
    with pytest.raises(OutputError, match=message):
        model.values_and_gradients({"a": 1.0})

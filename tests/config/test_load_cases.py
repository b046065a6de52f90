"""``[[load_cases]]``: checks, the weighted objective of one factorization, the output."""

import copy
import csv
import json
import tomllib
from pathlib import Path

import meshio
import numpy as np
import pytest

from fesens.ad import grad
from fesens.ad.checks import taylor_test
from fesens.config import ConfigError, build_model, build_problem, dumps, resolve
from fesens.objectives import compliance
from fesens.workflow.optimize import run_optimization

ROOT = Path(__file__).resolve().parents[2]
SMALL = tomllib.loads((ROOT / "tests" / "data" / "small_mbb.toml").read_text())


def two_cases(**changes) -> dict:
    """The small MBB with a second (horizontal) load and two weighted cases."""
    raw = copy.deepcopy(SMALL)
    raw["loads"].append({"type": "point", "name": "H", "point": [24.0, 8.0],
                         "value": [0.5, 0.0]})
    raw["load_cases"] = [{"name": "down", "weight": 2.0, "loads": ["F"]},
                         {"name": "side", "loads": ["H"]}]
    raw.update(changes)
    return raw


def resolved(raw: dict):
    return resolve(raw, base_dir=ROOT, source="test.toml")


def test_load_cases_are_checked_and_defaulted():
    config = resolved(two_cases())
    assert config.data["load_cases"][1] == {"name": "side", "weight": 1.0, "loads": ["H"]}
    assert resolved(tomllib.loads(dumps(config.data))).data == config.data   # config.toml
    assert "load_cases" not in resolved(copy.deepcopy(SMALL)).data   # as before


@pytest.mark.parametrize("cases, message", [
    ([{"name": "a", "loads": ["F", "X"]}, {"name": "b", "loads": ["H"]}],
     r'load_cases\[0\]\.loads\[1\] = "X" is not the name of a \[\[loads\]\] entry'),
    ([{"name": "a", "loads": ["F"]}],
     r'loads\[1\]\.name = "H" is in no load case'),
    ([{"name": "a", "weight": 0.0, "loads": ["F"]}, {"name": "b", "loads": ["H"]}],
     r"load_cases\[0\]\.weight = 0\.0 is not allowed: expected a number > 0"),
    ([{"name": "a", "weight": -1, "loads": ["F"]}, {"name": "b", "loads": ["H"]}],
     r"load_cases\[0\]\.weight = -1 is not allowed"),
    ([{"name": "a", "loads": ["F"]}, {"name": "a", "loads": ["H"]}],
     r'load_cases\[1\]\.name = "a": another load case has this name'),
    ([{"name": "a", "loads": []}, {"name": "b", "loads": ["F", "H"]}],
     r"load_cases\[0\]\.loads = \[\] is not allowed"),
    ([{"name": "a", "loads": ["F", "F"]}, {"name": "b", "loads": ["H"]}],
     r'load_cases\[0\]\.loads\[1\] = "F" is listed twice'),
    ([{"loads": ["F", "H"]}], r"missing key 'load_cases\[0\]\.name'"),
    ([{"name": "a", "loads": ["F", "H"], "wieght": 1}], r"did you mean 'weight'"),
])
def test_bad_load_cases_name_the_key_and_value(cases, message):
    with pytest.raises(ConfigError, match=message):
        resolved(two_cases(load_cases=cases))


def test_extra_constraints_with_load_cases_are_refused():
    raw = two_cases(optimizer={"type": "mma"})
    raw["constraints"]["extra"] = [{"type": "stress_pnorm", "name": "s", "limit": 1.0}]
    with pytest.raises(ConfigError, match=r"\[\[constraints.extra\]\] with \[\[load_cases\]\]"):
        resolved(raw)


def test_weighted_objective_is_the_sum_of_plain_solves_and_its_gradient_is_right():
    config = resolved(two_cases())
    model = build_model(config)
    problem = build_problem(config, model)
    x = np.random.default_rng(1).uniform(0.3, 0.9, problem.n_design)
    evaluation = problem.evaluate(x)

    scale = problem.interpolation(evaluation.density)
    plain = {name: float(compliance(model.solve(scale=scale,
                                                loads={"F": float(name == "F"),
                                                       "H": float(name == "H")})))
             for name in ("F", "H")}
    assert evaluation.extras["compliance_down"] == pytest.approx(plain["F"], rel=1e-10)
    assert evaluation.extras["compliance_side"] == pytest.approx(plain["H"], rel=1e-10)
    assert evaluation.objective == pytest.approx(2.0 * plain["F"] + plain["H"], rel=1e-10)

    def objective(x):
        rho = problem.density(x)
        return problem.objective(problem.solve(rho), rho)

    assert grad(objective)(x) == pytest.approx(evaluation.gradient, rel=1e-12)
    assert abs(taylor_test(objective, x, verbose=False).rate - 2.0) < 0.1


def test_two_case_run_reports_each_case(tmp_path):
    raw = two_cases()
    raw["stop"]["max_iter"] = 3
    run = run_optimization(resolved(raw), tmp_path / "out", echo=None)
    with open(tmp_path / "out" / "history.csv", newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == 3
    for row in rows:
        total = 2.0 * float(row["compliance_down"]) + float(row["compliance_side"])
        assert float(row["objective"]) == pytest.approx(total, rel=1e-10)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    cases = summary["objective"]["cases"]
    assert [(c["name"], c["weight"]) for c in cases] == [("down", 2.0), ("side", 1.0)]
    assert 2.0 * cases[0]["value"] + cases[1]["value"] == pytest.approx(
        summary["objective"]["value"], rel=1e-10)
    assert run.summary["objective"]["cases"] == cases
    assert summary["max_displacement_down"] > summary["max_displacement_side"] > 0.0
    assert "max_von_mises" not in summary and summary["max_von_mises_side"] > 0.0
    design = meshio.read(tmp_path / "out" / "design.vtu")
    assert {"displacement_down", "displacement_side"} <= set(design.point_data)
    assert "displacement" not in design.point_data

"""``[objective] combine = "max"``: the worst load case (min–max) from a config file."""

import copy
import csv
import json
import tomllib

import meshio
import numpy as np
import pytest
from test_load_cases import SMALL, resolved, two_cases

from fesens.config import ConfigError, build_problem, dumps
from fesens.opt import MinMaxProblem
from fesens.workflow.optimize import run_optimization


def worst_case(**changes) -> dict:
    raw = two_cases(optimizer={"type": "mma", "move": 0.2}, **changes)
    raw["objective"] = {"type": "compliance", "combine": "max"}
    return raw


def test_max_builds_a_min_max_problem_and_round_trips():
    config = resolved(worst_case())
    assert config.data["objective"]["combine"] == "max"
    assert resolved(tomllib.loads(dumps(config.data))).data == config.data
    problem = build_problem(config)
    assert isinstance(problem, MinMaxProblem)
    evaluation = problem.evaluate(problem.initial_design())
    cases = [evaluation.extras["compliance_down"], evaluation.extras["compliance_side"]]
    assert evaluation.bounds.tolist() == pytest.approx(cases, rel=1e-12)
    assert evaluation.objective == pytest.approx(max(cases), rel=1e-12)   # weights unused
    weighted = resolved(two_cases(optimizer={"type": "mma"}))
    assert "combine" not in weighted.data["objective"]          # default: the weighted sum
    assert not isinstance(build_problem(weighted), MinMaxProblem)


@pytest.mark.parametrize("change, message", [
    ({"optimizer": {"type": "oc"}},
     r'objective.combine = "max" needs optimizer.type = "mma".*optimizer.type = "oc" cannot'),
    ({"objective": {"type": "compliance", "combine": "worst"}},
     r'objective.combine = "worst" is not allowed: expected one of "weighted", "max"'),
    ({"load_cases": [{"name": "both", "loads": ["F", "H"]}]},
     r'objective.combine = "max" needs at least two \[\[load_cases\]\], the config has 1'),
])
def test_bad_combinations_name_the_key_and_the_fix(change, message):
    raw = worst_case()
    raw.update(change)
    with pytest.raises(ConfigError, match=message):
        resolved(raw)


def test_max_without_load_cases_is_refused():
    raw = copy.deepcopy(SMALL)
    raw["optimizer"] = {"type": "mma"}
    raw["objective"] = {"type": "compliance", "combine": "max"}
    with pytest.raises(ConfigError, match=r"needs at least two \[\[load_cases\]\], the config "
                                          r"has 0.*drop objective.combine"):
        resolved(raw)


def test_worst_case_run_reports_the_largest_case(tmp_path):
    raw = worst_case()
    raw["stop"]["max_iter"] = 3
    lines = []
    run = run_optimization(resolved(raw), tmp_path / "out", echo=lines.append)
    assert "compliance (worst of 2 load cases)" in lines[0]
    with open(tmp_path / "out" / "history.csv", newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == 3
    for row in rows:
        worst = max(float(row["compliance_down"]), float(row["compliance_side"]))
        assert float(row["objective"]) == pytest.approx(worst, rel=1e-10)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["objective"]["combine"] == "max"
    assert summary["objective"]["value"] == pytest.approx(
        max(case["value"] for case in summary["objective"]["cases"]), rel=1e-10)
    assert run.summary["objective"]["combine"] == "max"
    design = meshio.read(tmp_path / "out" / "design.vtu").cell_data
    worst = max(summary["objective"]["cases"], key=lambda case: case["value"])["name"]
    np.testing.assert_array_equal(design["d_compliance_d_design"][0],
                                  design[f"d_compliance_{worst}_d_design"][0])
    assert "d_compliance_down_d_design" in design and "d_compliance_side_d_design" in design




def test_a_case_name_must_be_usable_in_column_and_field_names():
    cases = [{"name": "dead load", "loads": ["F"]}, {"name": "side", "loads": ["H"]}]
    with pytest.raises(ConfigError, match=r'load_cases\[0\]\.name = "dead load": use letters'):
        resolved(two_cases(load_cases=cases))

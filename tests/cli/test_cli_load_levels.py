"""``fesens solve`` and ``fesens sensitivity`` of an objective of several load levels
(``[objective] load_factors``) of a nonlinear physics: the per-level values printed and
written, equal to the same config solved at each level's load alone; config errors exit 2
naming the key."""

import json

import pytest

from tests.cli.cli_helpers import edit, run, write_config

#: A hyperelastic cantilever under a tip load large enough to bend it nonlinearly.
BEAM = """
name = "beam"
[mesh]
type = "rectangle"
size = [2.0, 0.5]
cells = [6, 2]
[physics]
type = "hyperelasticity"
[material]
E = 10.0
nu = 0.3
[[supports]]
group = "left"
[[loads]]
type = "point"
name = "tip"
point = [2.0, 0.0]
value = [0.0, -0.2]
[objective]
type = "compliance"
load_factors = [0.5, 1.0]
weights = [2.0, 1.0]
"""


def _solved(tmp_path, text: str, name: str) -> tuple[dict, str]:
    out = tmp_path / name
    result = run("solve", write_config(tmp_path, text, f"{name}.toml"), "--out", out)
    assert result.exit_code == 0, result.output
    return json.loads((out / "solution.json").read_text()), result.output


def test_solve_prints_and_writes_each_levels_value(tmp_path):
    """Each level's compliance is the compliance of the config solved at that level's load
    alone (a hyperelastic equilibrium depends on its load only), and the sum is weighted."""
    summary, output = _solved(tmp_path, BEAM, "levels")
    levels = summary["objective"]["levels"]
    assert [(lv["load_factor"], lv["weight"]) for lv in levels] == [(0.5, 2.0), (1.0, 1.0)]
    assert "compliance at load factor 0.5: " in output
    assert "compliance over the load levels (weighted sum): " in output
    alone = [_solved(tmp_path, edit(edit(BEAM, "[0.0, -0.2]", f"[0.0, {-0.2 * t!r}]"),
                                    "load_factors = [0.5, 1.0]\nweights = [2.0, 1.0]\n", ""),
                     f"alone{k}")[0]["compliance"] for k, t in enumerate((0.5, 1.0))]
    for level, value in zip(levels, alone, strict=True):
        assert level["value"] == pytest.approx(value, rel=1e-8)
    assert summary["compliance"] == pytest.approx(alone[1], rel=1e-10)
    assert summary["objective"]["levels_value"] == pytest.approx(
        2.0 * alone[0] + alone[1], rel=1e-8)
    # not linear in the load: a linear beam's compliance at half the load is a quarter
    assert abs(alone[0] / alone[1] - 0.25) > 1e-3


def test_sensitivity_value_is_the_weighted_sum_of_the_levels(tmp_path):
    out = tmp_path / "sens"
    result = run("sensitivity", write_config(tmp_path, BEAM), "--wrt", "density",
                 "--out", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "sensitivity.json").read_text())
    assert summary["value"] == pytest.approx(summary["levels_value"], rel=1e-12)
    assert [lv["load_factor"] for lv in summary["levels"]] == [0.5, 1.0]


@pytest.mark.parametrize(("old", "new", "key"), [
    ("load_factors = [0.5, 1.0]", "load_factors = [1.0, 0.5]", "objective.load_factors"),
    ("load_factors = [0.5, 1.0]", "load_factors = [0.5, 1.2]", "objective.load_factors"),
    ("weights = [2.0, 1.0]", "weights = [2.0]", "objective.weights"),
    ("type = \"hyperelasticity\"", "type = \"elasticity\"", "objective.load_factors applies "
                                                           "to nonlinear physics only"),
])
def test_config_errors_exit_2_naming_the_key(tmp_path, old, new, key):
    result = run("solve", write_config(tmp_path, edit(BEAM, old, new)), "--out",
                 tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert key in result.output

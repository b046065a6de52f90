"""``[[load_cases]]`` in ``fesens solve`` and ``fesens sensitivity``: each case from one
factorization, checked against configs that hold one load each."""

import csv
import json

import meshio
import numpy as np
import pytest
from cli_helpers import SMALL_MBB, edit, run, write_config

SIDE_LOAD = ('\n[[loads]]\ntype = "point"\nname = "H"\npoint = [24.0, 8.0]\n'
             "value = [0.5, 0.0]\n")
CASES = ('\n[[load_cases]]\nname = "down"\nweight = 2.0\nloads = ["F"]\n'
         '\n[[load_cases]]\nname = "side"\nloads = ["H"]\n')


def two_cases(combine: str | None = None, optimizer: str = "oc") -> str:
    text = edit(SMALL_MBB + SIDE_LOAD + CASES, 'type = "oc"', f'type = "{optimizer}"')
    if combine is not None:
        text = edit(text, 'type = "compliance"', f'type = "compliance"\ncombine = "{combine}"')
    return text


def only_side() -> str:
    """The same model with the side load alone (the down load's magnitude 0)."""
    return edit(SMALL_MBB + SIDE_LOAD, "value = [0.0, -1.0]", "value = [0.0, 0.0]")


def solved(tmp_path, text: str, name: str) -> dict:
    out = tmp_path / name
    result = run("solve", write_config(tmp_path, text, f"{name}.toml"), "--out", out)
    assert result.exit_code == 0, result.output
    return json.loads((out / "solution.json").read_text()), result.output


def test_solve_writes_each_case(tmp_path):
    summary, output = solved(tmp_path, two_cases(), "cases")
    down, _ = solved(tmp_path, SMALL_MBB, "down")
    side, _ = solved(tmp_path, only_side(), "side")
    cases = {case["name"]: case for case in summary["cases"]}
    assert cases["down"]["compliance"] == pytest.approx(down["compliance"], rel=1e-10)
    assert cases["side"]["compliance"] == pytest.approx(side["compliance"], rel=1e-10)
    assert summary["combine"] == "weighted"
    assert summary["compliance"] == pytest.approx(
        2.0 * down["compliance"] + side["compliance"], rel=1e-10)
    assert cases["down"]["max_von_mises"] == pytest.approx(down["max_von_mises"], rel=1e-10)
    assert cases["side"]["reactions"]["left"] == pytest.approx([-0.5, 0.0], abs=1e-10)
    assert cases["down"]["reactions"]["left"][0] == pytest.approx(0.0, abs=1e-10)
    assert (cases["down"]["weight"], cases["down"]["loads"]) == (2.0, ["F"])
    assert "case down: compliance" in output and "reaction on left (side)" in output
    vtu = meshio.read(tmp_path / "cases" / "solution.vtu")
    assert {"displacement_down", "displacement_side"} <= set(vtu.point_data)
    assert {"von_mises_down", "von_mises_side"} <= set(vtu.cell_data)
    assert "displacement" not in vtu.point_data
    side_vtu = meshio.read(tmp_path / "side" / "solution.vtu")
    np.testing.assert_allclose(vtu.point_data["displacement_side"],
                               side_vtu.point_data["displacement"], rtol=1e-10, atol=1e-14)
    assert {"solution_down.png", "solution_side.png"} <= {
        p.name for p in (tmp_path / "cases").iterdir()}


def test_solve_reports_the_worst_case(tmp_path):
    summary, output = solved(tmp_path, two_cases("max", "mma"), "worst")
    values = [case["compliance"] for case in summary["cases"]]
    assert summary["combine"] == "max" and summary["compliance"] == max(values)
    assert "(the largest)" in output


def sensitivity(tmp_path, text: str, name: str, wrt: str = "density"):
    out = tmp_path / name
    result = run("sensitivity", write_config(tmp_path, text, f"{name}.toml"), "--wrt", wrt,
                 "--out", out)
    assert result.exit_code == 0, result.output
    return json.loads((out / "sensitivity.json").read_text()), meshio.read(
        out / "sensitivity.vtu")


def test_sensitivity_gives_each_case_and_the_combination(tmp_path):
    summary, vtu = sensitivity(tmp_path, two_cases(), "cases")
    _, down = sensitivity(tmp_path, SMALL_MBB, "down")
    _, side = sensitivity(tmp_path, only_side(), "side")
    fields = {name: values[0] for name, values in vtu.cell_data.items()}
    expected_down = down.cell_data["d_compliance_d_density"][0]
    expected_side = side.cell_data["d_compliance_d_density"][0]
    np.testing.assert_allclose(fields["d_compliance_down_d_density"], expected_down,
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fields["d_compliance_side_d_density"], expected_side,
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fields["d_compliance_d_density"],
                               2.0 * expected_down + expected_side, rtol=1e-9, atol=1e-12)
    values = {case["name"]: case["value"] for case in summary["cases"]}
    assert summary["value"] == pytest.approx(2.0 * values["down"] + values["side"], rel=1e-12)
    assert summary["cases"][0]["gradient"]["field"] == "d_compliance_down_d_density"
    assert {"displacement_down", "displacement_side"} <= set(vtu.point_data)

    worst, vtu = sensitivity(tmp_path, two_cases("max", "mma"), "worst")
    largest = max(summary["cases"], key=lambda case: case["value"])["name"]
    assert worst["value"] == pytest.approx(values[largest], rel=1e-12)
    np.testing.assert_array_equal(vtu.cell_data["d_compliance_d_density"][0],
                                  vtu.cell_data[f"d_compliance_{largest}_d_density"][0])


def test_sensitivity_to_load_magnitudes_per_case(tmp_path):
    """Compliance is quadratic in a load's magnitude: dC_case/dm = 2 C_case for the loads of
    the case, 0 for the others; combined: Σ weight × that."""
    summary, _ = sensitivity(tmp_path, two_cases(), "loads", wrt="loads")
    values = {case["name"]: case["value"] for case in summary["cases"]}
    rows = {row["name"]: row for row in summary["loads"]}
    assert rows["F"]["derivative_down"] == pytest.approx(2.0 * values["down"], rel=1e-10)
    assert rows["F"]["derivative_side"] == 0.0 and rows["H"]["derivative_down"] == 0.0
    assert rows["H"]["derivative_side"] == pytest.approx(2.0 * values["side"], rel=1e-10)
    assert rows["F"]["derivative"] == pytest.approx(4.0 * values["down"], rel=1e-10)
    with open(tmp_path / "loads" / "sensitivity.csv", newline="") as file:
        table = list(csv.DictReader(file))
    assert list(table[0]) == ["name", "magnitude", "derivative", "derivative_down",
                              "derivative_side"]
    assert float(table[1]["derivative_side"]) == rows["H"]["derivative_side"]


def test_combine_max_with_oc_is_bad_input(tmp_path):
    result = run("optimize", write_config(tmp_path, two_cases("max")), "--out",
                 tmp_path / "out")
    assert result.exit_code == 2
    assert 'objective.combine = "max" needs optimizer.type = "mma"' in result.output

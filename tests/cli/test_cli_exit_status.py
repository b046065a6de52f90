"""``fesens optimize`` says "converged" only when it is: an end with a violated constraint
exits 3 (``infeasible``), a design without material exits 4 (``degenerate``), each with its
results written, marked in ``summary.json``, and a last line that says why.

The small MBB beam (24 x 8, volume fraction 0.5, density filter): a uniform start stays
uniform under the filter, so its volume fraction is the start value. ``tol_change = 1.0``
makes the stop rule hold at the first iteration, whose evaluated design is the start.
"""

import json
import subprocess
import sys

import pytest
from cli_helpers import ROOT, SMALL_MBB, edit, run, write_config

from fesens.config import preset_text


def small(initial: float, *, optimizer: str = "", stop: str = "") -> str:
    text = edit(SMALL_MBB, "[objective]", f"[design]\ninitial = {initial}\n\n[objective]")
    text = edit(text, "move = 0.2", "move = 0.2" + optimizer)
    return edit(text, "tol_change = 0.01", "tol_change = 0.01" + stop) if stop else text


#: A start at 0.8 under the limit 0.5 that stops at once.
INFEASIBLE = edit(small(0.8), "tol_change = 0.01", "tol_change = 1.0")


def summary(out) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_an_infeasible_end_exits_3_and_its_last_line_says_why(tmp_path):
    out = tmp_path / "out"
    result = run("optimize", write_config(tmp_path, INFEASIBLE), "--out", out)
    assert result.exit_code == 3, result.output
    last = result.output.splitlines()[-1]
    assert last.startswith("error: INFEASIBLE after 1 iterations: volume_fraction 0.8 "
                           "(limit 0.5) (beyond stop.constraint_tol = 0.001)"), last
    assert 'marked status = "infeasible"' in last
    data = summary(out)
    assert data["status"] == "infeasible" and data["converged"] is False
    assert data["constraints"][0]["satisfied"] is False
    assert "volume_fraction 0.8" in data["reason"]
    assert (out / "design.vtu").is_file() and (out / "history.csv").is_file()


def test_the_constraint_tolerance_is_a_stop_key(tmp_path):
    """0.8 − 0.5 = 0.3 is within a tolerance of 0.5."""
    text = edit(INFEASIBLE, "tol_change = 1.0", "tol_change = 1.0\nconstraint_tol = 0.5")
    result = run("optimize", write_config(tmp_path, text), "--out", tmp_path / "out", "-q")
    assert result.exit_code == 0, result.output
    assert summary(tmp_path / "out")["status"] == "converged"


@pytest.mark.parametrize(("stop", "optimizer", "message"), [
    ("\nconstraint_tol = -0.1", "", "stop.constraint_tol = -0.1 is not allowed: expected a "
                                     "number ≥ 0"),
    ("", "\ndamping = 0.0", "optimizer.damping = 0.0 is not allowed: OC damping must be in "
                            "(0, 1]"),
    ("", "\nx_min = 1.0", "optimizer.x_min = 1.0 is not allowed: OC x_min (the lower bound "
                          "of the design variables) must be in [0, 1)"),
])
def test_out_of_range_keys_are_refused_at_check_time(tmp_path, stop, optimizer, message):
    text = small(0.5, optimizer=optimizer, stop=stop)
    result = run("optimize", write_config(tmp_path, text), "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and message in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_a_design_without_material_exits_4_and_writes_no_shape(tmp_path):
    """top88's lower bound 0 from an all-void start: OC's update keeps every cell at 0."""
    out = tmp_path / "out"
    text = small(0.0, optimizer="\nx_min = 0.0")
    result = run("optimize", write_config(tmp_path, text), "--out", out)
    assert result.exit_code == 4, result.output
    last = result.output.splitlines()[-1]
    assert last.startswith("error: DEGENERATE after 1 iterations: volume fraction 0, below "
                           "0.01 of its limit 0.5"), last
    data = summary(out)
    assert data["status"] == "degenerate" and "shape" not in data
    assert not (out / "design_outline.svg").exists()
    assert (out / "design.vtu").is_file()


def test_oc_grows_from_an_all_void_start(tmp_path):
    out = tmp_path / "out"
    text = edit(small(0.0), "max_iter = 6", "max_iter = 20")
    result = run("optimize", write_config(tmp_path, text), "--out", out, "-q")
    assert result.exit_code == 0, result.output
    data = summary(out)
    assert data["iterations"] == 20 and data["status"] == "max_iter"
    assert data["volume_fraction"] == pytest.approx(0.5, abs=1e-3)


def test_a_design_with_no_cell_above_half_gets_no_empty_outline(tmp_path):
    """After one iteration the evaluated design is the uniform start, 0.5 everywhere."""
    out = tmp_path / "out"
    result = run("optimize", write_config(tmp_path), "--out", out, "--max-iter", 1)
    assert result.exit_code == 0, result.output
    assert "no design_outline.svg: no cell's physical density exceeds 0.5" in result.output
    assert not (out / "design_outline.svg").exists()


def test_oc_on_a_compliant_mechanism_does_not_empty_the_design(tmp_path):
    """The inverter preset with OC instead of MMA: with a lower bound of 0 the cells whose
    gradient is positive drop to 0 and stay there, and the output displacement ends near 0
    (-0.003 after 200 iterations); the preset's MMA reaches -0.958 (its comment)."""
    text = edit(preset_text("inverter"), 'type = "mma"\nmove = 0.2\nobjective_scale = 1.0',
                'type = "oc"\nmove = 0.2')
    text = edit(text, "max_iter = 150", "max_iter = 100")
    out = tmp_path / "out"
    result = run("optimize", write_config(tmp_path, text), "--out", out, "-q")
    assert result.exit_code == 0, result.output
    data = summary(out)
    assert data["objective"]["value"] < -0.5
    assert data["volume_fraction"] == pytest.approx(0.3, abs=1e-3)


def test_the_process_exits_3_with_the_reason_on_its_last_stderr_line(tmp_path):
    config = write_config(tmp_path, INFEASIBLE)
    done = subprocess.run([sys.executable, str(ROOT / "cli.py"), "optimize", str(config),
                           "--out", str(tmp_path / "out"), "-q"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines()[-1].startswith("error: INFEASIBLE after 1 iterations")
    assert done.stdout == ""


def test_help_and_docs_state_the_exit_codes(tmp_path):
    help_text = run("optimize", "--help").output
    for line in ("0  converged", "3  infeasible", "4  degenerate", "130  interrupted"):
        assert line in help_text, line
    docs = (ROOT / "fesens" / "docs" / "topology.md").read_text()
    for phrase in ("`infeasible`", "`degenerate`", "exit code 3", "exit code 4",
                   "stop.constraint_tol"):
        assert phrase in docs, phrase

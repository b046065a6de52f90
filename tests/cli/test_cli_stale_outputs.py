"""A results folder holds one run's outputs, never a mix: ``--force`` removes every file the
previous run wrote (a Newton run's ``load_path.csv``, a time series' steps), a failed run
leaves only its own, and neither touches the user's files or the files the run reads."""

import json

from cli_helpers import SMALL_MBB, edit, run, write_config

from tests.cli.test_cli_nonlinear import BETA, ROD

#: A heated strip: 6 cells, 4 implicit steps, its states written every step.
STRIP = """
name = "strip"
[mesh]
type = "rectangle"
size = [1.0, 0.25]
cells = [6, 1]
[physics]
type = "heat"
[material]
conductivity = 1.0
heat_capacity = 1.0
[[supports]]
group = "left"
[[loads]]
type = "heat_source"
value = 1.0
"""
TRANSIENT = STRIP + """
[analysis]
type = "transient"
[time]
end = 0.1
steps = 4
output_every = 1
"""


def outputs(folder) -> list[str]:
    """The names of the folder's visible files."""
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def test_a_failed_newton_solve_with_force_leaves_only_its_own_outputs(tmp_path):
    out = tmp_path / "out"
    assert run("solve", write_config(tmp_path, ROD), "--out", out, "-q").exit_code == 0
    assert {"load_path.csv", "load_path.png"} <= set(outputs(out))
    (out / "notes.txt").write_text("mine")
    failing = edit(edit(ROD, f"beta = {BETA}", "beta = -0.5"), "steps = 3",
                   "steps = 4\nmax_cutbacks = 2")
    result = run("solve", write_config(tmp_path, failing, "failing.toml"), "--out", out,
                 "--force")
    assert result.exit_code == 1, result.output
    assert not json.loads((out / "solution.json").read_text())["newton"]["converged"]
    assert outputs(out) == ["notes.txt", "solution.json", "solution.vtu"]
    assert (out / "notes.txt").read_text() == "mine"


def test_force_removes_a_time_series_of_the_previous_run(tmp_path):
    out = tmp_path / "out"
    assert run("solve", write_config(tmp_path, TRANSIENT), "--out", out, "-q").exit_code == 0
    assert {"solution.pvd", "solution_0004.vtu", "history.png"} <= set(outputs(out))
    static = write_config(tmp_path, STRIP, "static.toml")
    assert run("solve", static, "--out", out, "--force", "-q").exit_code == 0
    assert outputs(out) == ["solution.json", "solution.png", "solution.vtu"]


def test_force_keeps_the_design_a_sensitivity_reads_from_the_folder(tmp_path):
    out = tmp_path / "out"
    config = write_config(tmp_path, SMALL_MBB)
    assert run("optimize", config, "--out", out, "--max-iter", 1, "-q").exit_code == 0
    design = (out / "design.vtu").read_bytes()
    result = run("sensitivity", config, "--wrt", "density", "--design", out, "--out", out,
                 "--force", "-q")
    assert result.exit_code == 0, result.output
    assert (out / "design.vtu").read_bytes() == design
    assert "summary.json" not in outputs(out)  # the optimization's other files are gone


def test_force_keeps_the_initial_design_an_optimization_reads_from_its_folder(tmp_path):
    out = tmp_path / "out"
    config = write_config(tmp_path, SMALL_MBB)
    assert run("optimize", config, "--out", out, "--max-iter", 1, "-q").exit_code == 0
    restart = write_config(tmp_path, SMALL_MBB + f'\n[design]\ninitial = "{out / "design.vtu"}"\n',
                           "restart.toml")
    result = run("optimize", restart, "--out", out, "--force", "--max-iter", 1, "-q")
    assert result.exit_code == 0, result.output
    assert (out / "design.vtu").is_file()

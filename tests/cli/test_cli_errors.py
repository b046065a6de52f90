"""Error paths: a one-line message, the right exit code, and nothing half-written."""

import subprocess
import sys

import numpy as np
import pytest
from cli_helpers import ROOT, SMALL_MBB, edit, listing, run, write_config
from split_beam import split_beam

from fesens.opt.problem import DesignProblem


@pytest.fixture
def config(tmp_path):
    return write_config(tmp_path)


def assert_one_line_error(result, code: int, *fragments: str) -> None:
    assert result.exit_code == code, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize("command", [["optimize"], ["solve"], ["sensitivity", "--wrt", "E"]])
def test_an_existing_results_folder_is_never_overwritten(command, config, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "history.csv").write_text("precious")
    (out / "notes.txt").write_text("mine")
    before = listing(out)
    result = run(*command, config, "--out", out)
    assert_one_line_error(result, 2, f"results folder {out} exists and is not empty",
                          "--force")
    assert listing(out) == before


def test_force_replaces_previous_results_and_keeps_other_files(config, tmp_path):
    out = tmp_path / "out"
    assert run("optimize", config, "--out", out, "--max-iter", 1, "-q").exit_code == 0
    (out / "design_0099.vtu").write_text("stale snapshot")
    (out / "notes.txt").write_text("mine")
    result = run("optimize", config, "--out", out, "--max-iter", 2, "--force", "-q")
    assert result.exit_code == 0, result.output
    assert not (out / "design_0099.vtu").exists()
    assert (out / "notes.txt").read_text() == "mine"
    assert len((out / "history.csv").read_text().splitlines()) == 3


def test_resume_without_a_checkpoint(config, tmp_path):
    result = run("optimize", config, "--out", tmp_path / "none", "--resume")
    assert_one_line_error(result, 2, "cannot resume: no checkpoint in")
    assert not (tmp_path / "none").exists()


def test_resume_and_force_exclude_each_other(config, tmp_path):
    result = run("optimize", config, "--out", tmp_path / "x", "--resume", "--force")
    assert result.exit_code == 2
    assert "--resume continues a run and --force starts over" in result.output


@pytest.mark.parametrize(("args", "message"), [
    ([], "give a CONFIG file or --preset NAME"),
    (["CONFIG", "--preset", "mbb"], "give either CONFIG or --preset NAME, not both"),
])
def test_config_source_usage_errors(args, message, config):
    result = run("optimize", *[config if a == "CONFIG" else a for a in args])
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.parametrize(("old", "new", "message"), [
    ("radius = 1.5", "radus = 1.5", "unknown key 'filter.radus'; did you mean 'radius'?"),
    ("radius = 1.5", "radius = -1.5", "filter.radius = -1.5 is not allowed: expected a number > 0"),
    ('group = "left"', 'group = "lfet"', "did you mean 'left'? (available node or facet groups: "
                                         "bottom, left, right, top)"),
    ('type = "rectangle"\nsize = [24.0, 8.0]\ncells = [24, 8]',
     'type = "file"\nfile = "missing.msh"', 'mesh.file = "missing.msh": no such file'),
    ("cells = [24, 8]", "cells = [24, 8", "not valid TOML"),
    ("volume_fraction = 0.5", "volume_fraction = 1.0",
     "constraints.volume_fraction = 1.0 leaves the OC optimizer no design freedom"),
    ("value = [0.0, -1.0]", "value = [0.0, 0.0]", "every load is zero"),
])
def test_config_errors_exit_2_before_anything_is_written(old, new, message, tmp_path):
    config = write_config(tmp_path, edit(SMALL_MBB, old, new))
    for command in (["optimize"], ["solve"], ["sensitivity", "--wrt", "density"]):
        result = run(*command, config, "--out", tmp_path / "out")
        assert_one_line_error(result, 2, f"error: {config}: ", message)
        assert not (tmp_path / "out").exists()
        assert not (ROOT / "results" / "small").exists()


def test_a_config_warning_is_one_line_and_the_run_goes_on(tmp_path):
    config = write_config(tmp_path, edit(SMALL_MBB, "radius = 1.5", "radius = 30.0"))
    result = run("optimize", config, "--out", tmp_path / "out", "--quiet")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        line for line in result.output.splitlines() if line.startswith("warning: ")]
    assert len(result.output.splitlines()) == 1
    assert f"warning: {config}: filter.radius = 30.0 is larger than" in result.output


def test_unknown_preset_and_missing_config_file(tmp_path):
    assert_one_line_error(run("optimize", "--preset", "cantilver"), 2,
                          "unknown preset 'cantilver'; did you mean 'cantilever'?")
    assert_one_line_error(run("solve", tmp_path / "nope.toml"), 2, "config file not found")


def test_a_singular_model_is_a_numerical_failure(tmp_path):
    """Only the roller left: free horizontal motion, detected before the folder is made."""
    text = edit(SMALL_MBB, '[[supports]]\ngroup = "left"\ncomponents = ["x"]\n', "")
    result = run("optimize", write_config(tmp_path, text), "--out", tmp_path / "out")
    assert_one_line_error(result, 1, "numerical failure (SingularMatrixError)",
                          "free rigid-body motion")
    assert not (tmp_path / "out").exists()


def test_nan_during_the_run_exits_1_and_keeps_the_last_checkpoint(config, tmp_path,
                                                                    monkeypatch):
    original = DesignProblem.evaluate
    calls = {"n": 0}

    def evaluate(self, x):
        calls["n"] += 1
        evaluation = original(self, x)
        if calls["n"] == 3:
            evaluation.objective = np.nan
        return evaluation

    monkeypatch.setattr(DesignProblem, "evaluate", evaluate)
    out = tmp_path / "out"
    result = run("optimize", config, "--out", out)
    assert result.exit_code == 1
    assert result.output.splitlines()[-1].startswith(
        "error: numerical failure (NonFiniteError): iteration 3: the objective, a "
        "constraint or their gradients are NaN")
    assert (out / "checkpoint.npz").exists()
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [
        ".fesens-files"]  # no temporary file left


def test_console_script_maps_errors_to_exit_codes(tmp_path):
    """The real entry point (``python cli.py``): one line on stderr, exit 2, no traceback."""
    config = write_config(tmp_path, edit(SMALL_MBB, "radius = 1.5", "radius = 0"))
    result = subprocess.run([sys.executable, "cli.py", "optimize", str(config), "--out",
                             str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True,
                            check=False)
    assert result.returncode == 2
    assert result.stderr == (f"error: {config}: filter.radius = 0 is not allowed: expected a "
                             "number > 0\n")
    assert result.stdout == ""
    assert not (tmp_path / "out").exists()


def test_a_filter_radius_too_large_to_solve_is_refused_naming_the_key(tmp_path):
    text = edit(edit(SMALL_MBB, 'type = "density"', 'type = "helmholtz"'),
                "radius = 1.5", "radius = 1e6")
    out = tmp_path / "out"
    result = run("optimize", write_config(tmp_path, text), "--out", out)
    assert result.exit_code == 2, result.output
    error = result.output.splitlines()[-1]
    assert error.startswith("error: ") and "small.toml: filter.radius = 1000000.0 is too " \
        "large: a Helmholtz filter" in error and "use a radius of 1.5 to 3 cell sizes" in error
    assert not out.exists()


def test_running_out_of_memory_is_one_line_and_exit_1(config, tmp_path, monkeypatch):
    """The last resort for an allocation no estimate foresaw: once a traceback."""
    def allocate(*args, **kwargs):
        raise MemoryError("Unable to allocate 29.1 TiB for an array with shape "
                          "(2000001, 2000001) and data type int64")

    monkeypatch.setattr(DesignProblem, "__init__", allocate)
    out = tmp_path / "out"
    result = run("optimize", config, "--out", out)
    assert_one_line_error(result, 1, "out of memory: Unable to allocate 29.1 TiB")
    assert not out.exists() or listing(out) == {}


@pytest.mark.parametrize(("old", "new", "key"), [
    ("E = 1.0", "E = 1e300", "material.E = 1e+300"),
    ("E = 1.0", "E = 1e-300", "material.E = 1e-300"),
    ('plane = "stress"', 'plane = "stress"\nthickness = 1e200', "physics.thickness = 1e+200"),
    ("E = 1.0", "E = 1.0\ndensity = 1e300", "material.density = 1e+300")])
def test_extreme_values_are_refused_naming_the_key(tmp_path, old, new, key):
    """E = 1e-300 once solved with an overflow warning and max |u| = inf; E·thickness =
    1e400, a density of 1e300: a NaN residual blamed on missing Dirichlet conditions."""
    result = run("solve", write_config(tmp_path, edit(SMALL_MBB, old, new)), "--out",
                 tmp_path / "out")
    assert_one_line_error(result, 2, f"{key} is not allowed: a number's magnitude must lie "
                          "in [1e-50, 1e+50] (or be 0)", "check its units")
    assert not (tmp_path / "out").exists()


def test_coincident_nodes_of_a_mesh_file_are_one_warning_line(tmp_path):
    """Two halves of a beam meshed apart and never merged once solved silently (their
    compliance more than 3 times the beam's)."""
    split_beam(tmp_path)
    # both ends clamped, so that each half is held on its own
    text = edit(edit(edit(edit(
        SMALL_MBB, 'type = "rectangle"\nsize = [24.0, 8.0]\ncells = [24, 8]',
        'type = "file"\nfile = "split.vtu"'),
        'group = "left"\ncomponents = ["x"]', "region = { min = [0.0, 0.0], max = [0.0, 20.0] }"),
        'point = [24.0, 0.0]\ncomponents = ["y"]',
        "region = { min = [100.0, 0.0], max = [100.0, 20.0] }"),
        "point = [0.0, 8.0]", "point = [50.0, 20.0]")
    result = run("solve", write_config(tmp_path, text), "--out", tmp_path / "out", "-q")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].startswith(
        "warning: ") and "split.vtu: 10 nodes coincide with another node (the first at " \
        "(50, 0)): the cells on either side are not joined there; merge them" in result.output

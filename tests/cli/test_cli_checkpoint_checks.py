"""A checkpoint is used only for the problem it was written for, and only when it is one:
its fingerprint (mesh and config) catches another run's checkpoint and a config changed
behind a deleted ``config.toml``; a hand-forged one is called damaged. Each refusal is one
``error:`` line, exit 2, and leaves the results folder as it was."""

import shutil

import numpy as np
import pytest
from cli_helpers import SMALL_MBB, edit, history, listing, run, write_config


@pytest.fixture(scope="module")
def two_iterations(tmp_path_factory):
    """The small MBB beam after 2 OC iterations (a resumable folder) and its config."""
    folder = tmp_path_factory.mktemp("run")
    config = write_config(folder)
    result = run("optimize", config, "--out", folder / "out", "--max-iter", 2, "-q")
    assert result.exit_code == 0, result.output
    return folder / "out"


def copy_run(source, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(source, out)
    return out


def one_line_error(result, *phrases: str) -> str:
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


# ------------------------------------------------------------------ another problem
@pytest.mark.parametrize(("change", "part"), [
    (("radius = 1.5", "radius = 2.0"), "filter"),
    (("E = 1.0", "E = 2.0"), "material"),
    (("size = [24.0, 8.0]", "size = [48.0, 16.0]"), "mesh"),
])
def test_resume_with_config_toml_deleted_refuses_a_changed_problem(two_iterations, tmp_path,
                                                                   change, part):
    out = copy_run(two_iterations, tmp_path)
    (out / "config.toml").unlink()
    before = listing(out)
    changed = write_config(tmp_path, edit(SMALL_MBB, *change))
    result = run("optimize", changed, "--out", out, "--resume")
    one_line_error(result, f"checkpoint {out / 'checkpoint.npz'} was written for another "
                   f"problem (changed since: {part};", "--force")
    assert listing(out) == before


def test_resume_with_config_toml_deleted_allows_stop_and_output_changes(two_iterations,
                                                                        tmp_path):
    out = copy_run(two_iterations, tmp_path)
    (out / "config.toml").unlink()
    changed = edit(edit(SMALL_MBB, "max_iter = 6", "max_iter = 4"), "every = 0", "every = 3")
    result = run("optimize", write_config(tmp_path, edit(changed, "a 24 x 8", "renamed")),
                 "--out", out, "--resume", "-q")
    assert result.exit_code == 0, result.output
    assert [int(row["iteration"]) for row in history(out)] == [1, 2, 3, 4]
    assert (out / "design_0003.vtu").is_file()


@pytest.mark.parametrize(("change", "part"), [
    (("size = [24.0, 8.0]", "size = [48.0, 16.0]"), "mesh"),
    (("radius = 1.5", "radius = 3.0"), "filter"),
])
def test_sensitivity_refuses_another_runs_checkpoint_of_the_same_cell_count(
        two_iterations, tmp_path, change, part):
    other = tmp_path / "other"
    config = write_config(tmp_path, edit(SMALL_MBB, *change), "other.toml")
    assert run("optimize", config, "--out", other, "--max-iter", 1, "-q").exit_code == 0
    result = run("sensitivity", two_iterations / "config.toml", "--wrt", "density",
                 "--design", other / "checkpoint.npz", "--out", tmp_path / "sens")
    one_line_error(result, "the checkpoint was written for another problem", part,
                   "give --design the checkpoint of a run of this config")
    assert not (tmp_path / "sens").exists()
    same = run("sensitivity", other / "config.toml", "--wrt", "density", "--design",
               other / "checkpoint.npz", "--out", tmp_path / "sens")
    assert same.exit_code == 0, same.output


# ------------------------------------------------------------------ forged checkpoints
def forge(path, how: str) -> None:
    """Rewrite the checkpoint at ``path`` as a hand-edited one would be."""
    if how == "not npz":
        path.write_text("x = 0.5\n")
        return
    if how == "npy":
        np.save(path.with_suffix(".npy"), np.full(192, 0.5))
        path.with_suffix(".npy").replace(path)
        return
    with np.load(path, allow_pickle=False) as data:
        entries = {name: data[name] for name in data.files}
    x = entries["x"]
    if how == "x strings":
        entries["x"] = x.astype(str)
    elif how == "x too short":
        entries["x"], entries["evaluated"] = x[:-5], entries["evaluated"][:-5]
    elif how == "x scalar":
        entries["x"] = np.array(0.5)
    elif how == "x NaN":
        entries["x"] = np.where(np.arange(x.size) == 7, np.nan, x)
    elif how == "iteration 999":
        entries["iteration"] = np.array(999)
    elif how == "iteration string":
        entries["iteration"] = np.array("2")
    elif how == "no history":
        del entries["history"]
    elif how == "history NaN":
        entries["history"] = np.full_like(entries["history"], np.nan)
    elif how == "fingerprint garbage":
        entries["fingerprint"] = np.array("{not json")
    np.savez(path.with_suffix(".tmp.npz"), **entries)
    path.with_suffix(".tmp.npz").replace(path)


FORGERIES = {
    "not npz": "not a checkpoint written by fesens",
    "npy": "a single array",
    "x strings": "'x' holds <U",
    "x too short": "holds 187 design variables, but the problem has 192",
    "x scalar": "'x' has 0 dimensions, expected 1",
    "x NaN": "'x' holds NaN or infinite values",
    "iteration 999": "the history must be 999 rows",
    "iteration string": "'iteration' must be one whole number",
    "no history": "no 'history' entry",
    "history NaN": "'history' holds NaN",
    "fingerprint garbage": "not a fingerprint",
}


@pytest.mark.parametrize("how", list(FORGERIES))
def test_resume_from_a_forged_checkpoint_calls_it_damaged(two_iterations, tmp_path, how):
    out = copy_run(two_iterations, tmp_path)
    forge(out / "checkpoint.npz", how)
    before = listing(out)
    result = run("optimize", out / "config.toml", "--out", out, "--resume")
    line = one_line_error(result, f"checkpoint {out / 'checkpoint.npz'}", FORGERIES[how],
                          "--force")
    assert "Traceback" not in line
    assert listing(out) == before


@pytest.mark.parametrize("how", list(FORGERIES))
def test_sensitivity_at_a_forged_checkpoint_calls_it_damaged(two_iterations, tmp_path, how):
    out = copy_run(two_iterations, tmp_path)
    forge(out / "checkpoint.npz", how)
    result = run("sensitivity", out / "config.toml", "--wrt", "density", "--design",
                 out / "checkpoint.npz", "--out", tmp_path / "sens")
    expected = ("187 design variables" if how == "x too short" else FORGERIES[how])
    one_line_error(result, f"--design {out / 'checkpoint.npz'}", expected)
    assert not (tmp_path / "sens").exists()

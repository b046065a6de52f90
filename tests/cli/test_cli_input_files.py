"""A run never overwrites or removes the file it reads its config from: ``fesens optimize
config.toml --out . --force`` is refused (exit 2, nothing written) instead of replacing the
user's ``config.toml``, comments and all, by the resolved one; a resume from the results
folder's own ``config.toml`` leaves that file as it is."""

from cli_helpers import SMALL_MBB, listing, run, write_config

COMMENTED = "# my notes on this beam: keep them\n" + SMALL_MBB


def test_optimize_refuses_to_overwrite_its_config_in_the_results_folder(tmp_path):
    config = write_config(tmp_path, COMMENTED, "config.toml")
    (tmp_path / "notes.txt").write_text("mine")
    before = listing(tmp_path)
    result = run("optimize", config, "--out", tmp_path, "--force", "--max-iter", 1)
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert f"CONFIG {config} is the config.toml of the results folder {tmp_path}" in lines[0]
    assert "--out" in lines[0]
    assert listing(tmp_path) == before


def test_solve_with_force_keeps_a_config_toml_it_reads(tmp_path):
    """``solve`` writes no config, so it may run in the config's folder; ``--force``
    clears a previous run's files but never the input, though ``config.toml`` is a name an
    optimization writes."""
    config = write_config(tmp_path, COMMENTED, "config.toml")
    result = run("solve", config, "--out", tmp_path, "--force", "-q")
    assert result.exit_code == 0, result.output
    assert config.read_text() == COMMENTED
    assert (tmp_path / "solution.json").is_file()


def test_resume_from_the_folders_config_toml_leaves_it_as_it_is(tmp_path):
    out = tmp_path / "out"
    config = write_config(tmp_path, SMALL_MBB)
    assert run("optimize", config, "--out", out, "--max-iter", 1, "-q").exit_code == 0
    stored = out / "config.toml"
    edited = stored.read_text().replace("max_iter = 1", "max_iter = 2  # one more")
    stored.write_text(edited)
    result = run("optimize", stored, "--out", out, "--resume", "-q")
    assert result.exit_code == 0, result.output
    assert stored.read_text() == edited

"""`fesens study STUDY.toml`: clear errors naming the key (exit 2), the results folder
rules, resume, and a small study end to end."""

import json

import pytest
from click.testing import CliRunner
from study_helpers import BASE, STUDY
from study_helpers import write_study as write

from fesens.cli.study import study_command


def invoke(*args):
    return CliRunner().invoke(study_command, [str(a) for a in args])


def edited(old: str, new: str, text: str = STUDY) -> str:
    assert old in text
    return text.replace(old, new, 1)


def test_small_study_end_to_end_and_resume(tmp_path):
    study, out = write(tmp_path), tmp_path / "out"
    result = invoke(study, "--out", out, "--workers", 0)
    assert result.exit_code == 0, result.output
    assert "beam-study: 4 samples (lhs), parameters E, F, angle, nu" in result.output
    assert "4 samples, 0 error(s)" in result.output and "tip: E -1," in result.output
    for name in ("results.jsonl", "results.csv", "results.json", "sensitivities.csv",
                 "tornado.png", "sweeps.png", "scatter.png", "study.json", "summary.json"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 4 and summary["errors"] == 0
    header = (out / "results.csv").read_text().splitlines()[0].split(",")
    assert header[:8] == ["sample", "E", "F", "angle", "nu", "compliance", "tip", "stress"]
    assert "d(stress)/d(angle)" in header
    resumed = invoke(study, "--out", out, "--workers", 0, "--resume", "-q")
    assert resumed.exit_code == 0 and resumed.output == ""
    assert len((out / "results.jsonl").read_text().splitlines()) == 4


def test_existing_folder_needs_resume_or_force(tmp_path):
    study, out = write(tmp_path), tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    (out / "results.csv").write_text("old")
    refused = invoke(study, "--out", out)
    assert refused.exit_code == 2
    assert "exists and is not empty" in refused.output and "--resume" in refused.output
    assert (out / "results.csv").read_text() == "old"
    no_journal = invoke(study, "--out", out, "--resume")
    assert no_journal.exit_code == 2 and "no results.jsonl" in no_journal.output
    forced = invoke(study, "--out", out, "--force", "--workers", 0, "-q")
    assert forced.exit_code == 0, forced.output
    assert (out / "keep.txt").read_text() == "mine" and (out / "results.csv").read_text() != "old"
    study.write_text(edited("samples = 4", "samples = 8"))
    changed = invoke(study, "--out", out, "--resume")
    assert changed.exit_code == 2 and "study file changed" in changed.output


def test_every_sample_failing_exits_1(tmp_path):
    study = write(tmp_path, edited('target = "material.E"\nrange = [0.8, 1.2]',
                                   'target = "material.E"\nrange = [-2.0, -1.0]'))
    result = invoke(study, "--out", tmp_path / "out", "--workers", 0, "-q")
    assert result.exit_code == 1
    assert "every sample failed; the first error:" in result.output and "E" in result.output


@pytest.mark.parametrize("study, message", [
    (edited("[design]", "paramters = 1\n[design]"), "unknown key 'paramters'; did you mean "
                                                  "'parameters'?"),
    (edited('base = "base.toml"', ""), "give the base configuration"),
    (edited('base = "base.toml"', 'base = "nowhere.toml"'), "base = \"nowhere.toml\": no such"),
    (edited('"loads.F.magnitude"', '"loads.G.magnitude"'), "no load named 'G'"),
    (edited('"material.E"', '"material.young"'), "parameters[0].target = \"material.young\" is "
                                                 "not allowed: expected one of material.E"),
    (edited('"loads.F.angle"', '"loads.p.angle"'), "load 'p' (pressure) has no direction"),
    (edited("range = [0.8, 1.2]", "range = [1.2, 0.8]"), "parameters[0]: parameter 'E': "
                                                         "range needs low < high"),
    (edited("range = [0.8, 1.2]", "values = [0.8, 1.2]"), "parameters[0].values: a lhs design "
                                                          "samples a range"),
    (edited('type = "lhs"\nsamples = 4', 'type = "sobol"\nsamples = 5'),
     "design: a Sobol sample needs a power of two samples"),
    (edited('type = "lhs"\nsamples = 4\nseed = 3', 'type = "grid"'),
     "parameters[0]: a grid over a range needs levels"),
    (edited('type = "lhs"', 'type = "random"'), "design.type = \"random\" is not allowed"),
    (edited('type = "compliance"', 'type = "volume"'), "outputs[0].type = \"volume\" is not "
                                                       "allowed"),
    (edited('point = [12.0, 0.0]\ncomponent = "y"', 'component = "y"'),
     "outputs[1]: missing the selection"),
    # a stress relaxation acts on a design density, which a study has none of
    (edited('type = "compliance"', 'type = "stress_pnorm"\nstress_exponent = 0.5'),
     "unknown key 'outputs[0].stress_exponent' (keys allowed here: type, p, name)"),
    (edited('name = "tip"', 'name = "compliance"'), "another output is named 'compliance'"),
    (edited('name = "angle"', 'name = "F"'), "another parameter is named 'F'"),
    (edited("[[outputs]]", "[[parameters]]\ntarget = \"material.E\"\nname = \"E2\"\nvalue = 1.0\n"
                            "[[outputs]]"),
     "another parameter sets this already"),
    (edited("samples = 4", "samples = 0"), "design.samples = 0 is not allowed"),
    # sizes that cannot run: refused before anything is allocated
    (edited("samples = 4", "samples = 1000000000"), "design.samples = 1000000000 is not "
                                                    "allowed: expected an integer in [1, "
                                                    "1000000]"),
    (edited('type = "lhs"\nsamples = 4\nseed = 3', 'type = "grid"').replace(
        "range = [", "levels = 1000\nrange = ["),
     "design: a grid of 1000000000 samples (1000 x 1000 x 1000 x 1) is more than the limit "
     "of 1000000"),
    ("x = " + "[" * 1000 + "]" * 1000 + "\n" + STUDY, "arrays or tables are nested too deeply"),
    ("[design\n", "not valid TOML"),
])
def test_bad_study_files_name_the_key(tmp_path, study, message):
    result = invoke(write(tmp_path, study), "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and message in result.output
    assert not (tmp_path / "out").exists()


def test_bad_base_config_is_reported(tmp_path):
    result = invoke(write(tmp_path, base=BASE.replace("E = 1.0", "E = -1.0")))
    assert result.exit_code == 2
    assert "base.toml: material.E = -1.0 is not allowed" in result.output


def test_table_design(tmp_path):
    study = edited('type = "lhs"\nsamples = 4\nseed = 3', 'type = "table"\nfile = "rows.csv"')
    for old in ("range = [0.8, 1.2]\n", "range = [1.0, 2.0]\n", "range = [-20.0, 20.0]\n"):
        study = edited(old, "", study)
    (tmp_path / "rows.csv").write_text("sample,E,F,angle\n7,1.0,1.0,0.0\n9,1.1,2.0,10.0\n")
    path = write(tmp_path, study)
    result = invoke(path, "--out", tmp_path / "out", "--workers", 0, "-q")
    assert result.exit_code == 0, result.output
    rows = (tmp_path / "out" / "results.csv").read_text().splitlines()
    assert [row.split(",")[:5] for row in rows[1:]] == [["7", "1.0", "1.0", "0.0", "0.3"],
                                                         ["9", "1.1", "2.0", "10.0", "0.3"]]
    (tmp_path / "rows.csv").write_text("E,F\n1.0,2.0\n")
    bad = invoke(path, "--out", tmp_path / "other")
    assert bad.exit_code == 2 and "no column 'angle'" in bad.output
    (tmp_path / "rows.csv").write_text("E,F,angle\n1.0,x,0\n")
    bad = invoke(path, "--out", tmp_path / "other")
    assert bad.exit_code == 2 and "row 1, column 'F' is not a finite number" in bad.output


@pytest.mark.parametrize("args, message", [
    (["--workers", "2", "--scheduler", "tcp://127.0.0.1:8786"], "not both"),
    (["--scheduler", "localhost"], "not a scheduler address"),
    (["--resume", "--force"], "pick one"),
    (["--workers", "-1"], "-1"),
])
def test_bad_options_exit_2(tmp_path, args, message):
    result = invoke(write(tmp_path), *args)
    assert result.exit_code == 2 and message in result.output


def test_missing_study_file_and_help(tmp_path):
    missing = invoke(tmp_path / "none.toml")
    assert missing.exit_code == 2 and "study file not found" in missing.output
    help_text = invoke("--help").output
    for option in ("--out", "--workers", "--scheduler", "--resume"):
        assert option in help_text


def test_a_resume_that_ran_no_sample_keeps_the_report(tmp_path):
    """The report (tables and three pictures, seconds of drawing) is current when the
    journal did not change; a resume that runs a sample writes it again."""
    study, out = write(tmp_path), tmp_path / "out"
    assert invoke(study, "--out", out, "--workers", 0, "-q").exit_code == 0
    report = ["results.json", "sensitivities.csv", "tornado.png", "sweeps.png",
              "scatter.png"]  # (run_study itself always writes results.csv)
    stamps = {name: (out / name).stat().st_mtime_ns for name in report}
    assert invoke(study, "--out", out, "--workers", 0, "--resume", "-q").exit_code == 0
    assert {name: (out / name).stat().st_mtime_ns for name in report} == stamps
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # one sample lost
    assert invoke(study, "--out", out, "--workers", 0, "--resume", "-q").exit_code == 0
    assert all((out / name).stat().st_mtime_ns > stamps[name] for name in report)
    assert len((out / "results.jsonl").read_text().splitlines()) == 4


def _fesens_study(tmp_path, launcher: list[str], environment: dict[str, str]):
    import os
    import subprocess
    import sys
    from pathlib import Path

    study = write(tmp_path)
    fesens = str(Path(sys.executable).with_name("fesens"))
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("OMPI_", "PMIX_", "PMI_"))}
    command = [*launcher, fesens, "study", str(study), "--out", str(tmp_path / "out"),
               "--workers", "0"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=env | environment, check=False)


@pytest.mark.parametrize("variables", [{"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "0"},
                                       {"PMI_SIZE": "2", "PMI_RANK": "1"}])
def test_a_study_under_an_mpi_launch_is_refused_before_anything_is_written(tmp_path,
                                                                          variables):
    """Every rank would run the whole study into one folder; the refusal names --workers."""
    result = _fesens_study(tmp_path, [], variables)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "does not run under mpirun" in result.stderr and "--workers N" in result.stderr
    assert "Traceback" not in result.stderr and "petsc4py" not in result.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "results").exists()


def test_a_study_under_mpirun_is_refused_on_every_rank(tmp_path):
    import shutil

    if shutil.which("mpirun") is None:
        pytest.skip("no mpirun")
    launcher = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2"]
    result = _fesens_study(tmp_path, launcher, {})
    assert result.returncode == 2, result.stdout + result.stderr
    assert "does not run under mpirun" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("old", "new"), [(None, None), ("value = 0.1", "value = 0.2"),
                                          ("cells = [12, 4]", "cells = [24, 2]")])
def test_resume_after_study_json_was_deleted_checks_the_journals_fingerprint(tmp_path, old,
                                                                            new):
    """The journal's lines carry the study's fingerprint: a base config changed behind a
    deleted study.json is refused; the same study resumes."""
    study, out = write(tmp_path), tmp_path / "out"
    assert invoke(study, "--out", out, "--workers", 0, "-q").exit_code == 0
    journal = out / "results.jsonl"
    journal.write_text("".join(journal.read_text().splitlines(keepends=True)[:2]))
    (out / "study.json").unlink()
    if old is not None:
        (tmp_path / "base.toml").write_text(edited(old, new, BASE))
    kept = journal.read_bytes()
    result = invoke(study, "--out", out, "--workers", 0, "--resume", "-q")
    if old is None:
        assert result.exit_code == 0, result.output
        assert len(journal.read_text().splitlines()) == 4
        return
    assert result.exit_code == 2, result.output
    assert "computed for another study" in result.output and "--force" in result.output
    assert journal.read_bytes() == kept

"""Checkpoints: Ctrl-C saves and exits 130; --resume reproduces the uninterrupted run."""

import json
import signal
import subprocess
import sys
import time

import pytest
from cli_helpers import ROOT, SMALL_MBB, edit, history, run, write_config

from fesens.opt import OPTIMIZERS, load_checkpoint
from fesens.opt.problem import DesignProblem
from fesens.output.folder import MANIFEST

#: A run with a penalty continuation, so that resuming must restore the schedule too.
CONTINUATION = edit(SMALL_MBB, "penalty = 3.0",
                    "penalty = { start = 1.0, final = 3.0, every = 2, step = 1.0 }")


def interrupt_at(monkeypatch, evaluation: int) -> None:
    """Make the ``evaluation``-th design evaluation raise KeyboardInterrupt (as Ctrl-C)."""
    original = DesignProblem.evaluate
    calls = {"n": 0}

    def evaluate(self, x):
        calls["n"] += 1
        if calls["n"] == evaluation:
            raise KeyboardInterrupt
        return original(self, x)

    monkeypatch.setattr(DesignProblem, "evaluate", evaluate)


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
def test_interrupted_run_resumes_to_the_same_history(optimizer, tmp_path, monkeypatch):
    config = write_config(tmp_path, edit(CONTINUATION, 'type = "oc"', f'type = "{optimizer}"'))
    full = run("optimize", config, "--out", tmp_path / "full", "-q")
    assert full.exit_code == 0, full.output

    out = tmp_path / "parts"
    with monkeypatch.context() as patch:
        interrupt_at(patch, 4)                       # during iteration 4
        stopped = run("optimize", config, "--out", out)
    assert stopped.exit_code == 130
    message = stopped.output.splitlines()[-1]
    assert message == (f"error: interrupted after iteration 3; checkpoint saved in "
                       f"{out / 'checkpoint.npz'}. Resume with: fesens optimize {config} "
                       f"--out {out} --resume")
    x, iteration, records, _ = load_checkpoint(out / "checkpoint.npz")
    assert iteration == 3 and len(records) == 3
    assert [r["iteration"] for r in history(out)] == ["1", "2", "3"]
    assert json.loads((out / "summary.json").read_text())["status"] == "interrupted"
    # no temporary file left; the hidden manifest names exactly the files the run wrote
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [MANIFEST]
    assert (out / MANIFEST).read_text().split() == sorted(
        p.name for p in out.iterdir() if not p.name.startswith("."))

    resumed = run("optimize", config, "--out", out, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert resumed.output.startswith("resuming small from iteration 3")
    assert (out / "history.csv").read_text() == (tmp_path / "full" / "history.csv").read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["iterations"] == 6 and summary["resumed_from_iteration"] == 3
    assert summary["objective"] == json.loads(
        (tmp_path / "full" / "summary.json").read_text())["objective"]


def test_resume_with_a_higher_iteration_limit_continues(tmp_path):
    config = write_config(tmp_path, CONTINUATION)
    assert run("optimize", config, "--out", tmp_path / "a", "--max-iter", 2, "-q").exit_code == 0
    more = run("optimize", config, "--out", tmp_path / "a", "--resume", "--max-iter", 5, "-q")
    assert more.exit_code == 0, more.output
    once = run("optimize", config, "--out", tmp_path / "b", "--max-iter", 5, "-q")
    assert once.exit_code == 0
    assert (tmp_path / "a" / "history.csv").read_text() == \
        (tmp_path / "b" / "history.csv").read_text()


def test_resuming_a_finished_run_only_rewrites_its_results(tmp_path):
    config = write_config(tmp_path)
    assert run("optimize", config, "--out", tmp_path / "a", "--max-iter", 2, "-q").exit_code == 0
    before = (tmp_path / "a" / "history.csv").read_text()
    again = run("optimize", config, "--out", tmp_path / "a", "--resume", "--max-iter", 2)
    assert again.exit_code == 0, again.output
    assert "has already finished at iteration 2" in again.output
    assert (tmp_path / "a" / "history.csv").read_text() == before


def test_a_run_killed_after_its_last_iteration_reports_what_it_evaluated(tmp_path):
    """Killed after the last checkpoint and before the results: the resumed run's summary
    and design.vtu are those of the design the last iteration evaluated (not of the design
    after its update), as in the uninterrupted run."""
    config = write_config(tmp_path)
    assert run("optimize", config, "--out", tmp_path / "a", "-q").exit_code == 0
    reference = json.loads((tmp_path / "a" / "summary.json").read_text())
    for name in ("summary.json", "design.vtu", "design.png", "convergence.png"):
        (tmp_path / "a" / name).unlink()
    again = run("optimize", config, "--out", tmp_path / "a", "--resume", "-q")
    assert again.exit_code == 0, again.output
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["objective"] == reference["objective"]
    assert summary["volume_fraction"] == reference["volume_fraction"]
    assert summary["objective"]["value"] == float(history(tmp_path / "a")[-1]["objective"])


def test_interrupt_before_the_first_iteration_says_there_is_nothing_to_resume(
        tmp_path, monkeypatch):
    interrupt_at(monkeypatch, 1)
    result = run("optimize", write_config(tmp_path), "--out", tmp_path / "out")
    assert result.exit_code == 130
    assert "nothing to resume" in result.output
    assert not (tmp_path / "out" / "checkpoint.npz").exists()


def test_resume_refuses_a_changed_problem(tmp_path):
    config = write_config(tmp_path)
    assert run("optimize", config, "--out", tmp_path / "a", "--max-iter", 1, "-q").exit_code == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "a").iterdir()}
    write_config(tmp_path, edit(SMALL_MBB, "radius = 1.5", "radius = 2.0"))
    result = run("optimize", config, "--out", tmp_path / "a", "--resume")
    assert result.exit_code == 2
    assert "cannot resume: the config differs" in result.output
    assert "changed: filter.radius" in result.output
    assert {p.name: p.read_bytes() for p in (tmp_path / "a").iterdir()} == before


def test_ctrl_c_in_a_real_process_saves_and_exits_130(tmp_path):
    """SIGINT to `python cli.py optimize ...` mid-run: exit 130, a resumable checkpoint."""
    config = write_config(tmp_path, edit(SMALL_MBB, "max_iter = 6", "max_iter = 100000")
                          .replace("tol_change = 0.01", "tol_change = 0.0"))
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "cli.py", "optimize", str(config), "--out",
                                str(out), "-q"], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    # generous waits for a loaded machine, and the run killed whatever happens: one left
    # iterating would load the machine for the tests after this one
    try:
        deadline = time.monotonic() + 300
        while not (out / "checkpoint.npz").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=300)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 130, stderr
    assert stderr.startswith("error: interrupted after iteration ")
    assert f"--out {out} --resume" in stderr and "Traceback" not in stderr
    iteration = load_checkpoint(out / "checkpoint.npz")[1]
    assert len(history(out)) == iteration >= 1

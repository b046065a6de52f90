"""The results folder under stress: a damaged checkpoint, stale temporary files, a full
disk, two runs on one folder. Each ends in one ``error:`` line and exit 2."""

import errno
import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import ROOT, SMALL_MBB, run, write_config

from fesens.errors import SolverError
from fesens.opt.problem import DesignProblem
from fesens.output.folder import LOCK


def damage(path, how: str) -> None:
    """Make ``path`` (a valid checkpoint) truncated, empty or random bytes."""
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(np.random.default_rng(0).bytes(len(data)))


@pytest.mark.parametrize("how", ["truncated", "empty", "random"])
def test_resume_from_a_damaged_checkpoint_says_so_and_exits_2(how, tmp_path):
    config = write_config(tmp_path)
    out = tmp_path / "out"
    assert run("optimize", config, "--out", out, "--max-iter", 2, "-q").exit_code == 0
    checkpoint = out / "checkpoint.npz"
    damage(checkpoint, how)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = run("optimize", config, "--out", out, "--resume")
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: checkpoint {checkpoint} is damaged")
    assert "--force" in lines[0] and "pickle" not in lines[0]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


#: Temporary files a killed run leaves (the checkpoint's, a figure's, a VTU's, ours).
STALE = (".checkpoint.npz.tmp.npz", ".tornado.png.tmp.png", ".0123456789ab.tmp-design.vtu",
         ".history.csv.1234abcd.tmp")


def temporaries(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name)


def test_a_resumed_run_removes_the_temporary_files_of_a_killed_one(tmp_path):
    config = write_config(tmp_path)
    out = tmp_path / "out"
    assert run("optimize", config, "--out", out, "--max-iter", 1, "-q").exit_code == 0
    for name in STALE:
        (out / name).write_bytes(b"half a file")
    result = run("optimize", config, "--out", out, "--resume", "--max-iter", 2, "-q")
    assert result.exit_code == 0, result.output
    assert temporaries(out) == []


def full_disk(monkeypatch, written: str) -> None:
    """Make the write of a file whose name contains ``written`` fail half-way with ENOSPC."""

    def savez(file, *args, **kwargs):
        Path(file).write_bytes(b"PK half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    write_text = Path.write_text

    def text(self, data, *args, **kwargs):
        if written in self.name:
            write_text(self, data[:3], *args, **kwargs)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write_text(self, data, *args, **kwargs)

    if written == "checkpoint.npz":
        monkeypatch.setattr(np, "savez", savez)
    monkeypatch.setattr(Path, "write_text", text)


@pytest.mark.parametrize("written", ["checkpoint.npz", "history.csv", "summary.json"])
def test_a_full_disk_names_the_file_and_leaves_no_temporary(written, tmp_path, monkeypatch):
    config = write_config(tmp_path)
    out = tmp_path / "out"
    full_disk(monkeypatch, written)
    result = run("optimize", config, "--out", out, "--max-iter", 2, "-q")
    assert result.exit_code != 0
    lines = result.output.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert lines[0] == f"error: cannot write {out / written}: No space left on device"
    assert temporaries(out) == []


def test_a_failed_run_removes_temporary_files(tmp_path, monkeypatch):
    """A numerical failure while a writer of another thread left its temporary file."""
    out = tmp_path / "out"
    original = DesignProblem.evaluate
    calls = {"n": 0}

    def evaluate(self, x):
        calls["n"] += 1
        if calls["n"] == 2:
            (out / ".tornado.png.tmp.png").write_bytes(b"half a figure")
            raise SolverError("the factorization failed")
        return original(self, x)

    monkeypatch.setattr(DesignProblem, "evaluate", evaluate)
    result = run("optimize", write_config(tmp_path), "--out", out, "--max-iter", 3, "-q")
    assert result.exit_code == 1, result.output
    assert temporaries(out) == []


def hold_lock(folder: Path):
    """Take the folder's lock as a running fesens would (flock on its lock file)."""
    folder.mkdir(parents=True, exist_ok=True)
    file = open(folder / LOCK, "a")  # noqa: SIM115 - held across the test
    fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return file


@pytest.mark.parametrize("flags", [[], ["--force"], ["--resume"]])
def test_a_second_run_on_a_folder_in_use_is_refused(flags, tmp_path):
    config = write_config(tmp_path)
    out = tmp_path / "out"
    assert run("optimize", config, "--out", out, "--max-iter", 1, "-q").exit_code == 0
    if not flags:
        out = tmp_path / "fresh"
    lock = hold_lock(out)
    try:
        before = {p.name: p.read_bytes() for p in out.iterdir()}
        result = run("optimize", config, "--out", out, "--max-iter", 2, *flags)
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    finally:
        lock.close()
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert lines == [f"error: results folder {out} is in use by another fesens run; wait for "
                     "it to finish or choose another --out"], result.output
    assert run("optimize", config, "--out", out, "--max-iter", 2, *flags, "-q").exit_code == 0
    assert not (out / LOCK).exists()


def test_two_processes_on_one_folder_one_refused(tmp_path):
    """A real run holds the lock while a second process is started on the same folder."""
    config = write_config(tmp_path, SMALL_MBB.replace("max_iter = 6", "max_iter = 100000")
                          .replace("tol_change = 0.01", "tol_change = 0.0"))
    out = tmp_path / "out"
    command = [sys.executable, str(ROOT / "cli.py"), "optimize", str(config), "--out", str(out)]
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300  # generous: the machine may be loaded
        while not (out / "checkpoint.npz").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        second = subprocess.run([*command, "--resume"], capture_output=True, text=True,
                                timeout=300)
    finally:
        first.kill()
        first.wait()
    assert second.returncode == 2, second.stderr
    assert second.stderr.splitlines() == [
        f"error: results folder {out} is in use by another fesens run; wait for it to finish "
        "or choose another --out"]
    # the killed run leaves no lock behind: a resume takes the folder
    resumed = subprocess.run([*command[:-2], "--out", str(out), "--resume", "--max-iter", "3",
                              "-q"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr


@pytest.mark.parametrize("command", [["solve"], ["sensitivity", "--wrt", "density"]])
def test_solve_and_sensitivity_refuse_a_folder_in_use(command, tmp_path):
    config = write_config(tmp_path)
    out = tmp_path / "out"
    lock = hold_lock(out)
    try:
        result = run(*command, config, "--out", out)
        assert [p.name for p in out.iterdir()] == [LOCK]
    finally:
        lock.close()
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        f"error: results folder {out} is in use by another fesens run; wait for it to finish "
        "or choose another --out"], result.output
    assert run(*command, config, "--out", out, "--force").exit_code == 0
    assert not (out / LOCK).exists()

"""The results folder under stress: a damaged checkpoint, stale temporary files, a full
disk, two runs on one folder. Each ends in one ``error:`` line and exit 2."""

import errno
import os
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run, write_config

from fesens.errors import SolverError
from fesens.opt.problem import DesignProblem


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

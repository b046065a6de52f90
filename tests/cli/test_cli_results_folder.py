"""The results folder under stress: a damaged checkpoint, stale temporary files, a full
disk, two runs on one folder. Each ends in one ``error:`` line and exit 2."""

import numpy as np
import pytest
from cli_helpers import run, write_config


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

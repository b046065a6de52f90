"""A nonlinear design resumed from its checkpoint equals the uninterrupted run bit for bit:
Newton's warm start (the last converged state) travels in the checkpoint."""

import json

import numpy as np
from cli_helpers import ROOT, edit, run, write_config

from fesens.opt import load_checkpoint

#: The nonlinear_cantilever preset on a 12 x 6 mesh (Newton warm-starts every solve
#: after the first from the previous one).
SMALL_NONLINEAR = edit(
    edit((ROOT / "fesens" / "config" / "presets" / "nonlinear_cantilever.toml").read_text(),
         "cells = [40, 20]", "cells = [12, 6]"),
    "radius = 0.1 ", "radius = 0.25 ")


def _run(config, out, *options):
    result = run("optimize", config, "--out", out, "-q", *options)
    assert result.exit_code == 0, result.output
    return load_checkpoint(out / "checkpoint.npz")


def _columns(records: list[dict]) -> dict[str, np.ndarray]:
    """The history's columns, but the wall times."""
    return {key: np.array([r[key] for r in records]) for key in records[0]
            if key != "seconds"}


def test_a_resumed_nonlinear_design_is_the_uninterrupted_one_bit_for_bit(tmp_path):
    config = write_config(tmp_path, SMALL_NONLINEAR)
    # from iteration 5 on, each solve starts from the previous iteration's state
    x_full, n_full, full, _ = _run(config, tmp_path / "full", "--max-iter", 7)
    _run(config, tmp_path / "parts", "--max-iter", 5)
    x, n, resumed, _ = _run(config, tmp_path / "parts", "--resume", "--max-iter", 7)
    assert n == n_full == 7
    assert np.array_equal(x, x_full)
    ours, theirs = _columns(resumed), _columns(full)
    assert ours.keys() == theirs.keys()
    for key in ours:
        assert np.array_equal(ours[key], theirs[key]), key


def test_resuming_a_finished_nonlinear_run_writes_the_uninterrupted_results(tmp_path):
    """A finished run's resume evaluates its last design again, from the warm start the
    checkpoint keeps: the objective it reports is the uninterrupted run's, bit for bit."""
    config = write_config(tmp_path, SMALL_NONLINEAR)
    _run(config, tmp_path / "a", "--max-iter", 6)
    first = json.loads((tmp_path / "a" / "summary.json").read_text())["objective"]
    _run(config, tmp_path / "a", "--resume", "--max-iter", 6)
    again = json.loads((tmp_path / "a" / "summary.json").read_text())["objective"]
    assert again == first

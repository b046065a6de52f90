"""A nonlinear design resumed from its checkpoint equals the uninterrupted run bit for bit:
Newton's warm start (the last converged state) travels in the checkpoint."""

import json

import meshio
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


def test_a_finished_runs_resume_solves_its_last_design_as_that_iteration_did(tmp_path):
    """The resume starts Newton where the last iteration's solve started (the checkpoint's
    ``evaluated_warm_`` entries), not from the reference state nor from the state that solve
    ended in: the displacement and the adjoint's sensitivities it writes are the
    uninterrupted run's, bit for bit (from another start Newton converges to other last
    bits, and the adjoint no longer reuses Newton's last factorization)."""
    config = write_config(tmp_path, SMALL_NONLINEAR)
    _run(config, tmp_path / "a", "--max-iter", 6)
    first = meshio.read(tmp_path / "a" / "design.vtu")
    _run(config, tmp_path / "a", "--resume", "--max-iter", 6)
    again = meshio.read(tmp_path / "a" / "design.vtu")
    assert np.array_equal(again.point_data["displacement"], first.point_data["displacement"])
    sensitivities = "d_compliance_d_design"
    assert np.array_equal(again.cell_data[sensitivities][0], first.cell_data[sensitivities][0])


def test_a_finished_runs_resume_refuses_a_tampered_start_of_its_last_solve(tmp_path):
    config = write_config(tmp_path, SMALL_NONLINEAR)
    _run(config, tmp_path / "a", "--max-iter", 6)
    path = tmp_path / "a" / "checkpoint.npz"
    with np.load(path) as stored:
        entries = {name: stored[name] for name in stored.files}
    assert "evaluated_warm_u_free" in entries
    entries["evaluated_warm_u_free"] = entries["evaluated_warm_u_free"][:-1]
    np.savez(path, **entries)
    result = run("optimize", config, "--out", tmp_path / "a", "-q", "--resume",
                 "--max-iter", 6)
    assert result.exit_code == 2, result.output
    assert str(path) in result.output and "'u_free'" in result.output

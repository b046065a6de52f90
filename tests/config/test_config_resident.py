
"""``fesens optimize`` of a compliance design with ``gmg``'s ``device = "numpy"`` runs the
resident path (fesens.opt.resident) through the whole workflow: its history equals the
CPU ``gmg``'s (the general, traced path), the grayness report included, its snapshots and
final design are written, and an interrupted run resumed from its checkpoint gives the
uninterrupted run's history.

Reference: the same config with ``device = "cpu"`` (the CPU gmg's gradients are checked
by Taylor tests in tests/opt and tests/ad)."""

from __future__ import annotations

import csv

import pytest
from click.testing import CliRunner

import fesens.opt.loop as loop
from fesens.cli import cli
from fesens.config.toml_writer import dumps

DESIGN = {
    "mesh": {"type": "rectangle", "size": [2.0, 1.0], "cells": [24, 12]},
    "physics": {"type": "elasticity", "plane": "stress"},
    "supports": [{"group": "left"}],
    "loads": [{"type": "point", "point": [2.0, 0.5], "value": [0.0, -1.0]}],
    "objective": {"type": "compliance"},
    "constraints": {"volume_fraction": 0.4},
    "filter": {"type": "density", "radius": 0.15},
    "optimizer": {"type": "oc"},
    "stop": {"max_iter": 6, "tol_change": 0.0},
    "output": {"every": 2},
}


def optimize(tmp_path, device: str, name: str, *extra: str) -> list[dict]:
    """``fesens optimize`` of :data:`DESIGN` with the matrix-free gmg on ``device``; the
    history rows."""
    path = tmp_path / f"{name}.toml"
    path.write_text(dumps({**DESIGN, "solver": {"backend": "gmg", "options": {
        "matrix_free": True, "device": device, "rtol": 1e-10}}}))
    out = tmp_path / name
    result = CliRunner().invoke(cli, ["optimize", str(path), "--out", str(out), *extra])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    with open(out / "history.csv") as handle:
        return [{key: float(value) for key, value in row.items()}
                for row in csv.DictReader(handle)]


def test_resident_run_equals_the_cpu_gmg_and_writes_its_outputs(tmp_path, monkeypatch):
    paths = []

    def spy(problem, optimizer, _made=loop.resident_path):
        paths.append(_made(problem, optimizer))
        return paths[-1]

    monkeypatch.setattr(loop, "resident_path", spy)
    resident = optimize(tmp_path, "numpy", "numpy")
    general = optimize(tmp_path, "cpu", "cpu")
    assert paths[0] is not None and paths[1] is None  # resident on "numpy" only
    assert len(resident) == len(general) == 6
    for a, b in zip(resident, general, strict=True):
        assert abs(a["objective"] - b["objective"]) <= 1e-8 * b["objective"]
        assert abs(a["change"] - b["change"]) <= 1e-8
        assert abs(a["grayness"] - b["grayness"]) <= 1e-8  # a report, on the device too
    written = {p.name for p in (tmp_path / "numpy").iterdir()}
    assert {"design.vtu", "design_0002.vtu", "design_0004.vtu", "design_0006.vtu",
            "checkpoint.npz", "summary.json"} <= written


@pytest.mark.slow
def test_resumed_resident_run_equals_the_uninterrupted_one(tmp_path):
    whole = optimize(tmp_path, "numpy", "whole")
    optimize(tmp_path, "numpy", "parts", "--max-iter", "3")
    resumed = optimize(tmp_path, "numpy", "parts", "--resume")
    assert [row["iteration"] for row in resumed] == [1, 2, 3, 4, 5, 6]
    for a, b in zip(resumed, whole, strict=True):
        assert abs(a["objective"] - b["objective"]) <= 1e-10 * b["objective"]

"""``[solver] backend = "gmg"`` with ``options = { matrix_free = true, device = ... }``: "gpu"
without CuPy is refused before any work (exit 2, naming the ``gpu`` extra), "gpu" without
``matrix_free`` too; "numpy" runs the device multigrid's code (fesens.solvers.device_multigrid)
and gives the compliance of the CPU gmg; "cpu" is the CPU gmg, bit for bit.

Reference: the CPU ``gmg`` on the same config (its solves are checked against direct ones
in tests/solvers/test_solvers_multigrid.py)."""

import importlib.util
import json

import pytest
from click.testing import CliRunner

from fesens.cli import cli
from fesens.config.toml_writer import dumps
from fesens.solvers.device_multigrid import DeviceLatticeSolver

BOX = {
    "mesh": {"type": "box", "size": [2.0, 1.0, 1.0], "cells": [8, 4, 4], "cell_type": "hex8"},
    "supports": [{"group": "left"}],
    "loads": [{"type": "point", "point": [2.0, 0.5, 0.5], "value": [0.0, -1.0, 0.0]}],
}


def solve(tmp_path, options: dict | None, name: str):
    """``fesens solve`` of :data:`BOX` with gmg and ``options``: (result, solution.json
    without the config's name, or None)."""
    raw = dict(BOX) if options is None else {**BOX, "solver": {"backend": "gmg",
                                                               "options": options}}
    path = tmp_path / f"{name}.toml"
    path.write_text(dumps(raw))
    out = tmp_path / name
    result = CliRunner().invoke(cli, ["solve", str(path), "--out", str(out)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    solution = out / "solution.json"
    if not solution.exists():
        return result, None
    return result, {key: value for key, value in json.loads(solution.read_text()).items()
                    if key != "name"}


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_gpu_device_without_cupy_exits_2_naming_the_extra(tmp_path):
    result, solution = solve(tmp_path, {"matrix_free": True, "device": "gpu"}, "gpu")
    assert result.exit_code == 2, result.output
    assert "pip install fesens[gpu]" in result.output
    assert "solver.options" in result.output and solution is None


def test_gpu_device_without_matrix_free_is_refused(tmp_path):
    result, solution = solve(tmp_path, {"device": "gpu"}, "assembled")
    assert result.exit_code == 2, result.output
    assert "matrix_free = true" in result.output and solution is None


def test_unknown_device_is_refused(tmp_path):
    result, _ = solve(tmp_path, {"matrix_free": True, "device": "tpu"}, "tpu")
    assert result.exit_code == 2, result.output
    assert "device = 'tpu' is unknown" in result.output


def test_numpy_device_runs_the_device_multigrid_with_gmg_compliance(tmp_path, monkeypatch):
    calls = []
    original = DeviceLatticeSolver.solve

    def counted(self, b, x0=None):
        calls.append(b.shape)
        return original(self, b, x0)

    monkeypatch.setattr(DeviceLatticeSolver, "solve", counted)
    result, device = solve(tmp_path, {"matrix_free": True, "device": "numpy"}, "numpy")
    assert result.exit_code == 0, result.output
    assert calls, "the device multigrid did not run"
    calls.clear()
    result, cpu = solve(tmp_path, {"matrix_free": True}, "cpu")
    assert result.exit_code == 0, result.output
    assert not calls
    assert device["compliance"] == pytest.approx(cpu["compliance"], rel=1e-8)


def test_cpu_device_is_the_cpu_gmg_bit_for_bit(tmp_path):
    _, default = solve(tmp_path, {"matrix_free": True}, "default")
    _, cpu = solve(tmp_path, {"matrix_free": True, "device": "cpu"}, "cpu")
    assert cpu == default
    _, assembled = solve(tmp_path, {"device": "cpu"}, "assembled")
    _, plain = solve(tmp_path, {}, "plain")
    assert assembled == plain

"""The matrix-free multigrid and its device form with each analysis: a config that passes
its check runs. The device multigrid (``device = "gpu"`` or ``"numpy"``) solves the lattice
operator of the cells' stiffness only, so a transient or dynamic analysis, which solves the
assembled step matrix ``a M + b K``, is refused at check time (exit 2, one line naming
``solver.options``, ``analysis.type`` and what to use instead, nothing written) by
``fesens solve``, ``sensitivity`` and ``optimize``; the CPU multigrid (``device = "cpu"``)
takes the assembled step matrix and runs them, and a harmonic response, which factorizes
its complex matrix itself, runs with either.

Reference: the assembled ``gmg`` and ``cholmod`` runs of the same configs are not needed;
these tests check the outcome (run or refused), not a number.
"""

from pathlib import Path

import pytest
from click.testing import CliRunner

from fesens.cli import cli
from fesens.config import parse_config
from fesens.config.checks import ConfigError
from fesens.config.toml_writer import dumps


def cantilever() -> dict:
    """A 6x2 quad4 cantilever clamped on the left, a point load on the right."""
    return {"mesh": {"type": "rectangle", "size": [2.0, 1.0], "cells": [6, 2]},
            "physics": {"type": "elasticity"}, "material": {"density": 1.0},
            "supports": [{"group": "left"}],
            "loads": [{"type": "point", "point": [2.0, 0.5], "value": [1.0, 0.0]}]}


def plate() -> dict:
    """A 4x4 heated plate held at 0 on the left, a flux into the right side."""
    return {"mesh": {"type": "rectangle", "size": [1.0, 1.0], "cells": [4, 4]},
            "physics": {"type": "heat"}, "supports": [{"group": "left"}],
            "loads": [{"type": "flux", "group": "right", "value": 1.0}]}


STEPPED = {"analysis": {"type": "dynamic"}, "time": {"end": 0.3, "steps": 3}}
TRANSIENT = {"analysis": {"type": "transient"}, "time": {"end": 0.3, "steps": 3}}
HARMONIC = {"analysis": {"type": "harmonic"}, "harmonic": {"frequencies": [0.01]}}
OPTIMIZE = {"constraints": {"volume_fraction": 0.5}, "stop": {"max_iter": 1},
            "filter": {"type": "density", "radius": 0.5},
            "output": {"every": 0}}


def config(raw: dict, analysis: dict, device: str) -> dict:
    return {**raw, **analysis, "objective": {"type": "compliance"},
            "solver": {"backend": "gmg", "options": {"matrix_free": True, "device": device}}}


def run(folder: Path, raw: dict, command: str):
    path = folder / f"{command}.toml"
    path.write_text(dumps({**raw, **(OPTIMIZE if command == "optimize" else {})}),
                    encoding="utf-8")
    out = folder / f"{command}-out"
    wrt = ["--wrt", "density"] if command == "sensitivity" else []
    result = CliRunner().invoke(cli, [command, str(path), "--out", str(out), "-q", *wrt])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result, out


@pytest.mark.parametrize("command", ["solve", "sensitivity", "optimize"])
@pytest.mark.parametrize(("raw", "analysis", "kind"), [(cantilever(), STEPPED, "dynamic"),
                                                       (plate(), TRANSIENT, "transient")])
def test_device_multigrid_refuses_a_stepped_analysis_at_check_time(tmp_path, command, raw,
                                                                   analysis, kind):
    result, out = run(tmp_path, config(raw, analysis, "numpy"), command)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    for fragment in ("solver.options.matrix_free = true", "solver.options.device",
                     f'analysis.type = "{kind}"', "a M + b K", 'device = "cpu"'):
        assert fragment in lines[0], lines[0]
    assert not out.exists()


def test_device_refusal_is_the_config_check(tmp_path):
    """The refusal comes from parsing the config, which every command and a study's base
    read."""
    text = dumps(config(cantilever(), STEPPED, "numpy"))
    with pytest.raises(ConfigError, match=r'analysis\.type = "dynamic"'):
        parse_config(text, source="device.toml", base_dir=tmp_path, optimize=False)


@pytest.mark.parametrize("command", ["solve", "sensitivity"])
@pytest.mark.parametrize(("raw", "analysis"), [(cantilever(), STEPPED), (plate(), TRANSIENT)])
def test_cpu_matrix_free_multigrid_runs_a_stepped_analysis(tmp_path, command, raw, analysis):
    result, out = run(tmp_path, config(raw, analysis, "cpu"), command)
    assert result.exit_code == 0, result.output
    assert out.exists()


@pytest.mark.parametrize("device", ["cpu", "numpy"])
def test_harmonic_response_runs_with_the_matrix_free_multigrid(tmp_path, device):
    result, out = run(tmp_path, config(cantilever(), HARMONIC, device), "sensitivity")
    assert result.exit_code == 0, result.output
    assert out.exists()

"""A stepped config whose run does not fit in memory is refused with the config (exit 2
from the command line, naming ``time.steps``, ``time.step`` or ``time.max_states``,
nothing written), where the run allocated terabytes or grew until killed: 1e12 steps (by
count or by step), 2e8 steps of a solve's history on a machine of 16 GB, and an
optimization keeping every state of a million steps on a machine of 2 GB (set by the
test), which ``time.max_states = 100`` fits; a sensitivity's run refuses its kept states
before it steps."""

import pytest

from fesens.config import ConfigError, resolve, time_memory
from fesens.fem.transient import run_memory
from tests.cli.cli_helpers import run, write_config

#: A heated plate; 40 x 20 cells: 861 temperatures.
PLATE = {
    "mesh": {"type": "rectangle", "size": [1.0, 0.5], "cells": [40, 20]},
    "physics": {"type": "heat"},
    "material": {"conductivity": 2.0, "heat_capacity": 3.0},
    "supports": [{"group": "left"}],
    "loads": [{"type": "heat_source", "value": 5.0}],
    "analysis": {"type": "transient"},
}


def _resolved(tmp_path, time: dict, *, optimize: bool = False):
    raw = {**PLATE, "time": time}
    if optimize:
        raw.update(constraints={"volume_fraction": 0.5},
                   filter={"type": "density", "radius": 0.05})
    return resolve(raw, base_dir=tmp_path, source="plate", optimize=optimize)


def _machine(monkeypatch, n_bytes: float) -> None:
    """The available memory the checks see."""
    for module in (time_memory, run_memory):
        monkeypatch.setattr(module, "available_bytes", lambda: n_bytes)


@pytest.mark.parametrize("time, key", [
    ({"end": 1.0, "steps": 10 ** 12}, "time.steps = 1000000000000"),
    ({"end": 1.0, "step": 1e-12}, "time.step = 1e-12"),
])
def test_a_trillion_steps_are_refused(tmp_path, time, key):
    """At least 8 bytes per level: 8 TB, beyond any machine this runs on."""
    with pytest.raises(ConfigError, match="time steps") as refused:
        _resolved(tmp_path, time)
    assert key in str(refused.value) and "give fewer steps" in str(refused.value)


def test_the_history_of_a_long_solve_is_counted(tmp_path, monkeypatch):
    """2e8 levels of a solve's history (time, largest and smallest temperature, each a
    float of at least 8 bytes): at least 4.8 GB, refused on a machine of 4 GB; 2e6 run."""
    _machine(monkeypatch, 4e9)
    with pytest.raises(ConfigError, match="time.steps = 200000000"):
        _resolved(tmp_path, {"end": 1.0, "steps": 200_000_000})
    _resolved(tmp_path, {"end": 1.0, "steps": 2_000_000})


def test_an_optimization_keeping_every_state_is_refused(tmp_path, monkeypatch):
    """A million states of 861 temperatures: at least 6.9 GB, beyond a machine of 2 GB;
    time.max_states = 100 keeps about 200 (1.4 MB) and fits; a max_states that keeps them
    all again is refused by name. Without optimize, a solve of the same run is accepted."""
    _machine(monkeypatch, 2e9)
    time = {"end": 1.0, "steps": 1_000_000}
    with pytest.raises(ConfigError, match="no time.max_states keeps every level") as refused:
        _resolved(tmp_path, time, optimize=True)
    assert "give a smaller time.max_states" in str(refused.value)
    _resolved(tmp_path, {**time, "max_states": 100}, optimize=True)
    with pytest.raises(ConfigError, match="time.max_states = 500,000"):
        _resolved(tmp_path, {**time, "max_states": 500_000}, optimize=True)
    _resolved(tmp_path, time)


TEXT = """
name = "plate"
[mesh]
type = "rectangle"
size = [1.0, 0.5]
cells = [40, 20]
[physics]
type = "heat"
[material]
conductivity = 2.0
heat_capacity = 3.0
[[supports]]
group = "left"
[[loads]]
type = "heat_source"
value = 5.0
[analysis]
type = "transient"
[time]
end = 1.0
"""


def test_the_command_line_refuses_them_with_exit_2(tmp_path, monkeypatch):
    """solve of 1e12 steps at check time; sensitivity of a million steps keeping every
    state on a machine of 2 GB, refused by its run before a step (nothing written)."""
    for command, steps, extra, named in (
            ("solve", 10 ** 12, (), "time.steps"),
            ("sensitivity", 1_000_000, ("--wrt", "density"), "max_states")):
        if command == "sensitivity":
            _machine(monkeypatch, 2e9)
        out = tmp_path / command
        path = write_config(tmp_path, TEXT + f"steps = {steps}\n", f"{command}.toml")
        result = run(command, path, *extra, "--out", out)
        assert result.exit_code == 2, result.output
        assert named in result.output and "memory available" in result.output
        assert not out.exists()

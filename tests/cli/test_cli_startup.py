"""Commands that compute nothing import nothing heavy: ``fesens presets``, ``docs`` and
``--help`` run without matplotlib, the sparse solvers or the workflows (their start-up time
is measured by ``benchmarks/bench_startup.py``; here only what they import is checked).

Each command runs in a fresh interpreter under ``python -X importtime``, whose report on
stderr names every module the process imported.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

#: Modules that only computing commands need.
HEAVY = ("matplotlib", "scipy.sparse.linalg", "fesens.workflow", "fesens.solvers",
         "fesens.fem", "fesens.plotting")
IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)\s*$")


def imported_by(*args: str) -> tuple[set[str], subprocess.CompletedProcess]:
    """The modules that ``fesens ARGS`` imports (the console script's code, in a fresh
    interpreter) and the finished process."""
    script = "from fesens.cli import main; main()"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", script, *args],
                          capture_output=True, text=True, timeout=600)
    modules = {match.group(1) for line in done.stderr.splitlines()
               if (match := IMPORTED.match(line))}
    return modules, done


@pytest.mark.parametrize("args", [("presets",), ("docs", "config"), ("--help",),
                                  ("--version",)])
def test_commands_that_compute_nothing_import_nothing_heavy(args):
    modules, done = imported_by(*args)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "fesens.cli" in modules  # the report was read
    heavy = sorted(name for name in modules
                   if any(name == top or name.startswith(f"{top}.") for top in HEAVY))
    assert heavy == [], f"fesens {' '.join(args)} imported {heavy}"
    assert "numpy" not in modules


def test_help_lists_every_command_with_its_short_help():
    from fesens.cli import cli

    _, done = imported_by("--help")
    for name, command in cli.commands.items():
        line = next((line for line in done.stdout.splitlines()
                     if line.split()[:1] == [name]), None)
        assert line is not None, f"{name} missing from fesens --help"
        first_words = " ".join(command.get_short_help_str().split()[:3])
        assert f"{name} {first_words}" in " ".join(line.split())

"""What the tests of tests/opt that run a script under ``mpirun`` share: the skip mark and
the run itself."""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mpi_launch import launch_environment, mpirun_command

from fesens.solvers.petsc import petsc4py_available

needs_mpi = pytest.mark.skipif(
    not petsc4py_available() or importlib.util.find_spec("mpi4py") is None
    or shutil.which("mpirun") is None,
    reason="petsc4py, mpi4py or mpirun missing (make petsc installs them)")


def run(command: list[str], cwd: Path) -> None:
    """Run ``command`` (a script serially, or :func:`mpirun_python`'s) and check it passed."""
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd,
                            env=launch_environment(), check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def mpirun_python(ranks: int, *arguments: str) -> list[str]:
    """The command running this Python on ``ranks`` MPI ranks (mpi_launch.py's)."""
    return mpirun_command(ranks, sys.executable, *arguments)

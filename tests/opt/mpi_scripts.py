"""What the tests of tests/opt that run a script under ``mpirun`` share: the skip mark and
the run itself."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fesens.solvers.petsc import petsc4py_available

needs_mpi = pytest.mark.skipif(
    not petsc4py_available() or importlib.util.find_spec("mpi4py") is None
    or shutil.which("mpirun") is None,
    reason="petsc4py, mpi4py or mpirun missing (make petsc installs them)")


def run(command: list[str], cwd: Path) -> None:
    """Run ``command`` (a script serially, or :func:`mpirun_python`'s) and check it passed."""
    # os.environ without the variables of an MPI singleton this process may have started
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("OMPI_", "PMIX_"))}
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd,
                            env=environment, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def mpirun_python(ranks: int, *arguments: str) -> list[str]:
    """The command running this Python on ``ranks`` MPI ranks (one BLAS thread each)."""
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
            "-x", "OPENBLAS_NUM_THREADS=1", "-x", "OMP_NUM_THREADS=1", "-n", str(ranks),
            sys.executable, *arguments]

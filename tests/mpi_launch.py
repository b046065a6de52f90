"""How the tests start MPI ranks: one ``mpirun`` command line and one environment for the
tests of tests/cli, tests/opt and tests/solvers (tests/ is on ``sys.path``: tests/conftest.py
lives there)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: ``mpirun`` as root too (CI's user), more ranks than cores, no binding, one BLAS thread per
#: rank.
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
          "-x", "OPENBLAS_NUM_THREADS=1", "-x", "OMP_NUM_THREADS=1"]


def launch_environment() -> dict[str, str]:
    """The environment of ``mpirun``: ``os.environ`` without the variables of an MPI
    singleton this process may have started (petsc4py does on its first use), which make
    ``mpirun`` fail silently (``os.environ``, not the C environment, which that singleton may
    have extended); and ranks that give up the core while they wait for another rank's
    message. Open MPI busy-polls otherwise, and with other processes running (parallel test
    workers) a spinning rank delays the one it waits for several times over."""
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("OMPI_", "PMIX_"))}
    environment["OMPI_MCA_mpi_yield_when_idle"] = "1"
    return environment


def mpirun_command(ranks: int, *command: str) -> list[str]:
    """The command line running ``command`` on ``ranks`` MPI ranks."""
    return [*MPIRUN, "-n", str(ranks), *command]


def mpirun(ranks: int, *command: str, cwd: Path | None = None,
           timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``command`` on ``ranks`` MPI ranks; its output captured as text, not checked."""
    return subprocess.run(mpirun_command(ranks, *command), capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=launch_environment(), check=False)

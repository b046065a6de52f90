"""What the MPI tests of the command line share: the skip mark, ``mpirun`` of the venv's
``fesens``, a preset with a solver, a run's history."""

import csv
import shutil
import sys
from pathlib import Path

import mpi_launch
import pytest

from fesens.config import preset_text
from fesens.solvers.petsc import petsc4py_available

needs_mpi = pytest.mark.skipif(
    not petsc4py_available() or shutil.which("mpirun") is None
    or not Path(sys.executable).with_name("fesens").is_file(),
    reason="petsc4py or mpirun missing (make petsc installs both), or no fesens script")
#: The console script next to this Python (the venv's), so every rank runs this checkout.
FESENS = [str(Path(sys.executable).with_name("fesens"))]


def mpirun(ranks: int, *arguments: str, cwd: Path, timeout: float = 600):
    """``mpirun -n ranks fesens arguments`` (mpi_launch.py's command line)."""
    return mpi_launch.mpirun(ranks, *FESENS, *arguments, cwd=cwd, timeout=timeout)


def history(folder: Path) -> list[dict]:
    with open(folder / "history.csv", newline="") as stream:
        return list(csv.DictReader(stream))


def config(tmp_path: Path, preset: str, solver: str, **changes: str) -> Path:
    text = preset_text(preset)
    for old, new in changes.items():
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / f"{preset}-{solver}.toml"
    path.write_text(text + f'\n[solver]\nbackend = "{solver}"\n' +
                    ('options = { rtol = 1e-8 }\n' if solver == "petsc" else ""))
    return path

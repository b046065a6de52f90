"""``mpirun -n 2 fesens ...``: one problem on two MPI ranks (fesens.mpi, the petsc backends).

The 2-rank run of the cantilever3d preset must reproduce the serial run (CHOLMOD) to the
solver tolerance: the same iteration count, the same final compliance (the preset's own
comment records C = 140.24 at iteration 162 for the serial run). Failures must end every
rank with the right exit code: no rank left waiting in a collective operation (each run
has a timeout far above its normal time).
"""

import os
import subprocess
import sys

import pytest
from mpi_helpers import FESENS, needs_mpi
from mpi_helpers import config as _config
from mpi_helpers import history as _history
from mpi_helpers import mpirun as _mpirun

from fesens.mpi import MPIError, World, check_rank_count, launched, world


@pytest.mark.slow
@needs_mpi
def test_two_ranks_reproduce_the_serial_cantilever3d_run(tmp_path):
    serial = subprocess.run([*FESENS, "optimize", "--preset", "cantilever3d", "--out",
                             str(tmp_path / "serial"), "-q"], capture_output=True, text=True,
                            timeout=900, check=False, cwd=tmp_path)
    assert serial.returncode == 0, serial.stderr
    config = _config(tmp_path, "cantilever3d", "petsc")
    result = _mpirun(2, "optimize", str(config), "--out", str(tmp_path / "two"), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    one, two = _history(tmp_path / "serial"), _history(tmp_path / "two")
    assert len(two) == len(one) == 162  # converged at the same iteration
    for a, b in zip(one, two, strict=True):
        assert float(b["objective"]) == pytest.approx(float(a["objective"]), rel=1e-6)
    assert float(two[-1]["objective"]) == pytest.approx(140.24, abs=0.005)
    # rank 0 printed the progress once; the other rank wrote nothing next to it
    assert result.stdout.count("  162  objective") == 1
    # each rank built, assembled and designed its own half of the cells (DMDA blocks)
    assert "distributed on 2 MPI ranks: each builds, assembles and designs its own 1500–1500 " \
        "cells" in result.stdout
    assert not list(tmp_path.glob("fesens-rank*"))
    assert (tmp_path / "two" / "design.vtu").is_file()


@needs_mpi
def test_a_solver_that_cannot_distribute_is_refused_on_every_rank(tmp_path):
    config = _config(tmp_path, "mbb", "superlu")
    result = _mpirun(2, "optimize", str(config), "--out", str(tmp_path / "out"), "--max-iter",
                     "2", cwd=tmp_path, timeout=300)
    assert result.returncode == 2, result.stdout + result.stderr
    assert 'solver.backend = "superlu" cannot solve across the 2 MPI ranks' in result.stderr
    assert "petsc" in result.stderr
    assert not (tmp_path / "out").exists()  # refused with the config, before any output


@needs_mpi
def test_more_ranks_than_cells_is_refused(tmp_path):
    config = _config(tmp_path, "mbb", "petsc", **{"cells = [60, 20]": "cells = [1, 1]"})
    result = _mpirun(2, "solve", str(config), "--out", str(tmp_path / "out"), cwd=tmp_path,
                     timeout=300)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "2 MPI ranks for 1 cells" in result.stderr


@needs_mpi
def test_one_failing_rank_ends_them_all(tmp_path):
    # rank 0 cannot use its results folder (a file stands there) and stops before any work;
    # rank 1 (a private folder) goes on into the first solve, which needs rank 0: mpirun
    # must end it, not leave it waiting
    (tmp_path / "taken").write_text("not a folder")
    config = _config(tmp_path, "mbb", "petsc")
    result = _mpirun(2, "optimize", str(config), "--out", str(tmp_path / "taken"), cwd=tmp_path,
                     timeout=600)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "error:" in result.stderr


@needs_mpi
def test_a_diverging_ksp_ends_every_rank_with_exit_1(tmp_path):
    config = _config(tmp_path, "cantilever3d", "petsc")
    text = config.read_text().replace("options = { rtol = 1e-8 }",
                                      "options = { rtol = 1e-12, maxiter = 1 }")
    config.write_text(text)
    result = _mpirun(2, "solve", str(config), "--out", str(tmp_path / "out"), cwd=tmp_path,
                     timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "did not converge" in result.stderr


def test_a_launch_is_read_from_the_launcher_environment(monkeypatch):
    for name in ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_SIZE", "PMI_RANK",
                 "PMIX_SIZE", "PMIX_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert launched() == World(0, 1) and world() == World(0, 1)
    monkeypatch.setenv("PMI_SIZE", "4")
    monkeypatch.setenv("PMI_RANK", "3")
    assert launched() == World(3, 4) and not launched().is_root and launched().distributed
    with pytest.raises(MPIError, match=r"4 MPI ranks for 3 cells.*mpirun -n 3"):
        check_rank_count(3, "config.toml")
    check_rank_count(4, "config.toml")


def test_an_mpi_launch_without_petsc4py_says_how_to_install_it(monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    monkeypatch.setitem(sys.modules, "petsc4py", None)  # import fails
    with pytest.raises(MPIError, match=r"started by MPI on 2 ranks.*petsc4py.*make petsc"):
        world()


SCRIPT = '''
import sys

import numpy as np

from fesens.config import load_preset
from fesens.mesh import box
from fesens.mpi import world
from fesens.physics import Elasticity
from fesens.workflow import run_optimization

config = load_preset("mbb")
config.data["stop"]["max_iter"] = 3
run = run_optimization(config, sys.argv[1], echo=None)
model = Elasticity(box(8, 3, 3, 8.0, 3.0, 3.0), E=1.0, nu=0.3)
model.fix("left")
model.point_load((8.0, 0.0, 1.0), (0.0, -1.0, 0.0))
u = model.solve().u
# one file per rank: mpirun may merge the ranks' buffered stdout into one line
with open(f"rank{world().rank}.txt", "w") as stream:
    stream.write(f"rank {world().rank} of {world().size}: objective "
                 f"{run.history[-1]['objective']:.10e} solver {model.solver_choice} "
                 f"norm {np.linalg.norm(u):.10e} path {run.folder}")
'''


@needs_mpi
def test_the_python_api_under_mpirun(tmp_path):
    """A script calling run_optimization and model.solve under mpirun: one results folder
    (rank 0's), the same numbers on both ranks, auto = petsc, the serial solution."""
    import numpy as np

    from fesens.mesh import box
    from fesens.physics import Elasticity

    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2", sys.executable,
               str(script), str(tmp_path / "out")]
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("OMPI_", "PMIX_"))}
    result = subprocess.run(command, capture_output=True, text=True, timeout=300,
                            cwd=tmp_path, env=environment, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [(tmp_path / f"rank{rank}.txt").read_text() for rank in (0, 1)]
    assert lines[0].startswith("rank 0 of 2:") and lines[1].startswith("rank 1 of 2:")
    assert lines[0].split(":", 1)[1] == lines[1].split(":", 1)[1]
    assert "solver petsc" in lines[0] and str(tmp_path / "out") in lines[0]
    assert len(_history(tmp_path / "out")) == 3
    model = Elasticity(box(8, 3, 3, 8.0, 3.0, 3.0), E=1.0, nu=0.3)
    model.fix("left")
    model.point_load((8.0, 0.0, 1.0), (0.0, -1.0, 0.0))
    serial = np.linalg.norm(model.solve(solver="cholmod").u)
    norm = float(lines[0].split(" norm ")[1].split()[0])
    assert norm == pytest.approx(serial, rel=1e-8)


@needs_mpi
def test_an_uncaught_error_in_a_script_ends_every_rank(tmp_path):
    """Rank 0 raises before its first solve while rank 1 waits in it: the excepthook that
    fesens.mpi.world() installs ends rank 0 at once, and mpirun ends rank 1."""
    script = tmp_path / "bad.py"
    script.write_text(
        "from fesens.mesh import box\nfrom fesens.mpi import world\n"
        "from fesens.physics import Elasticity\n"
        "model = Elasticity(box(8, 3, 3, 8.0, 3.0, 3.0), E=1.0, nu=0.3)\n"
        "model.fix('left')\nmodel.point_load((8.0, 0.0, 1.0), (0.0, -1.0, 0.0))\n"
        "if world().rank == 0:\n    raise RuntimeError('rank 0 fails before its solve')\n"
        "model.solve()\n")
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("OMPI_", "PMIX_"))}
    result = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2",
                             sys.executable, str(script)], capture_output=True, text=True,
                            timeout=600, cwd=tmp_path, env=environment, check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "rank 0 fails before its solve" in result.stderr


def test_a_model_refuses_a_backend_that_cannot_distribute(monkeypatch):
    from fesens.mesh import rectangle
    from fesens.physics import Elasticity

    model = Elasticity(rectangle(4, 2, 2.0, 1.0), E=1.0, nu=0.3, plane="stress")
    model.fix("left")
    monkeypatch.setenv("PMI_SIZE", "2")
    monkeypatch.setenv("PMI_RANK", "0")
    with pytest.raises(MPIError, match=r"solver 'superlu' cannot solve across the 2 MPI ranks"):
        model.solver("superlu")

"""``mpirun -n 2 fesens optimize``: one problem split between two ranks (the distributed model:
each rank builds, assembles and designs its own cells; fesens.config.mpi_run).

Every run is compared with the serial run of the same config (CHOLMOD): the design history
must agree to the solver tolerance, and the fields rank 0 writes (assembled from both ranks'
cells and nodes) must be the serial run's. The cantilever3d preset's 2-rank run (DMDA blocks,
OC, density filter) is in test_cli_mpi.py.
"""

import subprocess

import meshio
import numpy as np
import pytest
from mpi_helpers import FESENS, config, history, mpirun, needs_mpi

from fesens.config import load_preset
from fesens.config.mpi_run import distributed_refusal


def _serial(tmp_path, path, out, *extra):
    result = subprocess.run([*FESENS, "optimize", str(path), "--out", str(out), "-q", *extra],
                            capture_output=True, text=True, timeout=600, check=False,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    return history(out)


def _both(tmp_path, preset, changes):
    """The serial run (CHOLMOD) of ``preset`` with ``changes`` into ``one/`` (its history)
    and the 2-rank run (petsc) into ``two/`` (mpirun's result, checked to have passed)."""
    serial = _serial(tmp_path, config(tmp_path, preset, "cholmod", **changes), tmp_path / "one")
    path = config(tmp_path, preset, "petsc", **changes)
    result = mpirun(2, "optimize", str(path), "--out", str(tmp_path / "two"), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    return serial, result


def _same_history(one, two, rel):
    assert len(one) == len(two)
    for a, b in zip(one, two, strict=True):
        assert float(b["objective"]) == pytest.approx(float(a["objective"]), rel=rel)
        assert float(b["volume"]) == pytest.approx(float(a["volume"]), rel=rel)


def _same_fields(one, two):
    """Every point and cell field of two VTU files, to 1e-6 of its largest value."""
    a, b = meshio.read(one), meshio.read(two)
    assert sorted(a.point_data) == sorted(b.point_data)
    assert sorted(a.cell_data) == sorted(b.cell_data)
    for name in a.point_data:
        scale = np.abs(a.point_data[name]).max() or 1.0
        np.testing.assert_allclose(b.point_data[name], a.point_data[name], rtol=0,
                                   atol=1e-6 * scale, err_msg=name)
    for name in a.cell_data:
        scale = np.abs(a.cell_data[name][0]).max() or 1.0
        np.testing.assert_allclose(b.cell_data[name][0], a.cell_data[name][0], rtol=0,
                                   atol=1e-6 * scale, err_msg=name)


@needs_mpi
@pytest.mark.parametrize("optimizer, filter_type", [
    pytest.param("mma", "density", marks=pytest.mark.slow), ("oc", "sensitivity"),
    pytest.param("oc", "helmholtz", marks=pytest.mark.slow)])
def test_two_ranks_split_the_mbb_problem_and_write_the_serial_fields(tmp_path, optimizer,
                                                                     filter_type):
    changes = {'type = "oc"': f'type = "{optimizer}"',
               'type = "density"': f'type = "{filter_type}"',
               "max_iter = 300": "max_iter = 25"}
    if optimizer == "mma":
        changes["move = 0.2"] = "move = 0.5"
    serial, result = _both(tmp_path, "mbb", changes)
    # both ranks design their own 600 cells; rank 0 prints and writes
    assert result.stdout.count("distributed on 2 MPI ranks") == 1
    assert "its own 600–600 cells" in result.stdout
    assert "1200 quad4 cells, 2562 dofs, 1200 design variables" in result.stdout
    _same_history(serial, history(tmp_path / "two"), rel=1e-6)
    _same_fields(tmp_path / "one" / "design.vtu", tmp_path / "two" / "design.vtu")
    assert (tmp_path / "two" / "design.png").is_file()


@needs_mpi
def test_an_unstructured_mesh_is_split_by_the_graph_partitioner(tmp_path):
    # the L-bracket (a Gmsh mesh of triangles; a traction on facets, passive solid cells):
    # PT-Scotch's parts, whose rows interleave along a ragged interface
    changes = {"max_iter = 200": "max_iter = 15"}
    serial, result = _both(tmp_path, "lbracket", changes)
    assert "distributed on 2 MPI ranks" in result.stdout
    _same_history(serial, history(tmp_path / "two"), rel=1e-6)
    _same_fields(tmp_path / "one" / "design.vtu", tmp_path / "two" / "design.vtu")


@needs_mpi
def test_a_distributed_run_resumes_where_it_stopped(tmp_path):
    changes = {"max_iter = 300": "max_iter = 12"}
    serial = _serial(tmp_path, config(tmp_path, "mbb", "cholmod", **changes), tmp_path / "one")
    path = config(tmp_path, "mbb", "petsc", **changes)
    first = mpirun(2, "optimize", str(path), "--out", str(tmp_path / "two"), "--max-iter", "5",
                   cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert len(history(tmp_path / "two")) == 5
    # the checkpoint holds the whole design (both ranks' parts, the serial order)
    with np.load(tmp_path / "two" / "checkpoint.npz") as checkpoint:
        assert checkpoint["x"].shape == (1200,)
    again = mpirun(2, "optimize", str(path), "--out", str(tmp_path / "two"), "--resume",
                   cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resuming mbb from iteration 5" in again.stdout
    _same_history(serial, history(tmp_path / "two"), rel=1e-6)


@needs_mpi
def test_what_the_distributed_model_cannot_do_runs_replicated(tmp_path):
    # a stress p-norm is not a sum over the ranks' cells
    changes = {"max_iter = 400": "max_iter = 3"}
    serial, result = _both(tmp_path, "lbracket_stress", changes)
    assert ("replicated on 2 MPI ranks (each builds the whole model; PETSc solves across "
            "them): the distributed model does not offer the objective 'stress_pnorm' "
            "(compliance only)") in result.stdout
    _same_history(serial, history(tmp_path / "two"), rel=1e-6)


@pytest.mark.parametrize("preset, reason", [
    ("mbb", None), ("cantilever3d", None), ("lbracket", None),
    ("lbracket_stress", "the objective 'stress_pnorm'"), ("frequency", "an eigen objective"),
    ("heatsink", None)])
def test_the_configs_the_distributed_model_refuses_say_why(preset, reason):
    refusal = distributed_refusal(load_preset(preset))
    if reason is None:
        assert refusal is None
    else:
        assert refusal.startswith(reason)


@needs_mpi
def test_a_diverging_distributed_solve_ends_every_rank_with_exit_1(tmp_path):
    # the distributed model's own solve path (the sum of the ranks' matrices, PETSc's global
    # residual): one CG iteration cannot reach rtol 1e-12, and both ranks stop together
    path = config(tmp_path, "cantilever3d", "petsc")
    path.write_text(path.read_text().replace("options = { rtol = 1e-8 }",
                                             "options = { rtol = 1e-12, maxiter = 1 }"))
    result = mpirun(2, "optimize", str(path), "--out", str(tmp_path / "out"), cwd=tmp_path,
                    timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "distributed on 2 MPI ranks" in result.stdout
    assert "did not converge" in result.stderr and "relative residual" in result.stderr


CASES = '''
[[loads]]
type = "point"
name = "G"
point = [30.0, 20.0]
value = [0.0, -1.0]

[[load_cases]]
name = "end"
loads = ["F"]

[[load_cases]]
name = "middle"
loads = ["G"]
weight = 2.0
'''


@needs_mpi
@pytest.mark.parametrize("combine", ["weighted", "max"])
def test_load_cases_split_between_two_ranks(tmp_path, combine):
    # one factorization, two right-hand sides, each case's compliance summed over the
    # ranks: the weighted sum (OC), or the worst case by MMA's bound formulation
    changes = {"max_iter = 300": "max_iter = 20", "[objective]": CASES + "\n[objective]"}
    if combine == "max":
        changes.update({'type = "compliance"': 'type = "compliance"\ncombine = "max"',
                        'type = "oc"': 'type = "mma"', "move = 0.2": "move = 0.5"})
    serial, result = _both(tmp_path, "mbb", changes)
    assert "distributed on 2 MPI ranks" in result.stdout
    two = history(tmp_path / "two")
    _same_history(serial, two, rel=1e-6)
    for a, b in zip(serial, two, strict=True):  # each case's own compliance
        for case in ("end", "middle"):
            assert float(b[f"compliance_{case}"]) == pytest.approx(
                float(a[f"compliance_{case}"]), rel=1e-6)
    _same_fields(tmp_path / "one" / "design.vtu", tmp_path / "two" / "design.vtu")

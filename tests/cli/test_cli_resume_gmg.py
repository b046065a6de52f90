"""A resumed optimization with an iterative solver (the multigrid, PETSc) equals the
uninterrupted one, bit for bit.

``gmg`` starts each solve from its last solution (forward and transposed), so the solver's
state at the interruption is part of where the next iteration starts: the checkpoint keeps
it (``warm_solver_*`` entries, :meth:`LinearSolver.state`), and a hierarchy kept for
``reuse`` is dropped at every iteration boundary, where a resume may start.
"""

import csv

import numpy as np
import pytest
from cli_helpers import edit, run, write_config

from fesens.mesh import rectangle
from fesens.objectives import compliance
from fesens.opt import OC, CheckpointError, DesignProblem, HelmholtzFilter, optimize
from fesens.opt.checkpoint import save_checkpoint
from fesens.physics import Elasticity
from fesens.solvers import solver_class

#: Free dofs of :func:`_problem`'s model (17 x 9 points, the left side's fixed).
N_FREE = 2 * 16 * 9
#: A small cantilever with a multigrid of several levels (``coarse_size`` far below the
#: default, which would solve these meshes on one level).
RECTANGLE = """name = "gmg-resume"

[mesh]
type = "rectangle"
size = [2.0, 1.0]
cells = [16, 8]

[physics]
type = "elasticity"

[[supports]]
group = "left"

[[loads]]
type = "point"
name = "F"
point = [2.0, 0.5]
value = [0.0, -1.0]

[objective]
type = "compliance"

[constraints]
volume_fraction = 0.5

[filter]
type = "density"
radius = 0.25

[optimizer]
type = "mma"

[stop]
max_iter = 5

[output]
every = 0

[solver]
backend = "gmg"
options = { coarse_size = 20 }
"""
BOX = RECTANGLE
for old, new in (('type = "rectangle"', 'type = "box"'),
                 ("size = [2.0, 1.0]", "size = [2.0, 1.0, 1.0]"),
                 ("cells = [16, 8]", "cells = [8, 4, 4]"),
                 ("point = [2.0, 0.5]\nvalue = [0.0, -1.0]",
                  "point = [2.0, 0.5, 0.5]\nvalue = [0.0, 0.0, -1.0]")):
    BOX = edit(BOX, old, new)
MATRIX_FREE = "options = { coarse_size = 20, matrix_free = true }"
CASES = {
    "rectangle-assembled": RECTANGLE,
    "rectangle-matrix-free": edit(RECTANGLE, "options = { coarse_size = 20 }", MATRIX_FREE),
    "box-assembled": BOX,
    "box-matrix-free": edit(BOX, "options = { coarse_size = 20 }", MATRIX_FREE),
    # the coarse levels kept across factorizations: dropped at each iteration boundary
    "box-reuse": edit(BOX, "options = { coarse_size = 20 }",
                      "options = { coarse_size = 20, reuse = true, rebuild_growth = 5.0 }"),
    # the resident path (OC on the device multigrid, here on numpy) keeps its own start
    "rectangle-resident": edit(edit(RECTANGLE, 'type = "mma"', 'type = "oc"'),
                               "options = { coarse_size = 20 }",
                               'options = { matrix_free = true, device = "numpy" }'),
}


def _history(folder) -> list[dict]:
    """The history's rows without the timings."""
    with open(folder / "history.csv", newline="") as file:
        return [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(file)]


def _resume_equals_whole(tmp_path, text: str) -> None:
    """``--max-iter 2`` then ``--resume --max-iter 5`` gives the history and design of one
    run of 5 iterations."""
    config = write_config(tmp_path, text)
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    for out, runs in ((whole, [["--max-iter", 5]]),
                      (parts, [["--max-iter", 2], ["--resume", "--max-iter", 5]])):
        for extra in runs:
            result = run("optimize", config, "--out", out, "-q", *extra)
            assert result.exit_code == 0, result.output
    assert _history(parts) == _history(whole)
    assert len(_history(whole)) == 5
    with np.load(parts / "checkpoint.npz") as resumed, np.load(whole / "checkpoint.npz") as one:
        assert np.array_equal(resumed["x"], one["x"])
        assert sorted(resumed.files) == sorted(one.files)


@pytest.mark.parametrize("case", list(CASES))
def test_a_resumed_gmg_run_is_the_uninterrupted_one(case, tmp_path):
    _resume_equals_whole(tmp_path, CASES[case])
    with np.load(tmp_path / "whole" / "checkpoint.npz") as one:
        # the solver's last solutions are in the checkpoint (the resident path: its own)
        started = "warm_resident_u" if "resident" in case else "warm_solver_forward"
        assert started in one.files


@pytest.mark.skipif(not solver_class("petsc").available(), reason="petsc4py is not installed")
def test_a_resumed_petsc_run_is_the_uninterrupted_one(tmp_path):
    """PETSc's KSP, kept across factorizations of one pattern, would carry its GAMG set-up
    of earlier matrices: it is set up anew at every iteration boundary."""
    petsc = edit(RECTANGLE, 'backend = "gmg"\noptions = { coarse_size = 20 }',
                 'backend = "petsc"')
    _resume_equals_whole(tmp_path, petsc)


def _problem(solver):
    mesh = rectangle(16, 8, 2.0, 1.0, cell_type="quad4")
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress").fix("left")
    model.point_load((2.0, 0.5), (0.0, -1.0))
    return DesignProblem(model, lambda state, rho: compliance(state), volume_fraction=0.5,
                         filter=HelmholtzFilter(mesh, 0.25, solver=solver), solver=solver)


def test_a_helmholtz_filter_solved_by_gmg_resumes_to_the_same_designs(tmp_path):
    """The PDE filter's own multigrid warm start is kept too (``warm_filter_solver_*``)."""
    solver = ("gmg", {"coarse_size": 20})
    whole = optimize(_problem(solver), OC(), max_iter=4, checkpoint=tmp_path / "whole.npz")
    optimize(_problem(solver), OC(), max_iter=2, checkpoint=tmp_path / "parts.npz")
    resumed = optimize(_problem(solver), OC(), max_iter=4, checkpoint=tmp_path / "parts.npz",
                       resume=True)
    assert np.array_equal(resumed.x, whole.x)
    assert [r["objective"] for r in resumed.history] == [r["objective"] for r in whole.history]
    with np.load(tmp_path / "whole.npz") as stored:
        assert {"warm_solver_forward", "warm_filter_solver_forward"} <= set(stored.files)


def _tampered(tmp_path, name: str, value: np.ndarray):
    """A two-iteration gmg checkpoint with the warm start entry ``name`` set to ``value``."""
    path = tmp_path / "check.npz"
    optimize(_problem(("gmg", {"coarse_size": 20})), OC(), max_iter=2, checkpoint=path)
    with np.load(path) as data:
        entries = {k: data[k] for k in data.files}
    warm = {k[len("warm_"):]: v for k, v in entries.items() if k.startswith("warm_")}
    warm[name] = value
    state = {k[len("optimizer_"):]: v for k, v in entries.items() if k.startswith("optimizer_")}
    history = [dict(zip([str(c) for c in entries["columns"]], row, strict=True))
               for row in entries["history"]]
    for record in history:
        record["iteration"] = int(record["iteration"])
    save_checkpoint(path, entries["x"], 2, history, state, entries["evaluated"], None, warm)
    return path


@pytest.mark.parametrize("name, value, message", [
    ("solver_forward", np.zeros(7), "'solver_forward' has shape (7,)"),
    ("filter_solver_transpose", np.zeros((3, 2)), "'filter_solver_transpose' has shape"),
    ("solver_hierarchy", np.zeros(N_FREE), "gmg keeps the warm starts"),
])
def test_a_tampered_solver_state_is_refused_naming_the_checkpoint(tmp_path, name, value,
                                                                   message):
    path = _tampered(tmp_path, name, value)
    with pytest.raises(CheckpointError, match="does not fit") as refused:
        optimize(_problem(("gmg", {"coarse_size": 20})), OC(), max_iter=3, checkpoint=path,
                 resume=True)
    assert str(path) in str(refused.value) and message in str(refused.value)


def test_a_solver_state_given_to_a_backend_without_one_is_refused(tmp_path):
    path = _tampered(tmp_path, "solver_forward", np.zeros(N_FREE))
    with pytest.raises(CheckpointError, match="keeps no state between solves"):
        optimize(_problem("cholmod"), OC(), max_iter=3, checkpoint=path, resume=True)

"""``auto`` picks the solver by dimension, size, structure and memory, says why, and a
direct factorization that will not fit is refused up front."""

import numpy as np
import pytest

from fesens.errors import SolverError
from fesens.fem.model import solvers as model_solvers
from fesens.mesh import Mesh, box, rectangle
from fesens.physics import Elasticity
from fesens.solvers import policy


def cantilever(mesh):
    model = Elasticity(mesh, plane="stress") if mesh.dim == 2 else Elasticity(mesh)
    model.fix("left")
    return model


@pytest.fixture
def plenty_of_memory(monkeypatch):
    monkeypatch.setattr(model_solvers, "available_bytes", lambda: 1e12)


def test_2d_and_small_3d_get_cholmod(plenty_of_memory):
    for mesh in (rectangle(8, 4), box(4, 2, 2)):
        model = cantilever(mesh)
        backend = model.solver()
        assert backend.name == "cholmod"
        assert model.solver_choice == "cholmod"
        assert model.solver_choice.line().startswith(f"solver: cholmod (auto: {mesh.dim}D")


def test_large_structured_3d_gets_multigrid(plenty_of_memory, monkeypatch):
    monkeypatch.setattr(policy, "DIRECT_MAX_3D_UNKNOWNS", 100)
    model = cantilever(box(8, 4, 4))
    backend = model.solver()
    assert backend.name == "gmg" and backend.matrix_free
    assert "identical linear cells: matrix-free multigrid-CG" in model.solver_choice.reason
    assert model.solver_choice.line().startswith("solver: gmg, matrix_free=True (auto: 3D")
    direct = cantilever(box(8, 4, 4))
    for m in (model, direct):
        m.traction("right", (0.0, -1.0, 0.0))
    u = model.solve(scale=np.ones(model.mesh.n_cells)).u
    reference = direct.solve(scale=np.ones(model.mesh.n_cells), solver="cholmod").u
    assert np.abs(u - reference).max() < 1e-6 * np.abs(reference).max()


def test_large_structured_quadratic_3d_gets_assembled_multigrid(plenty_of_memory,
                                                                 monkeypatch):
    """A lattice of hex27 cells: multigrid-CG on the assembled matrix, and the reason
    the matrix-free path was not taken."""
    monkeypatch.setattr(policy, "DIRECT_MAX_3D_UNKNOWNS", 100)
    model = cantilever(box(4, 2, 2, cell_type="hex27"))
    backend = model.solver()
    assert backend.name == "gmg" and not backend.matrix_free
    assert "(assembled: " in model.solver_choice.reason
    assert "first-order cells" in model.solver_choice.reason


def test_large_unstructured_3d_gets_amg_cg(plenty_of_memory, monkeypatch):
    monkeypatch.setattr(policy, "DIRECT_MAX_3D_UNKNOWNS", 100)
    mesh = box(4, 2, 2)
    rng = np.random.default_rng(0)
    interior = (mesh.points > 0).all(axis=1) & (mesh.points < [1, 1, 1]).all(axis=1)
    points = mesh.points + 0.05 * interior[:, None] * rng.uniform(-1, 1, mesh.points.shape)
    perturbed = Mesh(points, mesh.cells, mesh.cell_type)
    perturbed.node_sets["left"] = mesh.node_sets["left"]
    model = cantilever(perturbed)
    backend = model.solver()
    assert backend.name == "cg" and backend.preconditioner == "amg"
    assert "unstructured mesh: CG with amg" in model.solver_choice.reason


def test_gmg_missing_falls_back_to_amg(plenty_of_memory, monkeypatch):
    monkeypatch.setattr(policy, "DIRECT_MAX_3D_UNKNOWNS", 100)
    monkeypatch.setattr(policy, "_registered", lambda name: False)
    model = cantilever(box(4, 2, 2))
    assert model.solver().name == "cg"


def test_a_factor_beyond_the_memory_goes_iterative_with_auto_and_is_refused_by_name(
        monkeypatch):
    monkeypatch.setattr(model_solvers, "available_bytes", lambda: 1e3)  # a 1 kB machine
    model = cantilever(rectangle(8, 4))
    assert model.solver().name != "cholmod"
    assert "more than the" in model.solver_choice.reason
    with pytest.raises(SolverError, match=r"solver 'cholmod': the factorization of 80 "
                                          r"unknowns \(2D\) needs about .* GiB, more than"):
        model.solver("cholmod")


def test_fesens_solve_and_optimize_print_the_choice(tmp_path):
    from click.testing import CliRunner

    from fesens.cli import cli

    result = CliRunner().invoke(cli, ["solve", "--preset", "lbracket", "--out",
                                      str(tmp_path / "solve")])
    assert result.exit_code == 0, result.output
    assert "solver: cholmod (auto: 2D, factor about" in result.output
    result = CliRunner().invoke(cli, ["optimize", "--preset", "mbb", "--out",
                                      str(tmp_path / "opt"), "--max-iter", "1"])
    assert result.exit_code == 0, result.output
    assert "; solver: cholmod (auto: 2D" in result.output.splitlines()[0]


def test_a_model_without_cholmod_says_once_that_superlu_is_slower(plenty_of_memory,
                                                                   monkeypatch):
    """The models' ``auto`` (not only a bare ``make_solver("auto")``) says it, once per
    process under Python's default warning filter, however many solves and models."""
    import warnings

    import fesens.solvers.cholmod as cholmod_module
    from fesens.solvers import FesensPerformanceWarning

    monkeypatch.setattr(cholmod_module, "_cholmod", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(2):
            model = cantilever(rectangle(8, 4))
            model.traction("right", (0.0, -1.0))
            model.solve()
            model.solve(E=2.0)
    assert model.solver_choice == "superlu"
    assert [item.category for item in caught] == [FesensPerformanceWarning]
    assert "pip install scikit-sparse" in str(caught[0].message)
    monkeypatch.setattr(policy, "DIRECT_MAX_3D_UNKNOWNS", 100)
    with warnings.catch_warnings():  # an iterative choice factorizes nothing: no warning
        warnings.simplefilter("error")
        model = cantilever(box(8, 4, 4))
        model.traction("right", (0.0, 0.0, -1.0))
        model.solve()

"""Springs to the ground on the matrix-free multigrid: the lattice operator adds ``k ⊙ x``
on the spring dofs, its diagonal ``k``, its first coarse level ``Pᵀ diag(k) P``; solves and
design gradients equal the assembled direct solve's."""

import tomllib

import numpy as np
import pytest

from fesens.config import build_model, parse_config
from fesens.config.build import build_problem
from fesens.config.presets import preset_text
from fesens.config.toml_writer import dumps
from fesens.fem.model.matrix_free import lattice_system
from fesens.mesh import box, rectangle
from fesens.physics import Elasticity
from fesens.solvers.grid_hierarchy import _lattice_prolongation

CASES = {  # odd and even axes: the coarse points of an odd axis end on its last point
    "2d": (lambda: rectangle(9, 4), (1 / 3, 0.5)),
    "3d": (lambda: box(4, 3, 5), (0.25, 1 / 3, 0.6)),
}


def sprung(case: str) -> Elasticity:
    make, point = CASES[case]
    model = Elasticity(make(), E=1.0, nu=0.3)
    # springs on a face (some on Dirichlet neighbours' rows) and one inside, on one
    # component; a dof sprung twice adds its stiffnesses
    model.fix("left").spring("right", 0.1).spring(point, [2.0], components=[0])
    return model.spring("right", 0.05, components=[1])


def springs_matrix(model, n: int) -> np.ndarray:
    """diag(k) on the rows of ``K_ff`` (written from the model's springs alone)."""
    D = np.zeros((n, n))
    for dof, k in model.springs.items():
        row = int(np.flatnonzero(model.free_dofs == dof)[0])
        D[row, row] += k
    return D


@pytest.mark.parametrize("case", sorted(CASES))
def test_operator_diagonal_and_coarse_level_hold_the_springs(case):
    """Against the assembler's ``K_ff`` (cells only) plus ``diag(k)``, and the first coarse
    level against ``Pᵀ A P`` with the assembled path's sparse prolongation."""
    model = sprung(case)
    system = lattice_system(model, model.stiffness_fields()[0])
    rng = np.random.default_rng(3)
    s = rng.uniform(1e-3, 1.0, model.mesh.n_cells)
    weights, _ = model.stiffness_fields()
    K = model.assembler.stiffness([s], weights).toarray()
    A = K + springs_matrix(model, K.shape[0])
    operator = system.operator(s)
    x = rng.standard_normal((K.shape[0], 2))
    scale = np.abs(A).max()
    assert np.abs(operator @ x - A @ x).max() < 1e-12 * scale
    assert np.abs(operator.diagonal() - np.diag(A)).max() < 1e-13 * scale
    assert np.abs(operator.tocsr().toarray() - A).max() < 1e-13 * scale
    grid = system.structure.grid
    P, _, _ = _lattice_prolongation(grid.shape, grid.rows >= 0)
    P = P[np.argsort(grid.rows[grid.rows >= 0])].toarray()  # rows in K_ff's order
    reference = P.T @ A @ P
    assert np.abs(operator.galerkin().toarray() - reference).max() < 1e-13 * scale
    # without the springs the coarse level differs: the test sees them
    assert np.abs(P.T @ K @ P - reference).max() > 1e-3 * scale


def inverter3d(cells: list[int], solver: dict) -> str:
    """The inverter3d preset on ``cells`` (its ports' coordinates scaled along)."""
    data = tomllib.loads(preset_text("inverter3d"))
    data["mesh"]["cells"] = cells
    data["mesh"]["size"] = [float(c) for c in cells]
    for item in data["springs"] + data["loads"]:
        region = item["region"]
        for key in ("min", "max"):
            region[key] = [cells[0] if v == 24.0 else cells[2] if v == 4.0 else
                           cells[1] if v == 12.0 else v for v in region[key]]
    data["supports"][1]["region"] = {"min": [0.0, cells[1] - 2.0, 0.0],
                                     "max": [0.0, float(cells[1]), float(cells[2])]}
    data["objective"]["point"] = [float(cells[0]), 0.0, cells[2] / 2]
    data["solver"] = solver
    return dumps(data)


def test_inverter3d_matrix_free_equals_the_direct_solve(tmp_path):
    """The objective u_out and its gradient with respect to the design of the 3D inverter
    (springs at both ports) by the matrix-free multigrid, against CHOLMOD's."""
    results = {}
    for name, solver in [("direct", {"backend": "cholmod"}),
                         ("matrix_free", {"backend": "gmg",
                                          "options": {"matrix_free": True, "rtol": 1e-10}})]:
        config = parse_config(inverter3d([12, 6, 4], solver), source="test",
                              base_dir=tmp_path)
        problem = build_problem(config, build_model(config))
        x = np.random.default_rng(7).uniform(0.2, 0.9, problem.n_design)
        evaluation = problem.evaluate(x)
        results[name] = (evaluation.objective, np.asarray(evaluation.gradient))
    value, gradient = results["matrix_free"]
    assert value == pytest.approx(results["direct"][0], rel=1e-8)
    np.testing.assert_allclose(gradient, results["direct"][1],
                               atol=1e-7 * np.abs(results["direct"][1]).max())


def test_the_config_check_accepts_springs_with_matrix_free(tmp_path):
    text = inverter3d([8, 4, 2], {"backend": "gmg", "options": {"matrix_free": True}})
    config = parse_config(text, source="test", base_dir=tmp_path)
    assert config.data["springs"]

"""The preset ``cantilever3d_top3d`` is Liu & Tovar's top3d (Struct Multidisc Optim 50:1175,
2014): fesens follows the paper's code, rewritten in numpy/scipy in
``tests/reference/top3d.py``, iteration by iteration.

The reference shares no code with fesens; the preset is read as shipped and only its size
(and the load line at the right end, which moves with it) is changed, so every other
setting of the preset is what is compared. The paper's full 60x20x4 run (200 iterations,
minutes with the reference's SuperLU) is compared in ``benchmarks/bench_3d_presets.py``.
"""

import tomllib

import numpy as np
import pytest
from reference.top3d import LK_H8_COEFFICIENTS, lk_h8, top3d

from fesens.config import dumps, parse_config, preset_text
from fesens.workflow.optimize import run_optimization


def top3d_config(nelx: int, nely: int, nelz: int, max_iter: int):
    """The shipped preset on ``nelx × nely × nelz`` unit cells, stopped after ``max_iter``."""
    data = tomllib.loads(preset_text("cantilever3d_top3d"))
    data["mesh"].update(size=[float(nelx), float(nely), float(nelz)], cells=[nelx, nely, nelz])
    data["loads"][0]["region"] = {"min": [float(nelx), 0.0, 0.0],
                                  "max": [float(nelx), 0.0, float(nelz)]}
    data["stop"]["max_iter"] = max_iter
    return parse_config(dumps(data), source="top3d test", base_dir=".",
                        default_name="cantilever3d_top3d", optimize=True)


def by_position(config, values: np.ndarray) -> np.ndarray:
    """``(n_cells,)`` cell values as ``(nx, ny, nz)`` by the cells' unit positions."""
    mesh = config.mesh
    index = np.floor(mesh.points[mesh.cells].mean(axis=1)).astype(int)
    cube = np.full(tuple(index.max(axis=0) + 1), np.nan)
    cube[index[:, 0], index[:, 1], index[:, 2]] = values
    return cube


def test_the_element_matrix_is_the_papers_lk_h8():
    """The quadrature hex8 of the reference has exactly the 14 coefficients of lk_H8's table
    ``k = Aᵀ[1; ν]/144`` (over ``(1+ν)(1−2ν)``) as the magnitudes of its entries, with
    ``K1``'s first row ``k1 k2 k2 k3 k5 k5``."""
    nu = 0.3
    KE = lk_h8(nu)
    k = LK_H8_COEFFICIENTS.T @ [1.0, nu] / 144 / ((1 + nu) * (1 - 2 * nu))
    assert np.allclose(KE, KE.T, atol=1e-15)
    np.testing.assert_allclose(KE[0, :6], k[[0, 1, 1, 2, 4, 4]], rtol=1e-13)
    entries = np.unique(np.round(np.abs(KE), 12))
    assert np.allclose(entries, np.unique(np.round(np.abs(k), 12)), rtol=1e-10)


def test_fesens_follows_top3d_iteration_by_iteration():
    """12x4x2 cells, 8 OC iterations: the compliance of every iteration and the final design
    variables agree to rounding (measured: 1.5e-12 and 8.4e-13; the designs still change by
    the move limit, so a wrong filter weight, load or bisection shows at once)."""
    config = top3d_config(12, 4, 2, max_iter=8)
    run = run_optimization(config, None, echo=None)
    reference = top3d(12, 4, 2, volfrac=0.3, penal=3.0, rmin=1.5, maxloop=8)
    compliance = [record["objective"] for record in run.history]
    np.testing.assert_allclose(compliance, reference.compliance, rtol=1e-9)
    np.testing.assert_allclose(by_position(config, run.x), reference.x, atol=1e-9)


@pytest.mark.slow
def test_fesens_and_top3d_reach_the_same_design():
    """20x8x4 cells to the end (top3d's stop: change below 0.01 or 200 iterations): the same
    number of iterations, the final compliance and every design variable."""
    config = top3d_config(20, 8, 4, max_iter=200)
    run = run_optimization(config, None, echo=None)
    reference = top3d(20, 8, 4, volfrac=0.3, penal=3.0, rmin=1.5)
    assert len(run.history) == reference.iterations
    assert run.history[-1]["objective"] == pytest.approx(reference.compliance[-1], rel=1e-8)
    np.testing.assert_allclose(by_position(config, run.x), reference.x, atol=1e-6)

"""The sensitivity filter in a design problem with passive cells.

Sigmund's filter works on all cells: :meth:`DesignProblem.evaluate` gives it the design
expanded to the cells (passive solid 1, passive void 0, as :meth:`DesignProblem.density`)
and the gradient with 0 on the passive cells, and keeps the design cells' entries:
``H (x∘g) / Hs / max(γ, x)`` restricted to the design.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from opt_helpers import mbb_model

from fesens.objectives import compliance
from fesens.opt import SIMP, DesignProblem, NoFilter, SensitivityFilter
from fesens.opt.filters import cone_weights
from fesens.opt.rank_filters import DistributedSensitivityFilter

RADIUS = 1.5


def one_rank(mesh):
    """A one-rank part holding every cell (what the distributed filter reads)."""
    return SimpleNamespace(cells=np.arange(mesh.n_cells), cell_counts=np.array([mesh.n_cells]),
                           size=1, rank=0, cell_start=0)


def problem_with(model, filter_, solid, void) -> DesignProblem:
    return DesignProblem(model, lambda state, rho: compliance(state), volume_fraction=0.5,
                         interpolation=SIMP(3.0, 1e-9), filter=filter_,
                         passive_solid=solid, passive_void=void)


@pytest.mark.parametrize("cell_type", ["quad4", "tri3"])
@pytest.mark.parametrize("distributed", [False, True], ids=["serial", "distributed"])
def test_sensitivity_filter_with_passive_cells_is_sigmunds_over_all_cells(cell_type,
                                                                          distributed):
    """Passive solid (the top row) and void cells: the problem evaluates, and the gradient is
    Sigmund's filter over all cells (stencil form on the quad4 grid, matrix form on
    triangles; the distributed filter's rows on one rank) of the unfiltered gradient."""
    model = mbb_model(12, 4, cell_type)
    mesh = model.mesh
    centroids = mesh.cell_centroids()
    solid = np.flatnonzero(centroids[:, 1] > 3.0)
    void = np.flatnonzero((np.abs(centroids[:, 0] - 8.0) < 1.0) & (centroids[:, 1] < 2.0))
    filter_ = (DistributedSensitivityFilter(mesh, one_rank(mesh), RADIUS) if distributed
               else SensitivityFilter(mesh, RADIUS))
    problem = problem_with(model, filter_, solid, void)
    assert 0 < problem.n_design < mesh.n_cells
    x = np.random.default_rng(7).uniform(0.2, 0.9, problem.n_design)
    evaluation = problem.evaluate(x)
    # the unfiltered gradient: the sensitivity filter leaves the densities alone
    raw = problem_with(mbb_model(12, 4, cell_type), NoFilter(), solid, void).evaluate(x)
    np.testing.assert_array_equal(evaluation.density, raw.density)
    x_cells, g_cells = np.zeros(mesh.n_cells), np.zeros(mesh.n_cells)
    x_cells[solid] = 1.0
    x_cells[problem.design], g_cells[problem.design] = x, raw.gradient
    H = cone_weights(centroids, RADIUS)
    Hs = np.asarray(H.sum(axis=1)).ravel()
    expected = (H @ (x_cells * g_cells) / Hs / np.maximum(1e-3, x_cells))[problem.design]
    assert evaluation.gradient.shape == (problem.n_design,)
    np.testing.assert_allclose(evaluation.gradient, expected, rtol=1e-12,
                               atol=1e-14 * np.abs(expected).max())
    # the volume constraint's gradient is not post-processed
    np.testing.assert_array_equal(evaluation.constraint_gradients, raw.constraint_gradients)

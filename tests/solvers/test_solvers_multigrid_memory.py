"""What the matrix-free multigrid keeps in memory: no second copy of a sparse matrix for its
threaded row blocks, the first coarse level as its stencil (no index arrays), the coarse
cell matrices formed a few layers at a time (the same operator as the sparse ``Pᵀ K P``),
and never two hierarchies at once."""

import numpy as np
import pytest
import scipy.sparse as sp

import fesens.solvers.lattice_operator as lattice_operator
import fesens.solvers.parallel as parallel
from fesens.fem.model.matrix_free import lattice_system
from fesens.mesh import box
from fesens.objectives import Differentiable
from fesens.physics import Elasticity
from fesens.solvers import grid_hierarchy, multigrid
from fesens.solvers.grid_hierarchy import _lattice_prolongation
from fesens.solvers.lattice_coarse import StencilOperator
from fesens.solvers.parallel import RowBlocks, SlabPool


def cantilever(nx, ny, nz) -> Elasticity:
    model = Elasticity(box(nx, ny, nz, nx / ny, 1.0, nz / ny), E=1.0, nu=0.3).fix("left")
    model.traction("right", (0.0, 0.0, -1.0))
    return model


def test_row_blocks_share_the_matrix_values_and_indices(monkeypatch):
    monkeypatch.setattr(parallel, "BLOCK_NNZ", 5000)
    rng = np.random.default_rng(0)
    n = 3000
    A = sp.random_array((n, n), density=0.01, rng=rng, format="csr")
    blocks = RowBlocks(A, SlabPool(2))
    assert len(blocks._blocks) > 10
    for _, _, rows in blocks._blocks:
        assert np.shares_memory(rows.data, blocks.matrix.data)
        assert np.shares_memory(rows.indices, blocks.matrix.indices)
    x = rng.standard_normal((n, 2))
    assert np.array_equal(blocks @ x, blocks.matrix @ x)
    assert np.array_equal(blocks @ x[:, 0], blocks.matrix @ x[:, 0])


@pytest.mark.parametrize("cells", [(5, 3, 3), (7, 5, 9), (6, 4, 2)])
def test_coarse_cell_matrices_in_chunks_give_the_sparse_product(cells, monkeypatch):
    model = cantilever(*cells)
    system = lattice_system(model, model.stiffness_fields()[0])
    s = np.random.default_rng(3).uniform(1e-3, 1.0, model.mesh.n_cells)
    operator = system.operator(s)
    whole = operator.galerkin()
    monkeypatch.setattr(lattice_operator, "_GALERKIN_CELLS", 1)  # one layer per chunk
    chunked = operator.galerkin()
    grid = system.structure.grid
    P, _, _ = _lattice_prolongation(grid.shape, grid.rows >= 0)
    P = P[np.argsort(grid.rows[grid.rows >= 0])]
    reference = (P.T @ operator.tocsr() @ P).tocsr()
    scale = abs(reference).max()
    assert abs(chunked - reference).max() < 1e-13 * scale
    assert abs(chunked - whole).max() < 1e-13 * scale


def test_the_first_coarse_level_is_its_stencil_without_index_arrays():
    """The hierarchy keeps the first coarse level as its stencil's blocks, which its
    product reads in place (no CSR values, column indices or stencil positions)."""
    model = cantilever(8, 4, 4)
    structure = lattice_system(model, model.stiffness_fields()[0]).structure
    ones = np.ones(structure.n_cells)
    hierarchy = grid_hierarchy.Hierarchy(structure.operator(ones), structure.grid,
                                         smoother="chebyshev", degree=2, coarse_size=10)
    coarse = hierarchy.levels[1].A
    assert isinstance(coarse, StencilOperator) and len(hierarchy.levels) > 2
    for _, _, rows in coarse._pieces:
        assert np.shares_memory(rows.data, coarse.stencil.values)
    again = structure.coarse_operator(2.0 * ones)
    assert np.array_equal(again.stencil.values, 2.0 * coarse.stencil.values)


def test_a_rebuild_lets_the_old_hierarchy_go_before_building_the_new_one(monkeypatch):
    model = cantilever(8, 4, 4)
    problem = Differentiable(model, solver=("gmg", {"matrix_free": True, "reuse": False,
                                                    "coarse_size": 50}))
    held = []
    build = grid_hierarchy.Hierarchy.__init__

    def recording(self, *args, **kwargs):
        held.append(problem.solver._hierarchy)
        build(self, *args, **kwargs)

    monkeypatch.setattr(multigrid.Hierarchy, "__init__", recording)
    x = np.full(model.mesh.n_cells, 0.5)
    problem.solve(scale=x)
    problem.solve(scale=1.1 * x)
    assert problem.solver.stats["n_rebuilds"] == 2
    assert held == [None, None]


def test_a_matrix_free_solve_forms_no_cell_dof_table_or_quadrature_points():
    """The fem layer's per-cell tables a matrix-free solve never reads (the cell-dof table
    and the quadrature points, 192 bytes per hex8 cell each) are formed only when read, and
    then equal the eager formulas."""
    model = cantilever(6, 3, 3)
    problem = Differentiable(model, solver=("gmg", {"matrix_free": True}))
    problem.solve(scale=np.full(model.mesh.n_cells, 0.5))
    assert "cell_dofs" not in vars(model.dofmap)
    geometry = model.geometry()
    assert "x" not in vars(geometry)
    cells = model.mesh.cells
    assert np.array_equal(model.dofmap.cell_dofs,
                          (3 * cells[:, :, None] + np.arange(3)).reshape(len(cells), -1))
    assert np.array_equal(geometry.x, np.einsum("qa,eai->eqi", geometry.N,
                                                model.mesh.points[cells], optimize=True))
    assert geometry.x is model.geometry().x  # formed once, then kept with the geometry


@pytest.mark.parametrize("cells", [(5, 3, 3), (6, 4, 2), (7, 4)])
def test_the_matrix_free_prolongation_slices_the_lattice_as_the_sparse_one_multiplies(cells):
    """The first coarsening of a matrix-free fine level applied by slicing is the sparse
    prolongation (rows in the operator's order, Dirichlet dofs injected) and its
    transpose, to rounding; the hierarchy then holds no sparse ``P`` on that level."""
    if len(cells) == 2:
        from fesens.mesh import rectangle
        model = Elasticity(rectangle(*cells, cell_type="quad4"), E=1.0, nu=0.3).fix("left")
    else:
        model = cantilever(*cells)
    structure = lattice_system(model, model.stiffness_fields()[0]).structure
    grid = structure.grid
    P, coarse_shape, coarse_free = _lattice_prolongation(grid.shape, grid.rows >= 0)
    P = P[np.argsort(grid.rows[grid.rows >= 0])]
    sliced = structure.prolongation
    assert sliced.shape == P.shape and sliced.coarse_shape == coarse_shape
    assert np.array_equal(sliced.coarse_free, coarse_free)
    rng = np.random.default_rng(1)
    x, r = rng.standard_normal(P.shape[1]), rng.standard_normal(P.shape[0])
    assert np.allclose(sliced @ x, P @ x, rtol=0, atol=1e-14)
    assert np.allclose(sliced.T @ r, P.T @ r, rtol=0, atol=1e-13)
    hierarchy = grid_hierarchy.Hierarchy(structure.operator(np.ones(structure.n_cells)), grid,
                                         smoother="chebyshev", degree=2, coarse_size=10)
    assert hierarchy.levels[0].P is sliced and not sp.issparse(hierarchy.levels[0].restrict)

"""The first coarse level of the matrix-free multigrid held as its 27-point stencil.

Its product (SciPy BSR on the stencil's blocks), diagonal and the next Galerkin product
(the stencil's rows a band at a time) are those of its CSR form bit for bit, for every
thread count and piece size; the level keeps no index arrays of one entry per coupling,
and the matrix-free path holds one int32 grid of its free dofs, no float masks of them in
its sliced prolongation, and two lattice vectors at a time in a fine-level product.
"""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import fesens.solvers.lattice_coarse as lattice_coarse
import fesens.solvers.lattice_operator as lattice_operator
import fesens.solvers.parallel as parallel
from fesens.fem.model.matrix_free import lattice_system
from fesens.mesh import box, rectangle
from fesens.objectives import Differentiable
from fesens.physics import Elasticity, HeatConduction
from fesens.solvers.grid_hierarchy import _lattice_prolongation
from fesens.solvers.lattice_coarse import StencilOperator
from fesens.solvers.parallel import RowBlocks, SlabPool

THREADS = (1, 2, 3, 4)


def elasticity(mesh, *sides) -> Elasticity:
    plane = {"plane": "stress"} if mesh.dim == 2 else {}
    model = Elasticity(mesh, E=1.0, nu=0.3, **plane)
    for side in sides:
        model.fix(side)
    return model


MODELS = {
    "hex8 odd 9x5x7, left": lambda: elasticity(box(9, 5, 7, 1.8, 1.0, 1.4), "left"),
    "hex8 10x6x4, left and bottom": lambda: elasticity(box(10, 6, 4, 2.0, 1.0, 0.6),
                                                       "left", "bottom"),
    "quad4 odd 13x7, left": lambda: elasticity(rectangle(13, 7, 2.0, 1.0), "left"),
    "heat hex8 7x6x5, left": lambda: HeatConduction(box(7, 6, 5), conductivity=1.0).fix(
        "left", value=0.0),
}


@pytest.fixture(params=list(MODELS), ids=list(MODELS))
def coarse(request):
    """The first coarse level of a random SIMP-like design, and its lattice structure."""
    model = MODELS[request.param]()
    structure = lattice_system(model, model.stiffness_fields()[0]).structure
    s = np.random.default_rng(5).uniform(1e-9, 1.0, structure.n_cells)
    return structure.coarse_operator(s), structure


@pytest.fixture
def small_pieces(monkeypatch):
    """Stencil products in pieces of a few points, Galerkin bands of a few points, row
    blocks of a few rows: many pieces everywhere."""
    monkeypatch.setattr(lattice_coarse, "_STENCIL_POINTS", 7)
    monkeypatch.setattr(lattice_coarse, "BAND_POINTS", 5)
    monkeypatch.setattr(parallel, "BLOCK_NNZ", 40)


def test_the_stencil_product_is_the_csr_product_bit_for_bit(coarse, small_pieces):
    operator, structure = coarse
    operator = StencilOperator(operator.stencil, operator.free)  # with the small pieces
    assert len(operator._pieces) > 3
    A = operator.tocsr()
    rng = np.random.default_rng(1)
    x = rng.standard_normal(A.shape[0])
    reference = A @ x
    assert np.abs(reference).max() > 0.0
    for threads in THREADS:
        operator.stencil.pool.threads = threads
        assert np.array_equal(operator @ x, reference), threads
    assert np.array_equal(operator.diagonal(), A.diagonal())
    assert operator.shape == A.shape


def test_the_stencil_is_the_cell_by_cell_galerkin_level(coarse):
    """``Pᵀ K P`` of the assembled fine matrix and the sparse prolongation, to rounding."""
    operator, structure = coarse
    grid = structure.grid
    P, _, _ = _lattice_prolongation(grid.shape, grid.rows >= 0)
    P = P[np.argsort(grid.rows[grid.rows >= 0])]
    s = np.random.default_rng(5).uniform(1e-9, 1.0, structure.n_cells)  # the fixture's
    reference = (P.T @ structure.matrix(s) @ P).tocsr()
    A = operator.tocsr()
    assert A.has_sorted_indices and A.shape == reference.shape
    assert abs(A - reference).max() < 1e-13 * abs(reference).max()
    x = np.random.default_rng(2).standard_normal(A.shape[0])
    assert np.abs(operator @ x - reference @ x).max() < 1e-13 * np.abs(reference @ x).max()


def test_the_next_galerkin_product_is_the_csr_ones_bit_for_bit(coarse, small_pieces):
    operator, structure = coarse
    _, coarse_free = structure._coarse_lattice
    P, _, _ = _lattice_prolongation(operator.stencil.shape, coarse_free)
    assert P.shape[1] > 0
    reference = RowBlocks(P.T, SlabPool(1)).sparse_product(operator.tocsr(), P)
    ours = operator.galerkin(P, P.T.tocsr())
    for a, b in ((ours.indptr, reference.indptr), (ours.indices, reference.indices),
                 (ours.data, reference.data)):
        assert np.array_equal(a, b)
    dense = (P.T @ operator.tocsr() @ P).toarray()
    assert np.abs(ours.toarray() - dense).max() < 1e-13 * np.abs(dense).max()


def test_the_cells_with_eliminated_dofs_and_their_masks(coarse):
    """The cells next to a Dirichlet dof, found by slicing the lattice, and their free-dof
    masks are those of the rows of every cell's dofs."""
    _, structure = coarse
    rows = structure._cell_rows(structure.grid.shape, np.asarray(structure.grid.rows))
    masked, masks = structure._masked_cells
    expected = np.flatnonzero(np.any(rows < 0, axis=1))
    assert masked.size > 0 and np.array_equal(masked, expected)
    assert np.array_equal(masks, (rows[expected] >= 0).astype(float))


def test_the_matrix_free_path_holds_one_int32_grid_and_no_float_masks():
    model = elasticity(box(8, 4, 4, 2.0, 1.0, 1.0), "left")
    model.traction("right", (0.0, 0.0, -1.0))
    problem = Differentiable(model, solver=("gmg", {"matrix_free": True}))
    problem.solve(scale=np.full(model.mesh.n_cells, 0.5))
    solver = problem.solver
    assert solver.grid is None  # the lattice operator's grid serves the hierarchy
    structure = lattice_system(model, model.stiffness_fields()[0]).structure
    assert structure.grid.rows.dtype == np.int32
    transfer = structure.prolongation._transfer
    for level in (transfer.fine, transfer.coarse):
        assert not hasattr(level, "free")  # no float mask of the free dofs
    levels = solver._hierarchy.levels
    assert isinstance(levels[1].A, StencilOperator)
    assert all(sp.issparse(level.A) for level in levels[2:])


def test_a_fine_product_holds_two_lattice_vectors_not_three(monkeypatch):
    """The matrix-free product writes its result into its expanded input's buffer: at
    most two lattice vectors (and a slab's temporaries) at a time."""
    # slabs of one layer, copies in pieces of 256 dofs: small temporaries
    monkeypatch.setattr(lattice_operator, "_SLAB_CELLS", 1)
    monkeypatch.setattr(lattice_operator, "_PIECE", 256)
    model = elasticity(box(8, 4, 60, 2.0, 1.0, 15.0), "left")  # thin layers, many
    structure = lattice_system(model, model.stiffness_fields()[0]).structure
    s = np.random.default_rng(3).uniform(1e-3, 1.0, structure.n_cells)
    x = np.random.default_rng(4).standard_normal(structure.n)
    expected = structure.matrix(s) @ x
    vector = 8 * structure.n_components * int(np.prod(structure.grid.shape))
    structure.threads = 1
    structure.apply(s, x)  # the slabs and pieces made once
    tracemalloc.start()
    try:
        y = structure.apply(s, x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.abs(y - expected).max() < 1e-12 * np.abs(expected).max()
    assert y.shape == (structure.n,) and y.flags.writeable
    assert peak < 2.5 * vector, (peak, vector)

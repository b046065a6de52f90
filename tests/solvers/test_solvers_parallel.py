"""The threaded kernels give the single thread's result bit for bit.

Every kernel that runs in slabs on several threads (the lattice operator's product,
diagonal, per-cell bilinear form and cell-by-cell Galerkin level, the multigrid's sparse
products in row blocks, the grid filter's correlation) is compared with
``np.array_equal`` against its one-thread run for 1, 2, 3 and 4 threads on odd-sized 2D
and 3D lattices, with slabs made small so that every lattice has many of them. A whole
``gmg`` solve, its gradient (Taylor test) and its iteration count do not depend on
``FESENS_THREADS`` either.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import ndimage

import fesens.opt.grid_filter as grid_filter
import fesens.solvers.lattice_operator as lattice_operator
import fesens.solvers.parallel as parallel
from fesens.ad import grad, taylor_test
from fesens.fem.model.matrix_free import lattice_system
from fesens.mesh import box, rectangle
from fesens.objectives import Differentiable, compliance
from fesens.opt.grid_filter import CentroidLattice, ConeStencil
from fesens.physics import Elasticity, HeatConduction
from fesens.solvers.parallel import RowBlocks, SlabPool

THREADS = (1, 2, 3, 4)


def elasticity(mesh) -> Elasticity:
    plane = {"plane": "stress"} if mesh.dim == 2 else {}
    model = Elasticity(mesh, E=1.0, nu=0.3, **plane).fix("left")
    model.traction("right", (0.0,) * (mesh.dim - 1) + (-1.0,))
    return model


LATTICES = {
    "quad4 odd 13x7": lambda: elasticity(rectangle(13, 7, 2.0, 1.0)),
    "heat quad4 odd 9x11": lambda: HeatConduction(rectangle(9, 11), conductivity=1.0).fix(
        "left", value=0.0),
    "hex8 odd 7x5x9": lambda: elasticity(box(7, 5, 9, 1.4, 1.0, 1.8)),
    "hex8 odd 9x3x5": lambda: elasticity(box(9, 3, 5, 3.0, 1.0, 1.7)),
}


@pytest.fixture
def small_slabs(monkeypatch):
    """Slabs of one or two layers of cells, row blocks of a few rows, copies and CG vector
    operations of a few dofs: many pieces."""
    monkeypatch.setattr(lattice_operator, "_SLAB_CELLS", 1)
    monkeypatch.setattr(lattice_operator, "_PIECE", 23)
    monkeypatch.setattr(parallel, "BLOCK_NNZ", 500)
    monkeypatch.setattr(parallel, "VECTOR_PIECE", 37)
    monkeypatch.setattr(grid_filter, "_SLAB_POINTS", 1)


def structure_of(make, slab_layers: int = 1):
    model = make()
    structure = lattice_system(model, model.stiffness_fields()[0]).structure
    structure._slab = slab_layers
    return model, structure


@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("make", list(LATTICES.values()), ids=list(LATTICES))
def test_lattice_kernels_are_bit_identical_for_every_thread_count(make, layers, small_slabs):
    model, structure = structure_of(make, layers)
    assert len(structure._slabs()) >= 3 and len(structure._pieces) > 3  # both colours
    rng = np.random.default_rng(7)
    s = rng.uniform(1e-9, 1.0, structure.n_cells)
    a, b = rng.standard_normal((2, structure.n))
    block = rng.standard_normal((structure.n, 2))
    results = {}
    for threads in THREADS:
        structure.threads = threads
        coarse = structure.galerkin(s)
        results[threads] = (structure.apply(s, a), structure.apply(s, block),
                            structure.diagonal(s), structure.cell_bilinear(a, b),
                            coarse.data, coarse.indices, coarse.indptr)
    for threads in THREADS[1:]:
        for ours, reference in zip(results[threads], results[1], strict=True):
            assert np.array_equal(ours, reference), threads
    # and the colouring changed nothing but the order of additions
    K = structure.matrix(s)
    assert np.abs(results[1][0] - K @ a).max() < 1e-12 * np.abs(K @ a).max()


def test_row_blocks_are_bit_identical_to_the_whole_product(small_slabs):
    rng = np.random.default_rng(2)
    matrix = sp.random(301, 173, density=0.05, random_state=3, format="csr")
    x = rng.standard_normal(173)
    y = rng.standard_normal(301)
    pool = SlabPool(1)
    blocks, transposed = RowBlocks(matrix, pool), RowBlocks(matrix.T, pool)
    assert len(blocks._blocks) > 4 and len(transposed._blocks) > 4
    for threads in THREADS:
        pool.threads = threads
        assert np.array_equal(blocks @ x, matrix @ x)
        assert np.array_equal(transposed @ y, matrix.T.tocsr() @ y)


def test_galerkin_product_in_row_blocks_is_bit_identical_to_the_one_block_product(
        small_slabs, monkeypatch):
    P = sp.random(301, 90, density=0.05, random_state=4, format="csr")
    A = sp.random(301, 301, density=0.03, random_state=5, format="csr")
    A = (A + A.T).tocsr()
    monkeypatch.setattr(parallel, "BLOCK_NNZ", 100)
    restrict = RowBlocks(P.T, SlabPool(1))
    assert len(restrict._blocks) > 4
    monkeypatch.setattr(parallel, "BLOCK_NNZ", 10**9)
    whole = RowBlocks(P.T, SlabPool(1)).sparse_product(A, P)
    reference = (P.T @ A @ P).toarray()
    assert np.abs(whole.toarray() - reference).max() < 1e-14 * np.abs(reference).max()
    for threads in THREADS:
        restrict.pool.threads = threads
        blocked = restrict.sparse_product(A, P)
        assert np.array_equal(blocked.indptr, whole.indptr)
        assert np.array_equal(blocked.indices, whole.indices)
        assert np.array_equal(blocked.data, whole.data)


@pytest.mark.parametrize("cells", [(23, 7), (17, 5, 6)], ids=["2D 23x7", "3D 17x5x6"])
@pytest.mark.parametrize("radius", [1.5, 2.6])
def test_cone_filter_correlation_is_bit_identical_for_every_thread_count(cells, radius,
                                                                        small_slabs):
    mesh = rectangle(*cells) if len(cells) == 2 else box(*cells)
    centroids = mesh.points[mesh.cells].mean(axis=1)
    lattice = CentroidLattice.of(centroids)
    h = float(lattice.spacing[0])
    x = np.random.default_rng(4).uniform(0.0, 1.0, mesh.n_cells)
    stencil = ConeStencil(lattice, radius * h, np.ones(mesh.n_cells), threads=1)
    assert len(stencil._slabs) >= 3
    whole = lattice.from_grid(ndimage.correlate(lattice.to_grid(x), stencil.weights,
                                                mode="constant", cval=0.0))
    for threads in THREADS:
        stencil.pool.threads = threads
        assert np.array_equal(stencil.correlate(x), whole)


def test_thread_count_is_validated():
    with pytest.raises(ValueError, match="threads = 0 must be a positive integer"):
        SlabPool(0)
    with pytest.raises(ValueError, match="threads = 2.0"):
        SlabPool(2.0)


def hard_model():
    return elasticity(box(12, 6, 6, 2.0, 1.0, 1.0))


def test_gmg_solve_and_gradient_do_not_depend_on_the_thread_count(small_slabs, monkeypatch):
    """The whole solve (V-cycles, CG's dot products) and the gradient through
    ``lattice_solve`` are bit-identical for FESENS_THREADS = 1..4, and the gradient passes
    its Taylor test with 3 threads."""
    x = np.random.default_rng(0).uniform(0.1, 1.0, hard_model().mesh.n_cells)
    results = {}
    for threads in THREADS:
        monkeypatch.setenv("FESENS_THREADS", str(threads))
        problem = Differentiable(hard_model(), solver=("gmg", {
            "rtol": 1e-10, "matrix_free": True, "coarse_size": 50}))

        def J(x, problem=problem):
            return compliance(problem.solve(scale=x**3))

        results[threads] = (J(x), grad(J)(x), problem.solver.stats["last_iterations"])
        if threads == 3:
            assert taylor_test(J, x, verbose=False).rate > 1.9
    for threads in THREADS[1:]:
        assert results[threads][0] == results[1][0]
        assert np.array_equal(results[threads][1], results[1][1])
        assert results[threads][2] == results[1][2]


def test_pool_threads_follow_the_override_and_a_pool_pickles(monkeypatch):
    import pickle

    from fesens import openmp

    monkeypatch.setattr(openmp, "usable_cores", lambda: 5)
    monkeypatch.setattr(openmp, "other_runnable", lambda: 0)  # an idle machine
    monkeypatch.delenv("FESENS_THREADS", raising=False)
    pool = SlabPool()
    assert pool.threads == openmp.kernel_threads() == 5
    monkeypatch.setenv("FESENS_THREADS", "3")
    assert pool.threads == 3 and SlabPool(2).threads == 2
    assert pool.map(abs, [-1, -2, -3, -4]) == [1, 2, 3, 4]
    copy = pickle.loads(pickle.dumps(pool))  # a started pool: its threads stay behind
    assert copy.threads == 3 and copy.map(abs, [-5, -6]) == [5, 6]


def test_default_threads_back_off_while_other_work_runs(monkeypatch):
    """Unset ``FESENS_THREADS``: the usable cores less the other running tasks, at least
    1 (and all of them where ``/proc/loadavg`` cannot be read); set, it is taken as is."""
    from fesens import openmp

    monkeypatch.setattr(openmp, "usable_cores", lambda: 4)
    monkeypatch.delenv("FESENS_THREADS", raising=False)
    for others, expected in ((None, 4), (0, 4), (1, 3), (3, 1), (7, 1)):
        monkeypatch.setattr(openmp, "other_runnable", lambda others=others: others)
        assert openmp.kernel_threads() == expected == SlabPool().threads
    monkeypatch.setenv("FESENS_THREADS", "4")
    assert openmp.kernel_threads() == 4


def test_other_runnable_reads_the_running_count(monkeypatch, tmp_path):
    """The fourth field of ``/proc/loadavg`` is ``running/total``; the caller is one of
    the running tasks."""
    import builtins

    from fesens import openmp

    fake = tmp_path / "loadavg"
    real_open = builtins.open

    def fake_open(path, *args, **kwargs):
        return real_open(fake if path == "/proc/loadavg" else path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    for text, expected in (("0.5 1.0 1.5 3/120 999", 2), ("0.5 1.0 1.5 1/120 999", 0),
                           ("garbled", None)):
        fake.write_text(text)
        assert openmp.other_runnable() == expected
    fake.unlink()
    assert openmp.other_runnable() is None


def test_map_keeps_the_items_order_and_raises_after_every_thread_stopped():
    """Items taken from the shared counter land in their own places whatever thread ran
    them (uneven items, 1..4 threads), and an item's exception surfaces only once no
    thread is still running an item (they write into shared outputs)."""
    import threading
    import time

    items = [(i, 0.002 * (i % 3)) for i in range(11)]

    def slow(item):
        time.sleep(item[1])
        return item[0] ** 2

    for threads in THREADS:
        assert SlabPool(threads).map(slow, items) == [i**2 for i in range(11)]
    running, lock = [0], threading.Lock()

    def failing(i):
        with lock:
            running[0] += 1
        try:
            time.sleep(0.005)
            if i == 1:
                raise ValueError("item 1")
            return i
        finally:
            with lock:
                running[0] -= 1

    with pytest.raises(ValueError, match="item 1"):
        SlabPool(3).map(failing, list(range(6)))
    assert running[0] == 0

"""The BLAS threads of a direct solve follow the work of its factorization, which CHOLMOD's
symbolic analysis gives, and are chosen once per matrix structure."""

import numpy as np
import pytest
import scipy.sparse as sp

from fesens import openmp
from fesens.mesh import box, rectangle
from fesens.openmp import FactorWork, ThreadSettingError, blas_threads
from fesens.physics import Elasticity
from fesens.solvers.cholmod import cholmod_available, factor_work

needs_cholmod = pytest.mark.skipif(not cholmod_available(), reason="scikit-sparse missing")

LARGE_3D = FactorWork(flops=2.1e12, largest_front=7000, factor_entries=300_000_000)
MEASURED_48X24X24 = FactorWork(flops=1.3e11, largest_front=3675, factor_entries=74_000_000)
SMALL_2D = FactorWork(flops=4.1e8, largest_front=400, factor_entries=2_700_000)


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(openmp, "usable_cores", lambda: 2)
    for name in (openmp.THREADS_VARIABLE, *openmp.BLAS_VARIABLES):
        monkeypatch.delenv(name, raising=False)


def laplacian_2d(n: int) -> sp.csc_matrix:
    """The 5-point Laplacian on an ``n`` x ``n`` grid, ``(n², n²)``."""
    T = sp.diags([-1.0, 4.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kron(T, sp.eye(n)) + sp.kron(sp.eye(n), T)).tocsc()


@needs_cholmod
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_factor_work_counts_the_entries_of_the_factor(index):
    """The column counts agree with the factor CHOLMOD computes in the same order: a
    simplicial factor stores exactly the nonzeros of L, column by column."""
    from sksparse import cholmod

    A = laplacian_2d(15)
    factor = cholmod.analyze(A, mode="simplicial")
    factor.cholesky_inplace(A)
    L = factor.L().tocsc()
    counts = np.diff(L.indptr)
    A = sp.csc_matrix((A.data, A.indices.astype(index), A.indptr.astype(index)), shape=A.shape)
    work = factor_work(A, factor.P())
    assert work == FactorWork(flops=float(counts @ counts), largest_front=int(counts.max()),
                              factor_entries=L.nnz)


def test_rule_picks_one_thread_for_little_work_and_all_cores_for_large_fronts(two_cores):
    count, reason = blas_threads(641_600, 11_520_000, True, SMALL_2D)
    assert count == 1 and "4.10e+08 flops" in reason
    count, reason = blas_threads(250_000, 20_000_000, True, LARGE_3D)
    assert count == 2 and reason == ("direct solve of 2.10e+12 flops, largest front 7000: "
                                     "all usable cores")
    # two threads did not pay at 48x24x24 hex8 where they were measured
    count, reason = blas_threads(90_000, 6_810_462, True, MEASURED_48X24X24)
    assert count == 1 and reason.endswith("below 1e+12 flops, 1 thread")
    many_small_fronts = FactorWork(flops=1e12, largest_front=200, factor_entries=10**9)
    assert blas_threads(10**6, 10**7, True, many_small_fronts)[0] == 1
    # the work decides, not the unknowns: 250 000 3D rows were all cores under a row count
    assert blas_threads(250_000, 20_000_000, True)[0] == 2
    assert blas_threads(250_000, 20_000_000, True, SMALL_2D)[0] == 1


def test_override_and_user_cap_apply_to_the_work_rule(two_cores, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    count, reason = blas_threads(250_000, 20_000_000, True, LARGE_3D)
    assert count == 1 and reason.endswith("all usable cores, capped by the environment at 1")
    monkeypatch.setenv("FESENS_THREADS", "3")
    assert blas_threads(90_000, 6_810_462, True, SMALL_2D) == (3, "FESENS_THREADS=3")
    monkeypatch.setenv("FESENS_THREADS", "0")
    with pytest.raises(ThreadSettingError, match="FESENS_THREADS='0'"):
        blas_threads(90_000, 6_810_462, True, LARGE_3D)


def blas_counts() -> set[int]:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    return {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}


@needs_cholmod
def test_a_pattern_chooses_from_its_analysis_before_the_numeric_factorization(
        two_cores, monkeypatch):
    """With the crossover lowered below a small 3D problem's work, the pattern's direct
    solves get both cores, already in the first numeric factorization."""
    pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(openmp, "PARALLEL_MIN_FLOPS", 1e4)
    monkeypatch.setattr(openmp, "PARALLEL_MIN_FRONT", 10)
    model = Elasticity(box(4, 2, 2)).fix("left")
    model.traction("right", (0.0, -1.0, 0.0))
    pattern = model.operator("ff").pattern
    backend = pattern.solver("cholmod")
    told, seen = backend.on_analysis, []

    def spy(work):
        told(work)
        seen.append((work, blas_counts()))

    backend.on_analysis = spy
    with pytest.importorskip("threadpoolctl").threadpool_limits(limits=1, user_api="blas"):
        model.solve(scale=np.ones(model.mesh.n_cells), solver="cholmod")
        model.solve(scale=np.full(model.mesh.n_cells, 0.5), solver="cholmod")
    (work, counts), = seen  # one analysis for the structure
    assert counts == {2} and work == backend.work and work.flops > 1e4
    assert pattern.threads(direct=True) == (2, f"direct solve of {work.flops:.2e} flops, "
                                               f"largest front {work.largest_front}: all "
                                               "usable cores")


@needs_cholmod
def test_a_small_2d_model_factorizes_on_one_thread(two_cores):
    model = Elasticity(rectangle(40, 20), plane="stress").fix("left")
    model.point_load((1.0, 0.0), (0.0, -1.0))
    pattern = model.operator("ff").pattern
    with pytest.importorskip("threadpoolctl").threadpool_limits(limits=2, user_api="blas"):
        model.solve(scale=np.ones(model.mesh.n_cells), solver="cholmod")
        assert blas_counts() == {1}
    count, reason = pattern.threads(direct=True)
    assert count == 1 and "flops" in reason and "1 thread" in reason


@needs_cholmod
def test_auto_passes_the_work_of_its_direct_backend_on(two_cores):
    from fesens.ad.sparse import solve

    model = Elasticity(box(4, 2, 2)).fix("left")
    K = model.stiffness("ff", scale=np.ones(model.mesh.n_cells))
    solve(K, np.ones(K.shape[0]), solver="auto")
    assert K.pattern.solver("auto").choice == "cholmod"
    assert "flops" in K.pattern.threads(direct=True)[1]

"""The shared CG, smoother and power iteration (fesens.solvers.krylov) and gmg's ``device``
option: CG reaches the direct solution; the pooled operations give the array library's
results bit for bit and the same for every thread count; the Chebyshev smoother reduces the
error; failures raise the specific errors; ``device`` is refused without ``matrix_free``
and follows a changed ``rtol``.

Reference: scipy's sparse direct solve (``spsolve``) of the same matrix."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from fesens.errors import NonFiniteError, SolverError
from fesens.fem.model.matrix_free import lattice_system
from fesens.mesh import box
from fesens.physics import Elasticity
from fesens.solvers import make_solver
from fesens.solvers.krylov import ArrayOps, PooledOps, largest_eigenvalue, pcg, smooth
from fesens.solvers.lattice_operator import LatticeOperator
from fesens.solvers.parallel import VECTOR_PIECE, SlabPool


def laplacian(n: int, shift: float = 0.01) -> sp.csr_matrix:
    """The 1D Dirichlet Laplacian plus ``shift`` on the diagonal (SPD)."""
    return sp.diags([-np.ones(n - 1), (2.0 + shift) * np.ones(n), -np.ones(n - 1)],
                    [-1, 0, 1], format="csr")


def jacobi_cg(A, b, ops, x0=None, rtol=1e-10, maxiter=5000):
    inverse_diagonal = 1.0 / A.diagonal()
    return pcg(lambda v: A @ v, lambda r: inverse_diagonal * r, b, x0, rtol=rtol,
               maxiter=maxiter, ops=ops, name="test")


def test_pcg_reaches_the_direct_solution_with_either_operations():
    A = laplacian(400)
    b = np.random.default_rng(0).standard_normal(400)
    exact = spla.spsolve(A.tocsc(), b)
    plain = jacobi_cg(A, b, ArrayOps(np))
    pooled = jacobi_cg(A, b, PooledOps(SlabPool(2)))
    x, iterations, residual = plain
    assert residual <= 1e-10 and iterations > 0
    assert np.linalg.norm(b - A @ x) / np.linalg.norm(b) <= 1e-10
    assert np.linalg.norm(x - exact) / np.linalg.norm(exact) < 1e-6
    # one piece: the pooled dot products and updates are numpy's own
    assert np.array_equal(pooled[0], x) and pooled[1:] == plain[1:]


def test_pooled_pcg_is_the_same_for_every_thread_count():
    n = 2 * VECTOR_PIECE + 1000  # three pieces
    A = laplacian(n, shift=0.5)
    b = np.random.default_rng(1).standard_normal(n)
    x0 = np.random.default_rng(2).standard_normal(n) * 1e-3
    runs = [jacobi_cg(A, b, PooledOps(SlabPool(threads)), x0=x0, rtol=1e-9)
            for threads in (1, 2, 3)]
    for x, iterations, residual in runs[1:]:
        assert np.array_equal(x, runs[0][0])
        assert (iterations, residual) == runs[0][1:]
    assert runs[0][2] <= 1e-9


def test_pcg_leaves_the_guess_alone_and_returns_zero_for_zero():
    A = laplacian(50)
    b = np.ones(50)
    x0 = np.full(50, 0.1)
    kept = x0.copy()
    jacobi_cg(A, b, PooledOps(SlabPool(1)), x0=x0)
    assert np.array_equal(x0, kept)
    x, iterations, residual = jacobi_cg(A, np.zeros(50), ArrayOps(np))
    assert not np.any(x) and (iterations, residual) == (0, 0.0)


def test_pcg_refuses_an_indefinite_operator_and_nan():
    A = laplacian(30) - 3.0 * sp.identity(30, format="csr")
    b = np.ones(30)
    with pytest.raises(SolverError, match="test: CG met non-positive curvature"):
        pcg(lambda v: A @ v, lambda r: r, b, None, rtol=1e-8, maxiter=100,
            ops=ArrayOps(np), name="test")
    B = laplacian(30)
    b[3] = np.nan
    with pytest.raises(NonFiniteError, match="test: the solution holds NaN"):
        pcg(lambda v: B @ v, lambda r: r, b, None, rtol=1e-8, maxiter=5,
            ops=ArrayOps(np), name="test")


def test_pcg_reports_the_true_residual_of_a_miss():
    A = laplacian(200)
    b = np.random.default_rng(3).standard_normal(200)
    x, iterations, residual = jacobi_cg(A, b, ArrayOps(np), maxiter=5)
    assert iterations == 5
    assert residual == pytest.approx(np.linalg.norm(b - A @ x) / np.linalg.norm(b),
                                     rel=1e-12)
    assert residual > 1e-10


@pytest.mark.parametrize("smoother", ["chebyshev", "jacobi"])
def test_smoothing_reduces_the_error_and_agrees_across_operations(smoother):
    A = laplacian(300)
    exact = np.random.default_rng(4).standard_normal(300)
    b = A @ exact
    D = 1.0 / A.diagonal()
    lam = largest_eigenvalue(lambda v: A @ v, D, np.ones(300), ArrayOps(np))
    # D⁻¹A of the Laplacian has eigenvalues below 2; twelve power iterations approach
    # its largest from below (hence the smoother's upper factor 1.1)
    assert 1.5 < lam <= 2.01
    results = []
    for ops in (ArrayOps(np), PooledOps(SlabPool(2))):
        x = smooth(lambda v: A @ v, D, lam, b, None, smoother=smoother, degree=3, ops=ops)
        x = smooth(lambda v: A @ v, D, lam, b, x, smoother=smoother, degree=3, ops=ops)
        results.append(x)
    assert np.array_equal(*results)
    # the smoother damps the high frequencies: the residual drops
    assert np.linalg.norm(b - A @ results[0]) < 0.5 * np.linalg.norm(b)


def test_gmg_device_needs_matrix_free_and_a_known_device():
    with pytest.raises(ValueError, match="device = 'numpy' runs the matrix-free"):
        make_solver("gmg", device="numpy")
    with pytest.raises(ValueError, match="device = 'tpu' is unknown"):
        make_solver("gmg", matrix_free=True, device="tpu")


def test_gmg_device_solves_follow_a_changed_rtol():
    model = Elasticity(box(8, 4, 4, 2.0, 1.0, 1.0), E=1.0, nu=0.3).fix("left")
    structure = lattice_system(model, model.stiffness_fields()[0]).structure
    operator = LatticeOperator(structure, np.ones(structure.n_cells))
    b = np.random.default_rng(5).standard_normal(structure.n)
    solver = make_solver("gmg", matrix_free=True, device="numpy", rtol=1e-10,
                         warm_start=False)
    solver.factorize(operator)
    solver.solve(b)
    tight = solver.stats["last_iterations"]
    solver.rtol = 1e-3  # as an optimization's adaptive tolerance does
    solver.solve(b)
    assert solver.stats["last_residual"] <= 1e-3
    assert solver.stats["last_iterations"] < tight

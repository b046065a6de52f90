"""The AD benchmark workloads as correctness tests (their timings live in benchmarks/bench_ad.py).

1. ``grad`` of ``sum(x**2)`` and of ``sum(f(x))`` for elementwise ``f``, n = 100 and 10^6.
2. ``f(x) = Σ_k x·(A_k x)`` with ten constant 500x500 matrices: gradient w.r.t. x only.
3. ``‖A(x)⁻¹ b‖`` with A's values depending on x through the pattern primitive, and its
   dense version (``A_ij = K_ij + x_j²`` through ``np.linalg.solve``).
4. Derivatives at x = 2 of three scalar functions, values from 30-digit arithmetic.
"""

import gc
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from fesens.ad import SparsePattern, check_grad, grad, solve, sparse_matrix, taylor_test


@pytest.mark.parametrize("n", [100, 10**6])
def test_workload1_sum_of_squares_and_elementwise(n):
    x = np.random.default_rng(0).standard_normal(n)
    assert np.array_equal(grad(lambda x: np.sum(x**2))(x), 2 * x)
    g = grad(lambda x: np.sum(np.tanh(x) * np.exp(-(x**2))))(x)
    expected = (1 - np.tanh(x) ** 2) * np.exp(-(x**2)) - 2 * x * np.tanh(x) * np.exp(-(x**2))
    assert np.allclose(g, expected, rtol=1e-13, atol=1e-15)


def test_workload2_constant_matrices_get_no_gradient_and_no_memory():
    rng = np.random.default_rng(1)
    n = 500
    matrices = [rng.standard_normal((n, n)) for _ in range(10)]
    x = rng.standard_normal(n)

    def f(x):
        return sum(x @ (A @ x) for A in matrices)

    expected = sum((A + A.T) @ x for A in matrices)
    gc.collect()
    tracemalloc.start()
    g = grad(f)(x)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert np.allclose(g, expected, rtol=1e-12)
    # Nothing of size n² (2 MB per matrix) is allocated: only O(n) vectors and the tape.
    assert peak < 200 * n * 8, peak


def laplacian_pattern(m):
    """5-point Laplacian on an m x m grid (n = m²), SPD with a shifted diagonal."""
    one_d = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    A = sp.kronsum(one_d, one_d, format="csr") + sp.identity(m * m, format="csr")
    return SparsePattern.of(A), sp.csr_matrix(A).data.copy()


@pytest.mark.parametrize("m", [15, 100])  # n = 225 and n = 10^4
def test_workload3_norm_of_sparse_solve(m):
    pattern, base = laplacian_pattern(m)
    rng = np.random.default_rng(2)
    b = rng.standard_normal(m * m)
    rows, cols = pattern.rows, pattern.cols

    def f(x):
        data = base * (1.0 + 0.5 * np.sin(x[rows]) * np.sin(x[cols]))
        return np.linalg.norm(solve(sparse_matrix(pattern, data), b))

    x = rng.uniform(0.5, 1.5, m * m)
    assert abs(taylor_test(f, x, verbose=False).rate - 2) < 0.1
    check_grad(f, x)


@pytest.mark.parametrize("m", [5, 15])  # n = 25 and 225
def test_workload3_dense_version_agrees_with_central_differences(m):
    pattern, base = laplacian_pattern(m)
    K = np.zeros(pattern.shape)
    K[pattern.rows, pattern.cols] = base
    rng = np.random.default_rng(3)
    b = rng.standard_normal(m * m)

    def J(x):
        A = K + x[None, :] ** 2  # A[i, j] = K[i, j] + x[j]**2
        return np.linalg.norm(np.linalg.solve(A, b))

    x = rng.uniform(0.5, 1.5, m * m)
    # the step balances truncation against the rounding of the solve (κ ≈ 230 at m = 15),
    # measured on J itself: a fixed step's rounding moves with the OpenBLAS kernel
    check_grad(J, x, n_directions=3, rtol=1e-7, seed=3)
    assert abs(taylor_test(J, x, verbose=False).rate - 2) < 0.1


def test_workload3_dense_element_assignment_is_refused_with_the_supported_form_named():
    """Writing a traced entry into a numpy array would cut the gradient, so it raises (numpy
    reports a ValueError caused by fesens's TypeError); ``K + x[None, :] ** 2`` builds the
    same matrix, traced."""
    K = np.eye(3)

    def J(x):
        A = K.copy()
        A[0, 1] = K[0, 1] + x[1] ** 2
        return np.sum(A)

    with pytest.raises((TypeError, ValueError)) as info:
        grad(J)(np.ones(3))
    causes = [info.value, info.value.__cause__, info.value.__context__]
    assert any("cut the gradient" in str(c) for c in causes if c is not None)


# Values computed with 30-digit arithmetic (mpmath).
X = 2.0
FIRST = {"f": 25600.0, "g": -996.8044243595134, "h": -105.63101149036947}
SECOND = {"f": 115200.0, "g": -1510.463176770015, "h": 825.4713296885561}
FUNCTIONS = {
    "f": lambda x: 5 * x**10,
    "g": lambda x: 3 * x**3 * (np.cos(x) - 10 * x),
    "h": lambda x: np.exp((5 * x / 2) * np.sin(x) ** np.exp(x)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_workload4_first_and_second_derivatives(name):
    f = FUNCTIONS[name]
    assert grad(f)(X) == pytest.approx(FIRST[name], rel=1e-12)
    assert grad(grad(f))(X) == pytest.approx(SECOND[name], rel=1e-10)

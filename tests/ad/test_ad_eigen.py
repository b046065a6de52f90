"""The eigenvalue primitive (fesens/ad/eigen.py) on pattern matrices: Taylor tests of
``dλ_i = φ_iᵀ (dK − λ_i dM) φ_i`` in the values of K and M (the per-cell contraction of
its outer-factor cotangents is checked in tests/fem/test_modal.py)."""

import numpy as np
import pytest
import scipy.sparse as sp

from fesens.ad import taylor_test
from fesens.ad.eigen import eigenpairs
from fesens.ad.sparse import SparsePattern, sparse_matrix


def _pencil(n=90):
    rng = np.random.default_rng(0)
    K = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")
    M = sp.diags([0.1 * np.ones(n - 1), 1 + rng.random(n), 0.1 * np.ones(n - 1)], [-1, 0, 1],
                 format="csr")
    pattern = SparsePattern.of(K)
    return pattern, sp.csr_matrix(K).data.copy(), sp.csr_matrix(M).data.copy()


@pytest.mark.parametrize("which", ["K", "M"])
def test_eigenvalue_taylor_in_matrix_values(which):
    pattern, k_data, m_data = _pencil()
    # a symmetric direction (the pencil must stay symmetric)
    rng = np.random.default_rng(1)
    lower = sp.tril(sp.csr_matrix((rng.random(pattern.nnz), pattern.indices, pattern.indptr),
                                  shape=pattern.shape))
    direction = sp.csr_matrix(lower + lower.T)
    direction = sp.csr_matrix((np.asarray(direction[pattern.rows, pattern.cols]).ravel(),
                               pattern.indices, pattern.indptr), shape=pattern.shape).data

    def smallest(data):
        K = sparse_matrix(pattern, data if which == "K" else k_data)
        M = sparse_matrix(pattern, data if which == "M" else m_data)
        values, _ = eigenpairs(K, M, 3, solver="cholmod")
        return values[0] + 2 * values[2]

    start = k_data if which == "K" else m_data
    result = taylor_test(smallest, start, direction, step=1e-3)
    assert result.rate == pytest.approx(2, abs=0.1)


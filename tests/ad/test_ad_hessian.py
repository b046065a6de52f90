"""Hessian-vector products: ``fesens.ad.hvp`` and ``value_grad_hvp`` against closed forms
and central differences of the gradient, and the solves they cost (one factorization)."""

import numpy as np
import pytest
from ad_helpers import laplacian_2d, normal, uniform

from fesens.ad import SparsePattern, grad, solve, sparse_matrix
from fesens.solvers import available_solvers, make_solver

A = laplacian_2d(5, shift=2.0)
PATTERN = SparsePattern.of(A)
BASE = A.tocsr().data.copy()
ON_DIAGONAL = (PATTERN.rows == PATTERN.cols).astype(float)
N = A.shape[0]
B, C = normal(N, seed=11), normal(N, seed=12)
S, V = uniform(N, 0.0, 1.0, seed=13), normal(N, seed=14)
needs_cholmod = pytest.mark.skipif("cholmod" not in available_solvers(),
                                   reason="scikit-sparse missing")


def _output(s, backend):
    """``½ Σ c ⊙ u²``, ``u = (A + diag s³)⁻¹ b``: the adjoint's right-hand side ``c ⊙ u``
    depends on ``s``, so the second sweep differentiates both arguments of the adjoint
    solve."""
    K = sparse_matrix(PATTERN, BASE + (s**3)[PATTERN.rows] * ON_DIAGONAL)
    u = solve(K, B, solver=backend)
    return 0.5 * np.sum(C * u * u)


@needs_cholmod
def test_nested_hessian_vector_product_costs_four_solves_and_one_factorization():
    """Forward, adjoint, and one solve per adjoint rule in the second sweep: the VJP of the
    adjoint solve gives ``K̄`` and ``ḡ`` from one solve, not one each."""
    backend = make_solver("cholmod")
    grad(lambda s: grad(_output)(s, backend) @ V)(S)
    assert backend.stats["n_numeric"] == 1
    assert backend.stats["n_solves"] == 4

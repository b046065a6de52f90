"""The tangent's cell matrices ``Σ_q Bᵀ (w A) B`` and their transposed action, against the
contraction written out index by index."""

import numpy as np
import pytest

from fesens.fem.integrals import kernels
from fesens.fem.integrals.kernels import gradient_form, transposed_tangent_action


def _inputs(n_cells, n_qp, n, dim, seed=0):
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.5, 1.0, (n_cells, n_qp))
    dNdx = rng.standard_normal((n_cells, n_qp, n, dim))
    A = rng.standard_normal((n_cells, n_qp, dim, dim, dim, dim))
    return weights, dNdx, A


def _reference(weights, dNdx, A):
    """``K_(e,a,c,b,d) = Σ_q w_eq Σ_kl ∂N_a/∂x_k A_(e,q,ckdl) ∂N_b/∂x_l``."""
    n_cells = A.shape[0]
    weights = np.broadcast_to(weights, (n_cells, weights.shape[1]))
    dNdx = np.broadcast_to(dNdx, (n_cells, *dNdx.shape[1:]))
    return np.einsum("eq,eqak,eqckdl,eqbl->eacbd", weights, dNdx, A, dNdx)


def _close(K, expected):
    return np.max(np.abs(K - expected)) <= 1e-13 * np.max(np.abs(expected))


@pytest.mark.parametrize(("n_qp", "n", "dim"), [(4, 4, 2), (8, 8, 3), (9, 9, 2)])
@pytest.mark.parametrize("layout", ["per cell", "one cell", "broadcast"])
def test_gradient_form_equals_the_contraction(n_qp, n, dim, layout):
    weights, dNdx, A = _inputs(7, n_qp, n, dim)
    if layout == "one cell":  # a structured grid: one cell's gradients and weights
        dNdx, weights = dNdx[:1], weights[:1]
    elif layout == "broadcast":
        dNdx = np.broadcast_to(dNdx[:1], dNdx.shape)
    K = gradient_form(weights, dNdx, A)
    assert K.shape == (7, n, dim, n, dim)
    assert _close(K, _reference(weights, dNdx, A))


@pytest.mark.parametrize("shared", [True, False])
def test_gradient_form_in_several_blocks(monkeypatch, shared):
    """Blocks of a few cells give the matrices of one block."""
    weights, dNdx, A = _inputs(11, 4, 4, 2, seed=1)
    if shared:
        dNdx = dNdx[:1]
    whole = gradient_form(weights, dNdx, A)
    monkeypatch.setattr(kernels, "_FORM_BLOCK_BYTES", 3 * 8 * 400)
    np.testing.assert_array_equal(gradient_form(weights, dNdx, A), whole)
    assert _close(whole, _reference(weights, dNdx, A))


def test_gradient_form_of_a_broadcast_tangent():
    """``A`` of one point broadcast to every cell and point (a linear law)."""
    weights, dNdx, A = _inputs(5, 4, 4, 2, seed=2)
    A_one = np.broadcast_to(A[:1, :1], A.shape)
    assert _close(gradient_form(weights, dNdx[:1], A_one),
                  _reference(weights, dNdx[:1], np.array(A_one)))


@pytest.mark.parametrize("shared", [True, False])
def test_transposed_action_is_the_transposed_matrix(shared):
    """``v ↦ Kᵀ v`` of :func:`transposed_tangent_action` with a ``∂P/∂u`` term, against the
    cell matrices of :func:`gradient_form` plus that term, transposed."""
    rng = np.random.default_rng(3)
    weights, dNdx, A = _inputs(6, 4, 4, 2, seed=3)
    if shared:
        dNdx = dNdx[:1]
    N = rng.uniform(0.0, 1.0, (4, 4))
    D = rng.standard_normal((6, 4, 2, 2, 2))
    K = gradient_form(weights, dNdx, A) + np.einsum(
        "eq,eqak,eqckd,qb->eacbd", weights, np.broadcast_to(dNdx, (6, 4, 4, 2)), D, N)
    v = rng.standard_normal((6, 4, 2))
    expected = np.einsum("eacbd,eac->ebd", K, v)
    action = transposed_tangent_action(weights, dNdx, A, N, D)
    assert _close(action(v), expected)

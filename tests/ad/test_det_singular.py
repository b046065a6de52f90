"""The derivative of ``det`` where the matrix is singular: Jacobi's formula with the
adjugate, ``∂ det A / ∂A = adj(A)ᵀ`` (Magnus & Neudecker, *Matrix Differential Calculus*,
3rd ed., 2019, ch. 8, §3), which exists for every ``A`` (a zero displacement gradient, a
degenerate element), where ``det(A) A⁻ᵀ`` does not."""

import numpy as np
import pytest

from fesens.ad import grad, jvp
from fesens.ad.numpy_vjps import cofactors

SINGULAR = {
    "zero 2x2": np.zeros((2, 2)),
    "rank one 2x2": np.array([[1.0, 2.0], [2.0, 4.0]]),
    "zero 3x3": np.zeros((3, 3)),
    "rank two 3x3": np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 1.0], [1.0, 3.0, 4.0]]),
}


def closed_form(a: np.ndarray) -> np.ndarray:
    """``adj(A)ᵀ``, entry by entry: ``(−1)^(i+j)`` times the minor of ``A_ij``."""
    n = a.shape[0]
    out = np.zeros_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, 0), j, 1)
            out[i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if minor.size else 1.0)
    return out


@pytest.mark.parametrize("name", list(SINGULAR))
def test_gradient_of_det_at_a_singular_matrix(name):
    a = SINGULAR[name]
    expected = closed_form(a)
    assert np.allclose(grad(np.linalg.det)(a), expected, atol=1e-14)
    direction = np.arange(1.0, a.size + 1).reshape(a.shape)
    _, slope = jvp(np.linalg.det, (a,), (direction,))
    assert slope == pytest.approx(np.sum(expected * direction), abs=1e-13)


def test_cofactors_of_a_regular_stack_are_det_times_the_inverse_transposed():
    rng = np.random.default_rng(0)
    for n in (2, 3, 4):
        a = rng.standard_normal((5, n, n)) + 3 * np.eye(n)
        expected = np.linalg.det(a)[:, None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)
        assert np.allclose(cofactors(a), expected, rtol=1e-12, atol=1e-12)

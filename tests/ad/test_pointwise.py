"""Derivatives of pointwise functions (:mod:`fesens.ad.pointwise`): closed forms, the exact
Hessian of a quadratic, shapes, and Taylor tests of the gradient on traced inputs."""

import numpy as np
import pytest

from fesens.ad import grad, pointwise, taylor_test
from fesens.ad.pointwise import (
    pointwise_grad,
    pointwise_hessian,
    scalar_partials,
    scalar_partials_hessian,
)


def _sine_quadratic(x, a):
    """``Σ_k a_k x_k² + sin x_k`` per point: gradient ``2 a x + cos x``, Hessian
    ``diag(2 a − sin x)``."""
    return np.sum(a * x * x + np.sin(x), axis=-1)


def test_closed_form_gradient_and_hessian():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7, 3))
    a = rng.random(3)
    np.testing.assert_allclose(pointwise_grad(_sine_quadratic, x, a), 2 * a * x + np.cos(x),
                               rtol=1e-14)
    hessian = pointwise_hessian(_sine_quadratic, x, a)
    assert hessian.shape == (5, 7, 3, 3)
    expected = (2 * a - np.sin(x))[..., None] * np.eye(3)
    np.testing.assert_allclose(hessian, expected, rtol=1e-14, atol=1e-15)


def test_hessian_of_a_random_quadratic_is_exact():
    """``f = ½ xᵀ Q x + bᵀ x`` with a different ``Q`` at every point: ``∇²f = (Q + Qᵀ)/2``
    to round-off, for vector and matrix points."""
    rng = np.random.default_rng(1)
    for event in [(4,), (3, 3)]:
        m = int(np.prod(event))
        x = rng.standard_normal((6,) + event)
        Q = rng.standard_normal((6, m, m))
        b = rng.standard_normal((6, m))

        def quadratic(y, Q, b, m=m):
            flat = np.reshape(y, (6, m))
            return 0.5 * np.sum(flat * np.sum(Q * flat[:, None, :], axis=-1), axis=-1) \
                + np.sum(b * flat, axis=-1)

        hessian = pointwise_hessian(quadratic, x, Q, b, event_ndim=len(event))
        assert hessian.shape == x.shape + event
        np.testing.assert_allclose(hessian.reshape(6, m, m), 0.5 * (Q + np.swapaxes(Q, 1, 2)),
                                   rtol=0, atol=1e-14)
        gradient = pointwise_grad(quadratic, x, Q, b)
        np.testing.assert_allclose(gradient.reshape(6, m),
                                   np.einsum("pij,pj->pi", 0.5 * (Q + np.swapaxes(Q, 1, 2)),
                                             x.reshape(6, m)) + b, rtol=1e-13)


def _energy(F, c):
    """A matrix-point energy ``c ln(1 + |F|²) + det F`` ``(...)``."""
    return c * np.log1p(np.sum(np.sum(F * F, axis=-1), axis=-1)) + np.linalg.det(F)


def test_matrix_points_against_reverse_mode_of_each_point():
    rng = np.random.default_rng(2)
    F = rng.standard_normal((4, 3, 3))
    c = rng.random((4,))
    gradient = pointwise_grad(_energy, F, c)
    hessian = pointwise_hessian(_energy, F, c, event_ndim=2)
    for p in range(4):
        def energy(f, c_p=c[p]):
            return _energy(f, c_p)

        np.testing.assert_allclose(gradient[p], grad(energy)(F[p]), rtol=1e-13)
        for k in range(3):
            for L in range(3):
                column = grad(lambda f, k=k, L=L, e=energy: grad(e)(f)[k, L])(F[p])
                np.testing.assert_allclose(hessian[p, :, :, k, L], column, rtol=1e-12,
                                           atol=1e-14)


def test_the_gradient_is_differentiable_in_the_points_and_the_parameters():
    """Taylor test (rate 2) of a scalar of the traced pointwise gradient in ``x`` and ``c``."""
    rng = np.random.default_rng(3)
    F, c = rng.standard_normal((4, 3, 3)), rng.random((4,))
    weights = rng.standard_normal((4, 3, 3))

    def response(z):
        return np.sum(weights * pointwise_grad(_energy, z["F"], z["c"]))

    result = taylor_test(response, {"F": F, "c": c}, verbose=False)
    assert result.rate > 1.9, result.table()


def test_event_ndim_is_checked():
    with pytest.raises(ValueError, match="event_ndim"):
        pointwise_hessian(_sine_quadratic, np.zeros((2, 3)), 1.0, event_ndim=3)


def _cubic(a, b, c, k):
    """``k a² b + ln c`` per point."""
    return k * a * a * b + np.log(c)


def test_scalar_partials_and_their_hessian_in_closed_form():
    rng = np.random.default_rng(5)
    a, b, c = rng.random((3, 4, 5)) + 0.5
    k = rng.random((4, 1))
    expected = (2 * k * a * b, k * a * a, 1 / c)
    for got, want in zip(scalar_partials(_cubic, (a, b, c), k), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-14)
    gradient, hessian = scalar_partials_hessian(_cubic, (a, b, c), k)
    np.testing.assert_allclose(gradient, np.stack(expected), rtol=1e-14)
    zero = np.zeros_like(a)
    np.testing.assert_allclose(hessian, np.stack([
        np.stack([2 * k * b + zero, 2 * k * a, zero]),
        np.stack([2 * k * a, zero, zero]),
        np.stack([zero, zero, -1 / c**2])]), rtol=1e-14, atol=0)


def test_blocks_of_points_give_the_same_hessians(monkeypatch):
    """Blocks of a few points (per-point parameters sliced with them, shared ones whole)
    give the Hessians of one sweep over all points, bit for bit."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((50, 2, 3, 3))
    c = rng.random((50, 1))
    a, b, v = rng.random((3, 50, 2)) + 0.5
    whole = (pointwise_hessian(_energy, x, c, event_ndim=2),
             *scalar_partials_hessian(_cubic, (a, b, v), c))
    monkeypatch.setattr(pointwise, "_BLOCK_BYTES", 8 * 2 * 7)  # blocks of 1 and 7 rows
    blocks = (pointwise_hessian(_energy, x, c, event_ndim=2),
              *scalar_partials_hessian(_cubic, (a, b, v), c))
    for got, want in zip(blocks, whole, strict=True):
        np.testing.assert_array_equal(got, want)

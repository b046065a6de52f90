"""Shared pieces of the AD tests: seeded inputs, a scalarisation, the two gradient checks,
small sparse test matrices and a scratch VJP registry."""

import numpy as np
import pytest
import scipy.sparse as sp

from fesens.ad import check_grad, registry, taylor_test


def normal(shape, seed: int) -> np.ndarray:
    """Standard-normal array of ``shape`` (a fixed seed per call site)."""
    return np.random.default_rng(seed).standard_normal(shape)


def uniform(shape, low: float, high: float, seed: int) -> np.ndarray:
    """Uniform array of ``shape`` in ``[low, high)``."""
    return np.random.default_rng(seed).uniform(low, high, shape)


def signed(shape, seed: int) -> np.ndarray:
    """Entries of random sign with ``0.5 <= |x| < 1.5``: away from the kinks at zero."""
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.5, 1.5, shape)


def spaced(shape, seed: int, start: float = 0.5, gap: float = 0.1) -> np.ndarray:
    """Distinct values ``start + gap * k`` in random order.

    Taylor steps move an entry by at most ``1e-2 * max(1, |x|_inf)``, far less than
    ``gap / 2``, so the argmax/argmin and every ordering between entries stay put.
    """
    size = int(np.prod(shape))
    order = np.random.default_rng(seed).permutation(size)
    return (start + gap * order).reshape(shape)


def scalarise(y, seed: int = 7):
    """``Σ exp(w ⊙ y)`` with fixed weights ``0.3 <= w < 0.7`` shaped like ``y``.

    Makes a scalar of a non-scalar output. Its second derivative along any direction is
    positive (no cancellation in the Taylor remainder of a linear ``y``), and its third
    derivative does not vanish, so Hessian-vector products of linear primitives are
    not trivially zero.
    """
    w = uniform(np.shape(y), 0.3, 0.7, seed)
    return np.sum(np.exp(w * y))


def assert_gradient(f, x, *, step: float | None = None, fd_eps: float = 1e-6,
                    fd_rtol: float = 1e-5) -> None:
    """Taylor remainder rate within 0.1 of 2, and central differences agree.

    ``step`` is the first Taylor step (default: ``taylor_test``'s own).
    """
    rate = taylor_test(f, x, step=step, verbose=False).rate
    assert abs(rate - 2.0) < 0.1, f"Taylor remainder converges at rate {rate:.3f}, not 2"
    check_grad(f, x, eps=fd_eps, rtol=fd_rtol)


def laplacian_2d(m: int, shift: float = 1.0) -> sp.csr_matrix:
    """Five-point Laplacian on an ``m x m`` grid plus ``shift * I``: SPD, ``(m², m²)``."""
    one_d = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    eye = sp.identity(m * m, format="csr")
    return (sp.kronsum(one_d, one_d, format="csr") + shift * eye).tocsr()


def convection_diffusion_2d(m: int, velocity: float = 0.8) -> sp.csr_matrix:
    """``laplacian_2d(m)`` plus upwind convection in x: non-symmetric, ``(m², m²)``."""
    upwind = sp.diags([-np.ones(m - 1), np.ones(m)], [-1, 0])
    return (laplacian_2d(m) + velocity * sp.kron(sp.eye(m), upwind)).tocsr()


@pytest.fixture
def scratch_rules(monkeypatch):
    """Let a test register VJP rules for its own primitives without leaking them."""
    monkeypatch.setattr(registry, "_PER_ARGUMENT", dict(registry._PER_ARGUMENT))
    monkeypatch.setattr(registry, "_JOINT", dict(registry._JOINT))
    monkeypatch.setattr(registry, "_ARGNUM", dict(registry._ARGNUM))
    monkeypatch.setattr(registry, "_ANS_FREE",
                        {fun: set(argnums) for fun, argnums in registry._ANS_FREE.items()})
    # the tape's cache of ``needs_ans`` is derived from the rules: drop what the test saw
    registry.ANS_FLAGS.clear()
    yield
    registry.ANS_FLAGS.clear()

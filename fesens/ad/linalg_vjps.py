"""Dense ``numpy.linalg`` beyond ``solve``, ``inv`` and ``det``: ``slogdet``, ``cholesky``,
``eigh``/``eigvalsh``, the norm variants, ``matrix_power`` and ``multi_dot``.

Rules follow M. B. Giles, "An extended collection of matrix derivative results for forward
and reverse mode algorithmic differentiation" (2008), and I. Murray, "Differentiation of
the Cholesky decomposition" (2016, arXiv:1602.07527), written with traced numpy so that
forward mode and nested ``grad`` differentiate them again. ``cholesky`` and ``eigh`` read
one triangle of a symmetric matrix: their rules return the symmetric cotangent, the
gradient for symmetric perturbations (as autograd and JAX do).
"""

from __future__ import annotations

from collections import namedtuple
from functools import reduce

import numpy as np

from fesens.ad import numpy_wrapper as w
from fesens.ad.dispatch import register_function
from fesens.ad.numpy_vjps import _swap_last
from fesens.ad.registry import defvjp
from fesens.ad.tracer import Box, primitive

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])


def _symmetric_part(x):
    return 0.5 * (x + _swap_last(x))


# ------------------------------------------------------------------ slogdet
@primitive
def logabsdet(a):
    """``log |det A|`` of the matrices of ``a``: ``(..., n, n)`` → ``(...)``."""
    return np.linalg.slogdet(a)[1]


# Giles 2008, §2.2.4: d log|det A| = tr(A⁻¹ dA), so Ā = ḡ A⁻ᵀ
defvjp(logabsdet, lambda ans, a: lambda g: np.expand_dims(g, (-2, -1)) * _swap_last(w.inv(a)),
       uses_ans=False)


def _slogdet(a):
    return SlogdetResult(np.linalg.slogdet(w.getval(a))[0], logabsdet(a))


# ------------------------------------------------------------------ cholesky
@primitive
def cholesky(a):
    """Lower Cholesky factors ``L`` (``A = L Lᵀ``) of the SPD matrices of ``a``."""
    return np.linalg.cholesky(a)


def _cholesky_vjp(L, a):
    """Murray 2016, eq. 10: ``Ā = sym(L⁻ᵀ Φ(Lᵀ L̄) L⁻¹)``, ``Φ`` the lower triangle with the
    diagonal halved."""
    n = np.shape(a)[-1]
    halve = np.tril(np.ones((n, n))) - 0.5 * np.eye(n)
    L_t = _swap_last(L)

    def vjp(g):
        phi = (L_t @ g) * halve
        left = w.dense_solve(L_t, phi)  # L⁻ᵀ Φ
        return _symmetric_part(_swap_last(w.dense_solve(L_t, _swap_last(left))))

    return vjp


defvjp(cholesky, _cholesky_vjp)


# ------------------------------------------------------------------ eigh
@primitive
def eigh_packed(a, UPLO="L"):  # noqa: N803 - mirrors numpy
    """``np.linalg.eigh`` packed in one array ``(..., n + 1, n)``: row 0 holds the
    eigenvalues (ascending), rows 1 to n the eigenvectors as columns."""
    values, vectors = np.linalg.eigh(a, UPLO)
    return np.concatenate([values[..., None, :], vectors], axis=-2)


def _eigh_vjp(ans, a, UPLO="L"):  # noqa: N803
    """Giles 2008, §3.1 (symmetric case): ``Ā = V (diag(w̄) + F ∘ (Vᵀ V̄)) Vᵀ`` with
    ``F_ij = 1 / (w_j − w_i)``, ``F_ii = 0``.

    Needs distinct eigenvalues when the eigenvectors carry a cotangent: at a repeated
    eigenvalue the eigenvectors are not differentiable and the rule gives inf/nan. A
    cotangent on the eigenvalues alone is exact there too (the ``F`` term is skipped).
    """
    n = np.shape(a)[-1]
    values, vectors = ans[..., 0, :], ans[..., 1:, :]
    off_diagonal = 1.0 - np.eye(n)
    vectors_t = _swap_last(vectors)

    def vjp(g):
        g_values, g_vectors = g[..., 0, :], g[..., 1:, :]
        inner = np.expand_dims(g_values, -2) * np.eye(n)
        if type(g_vectors) is Box or np.any(g_vectors):  # a traced ḡ may vary: keep F
            gaps = np.expand_dims(values, -2) - np.expand_dims(values, -1) + np.eye(n)
            inner = inner + off_diagonal / gaps * (vectors_t @ g_vectors)
        return _symmetric_part(vectors @ inner @ vectors_t)

    return vjp


defvjp(eigh_packed, _eigh_vjp)


def _eigh(a, UPLO="L"):  # noqa: N803
    packed = eigh_packed(a, UPLO)
    return EighResult(packed[..., 0, :], packed[..., 1:, :])


def _eigvalsh(a, UPLO="L"):  # noqa: N803
    return eigh_packed(a, UPLO)[..., 0, :]


# ------------------------------------------------------------------ norms
def _vector_norm(x, p, axis, keepdims):
    """``‖x‖_p``: Σ|x| (p = 1), max/min |x| (p = ±inf), (Σ|x|^p)^(1/p) otherwise."""
    if p == 2:
        return w.norm(x, None, axis, keepdims)
    magnitude = np.abs(x)
    if p == 1:
        return w.sum(magnitude, axis, keepdims)
    if p == np.inf:
        return w.amax(magnitude, axis, keepdims)
    if p == -np.inf:
        return w.amin(magnitude, axis, keepdims)
    if p == 0:
        raise NotImplementedError("linalg.norm with ord=0 counts non-zero entries: it has no "
                                  "derivative")
    return w.sum(magnitude**p, axis, keepdims) ** (1.0 / p)


def _matrix_norm(x, ord, axes, keepdims):  # noqa: A002 - mirrors numpy
    """``ord = 1`` (largest column sum of |x|), ``inf`` (rows), ``-1``/``-inf`` (smallest)."""
    if ord in (None, "fro"):
        return w.norm(x, None, axes, keepdims)
    if ord not in (1, -1, np.inf, -np.inf):
        raise NotImplementedError(
            f"fesens traces linalg.norm of matrices for ord=None, 'fro', 1, -1, inf and -inf, "
            f"not ord={ord!r} (the spectral and nuclear norms need a traced SVD)")
    rows, cols = axes
    summed, kept = (rows, cols) if abs(ord) == 1 else (cols, rows)
    sums = w.sum(np.abs(x), summed, True)
    result = (w.amax if ord > 0 else w.amin)(sums, kept, True)
    if keepdims:
        return result
    return np.squeeze(result, tuple(sorted(a % np.ndim(w.getval(x)) for a in axes)))


def _norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - mirrors numpy
    ndim = np.ndim(w.getval(x))
    if isinstance(axis, tuple) and len(axis) == 1:
        axis = axis[0]
    if axis is None and (ord is None or ndim == 1):
        if ord is None or ndim != 1:
            return w.norm(x, None, None, keepdims)
        return _vector_norm(x, ord, None, keepdims)
    if axis is None:
        axis = (ndim - 2, ndim - 1)
    if isinstance(axis, tuple):
        return _matrix_norm(x, ord, axis, keepdims)
    return _vector_norm(x, 2 if ord is None else ord, axis, keepdims)


# ------------------------------------------------------------------ compositions
def _matrix_power(a, n):
    if n < 0:
        return _matrix_power(w.inv(a), -n)
    if n == 0:
        return np.broadcast_to(np.eye(np.shape(w.getval(a))[-1]), np.shape(w.getval(a)))
    return reduce(w.matmul, [a] * n)


def _multi_dot(arrays, *, out=None):
    return reduce(w.dot, arrays)


def _cholesky(a, upper=False):
    return _swap_last(cholesky(a)) if upper else cholesky(a)


for _func, _impl in {
    np.linalg.slogdet: _slogdet, np.linalg.cholesky: _cholesky, np.linalg.eigh: _eigh,
    np.linalg.eigvalsh: _eigvalsh, np.linalg.norm: _norm, np.linalg.matrix_power: _matrix_power,
    np.linalg.multi_dot: _multi_dot,
}.items():
    register_function(_func, _impl)

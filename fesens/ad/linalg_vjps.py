"""Dense ``numpy.linalg`` beyond ``solve``, ``inv`` and ``det``: ``slogdet``, ``cholesky``,
``eigh``/``eigvalsh``, ``svd``, ``pinv``, the norm variants, ``matrix_power``, ``multi_dot``.

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
from fesens.ad.registry import defjvp, defvjp
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
defjvp(logabsdet, lambda t, ans, a: np.sum(_swap_last(w.inv(a)) * t, axis=(-2, -1)))


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


# ------------------------------------------------------------------ svd
@primitive
def svd_packed(a):
    """The thin SVD ``A = U diag(s) Vh`` of ``a`` (``(..., m, n)``, ``k = min(m, n)``) packed in
    one array ``(..., m k + k + k n)``: ``U`` then ``s`` then ``Vh``, each row-major."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    lead = np.shape(s)[:-1]
    return np.concatenate([np.reshape(u, (*lead, -1)), s, np.reshape(vh, (*lead, -1))], -1)


def _svd_split(packed, m: int, n: int):
    """``(U, s, Vh)`` of :func:`svd_packed`'s output ``packed``."""
    k = min(m, n)
    lead = np.shape(packed)[:-1]
    u = np.reshape(packed[..., :m * k], (*lead, m, k))
    vh = np.reshape(packed[..., m * k + k:], (*lead, k, n))
    return u, packed[..., m * k:m * k + k], vh


def _svd_vjp(ans, a):
    """Townsend, "Differentiating the singular value decomposition" (2016), thin SVD:

    ``Ā = U [F ∘ (UᵀŪ − ŪᵀU) S + diag(s̄) + S F ∘ (VᵀV̄ − V̄ᵀV)] Vᵀ
    + (I − UUᵀ) Ū S⁻¹ Vᵀ + U S⁻¹ V̄ᵀ (I − VVᵀ)``, ``F_ij = 1 / (s_j² − s_i²)``, ``F_ii = 0``.

    Needs distinct, non-zero singular values when ``U`` or ``V`` carry a cotangent; a
    cotangent on the singular values alone (``Ā = U diag(s̄) Vᵀ``) is exact everywhere.
    """
    m, n = np.shape(a)[-2:]
    k = min(m, n)
    u, s, vh = _svd_split(ans, m, n)
    v, u_t = _swap_last(vh), _swap_last(u)
    eye = np.eye(k)

    def vjp(g):
        g_u, g_s, g_vh = _svd_split(g, m, n)
        inner = np.expand_dims(g_s, -2) * eye
        if type(g) is not Box and not (np.any(g_u) or np.any(g_vh)):
            return u @ inner @ vh
        g_v = _swap_last(g_vh)
        squares = np.expand_dims(s * s, -2)
        f = (1.0 - eye) / (squares - _swap_last(squares) + eye)
        s_row, s_col = np.expand_dims(s, -2), np.expand_dims(s, -1)
        ju, jv = u_t @ g_u, vh @ g_v
        inner = inner + f * (ju - _swap_last(ju)) * s_row + s_col * (f * (jv - _swap_last(jv)))
        out = u @ inner @ vh
        if m > k:
            out = out + (g_u - u @ (u_t @ g_u)) / s_row @ vh
        if n > k:
            out = out + u @ ((_swap_last(g_v) - (_swap_last(g_v) @ v) @ vh) / s_col)
        return out

    return vjp


defvjp(svd_packed, _svd_vjp)
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    m, n = np.shape(w.getval(a))[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("fesens traces the thin SVD of a non-square matrix only: "
                                  "pass full_matrices=False")
    u, s, vh = _svd_split(svd_packed(a), m, n)
    return SVDResult(u, s, vh) if compute_uv else s


def _pinv(a, rcond=None, hermitian=False, *, rtol=None):
    return pinv(a)


@primitive
def pinv(a):
    """The Moore–Penrose pseudo-inverse ``A⁺`` of ``a`` (``(..., m, n)`` → ``(..., n, m)``)."""
    return np.linalg.pinv(a)


def _pinv_vjp(X, a):
    """Golub and Pereyra (1973), constant rank: with ``X = A⁺``, ``Ā = −Xᵀ Ḡ Xᵀ
    + (I − A X) Ḡᵀ X Xᵀ + Xᵀ X Ḡᵀ (I − X A)``."""
    X_t = _swap_last(X)
    m, n = np.shape(a)[-2:]

    def vjp(g):
        g_t = _swap_last(g)
        return (-(X_t @ g @ X_t) + (np.eye(m) - a @ X) @ g_t @ (X @ X_t)
                + (X_t @ X) @ g_t @ (np.eye(n) - X @ a))

    return vjp


defvjp(pinv, _pinv_vjp)


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
    rows, cols = axes
    if ord in (2, -2, "nuc"):  # from the singular values (their rule needs no distinct ones)
        ndim = np.ndim(w.getval(x))
        rows, cols = rows % ndim, cols % ndim
        values = _svd(_moveaxis_pair(x, rows, cols), compute_uv=False)
        result = {2: w.amax, -2: w.amin, "nuc": w.sum}[ord](values, -1)
        if keepdims:
            return np.expand_dims(result, tuple(sorted((rows, cols))))
        return result
    if ord not in (1, -1, np.inf, -np.inf):
        raise NotImplementedError(
            f"fesens traces linalg.norm of matrices for ord=None, 'fro', 'nuc', 1, -1, 2, -2, "
            f"inf and -inf, not ord={ord!r}")
    summed, kept = (rows, cols) if abs(ord) == 1 else (cols, rows)
    sums = w.sum(np.abs(x), summed, True)
    result = (w.amax if ord > 0 else w.amin)(sums, kept, True)
    if keepdims:
        return result
    return np.squeeze(result, tuple(sorted(a % np.ndim(w.getval(x)) for a in axes)))


def _moveaxis_pair(x, rows: int, cols: int):
    """``x`` with axes ``rows`` and ``cols`` moved to the end, in that order."""
    ndim = np.ndim(w.getval(x))
    order = [d for d in range(ndim) if d not in (rows, cols)] + [rows, cols]
    return w.transpose(x, tuple(order))


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
    np.linalg.multi_dot: _multi_dot, np.linalg.svd: _svd, np.linalg.pinv: _pinv,
}.items():
    register_function(_func, _impl)

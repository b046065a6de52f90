"""Spectral functions of symmetric positive definite matrices, vectorized over points.

:func:`power_trace` ``tr(M^β) − n`` and :func:`sym_power` ``M^p = Q diag(μ^p) Qᵀ``
(``M = Q diag(μ) Qᵀ``, ``np.linalg.eigh`` on the values) are primitives whose rules do
not differentiate the eigenvectors, so they hold at repeated eigenvalues (``M = I``
included), where those of :func:`numpy.linalg.eigh` divide by zero:

- ``∂ tr(M^β)/∂M = β M^{β−1}`` is :func:`sym_power`, itself traced: reverse over reverse
  (a stored energy's tangent) differentiates it again;
- ``sym_power``'s derivative in ``M`` is the Daleckii–Krein formula (Higham, *Functions
  of Matrices*, SIAM 2008, Thm. 3.11): ``Ē ↦ Q (D ∘ (Qᵀ Ē Q)) Qᵀ`` with the divided
  differences ``D_ij = (μ_i^p − μ_j^p)/(μ_i − μ_j)``, here ``μ_j^{p−1} (r^p − 1)/(r − 1)``
  of ``r = μ_i/μ_j`` as ``expm1(p ln r)/expm1(ln r)`` (``p μ^{p−1}`` at ``r = 1``): accurate
  as ``μ_i → μ_j``;
- the derivatives in the exponent: ``∂ tr(M^β)/∂β = Σ μ^β ln μ`` and ``∂M^p/∂p = Q
  diag(μ^p ln μ) Qᵀ``.

The derivatives of those last rules (third derivatives in ``M``, or second in the
exponent) are not implemented: a rule that meets a traced argument says so
(``NotImplementedError``; forward mode gives way to reverse mode first). The cotangents
in ``M`` are symmetric (the gradient for symmetric perturbations), as ``eigh``'s
(:mod:`fesens.ad.linalg_vjps`).

>>> import numpy as np
>>> from fesens.ad import grad
>>> M = np.diag([4.0, 1.0, 1.0])
>>> float(power_trace(M, 0.5))                       # 2 + 1 + 1 − 3
1.0
>>> np.diag(grad(lambda m: power_trace(m, 0.5))(M))  # M^{−1/2}/2
array([0.25, 0.5 , 0.5 ])
"""

from __future__ import annotations

import numpy as np

from fesens.ad.forward import Dual, give_way
from fesens.ad.numpy_vjps import _swap_last, _unbroadcast_like
from fesens.ad.registry import defjvp, defvjp
from fesens.ad.tracer import Box, primitive


def _exponent(p, lead: tuple) -> np.ndarray:
    """The exponent ``p`` (a number or ``(...)``) as ``(..., 1)``, against ``(..., n)``."""
    return np.broadcast_to(np.asarray(p, dtype=float), lead)[..., None]


@primitive
def power_trace(M, beta):
    """``tr(M^β) − n`` ``(...)`` of symmetric positive definite ``M`` ``(..., n, n)``.

    Parameters
    ----------
    M : array_like
        ``(..., n, n)``, symmetric positive definite (its lower triangle is read).
    beta : float or array_like
        The exponent, a number or one per point (broadcastable to ``M.shape[:-2]``).

    Returns
    -------
    numpy.ndarray
        ``Σᵢ (μᵢ^β − 1)`` ``(...)`` over the eigenvalues ``μᵢ`` of ``M``, each term as
        ``expm1(β ln μᵢ)``.
    """
    values = np.linalg.eigvalsh(M)
    return np.sum(np.expm1(_exponent(beta, values.shape[:-1]) * np.log(values)), axis=-1)


@primitive
def sym_power(M, p):
    """``M^p = Q diag(μ^p) Qᵀ`` ``(..., n, n)`` of symmetric positive definite ``M``
    ``(..., n, n)`` (``M = Q diag(μ) Qᵀ``), ``p`` a number or one per point
    (broadcastable to ``M.shape[:-2]``)."""
    values, vectors = np.linalg.eigh(M)
    scaled = vectors * (values ** _exponent(p, values.shape[:-1]))[..., None, :]
    return scaled @ _swap_last(vectors)


def _plain(x, what: str):
    """``x`` if it is not traced; forward mode gives way at a dual, and a box (a further
    derivative of ``what``) is refused."""
    if type(x) is Dual:
        give_way(x.trace, what)
    if type(x) is Box:
        raise NotImplementedError(f"fesens.ad.spectral: the derivatives of {what} are not "
                                  "implemented (a third derivative in M, or a second in "
                                  "the exponent)")
    return x


class _Spectrum:
    """The eigen-decomposition ``M = Q diag(μ) Qᵀ`` of plain ``M`` and the exponent ``p``
    as ``(..., 1)``; ``what`` names the rule that needs it."""

    def __init__(self, M, p, what: str):
        self.values, self.vectors = np.linalg.eigh(_plain(M, what))
        self.p = _exponent(_plain(p, what), self.values.shape[:-1])

    def inner(self, E):
        """``Qᵀ sym(E) Q`` ``(..., n, n)`` (traced when ``E`` is)."""
        return _swap_last(self.vectors) @ (0.5 * (E + _swap_last(E))) @ self.vectors

    def outer(self, X):
        """``Q X Qᵀ`` ``(..., n, n)``."""
        return self.vectors @ X @ _swap_last(self.vectors)

    def log_weights(self, power):
        """``μ^power ln μ`` ``(..., n)``."""
        log = np.log(self.values)
        return np.exp(power * log) * log

    def divided_differences(self):
        """``D_ij = (μ_i^p − μ_j^p)/(μ_i − μ_j)``, ``p μ_i^{p−1}`` where ``μ_i = μ_j``
        ``(..., n, n)``."""
        log = np.log(self.values)
        ratio = log[..., :, None] - log[..., None, :]  # ln(μ_i/μ_j)
        p = self.p[..., None]
        below = np.expm1(ratio)
        equal = below == 0.0
        quotient = np.where(equal, p, np.expm1(p * ratio) / np.where(equal, 1.0, below))
        return np.exp((p - 1.0) * log[..., None, :]) * quotient


def _daleckii_krein(M, p):
    """``Ē ↦ Q (D ∘ (Qᵀ sym(Ē) Q)) Qᵀ``, the derivative of ``M^p`` in ``M`` (self-adjoint:
    the VJP and the JVP)."""
    spectrum = _Spectrum(M, p, "sym_power's derivative in M")
    D = spectrum.divided_differences()
    return lambda E: spectrum.outer(D * spectrum.inner(E))


def _sym_power_in_p(M, p):
    """``Q diag(μ^p ln μ) Qᵀ`` ``(..., n, n)``."""
    spectrum = _Spectrum(M, p, "sym_power's derivative in p")
    weights = spectrum.log_weights(spectrum.p)
    return (spectrum.vectors * weights[..., None, :]) @ _swap_last(spectrum.vectors)


def _power_trace_in_beta(M, beta):
    """``Σ μ^β ln μ`` ``(...)``."""
    spectrum = _Spectrum(M, beta, "power_trace's derivative in beta")
    return np.sum(spectrum.log_weights(spectrum.p), axis=-1)


def _per_matrix(g):
    return np.expand_dims(g, (-2, -1))


def _beta_per_matrix(beta):
    return _per_matrix(beta) if np.ndim(beta) else beta


# ∂ tr(M^β)/∂M = β M^{β−1}, traced (M and β may be boxes of an outer trace)
defvjp(power_trace,
       lambda ans, M, beta: lambda g: _per_matrix(g * beta) * sym_power(M, beta - 1.0),
       lambda ans, M, beta: lambda g: _unbroadcast_like(g * _power_trace_in_beta(M, beta),
                                                        beta),
       uses_ans=False)
defjvp(power_trace,
       lambda t, ans, M, beta: beta * np.sum(sym_power(M, beta - 1.0) * t, axis=(-2, -1)),
       lambda t, ans, M, beta: t * _power_trace_in_beta(M, beta))


def _sym_power_p_vjp(ans, M, p):
    weights = _sym_power_in_p(M, p)
    return lambda g: _unbroadcast_like(np.sum(g * weights, axis=(-2, -1)), p)


defvjp(sym_power, lambda ans, M, p: _daleckii_krein(M, p), _sym_power_p_vjp, uses_ans=False)
defjvp(sym_power, lambda t, ans, M, p: _daleckii_krein(M, p)(t),
       lambda t, ans, M, p: _beta_per_matrix(t) * _sym_power_in_p(M, p))

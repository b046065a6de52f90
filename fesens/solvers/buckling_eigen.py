"""The lowest load factors of linear buckling, ``(K + μ K_σ) φ = 0``, from K's factorization.

With ``G = −K_σ`` (positive along the modes that compressive prestress softens) the
problem is ``K φ = μ G φ``; ``K`` is positive definite and ``G`` indefinite, so it is
solved as ``G φ = η K φ`` for the **largest** ``η = 1/μ`` (Lanczos in the K-inner product,
ARPACK's mode 2 of :func:`scipy.sparse.linalg.eigsh`, with ``K⁻¹`` applied by the
factorization the static solve already made). Only positive ``η`` are buckling modes (a
positive load factor ``μ = 1/η``); ``η ≤ 0`` means the prestress stiffens that mode.

A Rayleigh–Ritz step on the computed subspace makes the modes exactly G-orthonormal
(``Φᵀ G Φ = I``, ``Φᵀ K Φ = diag(μ)``), also inside clusters of repeated load factors.
Small problems (at most :data:`~fesens.solvers.eigen.DENSE_MAX` unknowns) are solved densely.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

from fesens.errors import ModeCountError, NoBucklingError, NonFiniteError
from fesens.solvers.eigen import DENSE_MAX

#: Restarts of ARPACK's Lanczos (the wanted η are the spectrum's extremes: a few dozen do).
MAXITER = 300


def lowest_load_factors(K, G, k: int, solve_K) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest positive load factors ``μ`` of ``K φ = μ G φ`` and their modes.

    Parameters
    ----------
    K : scipy sparse matrix, shape (n, n)
        Symmetric positive definite (the stiffness).
    G : scipy sparse matrix, shape (n, n)
        Symmetric, indefinite: the negated geometric stiffness ``−K_σ``.
    k : int
        Number of load factors, ``1 <= k <= n``.
    solve_K : callable
        ``b ↦ K⁻¹ b`` (the factorization of ``K``), for ``b`` of shape ``(n,)``.

    Returns
    -------
    load_factors : numpy.ndarray
        ``(k,)`` ascending, positive.
    modes : numpy.ndarray
        ``(n, k)``, ``modesᵀ G modes = I``.

    Raises
    ------
    ModeCountError
        ``k`` outside ``[1, n]``.
    NonFiniteError
        NaN or infinity in ``K`` or ``G``.
    NoBucklingError
        Fewer than ``k`` positive ``η = 1/μ`` (the message gives the largest ones).
        Also when Lanczos does not converge: the largest ``η`` then cluster at 0.
    """
    K, G = sp.csr_matrix(K), sp.csr_matrix(G)
    n = K.shape[0]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise ModeCountError(f"asked for k = {k!r} buckling modes, but the problem has {n} "
                             f"free dofs: give 1 <= k <= {n}")
    for name, matrix in (("stiffness", K), ("geometric stiffness", G)):
        bad = np.count_nonzero(~np.isfinite(matrix.data))
        if bad:
            raise NonFiniteError(f"the {name} matrix of the buckling analysis has {bad} NaN "
                                 "or infinite entries")
    if not np.any(G.data):
        raise NoBucklingError("the geometric stiffness is zero (no prestress): the load "
                              "gives no stress; give the static solve a non-zero load")
    if n <= DENSE_MAX or k >= n - 1:
        etas, modes = scipy.linalg.eigh(G.toarray(), K.toarray(),
                                        subset_by_index=[n - k, n - 1])
    else:
        inverse = LinearOperator(K.shape, matvec=solve_K, dtype=float)
        start = np.random.default_rng(0).uniform(0.5, 1.5, n)  # reproducible modes
        try:
            etas, modes = eigsh(G, k=k, M=K, Minv=inverse, which="LA", v0=start,
                                maxiter=MAXITER)
        except ArpackNoConvergence as exc:
            found = ", ".join(f"{e:.4g}" for e in exc.eigenvalues) or "none"
            raise NoBucklingError(
                f"no positive load factor found: Lanczos converged to {len(exc.eigenvalues)} "
                f"of the {k} largest η = 1/μ of −K_σ φ = η K φ in {MAXITER} restarts (found: "
                f"{found}); the largest η cluster at 0 when the prestress has (almost) no "
                "compression, e.g. a structure in tension. Reverse or change the load") from exc
    etas, modes = _rayleigh_ritz(K, G, modes)
    positive = etas > 0
    if np.count_nonzero(positive) < k:
        raise NoBucklingError(
            f"asked for {k} buckling load factors, but only {np.count_nonzero(positive)} are "
            f"positive: the largest η = 1/μ of −K_σ φ = η K φ are "
            f"{', '.join(f'{e:.4g}' for e in etas[:k])} (η ≤ 0: no compressive prestress "
            "along that mode; e.g. a structure in pure tension does not buckle). Reverse or "
            "change the load, or ask for fewer modes")
    order = np.argsort(1.0 / etas)
    modes = modes[:, order] / np.sqrt(etas[order])  # Φᵀ G Φ = I
    return 1.0 / etas[order], modes


def _rayleigh_ritz(K, G, modes):
    """``η`` descending and K-orthonormal modes of the pencil ``(G, K)`` on ``span(modes)``."""
    projected_G = modes.T @ (G @ modes)
    projected_K = modes.T @ (K @ modes)
    projected_G = (projected_G + projected_G.T) / 2
    projected_K = (projected_K + projected_K.T) / 2
    etas, rotation = scipy.linalg.eigh(projected_G, projected_K)
    return etas[::-1], (modes @ rotation)[:, ::-1]

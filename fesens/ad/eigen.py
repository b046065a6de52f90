"""Differentiable eigenvalues of ``K φ = λ M φ`` for pattern matrices K and M.

:func:`eigenpairs` solves the pencil on the raw values (:mod:`fesens.solvers.eigen`) and
returns the eigenvalues through the primitive :func:`eigenvalues`, the Rayleigh quotients
of the M-orthonormal modes, ``λ_i = φ_iᵀ K φ_i / φ_iᵀ M φ_i``. The quotient is stationary
in ``φ`` at an eigenvector, so its derivative with ``φ`` held fixed is the eigenvalue
derivative::

    dλ_i = φ_iᵀ (dK − λ_i dM) φ_i,     K̄ = Σ_i λ̄_i φ_i φ_iᵀ,   M̄ = −Σ_i λ̄_i λ_i φ_i φ_iᵀ

kept as outer factors on the pattern (:class:`~fesens.ad.sparse.OuterCotangent`), which
the assembly primitives contract per cell: no matrix cotangent is formed. The
modes are constants (their sensitivities are not provided).

**Repeated eigenvalues.** Within a cluster of equal eigenvalues the modes are any
M-orthonormal basis of the eigenspace, and the rule above gives the derivative of the
Rayleigh quotient of *that* basis: a directional derivative that depends on the basis (an
individual repeated eigenvalue is not differentiable). A function symmetric in the
cluster's eigenvalues (their sum, a KS aggregate) gets equal cotangents ``λ̄_i`` across the
cluster, hence ``Σ_i φ_i φ_iᵀ``, which is the same for every basis: its gradient is right.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.ad.registry import defvjp
from fesens.ad.sparse import OuterCotangent, PatternMatrix
from fesens.ad.tracer import primitive
from fesens.solvers.eigen import smallest_eigenpairs


@primitive
def eigenvalues(K: PatternMatrix, M: PatternMatrix, modes) -> np.ndarray:
    """``λ_i = φ_iᵀ K φ_i / φ_iᵀ M φ_i`` for the columns of ``modes`` ``(n, k)``: ``(k,)``.

    For eigenvectors of ``(K, M)`` these are the eigenvalues, differentiable in ``K`` and
    ``M`` (``modes`` is a constant).
    """
    stiffness = np.einsum("ik,ik->k", modes, K.tocsr() @ modes)
    mass = np.einsum("ik,ik->k", modes, M.tocsr() @ modes)
    return stiffness / mass


def _unit_modes(M, modes):
    mass = np.einsum("ik,ik->k", modes, getval(M).tocsr() @ modes)
    return modes / np.sqrt(mass)


defvjp(
    eigenvalues,
    lambda lam, K, M, modes: lambda g: OuterCotangent(
        getval(K).pattern, [(_unit_modes(M, modes) * g, _unit_modes(M, modes))]),
    lambda lam, K, M, modes: lambda g: OuterCotangent(
        getval(M).pattern, [(-_unit_modes(M, modes) * (g * lam), _unit_modes(M, modes))]),
)


def eigenpairs(K, M, k: int, *, method: str = "shift-invert", solver="auto",
               near_nullspace=None) -> tuple:
    """The ``k`` smallest eigenpairs of ``K φ = λ M φ``; eigenvalues traced when K or M is.

    Parameters
    ----------
    K, M : PatternMatrix
        Possibly traced (e.g. from :func:`~fesens.fem.assembly.primitives.assemble`).
    k : int
    method, solver, near_nullspace
        See :func:`fesens.solvers.eigen.smallest_eigenpairs`; a solver name gets the
        stiffness pattern's own instance, so eigen solves reuse its symbolic analysis.

    Returns
    -------
    values : array
        ``(k,)`` ascending (traced).
    modes : numpy.ndarray
        ``(n, k)``, M-orthonormal (constant).
    """
    K_raw, M_raw = getval(K), getval(M)
    # The pattern's own instance: its symbolic analysis is shared with the static solves;
    # factorizing K + τ M there drops its hold on K's factorization (refactorized when needed).
    backend = K_raw.pattern.solver(solver)
    with K_raw.pattern.thread_limit(backend):
        _, modes = smallest_eigenpairs(K_raw.tocsr(), M_raw.tocsr(), k, method=method,
                                       solver=backend, near_nullspace=near_nullspace)
    return eigenvalues(K, M, modes), modes

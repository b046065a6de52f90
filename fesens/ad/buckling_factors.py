"""Differentiable buckling load factors of ``K φ = μ G φ`` (``G = −K_σ``) for pattern matrices.

:func:`load_factors` solves on the raw values (:mod:`fesens.solvers.buckling_eigen`, with the
factorization of ``K`` that the static solve left on its pattern's solver) and returns the
load factors through the eigenvalue primitive :func:`fesens.ad.eigen.eigenvalues`: the
Rayleigh quotients ``μ_i = φ_iᵀ K φ_i / φ_iᵀ G φ_i``, whose rule holds because
``φ_iᵀ G φ_i = φ_iᵀ K φ_i / μ_i > 0`` for a positive load factor::

    dμ_i = φ_iᵀ (dK − μ_i dG) φ_i,   K̄ = Σ_i μ̄_i φ_i φ_iᵀ,   Ḡ = −Σ_i μ̄_i μ_i φ_i φ_iᵀ

(``φ_iᵀ G φ_i = 1``), kept as outer factors on the patterns. When ``G`` is a traced
function of a traced static solution ``u`` (the prestress), ``Ḡ`` flows on through the
assembly of ``G`` to the stresses, to ``ū`` and through the static solve's adjoint: the
term of ``dK_σ/du`` comes out of the tape, not a hand-written adjoint. Repeated load
factors: as :mod:`fesens.ad.eigen` (only symmetric functions of a cluster are
differentiable).
"""

from __future__ import annotations

from fesens.ad.eigen import eigenvalues
from fesens.ad.numpy_wrapper import getval
from fesens.ad.sparse import PatternMatrix
from fesens.solvers.buckling_eigen import lowest_load_factors


def load_factors(K: PatternMatrix, G: PatternMatrix, k: int, *, solver) -> tuple:
    """The ``k`` lowest positive load factors of ``K φ = μ G φ``; traced when K or G is.

    Parameters
    ----------
    K : PatternMatrix
        The stiffness (symmetric positive definite), possibly traced.
    G : PatternMatrix
        The negated geometric stiffness ``−K_σ``, possibly traced.
    k : int
    solver : LinearSolver or str
        A direct backend; the pattern's instance factorizes ``K`` unless it holds its
        factorization already (the static solve's).

    Returns
    -------
    values : array
        ``(k,)`` ascending (traced).
    modes : numpy.ndarray
        ``(n, k)``, G-orthonormal (constant).

    Raises
    ------
    ModeCountError, NonFiniteError, NoBucklingError
        See :func:`fesens.solvers.buckling_eigen.lowest_load_factors`.
    """
    K_raw, G_raw = getval(K), getval(G)
    backend = K_raw.pattern.solver(solver)
    # another thread's factorization must not replace K's while the iteration solves
    with backend.lock, K_raw.pattern.thread_limit(backend):
        # The static solve of the same values left its factorization here: no new one.
        backend.factorize_once(K_raw.pattern, K_raw.data, K_raw.tocsr)
        _, modes = lowest_load_factors(K_raw.tocsr(), G_raw.tocsr(), k, backend.solve)
    return eigenvalues(K, G, modes), modes

"""The smallest eigenpairs of the generalized problem ``K φ = λ M φ`` (K, M symmetric,
M positive definite, K positive semi-definite).

Two methods:

* ``"shift-invert"`` (default): Lanczos (ARPACK, :func:`scipy.sparse.linalg.eigsh`) on
  ``(K − σ M)⁻¹ M`` with the factorization of a fesens backend as the inverse operator
  (``OPinv``). The shift ``σ = −τ`` is a tiny negative multiple of the spectrum's scale
  (:data:`SHIFT_RTOL` · tr K / tr M), so ``K − σ M`` is positive definite even when ``K``
  is singular, and zero modes are found (and reported) instead of breaking the factorization.
* ``"lobpcg"``: :func:`scipy.sparse.linalg.lobpcg` preconditioned by one AMG V-cycle of
  ``K + τ M`` (pyamg), for problems too large to factorize.

Both end with a Rayleigh–Ritz step on the computed subspace, so the modes returned are
exactly M-orthonormal (``Φᵀ M Φ = I``), also inside clusters of repeated eigenvalues.
Small problems (at most :data:`DENSE_MAX` unknowns) are solved densely.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, eigsh, lobpcg

from fesens.errors import (
    ConvergenceError,
    ModeCountError,
    NonFiniteError,
    SingularMassError,
    ZeroModeError,
)
from fesens.solvers.base import LinearSolver
from fesens.solvers.preconditioners import make_preconditioner
from fesens.solvers.registry import make_solver

#: The shift ``τ`` relative to ``tr K / tr M`` (about the mean eigenvalue).
SHIFT_RTOL = 1e-8
#: Eigenvalues below this times ``tr K / tr M`` count as zero (rigid-body modes).
ZERO_RTOL = 1e-10
#: Problems with at most this many unknowns are solved by dense LAPACK.
DENSE_MAX = 60
#: Relative residual ``‖K φ − λ M φ‖ / ‖K φ‖`` LOBPCG must reach.
LOBPCG_RTOL = 1e-8
#: Iterations per LOBPCG pass, and passes (each restarts from the last block).
LOBPCG_MAXITER, LOBPCG_PASSES = 200, 3

METHODS = ("shift-invert", "lobpcg")


def smallest_eigenpairs(K, M, k: int, *, method: str = "shift-invert",
                        solver: str | tuple | LinearSolver = "auto",
                        near_nullspace: np.ndarray | None = None,
                        allow_zero_modes: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest eigenvalues and M-orthonormal modes of ``K φ = λ M φ``.

    Parameters
    ----------
    K, M : scipy sparse matrix, shape (n, n)
        Symmetric; ``M`` positive definite, ``K`` positive semi-definite.
    k : int
        Number of eigenpairs, ``1 <= k <= n``.
    method : {"shift-invert", "lobpcg"}
    solver : str, (str, dict) or LinearSolver
        The backend factorizing ``K + τ M`` for shift-invert (an instance is used as it
        is, so its symbolic analysis is reused).
    near_nullspace : numpy.ndarray, optional
        ``(n, m)`` near-null-space vectors for LOBPCG's AMG (elasticity: rigid-body modes).
    allow_zero_modes : bool
        Return zero eigenvalues instead of raising :class:`ZeroModeError`.

    Returns
    -------
    values : numpy.ndarray
        ``(k,)`` ascending.
    modes : numpy.ndarray
        ``(n, k)``, ``modesᵀ M modes = I``.

    Raises
    ------
    ModeCountError
        ``k`` outside ``[1, n]``.
    NonFiniteError
        NaN or infinity in ``K`` or ``M``.
    SingularMassError
        Dofs with zero (or negative) mass on the diagonal of ``M``.
    ZeroModeError
        Zero eigenvalues: ``K`` is singular (missing supports, a mechanism).
    ConvergenceError
        LOBPCG did not reach :data:`LOBPCG_RTOL`.
    """
    K, M = sp.csr_matrix(K), sp.csr_matrix(M)
    n = K.shape[0]
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise ModeCountError(f"asked for k = {k!r} eigenpairs, but the problem has {n} free "
                             f"dofs: give 1 <= k <= {n}")
    for name, matrix in (("stiffness", K), ("mass", M)):
        bad = np.count_nonzero(~np.isfinite(matrix.data))
        if bad:
            raise NonFiniteError(f"the {name} matrix of the eigen solve has {bad} NaN or "
                                 "infinite entries")
    mass = M.diagonal()
    massless = np.flatnonzero(mass <= 0)
    if massless.size:
        raise SingularMassError(
            f"the mass matrix is singular: {massless.size} of {n} free dofs have no mass "
            f"(dofs {massless[:20].tolist()}{' ...' if massless.size > 20 else ''}); give "
            "every cell a positive density, or fix the dofs of empty regions")
    scale = max(K.diagonal().sum(), 0.0) / mass.sum()
    if scale <= 0:
        raise ZeroModeError("the stiffness matrix is zero: every mode has zero energy")
    tau = SHIFT_RTOL * scale
    shifted = _shifted(K, M, tau)
    if n <= DENSE_MAX or k >= n - 1:
        values, modes = scipy.linalg.eigh(K.toarray(), M.toarray(), subset_by_index=[0, k - 1])
    elif method == "shift-invert":
        values, modes = _shift_invert(K, M, k, shifted, tau, solver)
    else:
        values, modes = _lobpcg(K, M, k, shifted, near_nullspace)
    values, modes = _rayleigh_ritz(K, M, modes)
    zero = np.flatnonzero(values < ZERO_RTOL * scale)
    if zero.size and not allow_zero_modes:
        raise ZeroModeError(
            f"{zero.size} zero-energy mode(s) (eigenvalues {values[zero].tolist()} at the "
            f"spectrum scale {scale:.3g}): the structure can move without deforming "
            "(rigid-body motion or mechanism); add supports with model.fix(...)", values[zero])
    return values, modes


def _shifted(K, M, tau):
    """``K + τ M`` on ``K``'s index arrays when ``M`` shares them (a model's K and M do),
    so a backend reuses the symbolic analysis of ``K``'s pattern."""
    if (K.has_canonical_format and M.has_canonical_format
            and np.array_equal(K.indptr, M.indptr) and np.array_equal(K.indices, M.indices)):
        shifted = sp.csr_matrix((K.data + tau * M.data, K.indices, K.indptr), shape=K.shape)
        shifted.has_sorted_indices = True
        return shifted
    return (K + tau * M).tocsr()


def _shift_invert(K, M, k, shifted, tau, solver):
    backend = solver if isinstance(solver, LinearSolver) else _backend(solver)
    backend.factorize(shifted)
    inverse = LinearOperator(K.shape, matvec=backend.solve, dtype=float)
    start = np.random.default_rng(0).uniform(0.5, 1.5, K.shape[0])  # reproducible modes
    values, modes = eigsh(K, k=k, M=M, sigma=-tau, which="LM", OPinv=inverse, v0=start)
    return values, modes


def _backend(spec) -> LinearSolver:
    name, options = (spec, {}) if isinstance(spec, str) else spec
    return make_solver(name, **options)


def _lobpcg(K, M, k, shifted, near_nullspace):
    preconditioner = make_preconditioner("amg", shifted, symmetric=True,
                                         near_nullspace=near_nullspace)
    block = k + min(k, 4)  # a few guard vectors speed up the last wanted ones
    modes = np.random.default_rng(0).standard_normal((K.shape[0], block))
    tolerance, worst = None, np.inf
    for _ in range(LOBPCG_PASSES):  # scipy's tolerance is absolute: tightened to the scale
        values, modes = lobpcg(K, modes, B=M, M=preconditioner, largest=False,
                               tol=tolerance, maxiter=LOBPCG_MAXITER)
        stiffness = np.linalg.norm(K @ modes, axis=0)
        residual = np.linalg.norm(K @ modes - (M @ modes) * values, axis=0)
        relative = residual / np.maximum(stiffness, 1e-300)
        worst = float(np.sort(relative[np.argsort(values)[:k]]).max())
        if worst <= LOBPCG_RTOL:
            order = np.argsort(values)[:k]
            return values[order], modes[:, order]
        tolerance = 0.5 * LOBPCG_RTOL * float(stiffness.min())
    raise ConvergenceError(f"LOBPCG did not converge: relative residual {worst:.2e} > "
                           f"{LOBPCG_RTOL:.0e} after {LOBPCG_PASSES} x {LOBPCG_MAXITER} "
                           "iterations; use method='shift-invert'",
                           LOBPCG_PASSES * LOBPCG_MAXITER, worst, LOBPCG_RTOL)


def _rayleigh_ritz(K, M, modes):
    """Eigenpairs of the pencil projected on ``span(modes)``: M-orthonormal modes."""
    projected_K = modes.T @ (K @ modes)
    projected_M = modes.T @ (M @ modes)
    projected_K = (projected_K + projected_K.T) / 2
    projected_M = (projected_M + projected_M.T) / 2
    values, rotation = scipy.linalg.eigh(projected_K, projected_M)
    return values, modes @ rotation

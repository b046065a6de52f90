"""Sparse Cholesky factorization with CHOLMOD (scikit-sparse), for SPD matrices.

The fill-reducing ordering (symbolic analysis) depends only on the sparsity pattern, so it
is computed once and reused by every later :meth:`~LinearSolver.factorize` with the same
pattern; only the numeric factorization is repeated when the values change.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fesens.errors import NotPositiveDefiniteError, SingularMatrixError, SolverError
from fesens.openmp import cap_openmp_threads
from fesens.solvers.base import DirectSolver
from fesens.solvers.registry import register_solver
from fesens.solvers.structure import MatrixStructure

# The one place fesens limits OpenMP: libgomp reads OMP_THREAD_LIMIT once, when it is
# loaded, and scikit-sparse loads it here (why and which limit: fesens.openmp).
cap_openmp_threads()
try:
    from sksparse import cholmod as _cholmod
except ImportError:  # optional dependency
    _cholmod = None

# Diagnosis of a failed factorization: A + shift I with shift = _SHIFT_RTOL * max|A_ii|
# is positive definite when A is positive semi-definite (singular), not when indefinite.
_SHIFT_RTOL = 1e-8
# Failure-path diagnosis of a residual-check failure: relative asymmetry above this is
# reported as "not symmetric" (CHOLMOD reads one triangle only).
_ASYMMETRY_RTOL = 1e-8

_DEFINITENESS_HINT = (
    "not symmetric positive definite (singular or indefinite); if this is a stiffness "
    "matrix, Dirichlet conditions are probably missing"
)


def cholmod_available() -> bool:
    """Whether scikit-sparse (CHOLMOD) is importable."""
    return _cholmod is not None


def _as_csc(A: sp.csr_matrix | sp.csc_matrix) -> sp.csc_matrix:
    """CSC of a symmetric CSR matrix: its transpose, free, no copy.

    The transpose shares the index arrays, so it inherits whether they are sorted (CHOLMOD
    needs them sorted; telling scipy spares it a pass over them).
    """
    if A.format == "csc":
        return A
    csc = A.T
    csc.has_sorted_indices = A.has_sorted_indices
    return csc


@register_solver("cholmod")
class CholmodSolver(DirectSolver):
    """Supernodal sparse Cholesky ``P A P^T = L L^T`` via CHOLMOD.

    ``A`` must be symmetric positive definite; only one triangle of it is read. Being
    symmetric, :meth:`solve_transpose` reuses the same factor.

    Parameters
    ----------
    check_residual, residual_rtol
        See :class:`~fesens.solvers.base.DirectSolver`.
    """

    symmetric = True

    install_hint = (
        "scikit-sparse (CHOLMOD) is not installed. Install libsuitesparse-dev and "
        "scikit-sparse (pip install 'fesens[cholmod]'), or use 'superlu'."
    )

    def __init__(self, *, check_residual: bool = True, residual_rtol: float = 1e-6) -> None:
        super().__init__(check_residual=check_residual, residual_rtol=residual_rtol)
        self._factor = None
        self._pattern: MatrixStructure | None = None

    @classmethod
    def available(cls) -> bool:
        return cholmod_available()

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        csc = _as_csc(A)
        if self._pattern is None or not self._pattern.matches(csc):
            with self._timed("symbolic_seconds"):
                self._factor = _cholmod.analyze(csc, mode="supernodal")
            self._pattern = MatrixStructure(csc)
            self._stats["n_symbolic"] += 1
        with self._timed("numeric_seconds"):
            # Supernodal LL^T stops at the first pivot that is not positive (or NaN), so a
            # factorization that succeeds is positive definite. (The simplicial LDL^T that
            # mode "auto" picks for some small matrices accepts zero and negative pivots,
            # and reading D() of a supernodal factor to check them costs 12 ms, 2 %, of a
            # 160 000-dof re-factorization.)
            try:
                self._factor.cholesky_inplace(csc)
            except _cholmod.CholmodNotPositiveDefiniteError:
                raise self._definiteness_error(csc) from None
        self._stats["n_numeric"] += 1

    def _definiteness_error(self, csc: sp.csc_matrix) -> SolverError:
        """Tell a singular (semi-definite) matrix from an indefinite one.

        Refactorizes ``A + shift I`` (reusing the symbolic analysis): it is positive
        definite when ``A`` is positive semi-definite, typically a stiffness matrix
        without enough Dirichlet conditions. Runs only after a failed factorization.
        """
        shift = _SHIFT_RTOL * float(np.abs(csc.diagonal()).max(initial=0.0))
        try:
            self._factor.cholesky_inplace(csc, beta=shift)
            semidefinite = shift > 0.0
        except _cholmod.CholmodNotPositiveDefiniteError:
            semidefinite = False
        if semidefinite:
            return SingularMatrixError(
                "cholmod: the matrix is singular (positive semi-definite with a zero pivot); "
                "if this is a stiffness matrix, Dirichlet conditions are probably missing "
                "(unconstrained rigid-body modes)."
            )
        return NotPositiveDefiniteError(
            f"cholmod: the matrix is {_DEFINITENESS_HINT}. It stays indefinite after a "
            f"diagonal shift of {shift:.1e}; for symmetric indefinite systems use 'superlu' "
            "or 'minres'."
        )

    def _substitute(self, b: np.ndarray, transpose: bool) -> np.ndarray:
        return self._factor(b)

    def _residual_error(self, residual: float) -> SolverError:
        A = self._matrix
        asymmetry = float(abs(A - A.T).max())
        scale = float(abs(A).max())
        if asymmetry > _ASYMMETRY_RTOL * scale:
            return SolverError(
                f"cholmod: the matrix is not symmetric (max |A - A^T| = {asymmetry:.2e}, "
                f"max |A| = {scale:.2e}) and CHOLMOD reads one triangle only; use 'superlu' "
                "or 'gmres' for non-symmetric matrices."
            )
        return super()._residual_error(residual)

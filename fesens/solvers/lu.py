"""Sparse LU factorization: SuperLU (scipy, always there) and UMFPACK (scikit-umfpack), and
CHOLMOD's Cholesky with LU for the matrices it finds not positive definite (``cholmod_lu``).

LU handles any non-singular matrix, symmetric or not; :meth:`solve_transpose` reuses the
factor of ``A`` (``A^T = U^T L^T``). The alias ``"lu"`` of :func:`make_solver` picks UMFPACK
when it is installed, else SuperLU.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from fesens.errors import NotPositiveDefiniteError, SingularMatrixError, SolverError
from fesens.solvers.base import DirectSolver
from fesens.solvers.cholmod import CholmodSolver
from fesens.solvers.registry import register_solver, solver_class
from fesens.solvers.structure import MatrixStructure

try:
    from scikits import umfpack as _umfpack
except ImportError:  # optional dependency
    _umfpack = None

#: SuperLU's column ordering (``permc_spec``) for a matrix whose pattern is structurally
#: symmetric, as every finite-element matrix's is: the minimum degree ordering of
#: ``Aᵀ + A``, which SuperLU's guide advises for such patterns, instead of scipy's default
#: COLAMD (an ordering of ``AᵀA``, for general patterns). Measured on neo-Hookean tangents
#: at a loaded state, scipy 1.17's SuperLU on a loaded 2-core machine, min of interleaved
#: repeats: hex8 16x8x8 (3 888 unknowns) 0.24 -> 0.13 s, L+U 2.27 -> 1.93 M entries;
#: 32x16x16 (27 744) 7.1 -> 6.2 s, 42.9 -> 41.6 M; quad4 200x100 (40 400) 0.76 -> 0.48 s,
#: 11.0 -> 7.1 M (a second run, load 7-9: 0.38 -> 0.49 s min, 1.03 -> 0.79 s median). On
#: tiny 3D matrices it is a wash (hex8 12x4x4, 900 unknowns: 171 k entries against 155 k).
SYMMETRIC_PATTERN_ORDERING = "MMD_AT_PLUS_A"
#: The ordering of other patterns (scipy's default).
GENERAL_ORDERING = "COLAMD"

_SINGULAR_MESSAGE = (
    "{name}: the matrix is exactly singular; if this is a stiffness matrix, Dirichlet "
    "conditions are probably missing."
)


@register_solver("superlu")
class SuperLUSolver(DirectSolver):
    """Sparse LU ``P_r A P_c = L U`` with partial pivoting via :func:`scipy.sparse.linalg.splu`.

    SuperLU computes its column ordering with every factorization, so each
    :meth:`~LinearSolver.factorize` counts one symbolic and one numeric factorization and
    its whole time is reported as ``numeric_seconds``. The ordering is
    :data:`SYMMETRIC_PATTERN_ORDERING` for a structurally symmetric pattern (checked once
    per pattern; :attr:`ordering` says which), else :data:`GENERAL_ORDERING`.

    Parameters
    ----------
    check_residual, residual_rtol
        See :class:`~fesens.solvers.base.DirectSolver`.

    Attributes
    ----------
    ordering : str or None
        The ``permc_spec`` of the last factorization (None before the first).
    """

    symmetric = False

    def __init__(self, *, check_residual: bool = True, residual_rtol: float = 1e-6) -> None:
        super().__init__(check_residual=check_residual, residual_rtol=residual_rtol)
        self._lu = None
        self._pattern: MatrixStructure | None = None
        self.ordering: str | None = None

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        if self._pattern is None or not self._pattern.matches(A):
            self._pattern = MatrixStructure(A)
            self.ordering = (SYMMETRIC_PATTERN_ORDERING if structurally_symmetric(A)
                             else GENERAL_ORDERING)
        with self._timed("numeric_seconds"):
            try:
                self._lu = splu(A.tocsc(), permc_spec=self.ordering)
            except RuntimeError as error:
                if "singular" in str(error):
                    raise SingularMatrixError(_SINGULAR_MESSAGE.format(name=self.name)) from None
                raise SolverError(f"{self.name}: factorization failed: {error}") from error
        self._stats["n_symbolic"] += 1
        self._stats["n_numeric"] += 1

    def _substitute(self, b: np.ndarray, transpose: bool) -> np.ndarray:
        return self._lu.solve(b, trans="T" if transpose else "N")


def structurally_symmetric(A: sp.csr_matrix | sp.csc_matrix) -> bool:
    """Whether ``A`` ``(n, n)`` has an entry at ``(j, i)`` for each of its entries at
    ``(i, j)`` (stored zeros count as entries)."""
    pattern = type(A)((np.ones(A.indices.size), A.indices, A.indptr), shape=A.shape)
    return (pattern != pattern.T).nnz == 0


@register_solver("umfpack")
class UmfpackSolver(DirectSolver):
    """Sparse multifrontal LU via UMFPACK (scikit-umfpack).

    The symbolic analysis (column ordering) is reused while the sparsity pattern is
    unchanged, as for CHOLMOD. UMFPACK sorts the indices of ``A`` in place.

    Parameters
    ----------
    check_residual, residual_rtol
        See :class:`~fesens.solvers.base.DirectSolver`.
    """

    symmetric = False
    install_hint = (
        "scikit-umfpack is not installed. Install libsuitesparse-dev and scikit-umfpack, "
        "or use 'superlu'."
    )

    def __init__(self, *, check_residual: bool = True, residual_rtol: float = 1e-6) -> None:
        super().__init__(check_residual=check_residual, residual_rtol=residual_rtol)
        self._context = None
        self._pattern: MatrixStructure | None = None

    @classmethod
    def available(cls) -> bool:
        return _umfpack is not None

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        with warnings.catch_warnings():
            # Singularity is read from the status below; UMFPACK's condition-number warning
            # is superseded by the residual check.
            warnings.simplefilter("ignore", _umfpack.UmfpackWarning)
            if self._pattern is None or not self._pattern.matches(A):
                with self._timed("symbolic_seconds"):
                    # "di" routines take int32 indices, "dl" routines int64
                    self._context = _umfpack.UmfpackContext(
                        "dl" if A.indices.dtype == np.int64 else "di", maxCond=np.inf
                    )
                    self._context.symbolic(A)  # sorts the indices of A in place
                self._pattern = MatrixStructure(A)
                self._stats["n_symbolic"] += 1
            with self._timed("numeric_seconds"):
                self._context.numeric(A)
        if self._context.info[_umfpack.UMFPACK_STATUS] == _umfpack.UMFPACK_WARNING_singular_matrix:
            raise SingularMatrixError(_SINGULAR_MESSAGE.format(name=self.name))
        self._stats["n_numeric"] += 1

    def _substitute(self, b: np.ndarray, transpose: bool) -> np.ndarray:
        system = _umfpack.UMFPACK_At if transpose else _umfpack.UMFPACK_A
        columns = b.reshape(b.shape[0], -1)
        x = np.empty_like(columns)
        for j in range(columns.shape[1]):
            # autoTranspose: UMFPACK reads a CSR matrix as the CSC matrix of A^T
            x[:, j] = self._context.solve(system, self._matrix, columns[:, j], autoTranspose=True)
        return x.reshape(b.shape)


@register_solver("cholmod_lu")
class CholeskyLUSolver(CholmodSolver):
    """CHOLMOD's Cholesky, and LU for a matrix that it finds not positive definite.

    For a symmetric matrix that is positive definite mostly but not always, such as the
    tangent of a hyperelastic body at a Newton iterate (a compressed column past its
    buckling load, a large rotation's first predictor): each :meth:`~LinearSolver.factorize`
    runs CHOLMOD (its symbolic analysis kept across the pattern's matrices) and, where the
    numeric factorization meets a pivot that is not positive, factorizes the same matrix by
    LU (the alias ``"lu"``: UMFPACK, else SuperLU) instead, without the diagnosis that
    :class:`~fesens.solvers.cholmod.CholmodSolver` runs on such a matrix (a second numeric
    factorization). The next matrix tries Cholesky again rather than staying on LU: at a
    Newton iterate the tangent is indefinite mostly on the way to a stable equilibrium,
    whose tangent is definite, and a failed Cholesky costs at most about one Cholesky, a
    fraction of an LU. Measured on a neo-Hookean hex8 cantilever (16x8x8, 4 131 dofs, full
    Newton steps, SuperLU): tip traction 0.04 in one load step, 2 of 9 tangents indefinite,
    Cholesky 0.04 s, LU 0.25 s, all factorizations 0.92 s retrying Cholesky against 1.84 s
    staying on LU for the rest of the step; 0.08 in two steps, 3 of 17, 1.23 s against
    2.97 s.

    ``A`` must be symmetric (Cholesky reads one triangle, and :meth:`solve_transpose` is
    :meth:`solve`); a singular matrix fails in LU as it would alone.

    :attr:`~LinearSolver.stats` adds ``n_fallbacks`` (factorizations done by LU; each also
    counts in ``n_numeric``), ``fallback_seconds`` (the failed Cholesky and the LU of
    those) and ``fallback_reason`` (why the last one fell back, or None).

    Parameters
    ----------
    check_residual, residual_rtol
        See :class:`~fesens.solvers.base.DirectSolver`.
    """

    def __init__(self, *, check_residual: bool = True, residual_rtol: float = 1e-6) -> None:
        super().__init__(check_residual=check_residual, residual_rtol=residual_rtol)
        # the outer residual check covers both factorizations
        self._lu = solver_class("lu")(check_residual=False)
        self._by_lu = False
        self._stats.update(n_fallbacks=0, fallback_seconds=0.0, fallback_reason=None)

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        self._by_lu = False
        start = self._stats["numeric_seconds"]
        try:
            super()._factorize(A)
        except NotPositiveDefiniteError as error:
            with self._timed("numeric_seconds"):
                # symmetric: the CSC view of a CSR matrix is its transpose, A itself
                self._lu.factorize(A if A.format == "csc" else A.T)
            self._by_lu = True
            self._stats["n_numeric"] += 1
            self._stats["n_fallbacks"] += 1
            self._stats["fallback_seconds"] += self._stats["numeric_seconds"] - start
            self._stats["fallback_reason"] = f"{error}; factorized by {self._lu.name}"

    def _definiteness_error(self, csc: sp.csc_matrix) -> SolverError:
        # LU takes the matrix whatever the cause, so the diagnosis (a second numeric
        # factorization, with a shift) would be wasted
        return NotPositiveDefiniteError(
            "cholmod: a pivot is not positive (the matrix is indefinite or singular)")

    def _substitute(self, b: np.ndarray, transpose: bool) -> np.ndarray:
        if self._by_lu:
            return self._lu._substitute(b, transpose)
        return super()._substitute(b, transpose)

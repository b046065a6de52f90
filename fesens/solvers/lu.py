"""Sparse LU factorization: SuperLU (scipy, always there) and UMFPACK (scikit-umfpack), and
CHOLMOD's Cholesky with ``L D L^T``, then LU, for the matrices it finds not positive
definite (``cholmod_lu``).

LU handles any non-singular matrix, symmetric or not; :meth:`solve_transpose` reuses the
factor of ``A`` (``A^T = U^T L^T``). The alias ``"lu"`` of :func:`make_solver` picks UMFPACK
when it is installed, else SuperLU.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from fesens.errors import (
    NonFiniteError,
    NotPositiveDefiniteError,
    SingularMatrixError,
    SolverError,
)
from fesens.solvers.base import DirectSolver
from fesens.solvers.cholmod import CholmodSolver, SimplicialLDLt, _as_csc
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
    """CHOLMOD's Cholesky; ``L D L^T`` and then LU for a matrix that it finds not positive
    definite.

    For a symmetric matrix that is positive definite mostly but not always, such as the
    tangent of a hyperelastic body at a Newton iterate (a compressed column past its
    buckling load, a large rotation's first predictor). Each
    :meth:`~LinearSolver.factorize` runs, each step only where the one before failed:

    1. CHOLMOD's supernodal ``L L^T`` (its symbolic analysis kept across the pattern's
       matrices), which stops at the first pivot that is not positive;
    2. CHOLMOD's simplicial ``L D L^T`` without pivoting
       (:class:`~fesens.solvers.cholmod.SimplicialLDLt`; its own analysis, made on the
       pattern's first indefinite matrix and kept: CHOLMOD's supernodal analysis serves
       ``L L^T`` only). It stops at a zero pivot; a tiny pivot gives an inaccurate
       solution, which the residual check of the first solve detects (with
       ``check_residual=False`` nothing does);
    3. LU (the alias ``"lu"``: UMFPACK, else SuperLU) of the same matrix.

    None runs the diagnosis that :class:`~fesens.solvers.cholmod.CholmodSolver` runs on a
    matrix that is not positive definite (a second numeric factorization). The next
    matrix tries Cholesky again: at a Newton iterate the tangent is indefinite mostly on
    the way to a stable equilibrium, whose tangent is definite, and a failed Cholesky costs
    at most about one Cholesky. Measured on a neo-Hookean hex8 cantilever (16x8x8, 4 131
    dofs, full Newton steps, LU only after Cholesky): tip traction 0.04 in one load step, 2
    of 9 tangents indefinite, all factorizations 0.92 s retrying Cholesky against 1.84 s
    staying on LU for the rest of the step. On the indefinite tangents of a twisted
    neo-Hookean cube (hex8, 16³ cells, 14 739 dofs), ``L D L^T`` took 1.7 s, SuperLU 1.4-2.2
    s with 3-4x its fill, a successful ``L L^T`` 0.2-0.3 s; the solutions' backward errors
    1e-14 to 3e-12.

    ``A`` must be symmetric (both factorizations of CHOLMOD read one triangle, and
    :meth:`solve_transpose` is :meth:`solve`); a singular matrix fails in LU as it would
    alone.

    :attr:`~LinearSolver.stats` adds ``factorized_by`` (``"cholesky"``, ``"ldlt"`` or
    ``"lu"``: the last factorization), ``n_fallbacks`` (factorizations not done by Cholesky;
    each also counts in ``n_numeric``), ``n_lu_fallbacks`` (those of them done by LU),
    ``fallback_seconds`` (the failed factorizations and those that replaced them) and
    ``fallback_reason`` (why the last one fell back, or None).

    Parameters
    ----------
    check_residual, residual_rtol
        See :class:`~fesens.solvers.base.DirectSolver`.
    """

    def __init__(self, *, check_residual: bool = True, residual_rtol: float = 1e-6) -> None:
        super().__init__(check_residual=check_residual, residual_rtol=residual_rtol)
        self._ldlt = SimplicialLDLt()
        # the outer residual check covers every factorization
        self._lu = solver_class("lu")(check_residual=False)
        self._stats.update(factorized_by=None, n_fallbacks=0, n_lu_fallbacks=0,
                           fallback_seconds=0.0, fallback_reason=None)

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        self._stats["factorized_by"] = "cholesky"
        start = self._stats["numeric_seconds"]
        try:
            super()._factorize(A)
            return
        except NotPositiveDefiniteError as error:
            reason = str(error)
        self._stats["n_fallbacks"] += 1
        self._stats["n_numeric"] += 1
        try:
            with self._timed("numeric_seconds"):
                self._stats["n_symbolic"] += self._ldlt.factorize(_as_csc(A))
            self._stats["factorized_by"] = "ldlt"
            self._stats["fallback_reason"] = f"{reason}; factorized by cholmod LDL^T"
        except NotPositiveDefiniteError as error:
            self._factorize_lu(A, f"{reason}; {error}")
        self._stats["fallback_seconds"] += self._stats["numeric_seconds"] - start

    def _factorize_lu(self, A: sp.csr_matrix | sp.csc_matrix, reason: str) -> None:
        with self._timed("numeric_seconds"):
            # symmetric: the CSC view of a CSR matrix is its transpose, A itself
            self._lu.factorize(_as_csc(A))
        self._stats["factorized_by"] = "lu"
        self._stats["n_lu_fallbacks"] += 1
        self._stats["fallback_reason"] = f"{reason}; factorized by {self._lu.name}"

    def _solve(self, b: np.ndarray, x0: np.ndarray | None, transpose: bool) -> np.ndarray:
        if self._stats["factorized_by"] != "ldlt" or self._verified:
            return super()._solve(b, x0, transpose)
        try:
            return super()._solve(b, x0, transpose)
        except (SolverError, NonFiniteError) as error:
            # L D L^T without pivoting met a tiny pivot: LU of the same matrix instead
            start = self._stats["numeric_seconds"]
            self._factorize_lu(self._matrix, f"cholmod LDL^T failed the check ({error})")
            self._stats["fallback_seconds"] += self._stats["numeric_seconds"] - start
            return super()._solve(b, x0, transpose)

    def _definiteness_error(self, csc: sp.csc_matrix) -> SolverError:
        # the fallbacks take the matrix whatever the cause, so the diagnosis (a second
        # numeric factorization, with a shift) would be wasted
        return NotPositiveDefiniteError(
            "cholmod: a pivot is not positive (the matrix is indefinite or singular)")

    def _substitute(self, b: np.ndarray, transpose: bool) -> np.ndarray:
        method = self._stats["factorized_by"]
        if method == "lu":
            return self._lu._substitute(b, transpose)
        if method == "ldlt":
            return self._ldlt(b)
        return super()._substitute(b, transpose)

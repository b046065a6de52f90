"""Sparse Cholesky factorization with CHOLMOD (scikit-sparse), for SPD matrices.

The fill-reducing ordering (symbolic analysis) depends only on the sparsity pattern, so it
is computed once and reused by every later :meth:`~LinearSolver.factorize` with the same
pattern; only the numeric factorization is repeated when the values change. The analysis
also gives the work of the factorization (:func:`factor_work`), from which the structure
that owns the solver chooses its BLAS threads.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from fesens.errors import NotPositiveDefiniteError, SingularMatrixError, SolverError
from fesens.openmp import FactorWork, cap_openmp_threads
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


# CHOLMOD's constants (cholmod_core.h, unchanged since its first release).
_ITYPE = {np.dtype(np.int32): 0, np.dtype(np.int64): 2}  # CHOLMOD_INT, CHOLMOD_LONG
_PATTERN, _DOUBLE, _GIVEN_ORDERING = 0, 0, 1
# cholmod_common is used as opaque storage (cholmod_start fills it): 2664 bytes in
# SuiteSparse 5.12, a few KiB in every release; this leaves ample room.
_COMMON_BYTES = 1 << 16


class _CholmodSparse(ctypes.Structure):
    """``cholmod_sparse`` (cholmod_core.h): a CSC matrix of CHOLMOD's."""

    _fields_ = [("nrow", ctypes.c_size_t), ("ncol", ctypes.c_size_t),
                ("nzmax", ctypes.c_size_t), ("p", ctypes.c_void_p), ("i", ctypes.c_void_p),
                ("nz", ctypes.c_void_p), ("x", ctypes.c_void_p), ("z", ctypes.c_void_p),
                ("stype", ctypes.c_int), ("itype", ctypes.c_int), ("xtype", ctypes.c_int),
                ("dtype", ctypes.c_int), ("sorted", ctypes.c_int), ("packed", ctypes.c_int)]


def _loaded_cholmod() -> ctypes.CDLL | None:
    """The CHOLMOD library scikit-sparse runs on (the one this process has loaded), or
    None where it cannot be found."""
    maps = Path("/proc/self/maps")
    paths = sorted({line.split()[-1] for line in maps.read_text().splitlines()
                    if "libcholmod" in line}) if maps.exists() else []
    name = paths[0] if paths else ctypes.util.find_library("cholmod")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def factor_work(csc: sp.csc_matrix, permutation: np.ndarray) -> FactorWork | None:
    """The work of factorizing ``csc`` in the order ``permutation``, from its column counts.

    CHOLMOD's ``cholmod_analyze_ordering`` (the etree, postorder and column counts that its
    analysis computes for an ordering) on the pattern of the upper triangle: the column
    counts ``c_j`` of ``L`` give :class:`~fesens.openmp.FactorWork`. Costs a tenth to a
    quarter of the analysis, once per structure (48x24x24 hex8, 90 000 unknowns: 0.14 s
    against 1.4 s; 400x200 quad4: 0.12 s against 0.42 s), and allocates nothing that
    outlives it. None where the library cannot be called.

    Parameters
    ----------
    csc : scipy.sparse.csc_matrix, shape (n, n)
        Symmetric; only the pattern of its upper triangle is read.
    permutation : numpy.ndarray, shape (n,)
        The fill-reducing order (``Factor.P()`` of scikit-sparse's analysis).
    """
    library = _loaded_cholmod()
    if library is None:
        return None
    index = np.int32 if csc.indices.dtype == np.int32 and csc.indptr.dtype == np.int32 \
        else np.int64
    indptr, indices = (np.ascontiguousarray(a, dtype=index) for a in (csc.indptr, csc.indices))
    n = csc.shape[0]
    perm = np.ascontiguousarray(permutation, dtype=index)
    parent, post, counts, first, level = (np.empty(n, dtype=index) for _ in range(5))
    matrix = _CholmodSparse(n, n, indices.size, indptr.ctypes.data, indices.ctypes.data,
                            None, None, None, 1, _ITYPE[np.dtype(index)], _PATTERN, _DOUBLE,
                            int(csc.has_sorted_indices), 1)
    prefix = "cholmod_" if index is np.int32 else "cholmod_l_"
    common = ctypes.create_string_buffer(_COMMON_BYTES)
    getattr(library, prefix + "start")(common)
    try:
        done = getattr(library, prefix + "analyze_ordering")(
            ctypes.byref(matrix), _GIVEN_ORDERING, _address(perm), None, ctypes.c_size_t(0),
            *(_address(a) for a in (parent, post, counts, first, level)), common)
    finally:
        getattr(library, prefix + "finish")(common)
    if done != 1:
        return None
    counts = counts.astype(np.float64)
    return FactorWork(flops=float(counts @ counts), largest_front=int(counts.max(initial=0)),
                      factor_entries=int(counts.sum()))


def _address(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


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


class SimplicialLDLt:
    """CHOLMOD's simplicial ``P A P^T = L D L^T`` without pivoting, for a symmetric matrix
    that may be indefinite (CHOLMOD's supernodal factorization is ``L L^T`` only).

    The analysis (AMD or METIS ordering, as CHOLMOD chooses) is kept while the pattern is
    unchanged. A zero pivot raises :class:`~fesens.errors.NotPositiveDefiniteError`; a
    tiny one gives an inaccurate factor, which only a residual check detects.
    """

    def __init__(self) -> None:
        self._factor = None
        self._pattern: MatrixStructure | None = None

    def factorize(self, csc: sp.csc_matrix) -> bool:
        """Factorize ``csc`` ``(n, n)``; whether a symbolic analysis was run for it."""
        analysed = self._pattern is None or not self._pattern.matches(csc)
        if analysed:
            self._factor = _cholmod.analyze(csc, mode="simplicial")
            self._pattern = MatrixStructure(csc)
        try:
            self._factor.cholesky_inplace(csc)
        except _cholmod.CholmodNotPositiveDefiniteError:
            raise NotPositiveDefiniteError("cholmod LDL^T: a zero pivot") from None
        return analysed

    def __call__(self, b: np.ndarray) -> np.ndarray:
        """The solution of ``A x = b`` for ``b`` ``(n,)`` or ``(n, k)``."""
        return self._factor(b)


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
        self.work: FactorWork | None = None

    @classmethod
    def available(cls) -> bool:
        return cholmod_available()

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        csc = _as_csc(A)
        if self._pattern is None or not self._pattern.matches(csc):
            with self._timed("symbolic_seconds"):
                self._factor = _cholmod.analyze(csc, mode="supernodal")
                self.work = factor_work(csc, self._factor.P())
            self._pattern = MatrixStructure(csc)
            self._stats["n_symbolic"] += 1
            if self.work is not None and self.on_analysis is not None:
                # before the numeric factorization, which the threads chosen from it run
                self.on_analysis(self.work)
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

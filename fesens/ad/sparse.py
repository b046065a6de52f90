"""Sparse matrices with traced values on a fixed pattern, and the differentiable solve.

A :class:`PatternMatrix` is a CSR matrix whose *values* (``data``, one per stored entry)
may be traced while its pattern is constant. Its cotangent is a vector on the same
pattern: ``K̄`` is never materialised as a dense or new sparse matrix.

Adjoint rules:

* ``y = K x``:        ``x̄ = Kᵀ ȳ``,  ``K̄_(ij) = ȳ_i x_j`` on the pattern;
* ``u = K⁻¹ f``:      ``λ = K⁻ᵀ ū`` (same factorization), ``f̄ = λ``,
  ``K̄_(ij) = −λ_i u_j`` on the pattern (summed over right-hand sides).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from fesens.ad.numpy_wrapper import MATMUL_BY_TYPE, getval
from fesens.ad.registry import defvjp, defvjp_joint
from fesens.ad.tracer import primitive
from fesens.errors import NonFiniteError
from fesens.openmp import BlasThreadLimit, FactorWork, blas_threads
from fesens.solvers import LinearSolver, make_solver, solver_class


class SolverHost:
    """Owner of the solver instances of one operator structure and of their BLAS threads.

    A subclass sets ``shape`` and ``nnz``; :meth:`solver` keeps one instance per backend
    spec, so every matrix on the structure shares its symbolic analysis (or multigrid
    hierarchy). A direct backend whose analysis knows the work of its factorization
    (CHOLMOD) reports it before the first numeric factorization, and the BLAS threads of
    the structure's direct solves follow that work from then on.
    """

    shape: tuple[int, int]
    nnz: int

    def __init__(self) -> None:
        self._solvers: dict[tuple, LinearSolver] = {}
        self._thread_limits: dict[bool, tuple] = {}
        # threads asking for the same spec at once get one instance (one analysis)
        self._creating = threading.RLock()

    def threads(self, direct: bool) -> tuple[int, str]:
        """The BLAS threads of a direct or iterative solve on this structure, and why
        (:func:`fesens.openmp.blas_threads`; chosen on first use, and for a direct solve
        again from the work its backend's analysis reports, then kept)."""
        return self._thread_limit(direct)[:2]

    def _thread_limit(self, direct: bool) -> tuple:
        if direct not in self._thread_limits:
            count, reason = blas_threads(self.shape[0], self.nnz, direct)
            self._thread_limits[direct] = (count, reason, BlasThreadLimit(count))
        return self._thread_limits[direct]

    def thread_limit(self, backend: LinearSolver) -> BlasThreadLimit:
        """The context that runs a solve with ``backend`` on the chosen BLAS threads."""
        return self._thread_limit(bool(backend.is_direct))[2]

    def _analysed(self, work: FactorWork) -> None:
        """Choose the threads of the direct solves from ``work`` and set them now: the
        analysis runs inside :meth:`thread_limit`'s context, right before the numeric
        factorization that the new count is for."""
        limit = self._thread_limit(True)[2]
        count, reason = blas_threads(self.shape[0], self.nnz, True, work)
        limit.count = count
        self._thread_limits[True] = (count, reason, limit)
        limit.__enter__()

    def solver(self, spec="auto", configure: Callable[[LinearSolver], None] | None = None
               ) -> LinearSolver:
        """This structure's solver instance for ``spec`` (created on first use, then kept).

        Parameters
        ----------
        spec : str, (str, dict) or LinearSolver
            Backend name (see :func:`fesens.solvers.available_solvers`), with options, or an
            instance (returned as it is).
        configure : callable, optional
            Called once with a new instance (e.g. to give AMG a near-null space).
        """
        if isinstance(spec, LinearSolver):
            return spec
        name, options = (spec, {}) if isinstance(spec, str) else spec
        key = (name, tuple(sorted(options.items(), key=lambda item: item[0])))
        with self._creating:
            backend = self._solvers.get(key)
            if backend is None:
                backend = make_solver(name, **options)
                backend.on_analysis = _AnalysisListener(self)
                if configure is not None:
                    configure(backend)
                self._solvers[key] = backend
        return backend


class _AnalysisListener:
    """A backend's :attr:`~fesens.solvers.LinearSolver.on_analysis`: tells its host, held
    weakly (the host owns the backend; a cycle would keep a factorization alive until the
    garbage collector runs)."""

    __slots__ = ("_host",)

    def __init__(self, host: SolverHost):
        self._host = weakref.ref(host)

    def __call__(self, work: FactorWork) -> None:
        host = self._host()
        if host is not None:
            host._analysed(work)


class SparsePattern(SolverHost):
    """The constant structure of a CSR matrix: ``indptr``, ``indices``, ``shape``.

    A pattern owns the solver instances used on it (:meth:`solver`): every matrix on the
    pattern, traced or not, shares their symbolic analysis.
    """

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, shape: tuple[int, int]):
        super().__init__()
        self.indptr = indptr
        self.indices = indices
        self.shape = shape

    @classmethod
    def of(cls, matrix) -> SparsePattern:
        """The pattern of a scipy sparse matrix (converted to CSR, duplicates summed)."""
        csr = sp.csr_matrix(matrix)
        csr.sum_duplicates()
        return cls(csr.indptr, csr.indices, csr.shape)

    @property
    def nnz(self) -> int:
        return self.indices.size

    @cached_property
    def has_sorted_indices(self) -> bool:
        """Whether the column indices of every row are sorted (checked once)."""
        return bool(sp.csr_matrix((np.empty(self.nnz), self.indices, self.indptr),
                                  shape=self.shape).has_sorted_indices)

    @cached_property
    def rows(self) -> np.ndarray:
        """Row of each stored entry, ``(nnz,)``."""
        return np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))

    @property
    def cols(self) -> np.ndarray:
        """Column of each stored entry, ``(nnz,)``."""
        return self.indices

    def outer(self, a, b):
        """``Σ_k a_(i,k) b_(j,k)`` at every stored ``(i, j)``: an outer product on the pattern."""
        products = a[self.rows] * b[self.cols]
        return products if np.ndim(products) == 1 else np.sum(products, axis=1)


class PatternMatrix:
    """A CSR matrix = constant :class:`SparsePattern` + values ``data`` ``(nnz,)``."""

    __slots__ = ("pattern", "data", "__weakref__")

    def __init__(self, pattern: SparsePattern, data: np.ndarray):
        self.pattern = pattern
        self.data = data

    @property
    def shape(self) -> tuple[int, int]:
        return self.pattern.shape

    def tocsr(self) -> sp.csr_matrix:
        """A scipy CSR matrix sharing this matrix's arrays."""
        p = self.pattern
        csr = sp.csr_matrix((self.data, p.indices, p.indptr), shape=p.shape)
        csr.has_sorted_indices = p.has_sorted_indices  # spares scipy a pass per matrix
        return csr

    def __matmul__(self, x):
        return matvec(self, x)


class OuterCotangent:
    """The cotangent ``K̄ = Σ_p a_p b_pᵀ`` of a :class:`PatternMatrix`, kept as factors.

    Only its restriction to the pattern matters; :meth:`data` forms that (``(nnz,)``) when a
    consumer needs it, while an assembler contracts the factors per cell instead
    (``c̄_e = a_eᵀ K_e b_e``), never touching the pattern. Factors are
    ``(n,)`` or ``(n, k)`` (summed over the ``k`` columns).
    """

    __array_ufunc__ = None  # numpy defers ``array + cotangent`` to __radd__

    def __init__(self, pattern: SparsePattern, pairs: list):
        self.pattern = pattern
        self.pairs = pairs

    def data(self):
        """The cotangent on the pattern, ``(nnz,)``."""
        total = self.pattern.outer(*self.pairs[0])
        for a, b in self.pairs[1:]:
            total = total + self.pattern.outer(a, b)
        return total

    def __add__(self, other):
        if isinstance(other, OuterCotangent):
            return OuterCotangent(self.pattern, self.pairs + other.pairs)
        return self.data() + other

    __radd__ = __add__


def pattern_data(g):
    """A matrix cotangent as values on the pattern (materialising outer factors)."""
    return g.data() if isinstance(g, OuterCotangent) else g


def _check_values(data: np.ndarray, nnz: int) -> np.ndarray:
    data = np.asarray(data, dtype=float)
    if data.shape != (nnz,):
        raise ValueError(f"sparse values must have shape ({nnz},), got {data.shape}")
    return data


@primitive
def sparse_matrix(pattern: SparsePattern, data) -> PatternMatrix:
    """The matrix with ``pattern`` and values ``data`` ``(nnz,)`` (differentiable in ``data``)."""
    return PatternMatrix(pattern, _check_values(data, pattern.nnz))


defvjp(sparse_matrix, None, lambda ans, pattern, data: lambda g: pattern_data(g))


@primitive
def matvec(K: PatternMatrix, x):
    """``K @ x`` for ``x`` of shape ``(n,)`` or ``(n, k)``."""
    return K.tocsr() @ x


MATMUL_BY_TYPE[PatternMatrix] = matvec
defvjp(
    matvec,
    lambda ans, K, x: lambda g: OuterCotangent(getval(K).pattern, [(g, x)]),
    lambda ans, K, x: lambda g: _transpose_matvec(K, g),
)


@primitive
def _transpose_matvec(K: PatternMatrix, y):
    return K.tocsr().T @ y


defvjp(
    _transpose_matvec,
    lambda ans, K, y: lambda g: OuterCotangent(getval(K).pattern, [(y, g)]),
    lambda ans, K, y: lambda g: matvec(K, g),
)


# ------------------------------------------------------------------ solve
@primitive
def solve(K: PatternMatrix, f, solver="auto"):
    """``u = K⁻¹ f`` for ``f`` of shape ``(n,)`` or ``(n, k)`` (several load cases).

    Parameters
    ----------
    K : PatternMatrix
        Square matrix (traced values allowed).
    f : array_like
        Right-hand side(s).
    solver : str, (str, dict) or LinearSolver
        Backend name (with options), or a solver instance. A name gets the pattern's own
        instance (:meth:`SparsePattern.solver`), so later solves on the same pattern reuse
        the symbolic analysis.
    """
    f = np.asarray(f, dtype=float)
    if not np.all(np.isfinite(f)):
        raise NonFiniteError("the right-hand side of solve contains NaN or infinity")
    backend = K.pattern.solver(solver)
    # another thread's factorization must not replace K's before its solve reads it
    with backend.lock, K.pattern.thread_limit(backend):
        return _factorized(K, backend).solve(f)


@primitive
def _adjoint_solve(K: PatternMatrix, g, solver="auto"):
    """``λ = K⁻ᵀ g`` with the factorization of ``K`` (linear in ``g``)."""
    backend = K.pattern.solver(solver)
    with backend.lock, K.pattern.thread_limit(backend):  # as in solve
        return _factorized(K, backend).solve_transpose(np.asarray(g, dtype=float))


def _factorized(K: PatternMatrix, solver) -> LinearSolver:
    """The pattern's solver for ``solver``, holding the factorization of ``K``.

    The forward solve factorizes; the adjoint solve of the same values finds the
    factorization in place (:meth:`~fesens.solvers.LinearSolver.factorize_once`), or
    makes it again when another solve on the pattern (another thread's) replaced it. The
    caller holds the backend's lock until its solve is done.
    """
    backend = K.pattern.solver(solver)
    backend.factorize_once(K.pattern, K.data, K.tocsr)
    return backend


def self_adjoint(g, f, solver) -> bool:
    """True when ``g`` is the forward right-hand side of a symmetric backend: ``λ = u``.

    (Compliance ``fᵀu`` has ``ū = f``: its adjoint solve would repeat the forward one.)
    """
    if type(g) is not np.ndarray or type(f) is not np.ndarray or g.shape != f.shape:
        return False
    backend = solver if isinstance(solver, LinearSolver) else None
    symmetric = backend.symmetric if backend is not None else _named_symmetric(solver)
    return symmetric and np.array_equal(g, f)


def _named_symmetric(solver) -> bool:
    """Whether the backend a name (or ``(name, options)``) stands for is symmetric."""
    name = solver if isinstance(solver, str) else solver[0]
    return solver_class(name).symmetric


def _solve_vjp(argnums, u, K, f, solver="auto"):
    def vjp(g):
        # the ranks of a distributed model decide together: each then solves, or none
        same = getval(K).pattern.solver(solver).on_every_rank(self_adjoint(g, f, solver))
        lam = u if same else _adjoint_solve(K, g, solver=solver)
        grads = {1: lam}
        if 0 in argnums:
            grads[0] = OuterCotangent(getval(K).pattern, [(-lam, u)])
        return tuple(grads[i] for i in argnums)

    return vjp


def _adjoint_solve_vjp(argnums, lam, K, g, solver="auto"):
    """``w = K⁻¹ h``: ``ḡ = w``, ``K̄ = −λ wᵀ``; one solve for both (a second-order sweep)."""
    def vjp(h):
        w = solve(K, h, solver=solver)
        grads = {1: w}
        if 0 in argnums:
            grads[0] = OuterCotangent(getval(K).pattern, [(-lam, w)])
        return tuple(grads[i] for i in argnums)

    return vjp


defvjp_joint(solve, _solve_vjp)
defvjp_joint(_adjoint_solve, _adjoint_solve_vjp)

"""Preconditioned Krylov backends: CG (SPD), MINRES (symmetric), GMRES (general).

``factorize`` builds the preconditioner; each solve runs scipy's Krylov method per
right-hand side and accepts a solution only when the true relative residual
``||b - A x|| / ||b||`` is at most ``rtol``; otherwise it raises
:class:`~fesens.errors.ConvergenceError` (or :class:`~fesens.errors.NonFiniteError` for
NaN or infinity), never returning a wrong solution silently.

scipy's stopping tests do not always bound the true residual: MINRES tests
``||r||_M / (||A|| ||x||)`` in the preconditioner's norm, which can leave
``||b - A x|| / ||b||`` orders of magnitude above its ``rtol``; CG's recursively updated
residual drifts from the true one near rounding level. A solve is therefore a short
iterative refinement: each cycle solves the residual equation ``A d = r`` from a zero
initial guess and updates ``x += d``, ``r = b - A x`` (recomputed, not recursed). The
inner tolerance asked of scipy is the reduction ``rtol ||b|| / ||r||`` that reaches
``rtol``, tightened by how far the previous cycle fell short of what it was asked; after
a cycle without progress, scipy is asked for its tightest tolerance (eps). Cycles continue
while the ``maxiter`` budget lasts, until a cycle at that tightest tolerance (or, for
GMRES, a window of restart cycles) makes no progress: stagnation, reported with the
rounding level of the residual. Starting every cycle from zero keeps MINRES's test
relative to the correction, not the whole solution, so each cycle can reduce the residual
by many orders of magnitude.

GMRES needs a preconditioner of ``A^T`` for adjoint solves: it is the preconditioner of
``A`` when that is transpose-invariant (Jacobi, none) or ``A`` is symmetric, and is built
on the first transposed solve otherwise.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, cg, gmres, minres

from fesens.errors import ConvergenceError, NonFiniteError, SolverError
from fesens.solvers.base import LinearSolver
from fesens.solvers.preconditioners import (
    READS_NEAR_NULLSPACE,
    TRANSPOSE_INVARIANT,
    Preconditioner,
    check_near_nullspace,
    check_preconditioner,
    default_preconditioner,
    make_preconditioner,
)
from fesens.solvers.registry import register_solver

NearNullspace = np.ndarray | Callable[[], np.ndarray] | None

# Refinement has stagnated when the last `stagnation_cycles` cycles together reduced the
# residual by less than this factor: it is at the attainable accuracy of the matrix (or the
# method stalls).
_STAGNATION = 0.9
_EPS = float(np.finfo(np.float64).eps)
# Smallest inner tolerance asked of scipy (MINRES treats anything below eps as eps).
_MIN_INNER_RTOL = _EPS
# A GMRES matrix is treated as symmetric (its preconditioner serves A^T) when
# max |A - A^T| <= _SYMMETRY_RTOL max |A|; otherwise A^T gets its own preconditioner.
_SYMMETRY_RTOL = 1e-12


class IterativeSolver(LinearSolver):
    """Base of the Krylov backends.

    Parameters
    ----------
    preconditioner : {"amg", "jacobi", "none"}, optional
        Default ``"amg"`` when pyamg is installed, else ``"jacobi"``.
    rtol : float, default 1e-10
        Required relative residual ``||b - A x|| / ||b||`` of every right-hand side.
    maxiter : int, optional
        Iteration budget per right-hand side (over all refinement cycles); default
        ``10 n``.
    near_nullspace : array_like of shape (n,) or (n, k), or callable, optional
        Near-null-space vectors of the matrices to be factorized, for the AMG
        preconditioner (ignored by the others): for elasticity the rigid-body modes on the
        free dofs, ``(n_free, 3)`` in 2D and ``(n_free, 6)`` in 3D, which cut CG
        iterations 3-fold on small meshes and 15-fold at 40 000 dofs (2D; see
        ``benchmarks/bench_iterative.py``). A callable without arguments
        returning them is evaluated at every :meth:`factorize` (use it when the free dofs
        may change between factorizations). Default: constants (right for scalar fields).
        Also settable as the attribute ``near_nullspace``.
    """

    is_direct = False
    symmetric: bool
    """Whether the method assumes a symmetric matrix (and so a symmetric preconditioner)."""
    requirement: str
    """What the method needs of the matrix, quoted in breakdown messages."""
    stagnation_cycles: int = 1
    """Refinement cycles over which the residual must fall by 10 % or more (else stop);
    judged after cycles at the tightest inner tolerance or that scipy ended unconverged."""
    stagnation_hint: str = ""
    """Appended to the stagnation message."""

    def __init__(
        self,
        *,
        preconditioner: str | None = None,
        rtol: float = 1e-10,
        maxiter: int | None = None,
        near_nullspace: NearNullspace = None,
    ) -> None:
        super().__init__()
        self.preconditioner = default_preconditioner() if preconditioner is None else preconditioner
        check_preconditioner(self.preconditioner)
        if not 0.0 < rtol < 1.0:
            raise ValueError(f"rtol must be in (0, 1), got {rtol}")
        if maxiter is not None and maxiter < 1:
            raise ValueError(f"maxiter must be at least 1, got {maxiter}")
        self.rtol = rtol
        self.maxiter = maxiter
        self.near_nullspace = near_nullspace
        self._stats.update(last_iterations=None, last_residual=None)
        self._M: Preconditioner = None
        self._M_transpose: Preconditioner = None

    @property
    def near_nullspace(self) -> NearNullspace:
        """Near-null-space vectors (n, k) for AMG, a callable returning them, or None.

        A new value takes effect at the next :meth:`factorize`.
        """
        return self._near_nullspace

    @near_nullspace.setter
    def near_nullspace(self, vectors: NearNullspace) -> None:
        if vectors is not None and not callable(vectors):
            vectors = check_near_nullspace(vectors)
        self._near_nullspace = vectors

    @property
    def reads_near_nullspace(self) -> bool:
        """Whether the preconditioner is built from :attr:`near_nullspace` (AMG)."""
        return self.preconditioner in READS_NEAR_NULLSPACE

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        self._M_transpose = None
        self._M = self._build_preconditioner(A)

    def _build_preconditioner(self, A: sp.csr_matrix | sp.csc_matrix) -> Preconditioner:
        """The preconditioner of ``A``, counted and timed as a numeric setup."""
        with self._timed("numeric_seconds"):
            M = make_preconditioner(
                self.preconditioner,
                A,
                symmetric=self.symmetric,
                near_nullspace=self._amg_near_nullspace(),
            )
        self._stats["n_numeric"] += 1
        return M

    def _amg_near_nullspace(self) -> np.ndarray | None:
        """The near-null space for an AMG preconditioner (a callable is evaluated now)."""
        vectors = self._near_nullspace
        if not self.reads_near_nullspace or vectors is None:
            return None
        return vectors() if callable(vectors) else vectors

    def _preconditioner_for(self, transpose: bool) -> Preconditioner:
        """The preconditioner of ``A`` or of ``A^T`` (decided, and built, on first use)."""
        if not transpose or self.symmetric or self.preconditioner in TRANSPOSE_INVARIANT:
            return self._M
        if self._M_transpose is None:  # AMG: never None once built
            A = self._matrix
            self._M_transpose = (
                self._M if is_symmetric(A) else self._build_preconditioner(A.T.tocsr())
            )
        return self._M_transpose

    def _solve(self, b: np.ndarray, x0: np.ndarray | None, transpose: bool) -> np.ndarray:
        operator = self._matrix.T if transpose else self._matrix
        M = self._preconditioner_for(transpose)
        return solve_columns(
            b, x0, lambda column, guess: self._solve_column(operator, M, column, guess),
            self._stats)

    def _solve_column(
        self, operator: sp.spmatrix, M: Preconditioner, b: np.ndarray, x0: np.ndarray | None
    ) -> tuple[np.ndarray, int, float]:
        """Solve one right-hand side to ``rtol``; returns (x, iterations, residual).

        Refinement cycles on the residual equation (see the module docstring).
        """
        maxiter = 10 * b.shape[0] if self.maxiter is None else self.maxiter
        b_norm = float(np.linalg.norm(b))
        if b_norm == 0.0:
            return np.zeros_like(b), 0, 0.0
        x = np.zeros_like(b) if x0 is None else x0.copy()
        r = b.copy() if x0 is None else b - operator @ x
        residuals = [float(np.linalg.norm(r)) / b_norm]  # after each cycle
        iterations, slack, stop = 0, 1.0, ""
        while residuals[-1] > self.rtol:
            if iterations >= maxiter:
                stop = "the iteration budget is exhausted; raise maxiter"
                break
            target = self.rtol / residuals[-1]  # the reduction of r that reaches rtol
            inner_rtol = max(slack * target, _MIN_INNER_RTOL)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                d, info, n_iterations = self._krylov(
                    operator, r, M, rtol=inner_rtol, maxiter=maxiter - iterations
                )
            iterations += n_iterations
            self._require_finite(d, iterations)
            x = x + d
            r = b - operator @ x
            residuals.append(float(np.linalg.norm(r)) / b_norm)
            if residuals[-1] <= self.rtol or iterations >= maxiter:
                continue
            if info == 0 and inner_rtol > _MIN_INNER_RTOL:
                slack = self._tightened(inner_rtol, residuals[-1] / residuals[-2])
                continue
            stop = self._stop_reason(residuals, info)
            if stop:
                break
        if not residuals[-1] <= self.rtol:
            # what rounding alone leaves of a product A x: eps |A| |x|, entry by entry
            floor = _EPS * np.linalg.norm(abs(operator) @ np.abs(x)) / b_norm
            raise ConvergenceError(
                f"{self.name} (preconditioner {self.preconditioner!r}) did not converge: "
                f"relative residual {residuals[-1]:.3e} > rtol {self.rtol:.1e} after "
                f"{iterations} iterations (maxiter {maxiter}); {stop} (rounding level "
                f"eps || |A| |x| || / ||b|| = {floor:.1e})",
                iterations=iterations,
                residual=residuals[-1],
                tolerance=self.rtol,
            )
        return x, iterations, residuals[-1]

    @staticmethod
    def _tightened(inner_rtol: float, reduction: float) -> float:
        """The next slack after scipy met ``inner_rtol`` but the true residual fell by
        ``reduction`` only.

        scipy's test was ``reduction / inner_rtol`` times looser than the true residual:
        the next cycle asks for that much more. A cycle without progress (a MINRES cycle
        can even raise ``||r||``, having minimised ``||r||_M``) asks for all scipy can do;
        only a cycle at that floor is judged for stagnation.
        """
        return inner_rtol / reduction if reduction <= _STAGNATION else 0.0

    def _stop_reason(self, residuals: list[float], info: int) -> str:
        """Why refinement should stop after a cycle short of ``rtol``, or ``""``."""
        if info < 0:
            return f"scipy reports a breakdown (info {info}); {self.requirement}"
        window = self.stagnation_cycles
        if len(residuals) > window:
            factor = residuals[-1] / residuals[-1 - window]
            if not factor <= _STAGNATION:
                cycles = "cycle" if window == 1 else f"{window} cycles"
                return (
                    f"stagnation: the residual changed by a factor {factor:.3g} over the last "
                    f"{cycles}, so rtol is probably below the attainable accuracy of this "
                    f"matrix in double precision{self.stagnation_hint}"
                )
        return ""

    def _require_finite(self, d: np.ndarray, iterations: int) -> None:
        """Raise :class:`NonFiniteError` if a Krylov correction holds NaN or inf."""
        n_bad = d.size - int(np.count_nonzero(np.isfinite(d)))
        if n_bad:
            raise NonFiniteError(
                f"{self.name} (preconditioner {self.preconditioner!r}): the solution contains "
                f"{n_bad} non-finite values (NaN or inf) after {iterations} iterations; the "
                f"method broke down ({self.requirement})"
            )

    @abstractmethod
    def _krylov(
        self,
        operator: sp.spmatrix,
        b: np.ndarray,
        M: Preconditioner,
        *,
        rtol: float,
        maxiter: int,
    ) -> tuple[np.ndarray, int, int]:
        """Run the scipy method from ``x0 = 0``; returns (x, scipy info, iterations)."""


def solve_columns(b: np.ndarray, x0: np.ndarray | None,
                  solve_column: Callable[[np.ndarray, np.ndarray | None],
                                         tuple[np.ndarray, int, float]],
                  stats: dict) -> np.ndarray:
    """Solve every right-hand side of ``b`` (``(n,)`` or ``(n, k)``) by ``solve_column(b_j,
    x0_j) -> (x_j, iterations, residual)``; ``stats`` records the most iterations and the
    largest residual of the columns. Returns ``x`` shaped like ``b``."""
    columns = b.reshape(b.shape[0], -1)
    guesses = None if x0 is None else x0.reshape(columns.shape)
    # the output is made after the first column's solve, which then runs without it
    # (24 MB at 160x80x80 hex8 cells)
    x = np.empty_like(columns) if columns.shape[1] == 0 else None
    iterations, residuals = [], []
    for j in range(columns.shape[1]):
        guess = None if guesses is None else guesses[:, j]
        column, n_iterations, residual = solve_column(columns[:, j], guess)
        if x is None:
            x = np.empty_like(columns)
        x[:, j] = column
        del column
        iterations.append(n_iterations)
        residuals.append(residual)
    stats["last_iterations"] = max(iterations, default=0)
    stats["last_residual"] = max(residuals, default=0.0)
    return x.reshape(b.shape)


def is_symmetric(A: sp.csr_matrix | sp.csc_matrix) -> bool:
    """Whether ``max |A - A^T| <= _SYMMETRY_RTOL max |A|`` (one O(nnz) pass)."""
    difference = abs(A - A.T)
    if difference.nnz == 0:
        return True
    return float(difference.max()) <= _SYMMETRY_RTOL * float(abs(A).max())


class _IterationCounter:
    """scipy callback counting its calls (one per iteration)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, *args: object) -> None:
        self.count += 1


@register_solver("cg")
class CGSolver(IterativeSolver):
    """Preconditioned conjugate gradients, for symmetric positive definite matrices.

    Parameters: see :class:`IterativeSolver`.
    """

    symmetric = True
    requirement = "CG needs a symmetric positive definite matrix; try 'minres' or 'gmres'"

    def _krylov(
        self,
        operator: sp.spmatrix,
        b: np.ndarray,
        M: Preconditioner,
        *,
        rtol: float,
        maxiter: int,
    ) -> tuple[np.ndarray, int, int]:
        counter = _IterationCounter()
        x, info = cg(operator, b, rtol=rtol, atol=0.0, maxiter=maxiter, M=M, callback=counter)
        return x, info, counter.count


@register_solver("minres")
class MinresSolver(IterativeSolver):
    """Preconditioned MINRES, for symmetric (possibly indefinite) matrices.

    The preconditioner must be symmetric positive definite (Jacobi always is; AMG is for
    SPD matrices). Parameters: see :class:`IterativeSolver`.

    Notes
    -----
    scipy's MINRES stops when ``||r||_M / (||A|| ||x||)`` falls below its tolerance (or
    below eps). Where a few unknowns have huge values, as the void regions of a SIMP
    design with ``E_min = 1e-9`` do, ``||x||`` makes that test pass after a few iterations
    with an unchanged residual. MINRES therefore runs on the symmetrically scaled system
    ``(D A D) y = D b``, ``x = D y``, with ``D = |diag(A)|^(-1/2)`` and the preconditioner
    ``D^(-1) M D^(-1)``: the iterates are those of MINRES on ``A`` with ``M`` (the
    minimised norm ``||r||_M`` is unchanged); only the stopping test now measures
    ``||y|| = ||D^(-1) x||``, in which no unknown dominates.
    """

    symmetric = True
    requirement = "MINRES needs a symmetric matrix and a symmetric positive definite preconditioner"

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        super()._factorize(A)
        diagonal = np.abs(A.diagonal())
        self._scaling = 1.0 / np.sqrt(np.where(diagonal > 0.0, diagonal, 1.0))

    def _krylov(
        self,
        operator: sp.spmatrix,
        b: np.ndarray,
        M: Preconditioner,
        *,
        rtol: float,
        maxiter: int,
    ) -> tuple[np.ndarray, int, int]:
        D = self._scaling
        scaled = LinearOperator(operator.shape, matvec=lambda y: D * (operator @ (D * y)))
        if M is None:
            scaled_M = LinearOperator(operator.shape, matvec=lambda y: y / D**2)
        else:
            scaled_M = LinearOperator(operator.shape, matvec=lambda y: (M @ (y / D)) / D)
        counter = _IterationCounter()
        try:
            y, info = minres(
                scaled, D * b, rtol=rtol, maxiter=maxiter, M=scaled_M, callback=counter
            )
        except ValueError as error:  # scipy's "indefinite preconditioner", "non-symmetric"
            raise SolverError(
                f"minres (preconditioner {self.preconditioner!r}) stopped after "
                f"{counter.count} iterations: {error}. {self.requirement} (AMG is not one for "
                "an indefinite matrix: use preconditioner='jacobi')."
            ) from None
        return D * y, info, counter.count


@register_solver("gmres")
class GmresSolver(IterativeSolver):
    """Restarted, preconditioned GMRES, for general (non-symmetric) matrices.

    Parameters
    ----------
    restart : int, default 30
        Krylov subspace dimension between restarts.
    preconditioner, rtol, maxiter, near_nullspace
        See :class:`IterativeSolver`; ``maxiter`` counts inner iterations.

    Notes
    -----
    Every refinement cycle (see the module docstring) is one restart cycle, so restarts
    and refinement are the same loop; the solve stops as stagnated when five restart
    cycles together reduce the residual by less than 10 %.
    """

    symmetric = False
    requirement = "GMRES needs a non-singular matrix"
    stagnation_cycles = 5
    stagnation_hint = (
        ", or GMRES(restart) stalls: try a larger restart or a stronger preconditioner"
    )

    def __init__(
        self,
        *,
        restart: int = 30,
        preconditioner: str | None = None,
        rtol: float = 1e-10,
        maxiter: int | None = None,
        near_nullspace: NearNullspace = None,
    ) -> None:
        super().__init__(
            preconditioner=preconditioner, rtol=rtol, maxiter=maxiter, near_nullspace=near_nullspace
        )
        if restart < 1:
            raise ValueError(f"restart must be at least 1, got {restart}")
        self.restart = restart

    def _krylov(
        self,
        operator: sp.spmatrix,
        b: np.ndarray,
        M: Preconditioner,
        *,
        rtol: float,
        maxiter: int,
    ) -> tuple[np.ndarray, int, int]:
        counter = _IterationCounter()
        # One restart cycle; scipy's info > 0 only says that it did not reach rtol.
        x, info = gmres(
            operator,
            b,
            rtol=rtol,
            atol=0.0,
            restart=min(self.restart, maxiter),
            maxiter=1,
            M=M,
            callback=counter,
            callback_type="pr_norm",
        )
        return x, info, counter.count

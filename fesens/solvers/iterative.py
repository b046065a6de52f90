"""Preconditioned Krylov backends: CG (SPD), MINRES (symmetric), GMRES (general).

``factorize`` builds the preconditioner; each solve runs scipy's Krylov method per
right-hand side and then checks the true relative residual ``||b - A x|| / ||b||``
against ``rtol``. scipy's stopping tests do not always bound that quantity (MINRES tests
a backward error), so a solve that stops early is resumed from its iterate with a
tolerance tightened by the observed shortfall, within the ``maxiter`` budget.
"""

from __future__ import annotations

import math
from abc import abstractmethod

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import cg, gmres, minres

from fesens.errors import ConvergenceError
from fesens.solvers.base import LinearSolver, register_solver, relative_residual, require_finite
from fesens.solvers.preconditioners import (
    Preconditioner,
    check_preconditioner,
    default_preconditioner,
    make_preconditioner,
)

# Resumptions after scipy reports convergence but the true residual misses rtol.
_MAX_RESTARTS = 4


class IterativeSolver(LinearSolver):
    """Base of the Krylov backends.

    Parameters
    ----------
    preconditioner : {"amg", "jacobi", "none"}, optional
        Default ``"amg"`` when pyamg is installed, else ``"jacobi"``.
    rtol : float, default 1e-10
        Required relative residual ``||b - A x|| / ||b||`` of every right-hand side.
    maxiter : int, optional
        Iteration budget per right-hand side; default ``10 n``.
    """

    is_direct = False
    symmetric: bool
    """Whether the method assumes a symmetric matrix (and so a symmetric preconditioner)."""

    def __init__(
        self,
        *,
        preconditioner: str | None = None,
        rtol: float = 1e-10,
        maxiter: int | None = None,
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
        self._stats.update(last_iterations=None, last_residual=None)
        self._M: Preconditioner = None
        self._M_transpose: Preconditioner = None

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        self._M_transpose = None
        with self._timed("numeric_seconds"):
            self._M = make_preconditioner(self.preconditioner, A, symmetric=self.symmetric)
        self._stats["n_numeric"] += 1

    def _preconditioner_for(self, transpose: bool) -> Preconditioner:
        """The preconditioner of ``A`` or, built on first use, of ``A^T``."""
        if not transpose or self.symmetric:
            return self._M
        if self._M_transpose is None:
            with self._timed("numeric_seconds"):
                self._M_transpose = make_preconditioner(
                    self.preconditioner, self._matrix.T.tocsr(), symmetric=False
                )
            self._stats["n_numeric"] += 1
        return self._M_transpose

    def _solve(self, b: np.ndarray, x0: np.ndarray | None, transpose: bool) -> np.ndarray:
        operator = self._matrix.T if transpose else self._matrix
        M = self._preconditioner_for(transpose)
        columns = b.reshape(b.shape[0], -1)
        guesses = None if x0 is None else x0.reshape(columns.shape)
        x = np.empty_like(columns)
        iterations, residuals = [], []
        for j in range(columns.shape[1]):
            guess = None if guesses is None else guesses[:, j]
            x[:, j], n_iterations, residual = self._solve_column(operator, M, columns[:, j], guess)
            iterations.append(n_iterations)
            residuals.append(residual)
        self._stats["last_iterations"] = max(iterations, default=0)
        self._stats["last_residual"] = max(residuals, default=0.0)
        return x.reshape(b.shape)

    def _solve_column(
        self, operator: sp.spmatrix, M: Preconditioner, b: np.ndarray, x0: np.ndarray | None
    ) -> tuple[np.ndarray, int, float]:
        """Solve one right-hand side to ``rtol``; returns (x, iterations, residual)."""
        maxiter = 10 * b.shape[0] if self.maxiter is None else self.maxiter
        x = np.zeros_like(b) if x0 is None else x0.copy()
        residual = relative_residual(operator, x, b)
        iterations, inner_rtol, info = 0, self.rtol, 0
        for _ in range(1 + _MAX_RESTARTS):
            if residual <= self.rtol or iterations >= maxiter:
                break
            x, info, n_iterations = self._krylov(
                operator, b, x, M, rtol=inner_rtol, maxiter=maxiter - iterations
            )
            iterations += n_iterations
            require_finite(x, f"the {self.name} iterate")
            previous, residual = residual, relative_residual(operator, x, b)
            if info != 0 or residual >= previous:
                break  # scipy gave up (budget or breakdown), or no progress
            # scipy met its own stopping test but maybe not ours: tighten by the shortfall
            inner_rtol *= self.rtol / max(residual, self.rtol)
        if not residual <= self.rtol:
            raise ConvergenceError(
                f"{self.name} (preconditioner {self.preconditioner!r}) did not converge: "
                f"relative residual {residual:.3e} > rtol {self.rtol:.1e} after "
                f"{iterations} iterations (maxiter {maxiter}, scipy info {info})",
                iterations=iterations,
                residual=residual,
                tolerance=self.rtol,
            )
        return x, iterations, residual

    @abstractmethod
    def _krylov(
        self,
        operator: sp.spmatrix,
        b: np.ndarray,
        x0: np.ndarray,
        M: Preconditioner,
        *,
        rtol: float,
        maxiter: int,
    ) -> tuple[np.ndarray, int, int]:
        """Run the scipy method; returns (x, scipy info, iterations performed)."""


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

    def _krylov(
        self,
        operator: sp.spmatrix,
        b: np.ndarray,
        x0: np.ndarray,
        M: Preconditioner,
        *,
        rtol: float,
        maxiter: int,
    ) -> tuple[np.ndarray, int, int]:
        counter = _IterationCounter()
        x, info = cg(
            operator, b, x0=x0, rtol=rtol, atol=0.0, maxiter=maxiter, M=M, callback=counter
        )
        return x, info, counter.count


@register_solver("minres")
class MinresSolver(IterativeSolver):
    """Preconditioned MINRES, for symmetric (possibly indefinite) matrices.

    The preconditioner must be symmetric positive definite (Jacobi always is; AMG is for
    SPD matrices). Parameters: see :class:`IterativeSolver`.
    """

    symmetric = True

    def _krylov(
        self,
        operator: sp.spmatrix,
        b: np.ndarray,
        x0: np.ndarray,
        M: Preconditioner,
        *,
        rtol: float,
        maxiter: int,
    ) -> tuple[np.ndarray, int, int]:
        counter = _IterationCounter()
        x, info = minres(operator, b, x0=x0, rtol=rtol, maxiter=maxiter, M=M, callback=counter)
        return x, info, counter.count


@register_solver("gmres")
class GmresSolver(IterativeSolver):
    """Restarted, preconditioned GMRES, for general (non-symmetric) matrices.

    Parameters
    ----------
    restart : int, default 30
        Krylov subspace dimension between restarts.
    preconditioner, rtol, maxiter
        See :class:`IterativeSolver`; ``maxiter`` counts inner iterations, rounded up to
        whole restart cycles.
    """

    symmetric = False

    def __init__(
        self,
        *,
        restart: int = 30,
        preconditioner: str | None = None,
        rtol: float = 1e-10,
        maxiter: int | None = None,
    ) -> None:
        super().__init__(preconditioner=preconditioner, rtol=rtol, maxiter=maxiter)
        self.restart = restart

    def _krylov(
        self,
        operator: sp.spmatrix,
        b: np.ndarray,
        x0: np.ndarray,
        M: Preconditioner,
        *,
        rtol: float,
        maxiter: int,
    ) -> tuple[np.ndarray, int, int]:
        counter = _IterationCounter()
        restart = min(self.restart, maxiter)
        x, info = gmres(
            operator,
            b,
            x0=x0,
            rtol=rtol,
            atol=0.0,
            restart=restart,
            maxiter=math.ceil(maxiter / restart),
            M=M,
            callback=counter,
            callback_type="pr_norm",
        )
        return x, info, counter.count

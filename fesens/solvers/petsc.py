"""PETSc backends (petsc4py): a KSP with an algebraic multigrid, and a direct factorization.

``"petsc"`` runs a PETSc Krylov method (default CG) with PETSc's preconditioners: ``"amg"``
is GAMG, smoothed aggregation built on the near-null space (the rigid-body modes of an
elasticity model, given as for the ``cg`` backend), ``"hypre"`` is hypre's BoomerAMG,
``"jacobi"`` and ``"none"`` as for the scipy Krylov backends. Its solves are the refinement
cycles of :class:`~fesens.solvers.iterative.IterativeSolver` (the true residual
``||b - A x|| / ||b||`` meets ``rtol``), with PETSc's KSP as the inner method.

``"petsc_direct"`` factorizes with MUMPS when PETSc was built with it (Debian's is), else
with PETSc's own sparse Cholesky or LU; transposed (adjoint) solves reuse the factor.

Further PETSc options pass through as option strings, ``petsc="-pc_gamg_threshold 0.02"``
or a dict ``{"pc_gamg_threshold": 0.02}``. They are set under a prefix of the solver's own
and are in PETSc's options database only while PETSc works for that solver (setting up,
solving), so solvers do not see each other's.

Under ``mpirun -n N`` (:mod:`fesens.mpi`) both backends solve across the ranks, and they are
the only backends that do (``distributes``). A distributed model's rank gives its local
matrix and a ``layout`` (set by the model): PETSc adds the ranks' matrices and each rank gets
its local dofs of the solution back (:mod:`fesens.solvers.petsc_distributed`). Without a
layout every rank holds the whole matrix (a replicated model), keeps its block of rows
(:func:`owned_rows`, PETSc's default layout) and gets the whole solution back. GAMG's
hierarchy, the Krylov iterations and MUMPS' factorization are distributed either way.

petsc4py is imported when a solver is created, never at import of this module (importing
it initializes MPI). It must be built against the installed PETSc: ``make petsc``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import scipy.sparse as sp

from fesens.errors import ConvergenceError, NonFiniteError
from fesens.solvers.base import DirectSolver, require_finite
from fesens.solvers.iterative import IterativeSolver, NearNullspace, solve_columns
from fesens.solvers.petsc_distributed import DofLayout
from fesens.solvers.petsc_ksp import (  # noqa: F401 - re-exported: fesens.solvers.petsc's API
    FACTORIZATIONS,
    GAMG_OPTIONS,
    HYPRE_OPTIONS,
    INSTALL_HINT,
    PRECONDITIONERS,
    SHIFT_OPTION,
    SOR_DIAGONAL_SHIFT,
    PetscKSP,
    PetscOptions,
    import_petsc,
    last_line,
    owned_rows,
    parse_options,
    petsc4py_available,
    petsc_matrix,
    reason_name,
)
from fesens.solvers.preconditioners import Preconditioner
from fesens.solvers.registry import register_solver


class PetscBackend(ABC):
    """Mixin of both PETSc backends, listed before their
    :class:`~fesens.solvers.base.LinearSolver` base: the factorization by their
    :class:`PetscKSP` (``_ksp``) on a model's ``layout``, and the agreement of the ranks
    that share its system.

    A backend gives what else its KSP needs of a matrix in :meth:`_factorize_options`.
    """

    distributes = True  # solves across the ranks of an MPI launch
    #: Where a distributed model's local rows sit (set by the model), else None.
    layout: DofLayout | None = None
    install_hint = INSTALL_HINT
    _ksp: PetscKSP

    @classmethod
    def available(cls) -> bool:
        return petsc4py_available()

    @abstractmethod
    def _factorize_options(self) -> dict[str, Any]:
        """The keywords of :meth:`PetscKSP.factorize` besides the matrix and ``layout``."""

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        with self._timed("numeric_seconds"):
            new_pattern = self._ksp.factorize(A, **self._factorize_options(),
                                              layout=self.layout)
        self._stats["n_symbolic"] += int(new_pattern)
        self._stats["n_numeric"] += 1

    def on_every_rank(self, flag: bool) -> bool:
        return self._ksp.on_every_rank(flag)


@register_solver("petsc")
class PetscSolver(PetscBackend, IterativeSolver):
    """PETSc's KSP (default CG) with GAMG, BoomerAMG, Jacobi or no preconditioner.

    For symmetric matrices (CG's are SPD): an adjoint solve is a forward solve with the same
    KSP and preconditioner.

    Parameters
    ----------
    preconditioner : {"amg", "hypre", "jacobi", "none"}, default "amg"
        ``"amg"``: PETSc's GAMG (smoothed aggregation), given ``near_nullspace``, with
        :data:`GAMG_OPTIONS`;
        ``"hypre"``: BoomerAMG (when PETSc has hypre), with :data:`HYPRE_OPTIONS`.
    rtol : float, default 1e-10
        Required relative residual ``||b - A x|| / ||b||`` of every right-hand side.
    maxiter : int, optional
        Iteration budget per right-hand side; default ``10 n``.
    near_nullspace : array_like (n, k) or callable, optional
        For GAMG (see :class:`~fesens.solvers.iterative.IterativeSolver`); a model gives
        its rigid-body modes.
    ksp_type : str, default "cg"
        PETSc's ``KSPType`` for a symmetric matrix (``"cg"``, ``"minres"``, ...).
    petsc : str or dict, optional
        More PETSc options (see the module docstring); they override the ones above.
    """

    symmetric = True
    requirement = "PETSc's CG needs a symmetric positive definite matrix"

    def __init__(self, *, preconditioner: str = "amg", rtol: float = 1e-10,
                 maxiter: int | None = None, near_nullspace: NearNullspace = None,
                 ksp_type: str = "cg", petsc: PetscOptions = None) -> None:
        # IterativeSolver's set-up without its check of scipy-side (pyamg) preconditioners
        super(IterativeSolver, self).__init__()
        if preconditioner not in PRECONDITIONERS:
            raise ValueError(f"unknown preconditioner {preconditioner!r} for 'petsc'; choose "
                             f"one of {sorted(PRECONDITIONERS)}")
        if not 0.0 < rtol < 1.0:
            raise ValueError(f"rtol must be in (0, 1), got {rtol}")
        if maxiter is not None and maxiter < 1:
            raise ValueError(f"maxiter must be at least 1, got {maxiter}")
        self.preconditioner, self.rtol, self.maxiter = preconditioner, rtol, maxiter
        self.near_nullspace = near_nullspace
        self._stats.update(last_iterations=None, last_residual=None)
        self._M = self._M_transpose = None  # PETSc's KSP holds the preconditioner
        defaults = {"amg": GAMG_OPTIONS, "hypre": HYPRE_OPTIONS}.get(preconditioner, {})
        options = {**defaults, **parse_options(petsc)}
        self._ksp = PetscKSP(ksp_type, PRECONDITIONERS[preconditioner], options)
        self._reason = ""

    def _factorize_options(self) -> dict[str, Any]:
        return {"near_nullspace": self._amg_near_nullspace()}

    def drop_unsaved_state(self) -> None:
        """The next factorization sets up a new KSP, as for a new pattern: a kept one
        carries its preconditioner's set-up of earlier matrices into the next (PCGAMG
        reuses parts of it on a matrix of the same pattern), which a resumed run, starting
        with none, would not have. The current KSP still serves the current matrix."""
        self._ksp.pattern = None

    def _solve(self, b: np.ndarray, x0: np.ndarray | None, transpose: bool) -> np.ndarray:
        if self._ksp.system is not None:  # a distributed model: PETSc's global residuals
            return solve_columns(b, None, lambda column, _: self._distributed_column(column),
                                 self._stats)
        try:
            return super()._solve(b, x0, transpose)
        except ConvergenceError as error:
            if self._reason in str(error):  # raised by _krylov, naming it
                raise
            raise ConvergenceError(f"{error}; PETSc ({self._ksp.describe()}): {self._reason}",
                                   error.iterations, error.residual, error.tolerance) from None

    def _krylov(self, operator: sp.spmatrix, b: np.ndarray, M: Preconditioner, *,
                rtol: float, maxiter: int) -> tuple[np.ndarray, int, int]:
        """One KSP solve; info 0 (converged), 1 (budget spent) or an error."""
        self._ksp.ksp.setTolerances(rtol=rtol, atol=0.0, max_it=maxiter)
        x, reason, iterations = self._ksp.run(b)
        PETSc = self._ksp.PETSc
        self._reason = reason_name(PETSc, reason)
        if reason == PETSc.KSP.ConvergedReason.DIVERGED_NANORINF:
            raise NonFiniteError(f"{self.name} ({self._ksp.describe()}): NaN or infinity after "
                                 f"{iterations} iterations ({self._reason}); "
                                 f"{self.requirement}")
        if reason < 0 and reason != PETSc.KSP.ConvergedReason.DIVERGED_MAX_IT:
            residual = float(np.linalg.norm(b - operator @ x) / np.linalg.norm(b))
            raise ConvergenceError(
                f"{self.name} ({self._ksp.describe()}) did not converge: PETSc stopped with "
                f"{self._reason} after {iterations} iterations, relative residual "
                f"{residual:.3e} (rtol {self.rtol:.1e}); {self.requirement}",
                iterations=iterations, residual=residual, tolerance=self.rtol)
        return x, int(reason < 0), iterations

    def _distributed_column(self, b: np.ndarray) -> tuple[np.ndarray, int, float]:
        """A distributed model's solve of one right-hand side to ``rtol`` of the global
        residual (the local matrices do not give it): the KSP, again with a tighter
        tolerance while the true residual misses ``rtol`` (CG's recursive residual drifts).
        """
        PETSc = self._ksp.PETSc
        maxiter = 10 * self._ksp.system.n_global if self.maxiter is None else self.maxiter
        inner, iterations, residual = self.rtol, 0, np.inf
        for _ in range(4):
            self._ksp.ksp.setTolerances(rtol=inner, atol=0.0, max_it=maxiter)
            x, reason, iterations = self._ksp.run(b)
            self._reason = reason_name(PETSc, reason)
            if reason == PETSc.KSP.ConvergedReason.DIVERGED_NANORINF or not np.all(
                    np.isfinite(x)):
                raise NonFiniteError(f"{self.name} ({self._ksp.describe()}): NaN or infinity "
                                     f"after {iterations} iterations ({self._reason}); "
                                     f"{self.requirement}")
            residual = self._ksp.last_residual()
            if reason < 0 or residual <= self.rtol:
                break
            inner *= 0.5 * self.rtol / residual
        if reason < 0:
            raise ConvergenceError(
                f"{self.name} ({self._ksp.describe()}) did not converge: PETSc stopped with "
                f"{self._reason} after {iterations} iterations, relative residual "
                f"{residual:.3e} (rtol {self.rtol:.1e}); {self.requirement}",
                iterations=iterations, residual=residual, tolerance=self.rtol)
        if not residual <= self.rtol:
            raise ConvergenceError(
                f"{self.name} ({self._ksp.describe()}) did not converge: the true relative "
                f"residual stays at {residual:.3e} > rtol {self.rtol:.1e} although CG met "
                "ever tighter tolerances (its own residual drifts from the true one): rtol "
                "is probably below the attainable accuracy of this matrix in double "
                "precision; raise rtol",
                iterations=iterations, residual=residual, tolerance=self.rtol)
        return x, iterations, residual


@register_solver("petsc_direct")
class PetscDirectSolver(PetscBackend, DirectSolver):
    """A sparse factorization by PETSc: MUMPS when PETSc has it, else PETSc's own.

    Parameters
    ----------
    factorization : {"cholesky", "lu"}, default "cholesky"
        ``"cholesky"`` for symmetric matrices (MUMPS' LDLᵀ also takes indefinite ones);
        ``"lu"`` for general ones, whose adjoint solves use the transposed factor.
    petsc : str or dict, optional
        More PETSc options, e.g. ``"-mat_mumps_icntl_14 50"`` (see the module docstring).
    check_residual, residual_rtol
        See :class:`~fesens.solvers.base.DirectSolver`.
    """

    symmetric = True

    def __init__(self, *, factorization: str = "cholesky", petsc: PetscOptions = None,
                 check_residual: bool = True, residual_rtol: float = 1e-6) -> None:
        super().__init__(check_residual=check_residual, residual_rtol=residual_rtol)
        if factorization not in FACTORIZATIONS:
            raise ValueError(f"unknown factorization {factorization!r} for 'petsc_direct'; "
                             f"choose one of {list(FACTORIZATIONS)}")
        self.symmetric = factorization == "cholesky"
        self._ksp = PetscKSP("preonly", factorization, parse_options(petsc))
        PETSc = self._ksp.PETSc
        self.factor_solver = "mumps" if PETSc.Sys.hasExternalPackage("mumps") else "petsc"

    def _factorize_options(self) -> dict[str, Any]:
        return {"factor_solver": self.factor_solver}

    def _solve(self, b: np.ndarray, x0: np.ndarray | None, transpose: bool) -> np.ndarray:
        if self._ksp.system is None:
            return super()._solve(b, x0, transpose)
        x = self._substitute(b, transpose)  # a distributed model: PETSc's global residual
        require_finite(x, f"the {self.name} solution (the matrix is probably singular)")
        if self.check_residual and not (transpose and self._verified):
            residual = self._ksp.last_residual()
            if not residual <= self.residual_rtol:
                raise self._residual_error(residual)
            self._verified = True
        return x

    def _substitute(self, b: np.ndarray, transpose: bool) -> np.ndarray:
        columns = b.reshape(b.shape[0], -1)
        x = np.empty_like(columns)
        for j in range(columns.shape[1]):  # a failure raises (setErrorIfNotConverged)
            x[:, j] = self._ksp.run(columns[:, j], transpose=transpose and not self.symmetric)[0]
        return x.reshape(b.shape)

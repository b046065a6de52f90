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

Under ``mpirun -n N`` (:mod:`fesens.mpi`) both backends solve across the ranks: every rank
holds the whole matrix (the model is replicated), keeps its block of rows
(:func:`owned_rows`, PETSc's default layout) in a PETSc matrix on ``COMM_WORLD``, and gets
the whole solution back (a scatter to all ranks); GAMG's hierarchy, the Krylov iterations
and MUMPS' factorization are distributed. They are the only backends that do
(``distributes``).

petsc4py is imported when a solver is created, never at import of this module (importing
it initializes MPI). It must be built against the installed PETSc: ``make petsc``.
"""

from __future__ import annotations

import importlib.util
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import scipy.sparse as sp

from fesens.errors import ConvergenceError, NonFiniteError, SingularMatrixError, SolverError
from fesens.mpi import world
from fesens.solvers.base import DirectSolver, SparsityPattern, register_solver
from fesens.solvers.iterative import IterativeSolver, NearNullspace
from fesens.solvers.preconditioners import Preconditioner

INSTALL_HINT = (
    "petsc4py is not installed: run `make petsc` (Debian's petsc-dev, then petsc4py built "
    "against it in .venv), or use 'cg' or 'cholmod'"
)
#: fesens' preconditioner names and PETSc's ``PCType`` for each.
PRECONDITIONERS = {"amg": "gamg", "hypre": "hypre", "jacobi": "jacobi", "none": "none"}
FACTORIZATIONS = ("cholesky", "lu")
# GAMG's level smoother, Chebyshev on Jacobi, is fragile on SIMP designs: its eigenvalue
# estimate misses, and CG stops with KSP_DIVERGED_INDEFINITE_PC (the cantilever3d preset,
# 11,253 dofs, at OC iteration 2; still at iteration 9 with a safety factor 1.5 on the
# estimate). Chebyshev on symmetric SOR ran all 80 iterations, with CHOLMOD's history.
# SOR stops at a zero pivot where a coarse level of GAMG has a zero diagonal entry (an
# aggregate's rigid-body mode without stiffness: 60 x 20 x 20 hex8 on one rank, the
# cantilever3d preset on two); SOR_DIAGONAL_SHIFT times the mean diagonal of the fine
# matrix, added to every level's diagonal in SOR, removes those pivots and changes nothing
# else measurably (the iteration counts of the petsc tests and of cantilever3d stay).
# Coarsening stops at 1000 equations (the coarse LU solves them; PETSc's default, 50, makes
# tiny coarse levels on several ranks).
# Chebyshev on SOR, GAMG's level smoother with the line above, stopped CG with
# KSP_DIVERGED_INDEFINITE_PC on 60 x 20 x 20 hex8 at the third OC iteration (its eigenvalue
# estimate missed); Richardson on symmetric SOR keeps the V-cycle symmetric positive
# definite (uniform and random-void SIMP designs at 30 x 10 x 10 and 60 x 20 x 20: 13-34 CG
# iterations, against 14-27 with Chebyshev where it worked).
#: PETSc options the ``"amg"`` (GAMG) preconditioner starts from (a ``petsc`` option overrides).
GAMG_OPTIONS = {"mg_levels_ksp_type": "richardson", "mg_levels_pc_type": "sor",
                "pc_gamg_coarse_eq_limit": "1000"}
#: GAMG's SOR smoothers add this times the mean diagonal of the matrix to their pivots.
SOR_DIAGONAL_SHIFT = 1e-12
SHIFT_OPTION = "mg_levels_pc_sor_diagonal_shift"
# BoomerAMG's defaults (strength 0.25, Falgout coarsening, classical interpolation) make
# dense coarse levels on 3D elasticity; hypre's advice for 3D took CG + BoomerAMG on a
# 40 x 12 x 12 hex8 cantilever (20,280 unknowns, rtol 1e-8) from 11.9 s to 2.6 s.
#: PETSc options the ``"hypre"`` preconditioner starts from (a ``petsc`` option overrides).
HYPRE_OPTIONS = {"pc_hypre_boomeramg_strong_threshold": "0.5",
                 "pc_hypre_boomeramg_coarsen_type": "HMIS",
                 "pc_hypre_boomeramg_interp_type": "ext+i"}
PetscOptions = str | dict[str, Any] | None


def petsc4py_available() -> bool:
    """Whether petsc4py is importable (checked without importing it, which starts MPI)."""
    try:
        return importlib.util.find_spec("petsc4py") is not None
    except ValueError:  # sys.modules["petsc4py"] is None: import blocked
        return False


def import_petsc() -> Any:
    """The ``petsc4py.PETSc`` module.

    Raises
    ------
    SolverError
        If petsc4py is missing (the message says how to install it).
    """
    try:
        from petsc4py import PETSc
    except ImportError:
        raise SolverError(INSTALL_HINT) from None
    return PETSc


def parse_options(options: PetscOptions) -> dict[str, str]:
    """PETSc options as ``{name: value}``, names without the leading ``-``.

    Parameters
    ----------
    options : str, dict or None
        ``"-ksp_type cg -pc_type gamg -ksp_monitor"`` (a flag without a value gets ``""``)
        or ``{"ksp_type": "cg", "-pc_type": "gamg"}``; values are converted with ``str``
        (booleans as ``true``/``false``).

    Raises
    ------
    ValueError
        If a string holds a value that follows no option name.
    TypeError
        If ``options`` is neither a string, a dict nor None.
    """
    if options is None:
        return {}
    if isinstance(options, dict):
        return {str(key).lstrip("-"): _option_value(value) for key, value in options.items()}
    if not isinstance(options, str):
        raise TypeError(f"petsc options must be a string or a dict, got {type(options).__name__}")
    parsed: dict[str, str] = {}
    name = None
    for token in shlex.split(options):
        if token.startswith("-") and not _is_number(token):
            name = token.lstrip("-")
            parsed[name] = ""
        elif name is None or parsed[name]:
            raise ValueError(f"petsc options {options!r}: value {token!r} follows no option "
                             "name (write '-name value')")
        else:
            parsed[name] = token
    return parsed


def _option_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def owned_rows(n: int, comm: Any) -> tuple[int, int]:
    """The rows ``[start, stop)`` this rank owns of ``n``: PETSc's default layout (the first
    ``n mod size`` ranks one more)."""
    size, rank = comm.getSize(), comm.getRank()
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (rank < extra)


def petsc_matrix(PETSc: Any, A: sp.csr_matrix | sp.csc_matrix, matrix: Any = None,
                 comm: Any = None) -> Any:
    """``A`` as a PETSc AIJ matrix on ``comm`` (default ``COMM_SELF``: sequential); refills
    ``matrix`` (same pattern) if given. On several ranks each keeps its
    :func:`owned_rows` of ``A`` (which every rank holds whole)."""
    comm = PETSc.COMM_SELF if comm is None else comm
    A = A.tocsr()
    n = A.shape[0]
    if comm.getSize() > 1:
        start, stop = owned_rows(n, comm)
        A, size = A[start:stop], ((stop - start, n), (stop - start, n))
    else:
        size = A.shape
    indptr = A.indptr.astype(PETSc.IntType, copy=False)
    indices = A.indices.astype(PETSc.IntType, copy=False)
    if matrix is None:
        matrix = PETSc.Mat().createAIJ(size=size, csr=(indptr, indices, A.data), comm=comm)
    else:
        matrix.zeroEntries()
        matrix.setValuesCSR(indptr, indices, A.data)
        matrix.assemble()
    return matrix


def reason_name(PETSc: Any, reason: int) -> str:
    """PETSc's name of a ``KSPConvergedReason``, e.g. ``KSP_DIVERGED_MAX_IT``."""
    names = {value: key for key, value in vars(PETSc.KSP.ConvergedReason).items()
             if isinstance(value, int) and key.isupper()}
    return f"KSP_{names.get(reason, str(reason))}"


def last_line(error: Exception) -> str:
    """The message of a ``PETSc.Error``: the last line of its traceback."""
    lines = str(error).splitlines()
    return lines[-1].removeprefix("[0] ").strip() if lines else repr(error)


class _PetscKSP:
    """One KSP on one matrix pattern, its options under the solver's own prefix."""

    def __init__(self, ksp_type: str, pc_type: str, options: dict[str, str]) -> None:
        self.PETSc = import_petsc()
        # under mpirun: every rank holds the whole matrix and keeps its rows (fesens.mpi)
        self.comm = self.PETSc.COMM_WORLD if world().distributed else self.PETSc.COMM_SELF
        self.gather = None  # scatter of a distributed solution to every rank, and its target
        self.shift_scaled = False  # SOR's diagonal shift is ours (scaled to each matrix)
        self.ksp_type, self.pc_type, self.options = ksp_type, pc_type, options
        # the options of this KSP only (in PETSc's database only within `_options`)
        self.prefix = f"fesens{id(self):x}_"
        self.ksp = None
        self.matrix = None
        self.pattern: SparsityPattern | None = None

    def factorize(self, A: sp.csr_matrix | sp.csc_matrix, *, near_nullspace=None,
                  factor_solver: str | None = None) -> bool:
        """Set the KSP up on ``A``; returns whether the pattern (symbolic setup) is new."""
        PETSc = self.PETSc
        new_pattern = self.pattern is None or not self.pattern.matches(A)
        self.matrix = petsc_matrix(PETSc, A, None if new_pattern else self.matrix, self.comm)
        if new_pattern:
            self.gather = None
        if near_nullspace is not None:
            self.matrix.setNearNullSpace(self._nullspace(near_nullspace))
        if self.pc_type == "gamg" and self.options.get("mg_levels_pc_type") == "sor" and (
                self.shift_scaled or SHIFT_OPTION not in self.options):
            self.shift_scaled = True  # ours, set for each matrix (the user's stays)
            scale = float(np.mean(np.abs(A.diagonal()))) if A.shape[0] else 1.0
            self.options[SHIFT_OPTION] = repr(SOR_DIAGONAL_SHIFT * scale)
        try:  # bad options (an unknown type, hypre missing) fail here too
            with self._options():
                self._set_up(new_pattern, factor_solver)
        except PETSc.Error as error:
            raise self._setup_error(error) from None
        self.pattern = SparsityPattern(A)
        return new_pattern

    def _set_up(self, new_pattern: bool, factor_solver: str | None) -> None:
        """KSP set-up on ``self.matrix`` (a new KSP for a new pattern)."""
        if new_pattern or self.ksp is None:
            self.ksp = self._new_ksp(factor_solver)
        self.ksp.setOperators(self.matrix)
        self.ksp.setUp()

    def _setup_error(self, error: Any) -> SolverError:
        """The fesens error of a failed ``KSPSetUp``; forgets the KSP and the pattern."""
        what = self.describe()
        self.ksp = self.pattern = None  # a failed setup leaves nothing to reuse
        reason = last_line(error)
        # 71: PETSc's zero pivot; MUMPS' INFOG(1) = -10: numerically singular
        if error.ierr == 71 or "INFOG(1)=-10" in str(error):
            return SingularMatrixError(
                f"PETSc could not factorize ({what}): {reason}; the matrix is singular (if "
                "this is a stiffness matrix, Dirichlet conditions are probably missing)")
        return SolverError(f"PETSc could not set up {what}: {reason}")

    def _new_ksp(self, factor_solver: str | None) -> Any:
        PETSc = self.PETSc
        ksp = PETSc.KSP().create(comm=self.comm)
        ksp.setType(self.ksp_type)
        ksp.getPC().setType(self.pc_type)
        if factor_solver is not None:
            ksp.getPC().setFactorSolverType(factor_solver)
            ksp.setErrorIfNotConverged(True)  # a failed factorization raises in setUp
        ksp.setOptionsPrefix(self.prefix)
        ksp.setFromOptions()
        if ksp.getType() == "cg" and "ksp_norm_type" not in self.options:
            # stop on the true residual, not the preconditioned one
            ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
        return ksp

    @contextmanager
    def _options(self) -> Iterator[None]:
        """This KSP's options in PETSc's database (which PETSc reads in setFromOptions,
        and in set-up and solves for the parts it creates then, e.g. multigrid levels)."""
        database = self.PETSc.Options(self.prefix)
        for name, value in self.options.items():
            database[name] = value
        try:
            yield
        finally:
            for name in self.options:
                database.delValue(name)

    def _nullspace(self, vectors: np.ndarray) -> Any:
        """PETSc's near-null space of orthonormalized ``vectors`` (n, k)."""
        basis = np.linalg.qr(vectors)[0]
        return self.PETSc.NullSpace().create(vectors=[self._vector(c) for c in basis.T],
                                             comm=self.comm)

    def _vector(self, values: np.ndarray) -> Any:
        """A PETSc vector laid out as the matrix's rows, holding this rank's part of
        ``values`` (the whole vector, which every rank holds)."""
        vector = self.matrix.createVecLeft()
        start, stop = vector.getOwnershipRange()
        vector.setArray(np.ascontiguousarray(values[start:stop]))
        return vector

    def _whole(self, vector: Any) -> np.ndarray:
        """A solution vector as a numpy array, gathered on every rank when distributed."""
        if self.comm.getSize() == 1:
            return vector.getArray().copy()
        if self.gather is None:
            self.gather = self.PETSc.Scatter.toAll(vector)
        scatter, whole = self.gather
        scatter.scatter(vector, whole, addv=self.PETSc.InsertMode.INSERT,
                        mode=self.PETSc.ScatterMode.FORWARD)
        return whole.getArray().copy()

    def run(self, b: np.ndarray, *, transpose: bool = False) -> tuple[np.ndarray, int, int]:
        """One KSP solve from a zero guess; returns (x, converged reason, iterations)."""
        PETSc = self.PETSc
        rhs = self._vector(b)
        x = self.matrix.createVecRight()
        try:
            with self._options():
                (self.ksp.solveTranspose if transpose else self.ksp.solve)(rhs, x)
        except PETSc.Error as error:
            raise SolverError(f"PETSc failed in {self.describe()}: {last_line(error)}") from None
        return self._whole(x), self.ksp.getConvergedReason(), self.ksp.getIterationNumber()

    def describe(self) -> str:
        """``KSP cg, PC gamg`` as PETSc set it up (the options may change both)."""
        if self.ksp is None:
            return f"KSP {self.ksp_type}, PC {self.pc_type}"
        return f"KSP {self.ksp.getType()}, PC {self.ksp.getPC().getType()}"


@register_solver("petsc")
class PetscSolver(IterativeSolver):
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
    distributes = True  # solves across the ranks of an MPI launch
    requirement = "PETSc's CG needs a symmetric positive definite matrix"
    install_hint = INSTALL_HINT

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
        self._ksp = _PetscKSP(ksp_type, PRECONDITIONERS[preconditioner], options)
        self._reason = ""

    @classmethod
    def available(cls) -> bool:
        return petsc4py_available()

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        with self._timed("numeric_seconds"):
            new_pattern = self._ksp.factorize(A, near_nullspace=self._amg_near_nullspace())
        self._stats["n_symbolic"] += int(new_pattern)
        self._stats["n_numeric"] += 1

    def _solve(self, b: np.ndarray, x0: np.ndarray | None, transpose: bool) -> np.ndarray:
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


@register_solver("petsc_direct")
class PetscDirectSolver(DirectSolver):
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
    distributes = True
    install_hint = INSTALL_HINT

    def __init__(self, *, factorization: str = "cholesky", petsc: PetscOptions = None,
                 check_residual: bool = True, residual_rtol: float = 1e-6) -> None:
        super().__init__(check_residual=check_residual, residual_rtol=residual_rtol)
        if factorization not in FACTORIZATIONS:
            raise ValueError(f"unknown factorization {factorization!r} for 'petsc_direct'; "
                             f"choose one of {list(FACTORIZATIONS)}")
        self.symmetric = factorization == "cholesky"
        self._ksp = _PetscKSP("preonly", factorization, parse_options(petsc))
        PETSc = self._ksp.PETSc
        self.factor_solver = "mumps" if PETSc.Sys.hasExternalPackage("mumps") else "petsc"

    @classmethod
    def available(cls) -> bool:
        return petsc4py_available()

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        with self._timed("numeric_seconds"):
            new_pattern = self._ksp.factorize(A, factor_solver=self.factor_solver)
        self._stats["n_symbolic"] += int(new_pattern)
        self._stats["n_numeric"] += 1

    def _substitute(self, b: np.ndarray, transpose: bool) -> np.ndarray:
        columns = b.reshape(b.shape[0], -1)
        x = np.empty_like(columns)
        for j in range(columns.shape[1]):  # a failure raises (setErrorIfNotConverged)
            x[:, j] = self._ksp.run(columns[:, j], transpose=transpose and not self.symmetric)[0]
        return x.reshape(b.shape)

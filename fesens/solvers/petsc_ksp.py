"""PETSc's KSP for fesens' backends: options, matrices, the KSP of one matrix pattern.

What :mod:`fesens.solvers.petsc`'s backends share: importing petsc4py (never at import of
this module: importing it initializes MPI), PETSc option strings, the defaults of GAMG and
BoomerAMG (measured, see the comments), scipy matrices as PETSc's (whole, or a rank's block
of rows of a replicated model) and :class:`PetscKSP`, one KSP set up on one matrix pattern
(or on a distributed model's sum of local matrices, :mod:`fesens.solvers.petsc_distributed`).
"""

from __future__ import annotations

import importlib.util
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import scipy.sparse as sp

from fesens.errors import SingularMatrixError, SolverError
from fesens.mpi import collective, petsc_module, world
from fesens.solvers.petsc_distributed import DistributedSystem, DofLayout
from fesens.solvers.structure import MatrixStructure

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
        return petsc_module()
    except ImportError:
        raise SolverError(INSTALL_HINT) from None


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


class PetscKSP:
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
        self.pattern: MatrixStructure | None = None
        #: A distributed model's system (its ranks' local matrices added), else None.
        self.system: DistributedSystem | None = None
        self.last = None  # the global right-hand side and solution of the last run

    def factorize(self, A: sp.csr_matrix | sp.csc_matrix, *, near_nullspace=None,
                  factor_solver: str | None = None, layout: DofLayout | None = None) -> bool:
        """Set the KSP up on ``A``; returns whether the pattern (symbolic setup) is new.

        With a ``layout`` (a distributed model), ``A`` is this rank's local matrix and the
        KSP's is the sum of the ranks' (:mod:`fesens.solvers.petsc_distributed`).
        """
        PETSc = self.PETSc
        new_pattern = self.pattern is None or not self.pattern.matches(A)
        if layout is not None:
            if new_pattern or self.system is None or self.system.layout is not layout:
                self.system, new_pattern = DistributedSystem(PETSc, layout), True
            self.matrix = self.system.assemble(A)
        else:
            self.system = None
            self.matrix = petsc_matrix(PETSc, A, None if new_pattern else self.matrix,
                                       self.comm)
        if new_pattern:
            self.gather = None
        if near_nullspace is not None:
            self.matrix.setNearNullSpace(self._nullspace(near_nullspace))
        if self.pc_type == "gamg" and self.options.get("mg_levels_pc_type") == "sor" and (
                self.shift_scaled or SHIFT_OPTION not in self.options):
            self.shift_scaled = True  # ours, set for each matrix (the user's stays)
            if self.system is not None:
                scale = self.system.mean_abs_diagonal()
            else:
                scale = float(np.mean(np.abs(A.diagonal()))) if A.shape[0] else 1.0
            self.options[SHIFT_OPTION] = repr(SOR_DIAGONAL_SHIFT * scale)
        try:  # bad options (an unknown type, hypre missing) fail here too
            with self._options():
                self._set_up(new_pattern, factor_solver)
        except PETSc.Error as error:
            raise self._setup_error(error) from None
        self.pattern = MatrixStructure(A)
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
        if self.system is None:
            basis = [self._vector(c) for c in np.linalg.qr(vectors)[0].T]
        else:  # local rows: orthonormalized globally, by Gram-Schmidt on PETSc's vectors
            basis = []
            for column in np.asarray(vectors).T:
                vector = self.system.owned_vector(column)
                for done in basis:
                    vector.axpy(-vector.dot(done), done)
                vector.normalize()
                basis.append(vector)
        return self.PETSc.NullSpace().create(vectors=basis, comm=self.comm)

    def _vector(self, values: np.ndarray) -> Any:
        """A PETSc vector laid out as the matrix's rows, holding this rank's part of
        ``values`` (the whole vector, which every rank holds; a distributed model's local
        vectors are added)."""
        if self.system is not None:
            return self.system.vector(values)
        vector = self.matrix.createVecLeft()
        start, stop = vector.getOwnershipRange()
        vector.setArray(np.ascontiguousarray(values[start:stop]))
        return vector

    def _whole(self, vector: Any) -> np.ndarray:
        """A solution vector as a numpy array, gathered on every rank when distributed
        (a distributed model's ranks get their local dofs)."""
        if self.system is not None:
            return self.system.local(vector)
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
        self.last = (rhs, x)
        return self._whole(x), self.ksp.getConvergedReason(), self.ksp.getIterationNumber()

    def on_every_rank(self, flag: bool) -> bool:
        """``flag`` on every rank of a distributed model's system (True only if True on all
        of them); ``flag`` itself otherwise."""
        if self.system is None:
            return flag
        return collective().min(float(flag)) > 0.0

    def last_residual(self) -> float:
        """``||b − A x|| / ||b||`` of the last :meth:`run` (PETSc's global vectors)."""
        b, x = self.last
        residual = b.duplicate()
        self.matrix.mult(x, residual)
        residual.aypx(-1.0, b)
        b_norm = b.norm()
        return float(residual.norm() / b_norm) if b_norm > 0 else 0.0

    def describe(self) -> str:
        """``KSP cg, PC gamg`` as PETSc set it up (the options may change both)."""
        if self.ksp is None:
            return f"KSP {self.ksp_type}, PC {self.pc_type}"
        return f"KSP {self.ksp.getType()}, PC {self.ksp.getPC().getType()}"

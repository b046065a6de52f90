"""Linear-solver interface and the checks every backend shares.

A backend subclasses :class:`LinearSolver` (or :class:`DirectSolver`), implements the
private hooks ``_factorize`` and ``_solve`` (or ``_substitute``), and registers itself with
``@register_solver("name")`` (:mod:`fesens.solvers.registry`). Public methods validate their
inputs and raise specific errors from :mod:`fesens.errors`; private hooks only compute.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from fesens.errors import FesensWarning, NonFiniteError, SingularMatrixError, SolverError
from fesens.interrupts import interruption_point
from fesens.readonly import snapshot, unchanged
from fesens.solvers.needs import ModelNeeds

if TYPE_CHECKING:
    from fesens.openmp import FactorWork


class FesensPerformanceWarning(FesensWarning):
    """A slower code path is used because an optional dependency is missing (e.g. SuperLU
    instead of CHOLMOD without scikit-sparse); the message says what to install."""




class LinearSolver(ABC):
    """Factorize (or precondition) a sparse square matrix once, then solve many systems.

    Call :meth:`factorize` with a new matrix whenever its values change; backends reuse
    whatever work depends only on the sparsity pattern. :meth:`solve` and
    :meth:`solve_transpose` reuse the current factorization or preconditioner, so the
    adjoint system ``A^T lam = g`` costs one more substitution for direct backends.

    The solver keeps a reference to the last factorized matrix (for residual checks and
    matrix-vector products): do not modify it in place while its solves are needed.

    **Threads.** An instance holds one factorization at a time, so a factorization and the
    solves that read it must not be split by another thread's factorization: whoever
    factorizes and then solves holds :attr:`lock` around both (``with backend.lock:``;
    the solve primitives of :mod:`fesens.ad` and the models do). An instance may then be
    shared by threads: each caller gets the solution of its own matrix.

    Every backend declares the class attributes ``symmetric`` and ``is_direct``
    (:func:`register_solver` refuses a class that does not), so a caller holding only a
    name can ask :func:`solver_class` about them without creating a solver.

    Attributes
    ----------
    name : str
        Registry name, set by :func:`register_solver`.
    symmetric : bool
        True when the backend assumes ``A = Aᵀ`` (CHOLMOD, CG, MINRES): then
        ``solve_transpose`` is ``solve`` and the adjoint of ``u = A⁻¹ f`` is ``λ = u``;
        False for backends that handle general matrices (LU, GMRES).
    is_direct : bool
        True for factorization-based backends, False for Krylov methods.

    The capabilities ``distributes``, ``needs_grid``, ``offers_matrix_free``,
    ``matrix_free`` and ``reads_near_nullspace`` default to False, ``rtol`` to None; a
    backend that has one says so in its class (or sets it per instance).
    """

    name: str = ""
    symmetric: bool
    is_direct: bool
    install_hint: str = ""
    """Shown when the backend is requested but its optional dependency is missing."""
    distributes: bool = False
    """True for a backend that solves one system across the ranks of an MPI launch, each
    rank adding its own matrix; a model then gives it the global rows of its free dofs
    (``layout``). Other backends solve the whole system on every rank."""
    needs_grid: bool = False
    """True for a backend that needs where the unknowns sit on a lattice (``grid``, a
    :class:`~fesens.solvers.grid_hierarchy.StructuredGrid`); a model gives it one."""
    offers_matrix_free: bool = False
    """True for a backend that a model can run without assembling its stiffness (the
    instance's :attr:`matrix_free` option)."""
    reads_near_nullspace: bool = False
    """Per instance: True when the backend builds its preconditioner from a near-null space
    (``near_nullspace``, for elasticity the rigid-body modes), which a model then gives it."""
    matrix_free: bool = False
    """Per instance: True when a model applies its stiffness cell by cell for this solver
    instead of assembling it (only where the class :attr:`offers_matrix_free`)."""
    device: str = "cpu"
    """Per instance: where the backend's arrays live, ``"cpu"`` for the host's scipy
    path, else the array library it computes in (``"numpy"``, ``"gpu"``), which an
    optimization may keep its design and state in between solves."""
    rtol: float | None = None
    """Per instance: the relative residual an iterative backend solves to, which an
    optimization may loosen while the design moves; None where there is none to set."""
    on_analysis: Callable[[FactorWork], None] | None = None
    """Per instance: called with the :class:`~fesens.openmp.FactorWork` of each new
    symbolic analysis, before its numeric factorization, by a backend whose analysis knows
    it (CHOLMOD); the structure that owns the instance sets it to choose the BLAS threads."""

    @property
    def model_needs(self) -> ModelNeeds | None:
        """What this solver, with its options, needs of the model it solves (None:
        nothing beyond a matrix); a config is checked against it before any work."""
        return None

    def __init__(self) -> None:
        #: Held around a factorization and the solves that read it (see the class notes);
        #: re-entrant, so a caller holding it may call code that takes it again.
        self.lock = threading.RLock()
        self._matrix: sp.csr_matrix | sp.csc_matrix | None = None
        self._held: tuple | None = None  # (pattern key, values) of factorize_once
        self._stats: dict[str, Any] = {
            "n_symbolic": 0,
            "n_numeric": 0,
            "n_solves": 0,
            "symbolic_seconds": 0.0,
            "numeric_seconds": 0.0,
            "solve_seconds": 0.0,
        }

    @classmethod
    def available(cls) -> bool:
        """Whether the backend's optional dependencies are importable."""
        return True

    @property
    def stats(self) -> dict[str, Any]:
        """Counters and cumulative timings (a copy).

        Keys: ``n_symbolic`` (symbolic analyses / orderings), ``n_numeric`` (numeric
        factorizations or preconditioner setups), ``n_solves`` (calls to ``solve`` and
        ``solve_transpose``), ``symbolic_seconds``, ``numeric_seconds``, ``solve_seconds``;
        iterative backends add ``last_iterations`` and ``last_residual`` (largest over the
        right-hand sides of the last solve).
        """
        return dict(self._stats)

    def state(self) -> dict[str, np.ndarray]:
        """What this instance carries from its past solves into its next one, besides its
        options and the matrix it is given: named arrays (copies) that an optimization's
        checkpoint keeps, so that a resumed run solves as the uninterrupted one, bit for
        bit; :meth:`load_state` puts them back. Empty here: the backend's solves depend on
        the matrix and right-hand side alone (a direct factorization, a Krylov method from
        a zero start with a preconditioner built from the matrix). An iterative backend
        that warm-starts from its last solutions returns them (``gmg``)."""
        return {}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        """Make ``state`` (what :meth:`state` gave, possibly in another process) this
        instance's; the next solves then equal those of the instance it came from.

        Raises
        ------
        ValueError
            ``state`` holds an entry this backend does not keep (here: any), naming it.
        """
        if state:
            raise ValueError(f"the solver {self.name!r} keeps no state between solves, but "
                             f"got the entries {sorted(state)} (another backend's)")

    def drop_unsaved_state(self) -> None:
        """Forget whatever the next solves would depend on that :meth:`state` does not
        hold, so that from here on this instance solves as a new one given
        ``load_state(state())`` would: what an optimization calls at every iteration
        boundary, where a resumed run may start. Nothing to forget here (``gmg`` drops a
        hierarchy it would reuse)."""
        return  # a backend without such state has nothing to do

    def factorize(self, A: sp.spmatrix | sp.sparray) -> None:
        """Prepare solves with ``A``.

        Parameters
        ----------
        A : scipy.sparse matrix or array, shape (n, n)
            Real square matrix, preferably CSR or CSC (other formats are converted).

        Raises
        ------
        TypeError
            If ``A`` is not a real scipy sparse matrix or array.
        ValueError
            If ``A`` is not square.
        NonFiniteError
            If ``A`` holds NaN or infinity.
        SingularMatrixError, NotPositiveDefiniteError, SolverError
            If the backend cannot factorize ``A``.
        """
        A = _checked_matrix(A)
        self._matrix = None  # a failed factorization leaves the solver unusable
        self._held = None
        self._factorize(A)
        self._matrix = A

    def factorize_once(self, key: object, values: np.ndarray, build: Callable[[], Any]) -> None:
        """Factorize ``build()`` unless the current factorization is of ``(key, values)``.

        What an adjoint solve calls: the forward solve of the same matrix left its
        factorization here, so the transpose solve costs a substitution only.

        Parameters
        ----------
        key : object
            Identifies the sparsity pattern (compared by identity).
        values : numpy.ndarray
            The matrix values ``(nnz,)``; a :func:`~fesens.readonly.snapshot` is kept
            (frozen values by reference, others copied, since callers may change them).
        build : callable
            Returns the scipy sparse matrix to factorize (called only when needed).
        """
        held = self._held
        same = held is not None and held[0] is key and unchanged(held[1], values)
        del held  # the previous values must not outlive the factorization that replaces them
        # a distributed model's ranks factorize together (a rank whose own cells did not
        # change must still take part in its neighbours' new factorization)
        if not self.on_every_rank(same):
            self.factorize(build())
            self._held = (key, snapshot(values))

    def solve(self, b: np.ndarray, x0: np.ndarray | None = None) -> np.ndarray:
        """Solve ``A x = b`` with the current factorization.

        Parameters
        ----------
        b : numpy.ndarray, shape (n,) or (n, k)
            One right-hand side or ``k`` right-hand sides as columns.
        x0 : numpy.ndarray, shape like ``b``, optional
            Initial guess (warm start) for iterative backends; direct backends ignore it.

        Returns
        -------
        numpy.ndarray, shape like ``b``
            The solution, float64.

        Raises
        ------
        SolverError
            If :meth:`factorize` has not succeeded yet.
        ValueError
            If ``b`` or ``x0`` has the wrong shape.
        NonFiniteError
            If ``b``, ``x0`` or the computed solution holds NaN or infinity.
        SingularMatrixError
            If a direct solution fails the residual check (numerically singular matrix).
        ConvergenceError
            If an iterative backend does not reach its tolerance.
        """
        return self._checked_solve(b, x0, transpose=False)

    def on_every_rank(self, flag: bool) -> bool:
        """``flag`` as every rank that shares this solver's system sees it: True only if it is
        True on all of them (a distributed model's ranks must take the same branch around
        a collective solve); ``flag`` itself for a solver of one rank's system."""
        return flag

    def solve_transpose(self, b: np.ndarray, x0: np.ndarray | None = None) -> np.ndarray:
        """Solve ``A^T x = b`` with the current factorization (the adjoint system).

        Symmetric backends (CHOLMOD, CG, MINRES) reuse the same factor or preconditioner.
        Parameters, return value and errors are those of :meth:`solve`.
        """
        return self._checked_solve(b, x0, transpose=True)

    def _checked_solve(
        self, b: np.ndarray, x0: np.ndarray | None, *, transpose: bool
    ) -> np.ndarray:
        if self._matrix is None:
            raise SolverError(f"{self.name}: call factorize(A) successfully before solving")
        b = _checked_array(b, "b", self._matrix.shape[0])
        if x0 is not None:
            x0 = _checked_array(x0, "x0", self._matrix.shape[0])
            if x0.shape != b.shape:
                raise ValueError(f"x0 must have the shape of b {b.shape}, got {x0.shape}")
        with self._timed("solve_seconds"):
            x = self._solve(b, x0, transpose)
        self._stats["n_solves"] += 1
        # a safe point for a pending Ctrl-C: every time step, Newton iteration and design
        # evaluation solves, and the solve that was interrupted has finished cleanly
        interruption_point()
        return x

    @contextmanager
    def _timed(self, key: str) -> Iterator[None]:
        """Add the wall time of the ``with`` block to ``self._stats[key]``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self._stats[key] += time.perf_counter() - start

    @abstractmethod
    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        """Factorize or precondition a validated CSR or CSC float64 matrix."""

    @abstractmethod
    def _solve(self, b: np.ndarray, x0: np.ndarray | None, transpose: bool) -> np.ndarray:
        """Solve for a validated float64 ``b`` of shape (n,) or (n, k)."""


class DirectSolver(LinearSolver):
    """Base of factorization backends: checks every solution it returns.

    Parameters
    ----------
    check_residual : bool, default True
        After each solve, compute the relative residual ``||A x - b|| / ||b||`` (one
        sparse mat-vec) and raise :class:`SingularMatrixError` when it exceeds
        ``residual_rtol``. This catches numerically singular matrices that factor with
        tiny pivots instead of failing. Once a solution of a factorization has passed,
        the factorization is verified and later solves with it (forward or transposed:
        the factorization is what can be bad, and a time-stepping run solves with one
        factorization thousands of times) are not checked again (their solutions are
        still checked for NaN and inf).
    residual_rtol : float, default 1e-6
        Threshold of the residual check. Raise it for extremely ill-conditioned systems.
    """

    is_direct = True

    def __init__(self, *, check_residual: bool = True, residual_rtol: float = 1e-6) -> None:
        super().__init__()
        self.check_residual = check_residual
        self.residual_rtol = residual_rtol
        self._verified = False  # a solution of the current factorization passed the check

    def factorize(self, A: sp.spmatrix | sp.sparray) -> None:
        self._verified = False
        super().factorize(A)

    def _solve(self, b: np.ndarray, x0: np.ndarray | None, transpose: bool) -> np.ndarray:
        x = self._substitute(b, transpose)
        require_finite(x, f"the {self.name} solution (the matrix is probably singular)")
        if self.check_residual and not self._verified:
            operator = self._matrix.T if transpose else self._matrix
            residual = relative_residual(operator, x, b)
            if not residual <= self.residual_rtol:
                raise self._residual_error(residual)
            self._verified = True
        return x

    def _residual_error(self, residual: float) -> SolverError:
        """The error raised when a solution fails the residual check."""
        return SingularMatrixError(
            f"{self.name}: relative residual ||A x - b|| / ||b|| = {residual:.2e} exceeds "
            f"{self.residual_rtol:.1e}; the matrix is numerically singular (if this is a "
            "stiffness matrix, Dirichlet conditions are probably missing) or too "
            "ill-conditioned. Pass check_residual=False or a larger residual_rtol to accept "
            "such solutions."
        )

    @abstractmethod
    def _substitute(self, b: np.ndarray, transpose: bool) -> np.ndarray:
        """Forward/backward substitution with the current factor; shape of ``b``."""


def relative_residual(A: sp.spmatrix | sp.sparray, x: np.ndarray, b: np.ndarray) -> float:
    """Largest relative residual ``||A x_j - b_j|| / ||b_j||`` over the columns.

    Parameters
    ----------
    A : scipy sparse matrix or array, shape (n, n)
    x, b : numpy.ndarray, shape (n,) or (n, k)

    Returns
    -------
    float
        0 for columns where both ``b_j`` and the residual vanish, inf where only ``b_j``
        vanishes.
    """
    residual = A @ x - b
    if b.ndim == 1:
        residual, b = residual[:, None], b[:, None]
    if b.shape[1] == 0:
        return 0.0
    residual_norm = np.linalg.norm(residual, axis=0)
    rhs_norm = np.linalg.norm(b, axis=0)
    relative = np.divide(
        residual_norm,
        rhs_norm,
        out=np.where(residual_norm == 0.0, 0.0, np.inf),
        where=rhs_norm > 0.0,
    )
    return float(relative.max())


def require_finite(values: np.ndarray, what: str) -> None:
    """Raise :class:`NonFiniteError` naming ``what`` if ``values`` holds NaN or inf."""
    finite = np.isfinite(values)
    if not finite.all():
        raise NonFiniteError(
            f"{what} contains {finite.size - np.count_nonzero(finite)} "
            "non-finite values (NaN or inf)"
        )


def _checked_matrix(A: Any) -> sp.csr_matrix | sp.csc_matrix:
    """``A`` as a float64 CSR or CSC matrix/array; validates type, shape and values."""
    if not sp.issparse(A):
        raise TypeError(f"A must be a scipy sparse matrix or array, got {type(A).__name__}")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {A.shape}")
    if A.format not in ("csr", "csc"):
        A = A.tocsr()
    if np.iscomplexobj(A.data):
        raise TypeError(f"A must have real values, got dtype {A.dtype}")
    if A.dtype != np.float64:
        A = A.astype(np.float64)
    require_finite(A.data, "the matrix A")
    return A


def _checked_array(values: Any, what: str, n: int) -> np.ndarray:
    """``values`` as float64 of shape (n,) or (n, k); validates shape and values."""
    values = np.asarray(values)
    if np.iscomplexobj(values):
        raise TypeError(f"{what} must be real, got dtype {values.dtype}")
    if values.ndim not in (1, 2) or values.shape[0] != n:
        raise ValueError(f"{what} must have shape ({n},) or ({n}, k), got {values.shape}")
    values = values.astype(np.float64, copy=False)
    require_finite(values, what)
    return values

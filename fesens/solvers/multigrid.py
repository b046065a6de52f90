"""Geometric multigrid-preconditioned conjugate gradients (``"gmg"``) for structured grids.

One V-cycle of the hierarchy of :mod:`fesens.solvers.grid_hierarchy` preconditions every CG
iteration (Amir, Aage & Lazarov, "On multigrid-CG for efficient topology optimization",
SMO 2014). The solver needs to know where the matrix's unknowns sit on the lattice: a
:class:`~fesens.solvers.grid_hierarchy.StructuredGrid` given as the ``grid`` option or
attribute. A model gives it (``model.solve(solver="gmg")``, ``Differentiable(model,
solver="gmg")``), and refuses a mesh that is not structured.

Solves that know they are in an optimization loop:

* **warm start**: without ``x0``, a solve starts from the previous solution of the same
  kind (forward or transposed) when that leaves a smaller residual than zero does (CG
  iterates in the solver's kept copy of it, so a solve that raises leaves none); an
  optimization's checkpoint keeps them (:meth:`MultigridCGSolver.state`), so a resumed
  run starts its next solve where the uninterrupted one does;
* **preconditioner reuse** (``reuse=True``; off by default, see the option): a new matrix
  on the same pattern refreshes only the finest level (its operator, diagonal and
  eigenvalue estimate) and keeps the coarse Galerkin operators and the coarse
  factorization of an earlier matrix. The stagnation criterion
  is measured: when CG with a reused hierarchy reaches ``1 + rebuild_growth`` times the
  iterations of the first solve after the last full build without converging, the
  hierarchy is rebuilt from the current matrix on the spot and CG continues from its
  iterate (``stats["n_rebuilds"]``, ``stats["n_reuses"]``); a failed reuse costs at most
  those extra iterations. After a failed reuse the next 1, then 2, 4, ... factorizations
  build afresh (early in an optimization the design changes too fast for reuse to pay);
  a reuse that keeps the iterations resets this back-off. An optimization ends reuse and
  back-off at every iteration boundary (:meth:`MultigridCGSolver.drop_unsaved_state`):
  a checkpoint cannot keep coarse levels of an earlier matrix, and a resumed run must
  solve as the uninterrupted one (3D box 24x12x12, OC, 20 iterations, coarse_size 1000:
  15.8 CG iterations per solve with the levels kept across iterations, 12.4 without,
  the same as ``reuse=False``). The preconditioner stays
  symmetric positive definite, so CG on the current matrix reaches ``rtol`` whatever was
  reused;
* **the adjoint** is the same symmetric operator: ``solve_transpose`` uses the same
  hierarchy.

A solve stops when the true relative residual ``||b - A x|| / ||b||`` is at most ``rtol``,
and raises :class:`~fesens.errors.ConvergenceError` with the iteration count and residual
otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from fesens.errors import ConvergenceError, SolverError
from fesens.solvers.base import LinearSolver
from fesens.solvers.device_multigrid import DeviceLatticeSolver
from fesens.solvers.grid_hierarchy import Hierarchy, StructuredGrid
from fesens.solvers.iterative import solve_columns
from fesens.solvers.krylov import SMOOTHERS, pcg
from fesens.solvers.lattice_operator import LatticeOperator, LatticeStructure
from fesens.solvers.needs import ModelNeeds
from fesens.solvers.parallel import SlabPool
from fesens.solvers.registry import register_solver
from fesens.solvers.structure import MatrixStructure

#: Where a matrix-free solve runs (the ``device`` option): this solver, or the device
#: multigrid on CuPy or on numpy.
DEVICES = ("cpu", "gpu", "numpy")
GridSpec = StructuredGrid | Callable[[], StructuredGrid] | None
#: The names of the warm starts in :meth:`MultigridCGSolver.state`, by ``transpose``.
_WARM_STARTS = {False: "forward", True: "transpose"}
#: Cell types the matrix-free fine level applies cell by cell: first-order cells, which are
#: the lattice's own cells (one reference cell matrix for all).
MATRIX_FREE_CELL_TYPES = ("quad4", "hex8")
#: What ``matrix_free=True`` needs of a model: a lattice of such cells, and zero prescribed
#: values (the lift ``K_fc u_c`` of non-zero ones needs the assembled coupling block);
#: springs it adds to the cells' operator itself.
MATRIX_FREE_NEEDS = ModelNeeds(
    purpose="the matrix-free multigrid (gmg)", option="matrix_free",
    cell_types=MATRIX_FREE_CELL_TYPES, lattice=True, zero_prescribed=True,
    instead="use gmg with matrix_free = false (it assembles the fine level)",
    instead_unstructured="use backend \"cg\" with preconditioner \"amg\" (gmg with "
                         "matrix_free = false needs a lattice too)",
    cells_only=True, diagonal=True)
#: What the device multigrid (``device = "gpu"`` or ``"numpy"``) needs: the same, and it
#: takes the lattice operator only, never an assembled matrix (its every level is
#: rediscretized from the one reference cell matrix, with no springs).
DEVICE_NEEDS = replace(
    MATRIX_FREE_NEEDS, diagonal=False,
    purpose="the device multigrid (gmg with solver.options.device = \"gpu\" or \"numpy\")",
    assembled=False,
    instead_assembled="use solver.options.device = \"cpu\" (gmg's CPU multigrid takes the "
                      "assembled matrix), or drop matrix_free and device")


@register_solver("gmg")
class MultigridCGSolver(LinearSolver):
    """CG preconditioned by one geometric-multigrid V-cycle, for SPD matrices on a lattice.

    Parameters
    ----------
    grid : StructuredGrid or callable, optional
        Where the unknowns sit (a callable returning it is evaluated at every full
        build). Models set it; a bare matrix needs it.
    rtol : float, default 1e-8
        Required relative residual ``||b - A x|| / ||b||``, in (0, 1).
    maxiter : int, optional
        CG iterations per right-hand side; default ``min(n, 1000)``.
    smoother : {"chebyshev", "jacobi"}, default "chebyshev"
        Chebyshev polynomial of the Jacobi-preconditioned operator (eigenvalue bound from
        power iterations), or damped Jacobi (``ω = 4 / (3 λ_max)``).
    degree : int, default 2
        Chebyshev degree, or Jacobi sweeps, before and after the coarse correction (1-10).
    coarse_size : int, default 15000
        Coarsening stops at a level of at most this many dofs (factorized directly). On
        SIMP designs (contrast 1e9) the coarse correction of a level too coarse to resolve
        the design's members sets the CG count: the 3D cantilever's OC run (volume 0.2,
        filter 1.5 cells, rtol 1e-8), CG iterations summed over the solves, 2000 -> 15000
        (a 25x13x13-point coarsest level instead of 13x7x7): 48x24x24, 20 iterations,
        539 -> 353; 96x48x48, 8 iterations, with the smoother's new lower bound too
        (:mod:`~fesens.solvers.grid_hierarchy`), 265 -> 160. The larger factorization
        costs about 0.6 s per full build (CHOLMOD, one BLAS thread).
    reuse : bool, default False
        Keep the coarse levels across factorizations of one pattern (module docstring).
        Off by default: on SIMP designs the coarse levels of an earlier design slow CG by
        more than a full build costs, the more so the larger the grid. Measured on the 3D
        cantilever's OC run (volume 0.2, filter 1.5 cells, rtol 1e-8, one kernel thread;
        CPU seconds of the solver, reuse on -> off): matrix-free, 96x48x48, 20
        iterations, 106.4 -> 85.7 s, CG iterations 758 -> 588 (the reused levels failed
        more often as the run went on: 66-78 iterations against 40-45); 48x24x24, 40
        iterations, 16.2 -> 16.7 s, 693 -> 571; assembled, 48x24x24, 40 iterations,
        26.2 -> 28.1 s (its full build costs more).
    rebuild_growth : float, default 0.5
        Relative growth of the CG iterations that triggers a rebuild, > 0.
    warm_start : bool, default True
        Start from the previous solution when no ``x0`` is given.
    matrix_free : bool, default False
        What a model does with this backend: apply the fine-level stiffness as a batched
        cell operation (:class:`~fesens.solvers.lattice_operator.LatticeOperator`) instead
        of assembling it, on a lattice of identical first-order cells. The solver itself
        takes either (:meth:`factorize`).
    device : {"cpu", "gpu", "numpy"}, default "cpu"
        Where a matrix-free solve runs. ``"cpu"``: this solver. ``"gpu"``: the device
        multigrid of :mod:`fesens.solvers.device_multigrid` on CuPy
        (:class:`~fesens.solvers.device_multigrid.DeviceLatticeSolver`: matrix-free on
        every level, a dense coarsest level of its own ``coarse_size``), given ``rtol``,
        ``maxiter``, ``smoother`` and ``degree``; a missing CuPy or GPU is refused here,
        naming :data:`fesens.sysinfo.GPU_INSTALL`. ``"numpy"``: that
        device multigrid on numpy arrays, to check it without a GPU. Both need
        ``matrix_free``.
    """

    symmetric = True
    is_direct = False
    needs_grid = True
    offers_matrix_free = True

    @property
    def model_needs(self) -> ModelNeeds | None:
        """With ``matrix_free``: :data:`MATRIX_FREE_NEEDS`, or :data:`DEVICE_NEEDS` on a
        device (else None: the assembled fine level refuses an unstructured mesh itself,
        with the same advice)."""
        if self._device is not None:
            return DEVICE_NEEDS
        return MATRIX_FREE_NEEDS if self.matrix_free else None

    def __init__(self, *, grid: GridSpec = None, rtol: float = 1e-8, maxiter: int | None = None,
                 smoother: str = "chebyshev", degree: int = 2, coarse_size: int = 15000,
                 reuse: bool = False, rebuild_growth: float = 0.5, warm_start: bool = True,
                 matrix_free: bool = False, device: str = "cpu") -> None:
        super().__init__()
        _check_range("rtol", rtol, 0.0, 1.0, "a relative residual in (0, 1), e.g. 1e-8")
        if maxiter is not None:
            _check_range("maxiter", maxiter, 1, None, "a positive iteration count")
        if smoother not in SMOOTHERS:
            raise ValueError(f"gmg: smoother {smoother!r} is unknown; choose one of {SMOOTHERS}")
        _check_range("degree", degree, 1, 10, "an integer from 1 to 10")
        _check_range("coarse_size", coarse_size, 1, None, "a positive number of dofs")
        _check_range("rebuild_growth", rebuild_growth, 0.0, None, "a positive fraction, e.g. 0.5")
        self.grid = grid
        self.rtol, self.maxiter = rtol, maxiter
        self.smoother, self.degree, self.coarse_size = smoother, degree, coarse_size
        self.reuse, self.rebuild_growth, self.warm_start = reuse, rebuild_growth, warm_start
        if not isinstance(matrix_free, bool):
            raise ValueError(f"gmg: matrix_free = {matrix_free!r} must be true or false")
        self.matrix_free = matrix_free
        self.device = device
        self._device = _device_solver(device, matrix_free, rtol=rtol, maxiter=maxiter,
                                      smoother=smoother, degree=degree)
        self._hierarchy: Hierarchy | None = None
        self._pattern: MatrixStructure | LatticeStructure | None = None
        self._baseline: int | None = None  # CG iterations of the first solve after a build
        self._reused = False  # the current hierarchy's fine level was refreshed, not built
        self._backoff, self._penalty = 0, 1  # full builds before the next reuse attempt
        self._previous: dict[bool, np.ndarray] = {}
        # the threads of the hierarchy's products; BLAS runs one thread inside a setup or
        # a solve, so that CG's dot products do not depend on the thread count either
        self._pool = SlabPool()
        self._transfers: tuple[StructuredGrid, list] | None = None
        self._stats.update(last_iterations=None, last_residual=None, n_rebuilds=0,
                           n_reuses=0, levels=[], coarsening_stop="")

    def state(self) -> dict[str, np.ndarray]:
        """The warm starts (copies): the last solution of each kind, ``forward`` and
        ``transpose``, of the last right-hand side's shape, ``(n,)`` or ``(n, k)``.

        A hierarchy kept for ``reuse`` is not part of it: its coarse operators are those
        of an earlier matrix and as large as it, too much for a checkpoint written every
        iteration; :meth:`drop_unsaved_state` lets it go at an optimization's iteration
        boundaries instead.
        """
        return {name: self._previous[kind].copy() for kind, name in _WARM_STARTS.items()
                if kind in self._previous}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        """Make ``state`` (of :meth:`state`) the warm starts of the next solves.

        Raises
        ------
        ValueError
            An entry other than ``forward`` and ``transpose``, or one that is not finite
            floats of shape ``(n,)`` or ``(n, k)``, naming it.
        """
        unknown = sorted(set(state) - set(_WARM_STARTS.values()))
        if unknown:
            raise ValueError(f"gmg keeps the warm starts {tuple(_WARM_STARTS.values())}, not "
                             f"{unknown}")
        previous = {}
        for kind, name in _WARM_STARTS.items():
            if name not in state:
                continue
            value = np.asarray(state[name])
            if value.dtype.kind != "f" or value.ndim not in (1, 2) or value.size == 0 \
                    or not np.all(np.isfinite(value)):
                raise ValueError(f"gmg's warm start {name!r} must be finite floats of shape "
                                 f"(n,) or (n, k), got {value.dtype} of shape {value.shape}")
            # an array of its own: CG iterates in the kept copy
            previous[kind] = np.array(value, dtype=float)
        self._previous = previous

    def drop_unsaved_state(self) -> None:
        """With ``reuse``: the next factorization builds its hierarchy afresh and the
        back-off starts over, so that the coarse levels are reused only among the
        factorizations between two calls (an optimization's iteration: the designs of a
        robust problem) and a resumed run, which starts with no hierarchy, solves as the
        uninterrupted one. The current hierarchy still serves the current matrix."""
        self._pattern = None  # no later matrix matches it: the next setup builds
        self._backoff, self._penalty = 0, 1

    def factorize(self, A: sp.spmatrix | sp.sparray | LatticeOperator) -> None:
        """Prepare solves with ``A``: a sparse matrix (:meth:`LinearSolver.factorize`), or a
        matrix-free :class:`~fesens.solvers.lattice_operator.LatticeOperator`, which
        carries its own grid."""
        if self._device is not None:
            self._matrix, self._held = None, None
            self._device.factorize(A)  # lattice operators only, which it checks
            self._stats["n_numeric"] += 1
            self._matrix = A
            return
        if not isinstance(A, LatticeOperator):
            super().factorize(A)
            return
        self._matrix, self._held = None, None
        self._setup(A)
        self._matrix = A

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        self._setup(A.tocsr())

    def _setup(self, A: sp.csr_matrix | LatticeOperator) -> None:
        with self._timed("numeric_seconds"), self._pool.one_blas_thread():
            reusable = self.reuse and self._hierarchy is not None and self._same_structure(A)
            if reusable and self._backoff == 0:
                self._hierarchy.refresh_fine(A)
                self._stats["n_reuses"] += 1
                self._reused = True
            else:
                self._backoff -= int(reusable)  # a build the back-off asked for
                self._build(A)
        self._stats["n_numeric"] += 1

    def _same_structure(self, A: sp.csr_matrix | LatticeOperator) -> bool:
        """Whether ``A`` has the pattern (or lattice structure) of the current hierarchy."""
        if isinstance(A, LatticeOperator):
            return self._pattern is A.structure
        return isinstance(self._pattern, MatrixStructure) and self._pattern.matches(A)

    def _build(self, A: sp.csr_matrix | LatticeOperator) -> None:
        if isinstance(A, LatticeOperator):
            grid = A.grid
        else:
            grid = self.grid() if callable(self.grid) else self.grid
        if grid is None:
            raise SolverError(
                "gmg needs the structured grid of the matrix's unknowns: solve through a "
                "model built on rectangle() or box() (model.solve(solver='gmg')), or pass "
                "grid=StructuredGrid(...); for other matrices use solver 'cg' with "
                "preconditioner 'amg'")
        # the old hierarchy goes before the new one is built: both at once were the peak
        # memory of an optimization (96x48x48 cells, a rebuild within a solve: 297 MB
        # above the solve's start, 121 MB without the old one)
        self._hierarchy = None
        self._hierarchy = Hierarchy(A, grid, smoother=self.smoother, degree=self.degree,
                                    coarse_size=self.coarse_size, pool=self._pool,
                                    transfers=self._transfers_of(grid))
        self._pattern = A.structure if isinstance(A, LatticeOperator) else MatrixStructure(A)
        self._baseline, self._reused = None, False
        self._stats["n_rebuilds"] += 1
        self._stats["n_symbolic"] += 1
        self._stats["levels"] = self._hierarchy.shapes
        self._stats["coarsening_stop"] = self._hierarchy.stop_reason

    def _transfers_of(self, grid: StructuredGrid) -> list:
        """The prolongations built on ``grid`` so far (they depend on the grid alone, so
        every full build on one grid shares them); a new list for another grid."""
        kept = self._transfers
        if kept is None or not (kept[0] is grid or (
                kept[0].shape == grid.shape and np.array_equal(kept[0].rows, grid.rows))):
            kept = self._transfers = (grid, [])
        return kept[1]

    def _solve(self, b: np.ndarray, x0: np.ndarray | None, transpose: bool) -> np.ndarray:
        owned = False  # whether x0 is this solver's own copy of the previous solution
        if x0 is None and self.warm_start:
            previous = self._previous.get(transpose)
            x0 = previous if previous is not None and previous.shape == b.shape else None
            owned = x0 is not None
        if self._device is not None:
            self._device.rtol = self.rtol  # an optimization may have loosened it
            x = self._device.solve(b, x0)
            self._stats.update(last_iterations=self._device.stats["last_iterations"],
                               last_residual=self._device.stats["last_residual"])
            self._previous[transpose] = x.copy()
            return x
        # CG iterates in the kept copy of a single column (one vector fewer during the
        # solve: 24 MB at 160x80x80 cells); a solve that fails leaves no warm start. The
        # columns of a block are strided views, which it copies as before.
        owned = owned and (x0.ndim == 1 or x0.shape[1] == 1)
        if owned:
            del self._previous[transpose]
        with self._pool.one_blas_thread():
            x = solve_columns(
                b, x0, lambda column, guess: self._solve_column(column, guess, owned),
                self._stats)
        self._previous[transpose] = x.copy()
        return x

    def _solve_column(self, b: np.ndarray, x0: np.ndarray | None, owned: bool = False
                      ) -> tuple[np.ndarray, int, float]:
        """CG on one right-hand side (in ``x0`` itself where ``owned``); a reused
        hierarchy that lets CG run past ``1 + rebuild_growth`` times the iterations after
        the last build is rebuilt from the current matrix on the spot, and CG continues
        from where it stopped."""
        maxiter = min(b.size, 1000) if self.maxiter is None else self.maxiter
        limit = maxiter
        if self._reused and self._baseline is not None:
            limit = min(maxiter, int(np.ceil((1.0 + self.rebuild_growth) * self._baseline)))
        x, iterations, residual = self._pcg(b, x0, limit, owned)
        if residual > self.rtol and limit < maxiter:
            # back off: the next reuse attempt waits longer
            self._backoff, self._penalty = self._penalty, 2 * self._penalty
            with self._timed("numeric_seconds"):
                self._build(self._matrix)
            x, more, residual = self._pcg(b, x, maxiter - iterations, True)  # CG's own x
            self._baseline = max(more, 1)
            iterations += more
        elif self._baseline is None:
            self._baseline = max(iterations, 1)
        elif self._reused:
            self._penalty = 1  # a reuse that kept the iterations
        if residual > self.rtol:
            raise ConvergenceError(
                f"gmg did not converge: relative residual {residual:.3e} > rtol "
                f"{self.rtol:.1e} after {iterations} iterations (maxiter {maxiter}, levels "
                f"{self._stats['levels']}); raise maxiter or rtol",
                iterations=iterations, residual=residual, tolerance=self.rtol)
        return x, iterations, residual

    def _pcg(self, b: np.ndarray, x0: np.ndarray | None, maxiter: int, owned: bool
             ) -> tuple[np.ndarray, int, float]:
        """Preconditioned CG until ``rtol`` or ``maxiter`` iterations (in ``x0`` itself
        where ``owned``); returns (x, iterations, true relative residual)."""
        A = self._matrix
        return pcg(lambda v: A @ v, self._hierarchy.vcycle, b, x0, rtol=self.rtol,
                   maxiter=maxiter, ops=self._hierarchy.ops, name="gmg",
                   overwrite_x0=owned)


def _device_solver(device: str, matrix_free: bool, **options: Any) -> LinearSolver | None:
    """The device multigrid a ``device`` other than ``"cpu"`` stands for (None for it)."""
    if device == "cpu":
        return None
    if device not in DEVICES:
        raise ValueError(f"gmg: device = {device!r} is unknown; choose one of {DEVICES}")
    if matrix_free is not True:
        raise ValueError(f"gmg: device = {device!r} runs the matrix-free multigrid only; "
                         "set matrix_free = true, or use device = 'cpu' for the assembled "
                         "fine level")
    return DeviceLatticeSolver(device="cpu" if device == "numpy" else device, **options)


def _check_range(name: str, value: float, low: float, high: float | None, what: str) -> None:
    """Raise ValueError naming the option unless ``low <(=) value <(=) high``.

    ``rtol`` and ``rebuild_growth`` exclude their bounds; integer options include them.
    """
    exclusive = isinstance(low, float)
    try:
        ok = (low < value if exclusive else low <= value) and (
            high is None or (value < high if exclusive else value <= high))
    except TypeError:
        ok = False
    if isinstance(value, bool) or not ok:
        raise ValueError(f"gmg: {name} = {value!r} is out of range; give {what}")

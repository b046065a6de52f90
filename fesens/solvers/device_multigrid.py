"""Multigrid-preconditioned CG on a lattice of identical cells, matrix-free on every level,
in the array library of its inputs: numpy on the CPU, CuPy on a GPU.

:class:`LatticeMultigrid` solves ``A(s) u = f`` for the free–free stiffness of a
:class:`~fesens.solvers.lattice_operator.LatticeStructure` and per-cell coefficients ``s``
(SIMP: ``s_e = E(ρ_e)``), with the levels of :mod:`fesens.solvers.device_lattice`
(rediscretized coarse cells, no sparse matrix anywhere), Chebyshev or damped-Jacobi
smoothing with each level's diagonal, and a dense coarsest level whose Cholesky factor is
inverted once per set of coefficients (the coarse solve is then two dense products on the
device). A solve moves no arrays between host and device: CG's convergence checks read
scalars only. ``precision="mixed"`` runs the hierarchy and the V-cycle in float32 inside
float64 CG (half the memory traffic of the preconditioner); the result still meets
``rtol`` in float64.

The gradient of the compliance ``J = fᵀ u`` with respect to the coefficients is
``dJ/ds_e = −u_eᵀ K_ref u_e`` (the problem is self-adjoint), one batched contraction per
cell: :meth:`LatticeMultigrid.cell_energies`. :class:`DeviceLatticeSolver` is the same
solver behind the :class:`~fesens.solvers.base.LinearSolver` interface, for the
``lattice_solve`` primitive of :mod:`fesens.ad.lattice` (host arrays in and out, so that
the traced program and its adjoint rule run unchanged).

Vectors of the solve are free-dof vectors ``(n,)`` in the structure's row order (what
:class:`~fesens.solvers.lattice_operator.LatticeStructure` and the assembled matrix
``LatticeStructure.matrix`` use); coefficients are ``(n_cells,)`` in lattice order.
"""

from __future__ import annotations

import time
from functools import cached_property
from types import ModuleType
from typing import Any

import numpy as np

from fesens.arrays import namespace
from fesens.errors import ConvergenceError, NonFiniteError, SolverError
from fesens.solvers.base import LinearSolver
from fesens.solvers.device_lattice import (
    LatticeTransfer,
    LevelKernels,
    finest_level,
    levels_of,
)
from fesens.solvers.devices import array_library, refuse_unless_fits
from fesens.solvers.krylov import SMOOTHERS, ArrayOps, largest_eigenvalue, pcg, smooth
from fesens.solvers.lattice_operator import LatticeOperator, LatticeStructure

PRECISIONS = ("double", "mixed")
#: Columns of the identity applied at once when the dense coarsest matrix is formed.
_PROBE_BLOCK = 256


class _Level:
    """One level for one set of coefficients: kernels, coefficients, inverse diagonal,
    the largest eigenvalue of ``D⁻¹ A`` and the transfer from the next coarser level."""

    def __init__(self, kernels: LevelKernels, coefficients, seed) -> None:
        self.kernels, self.coefficients = kernels, coefficients
        xp, free = kernels.xp, kernels.free
        diagonal = kernels.diagonal(coefficients)
        if not bool(xp.all((diagonal > 0.0) | (free == 0.0))):
            raise SolverError(
                f"device multigrid: a level of {kernels.geometry.n_free} dofs has "
                "non-positive diagonal entries; the coefficients must be positive")
        self.inverse_diagonal = free / (diagonal + (1.0 - free))  # 0 at eliminated dofs
        self.transfer: LatticeTransfer | None = None
        # power iterations from the level's seeded vector (LatticeMultigrid._level_seeds)
        self.lambda_max = largest_eigenvalue(self.apply, self.inverse_diagonal, seed * free,
                                             ArrayOps(xp))

    def apply(self, u):
        return self.kernels.apply(self.coefficients, u)


class _DenseCoarse:
    """The coarsest level as a dense matrix: ``A⁻¹ = L⁻ᵀ L⁻¹`` from its Cholesky factor,
    in float64 whatever the hierarchy's precision (it is small, and a float32 factor of a
    SIMP design's coarse matrix loses the digits that make it a good preconditioner)."""

    def __init__(self, kernels64: LevelKernels, coefficients64) -> None:
        xp, geometry = kernels64.xp, kernels64.geometry
        free = geometry.free.ravel()
        n = int(np.count_nonzero(free))
        self.xp = xp
        self.positions = xp.asarray(np.flatnonzero(free))
        slot = np.full(free.size, n)
        slot[free] = np.arange(n)
        self.slots = xp.asarray(slot)  # lattice dof -> free dof, n: eliminated
        columns = []
        for start in range(0, n, _PROBE_BLOCK):
            stop = min(start + _PROBE_BLOCK, n)
            identity = xp.eye(stop - start, n + 1, k=start, dtype=xp.float64)
            probes = xp.reshape(xp.take(identity, self.slots, axis=1),
                                (stop - start, *geometry.free.shape))
            products = kernels64.apply(coefficients64, probes)
            columns.append(xp.take(xp.reshape(products, (stop - start, -1)),
                                   self.positions, axis=1))
        dense = xp.concat(columns, axis=0)
        dense = 0.5 * (dense + dense.T)
        try:
            factor = xp.linalg.cholesky(dense)
        except Exception as error:  # numpy's LinAlgError, or the library's own
            raise SolverError(f"device multigrid: the coarsest level ({n} dofs) is not "
                              f"positive definite ({error}); are the coefficients positive "
                              "and the body held against rigid motion?") from error
        self.inverse_factor = xp.linalg.solve(factor, xp.eye(n, dtype=xp.float64))
        if not bool(xp.all(xp.isfinite(self.inverse_factor))):
            raise SolverError(f"device multigrid: the coarsest level ({n} dofs) is singular "
                              "in float64; are the coefficients positive and the body held "
                              "against rigid motion?")

    def solve(self, r):
        """``A⁻¹ r`` for a coarse lattice array ``r`` (in ``r``'s dtype)."""
        xp = self.xp
        flat = xp.astype(xp.take(xp.reshape(r, (-1,)), self.positions), xp.float64)
        x = self.inverse_factor.T @ (self.inverse_factor @ flat)
        x = xp.take(xp.concat([x, xp.zeros(1, dtype=xp.float64)]), self.slots)
        return xp.astype(xp.reshape(x, r.shape), r.dtype)


class LatticeMultigrid:
    """CG preconditioned by a matrix-free multigrid V-cycle, in the inputs' array library.

    Parameters
    ----------
    structure : LatticeStructure
        The lattice, its free dofs and the reference cell matrix.
    rtol : float, default 1e-8
        Required relative residual ``||f − A u|| / ||f||`` (float64), in (0, 1).
    maxiter : int, optional
        CG iterations; default ``min(n, 1000)``.
    precision : {"double", "mixed"}
        ``"mixed"``: hierarchy and V-cycle in float32 inside float64 CG.
    smoother : {"chebyshev", "jacobi"}
        Chebyshev polynomial of ``D⁻¹ A`` (degree ``degree``) or ``degree`` damped-Jacobi
        sweeps (``ω = 4 / (3 λ_max)``), before and after the coarse correction.
    degree : int, default 2
    coarse_size : int, default 3000
        Coarsening stops at a level of at most this many free dofs (a dense matrix of
        that size is factorized per set of coefficients).

    Attributes
    ----------
    stats : dict
        ``iterations``, ``residual`` of the last solve, ``setup_seconds``,
        ``solve_seconds``, ``levels`` (points per axis, finest first).
    """

    def __init__(self, structure: LatticeStructure, *, rtol: float = 1e-8,
                 maxiter: int | None = None, precision: str = "double",
                 smoother: str = "chebyshev", degree: int = 2, coarse_size: int = 3000) -> None:
        if not 0.0 < rtol < 1.0:
            raise ValueError(f"device multigrid: rtol = {rtol!r} must lie in (0, 1), e.g. 1e-8")
        if precision not in PRECISIONS:
            raise ValueError(f"device multigrid: precision {precision!r} is unknown; choose "
                             f"one of {PRECISIONS}")
        if smoother not in SMOOTHERS:
            raise ValueError(f"device multigrid: smoother {smoother!r} is unknown; choose "
                             f"one of {SMOOTHERS}")
        if not 1 <= degree <= 10:
            raise ValueError(f"device multigrid: degree = {degree!r} must be 1 to 10")
        if coarse_size < 1:
            raise ValueError(f"device multigrid: coarse_size = {coarse_size!r} must be positive")
        self.structure = structure
        self.rtol, self.maxiter, self.precision = rtol, maxiter, precision
        self.smoother, self.degree, self.coarse_size = smoother, degree, coarse_size
        self._kernels: dict[tuple, list[LevelKernels]] = {}
        self._transfers: dict[tuple, list[LatticeTransfer]] = {}
        self._seeds: dict[tuple, list] = {}
        self._maps: dict[int, tuple] = {}
        self._held: tuple | None = None  # (coefficients, levels, coarse) of the last setup
        self.stats: dict[str, Any] = {"iterations": None, "residual": None,
                                      "setup_seconds": 0.0, "solve_seconds": 0.0,
                                      "levels": [g.shape for g in self.geometries]}

    # ------------------------------------------------------------ what the lattice fixes
    @cached_property
    def geometries(self):
        """The levels' geometry (host), finest first."""
        s = self.structure
        nc, shape = s.n_components, s.grid.shape
        free = (np.asarray(s.grid.rows) >= 0).reshape(*shape[::-1], nc)
        free = np.moveaxis(free, -1, 0)  # component-major
        return levels_of(finest_level(shape, free, s.element), self.coarse_size)

    def _level_kernels(self, xp: ModuleType, dtype) -> list[LevelKernels]:
        """Every level's kernels in ``xp`` and ``dtype`` (made once)."""
        key = (id(xp), str(dtype))
        if key not in self._kernels:
            self._kernels[key] = [LevelKernels(g, xp, dtype) for g in self.geometries]
        return self._kernels[key]

    def _level_transfers(self, xp: ModuleType, dtype) -> list[LatticeTransfer]:
        """The transfers between consecutive levels in ``xp`` and ``dtype`` (made once)."""
        key = (id(xp), str(dtype))
        if key not in self._transfers:
            kernels = self._level_kernels(xp, dtype)
            self._transfers[key] = [LatticeTransfer(fine, coarse)
                                    for fine, coarse in zip(kernels, kernels[1:], strict=False)]
        return self._transfers[key]

    def _level_seeds(self, xp: ModuleType, dtype) -> list:
        """Every level's start vector of the power iterations, ``(nc, *reversed shape)``
        uniform in [0.5, 1.5), made on the host and copied to ``xp`` once (not at every
        setup: a device's setup then copies nothing of the lattice's size)."""
        key = (id(xp), str(dtype))
        if key not in self._seeds:
            self._seeds[key] = [
                xp.asarray(np.random.default_rng(0).uniform(0.5, 1.5, g.free.shape)
                           .astype(k.host_dtype))
                for g, k in zip(self.geometries, self._level_kernels(xp, dtype), strict=True)]
        return self._seeds[key]

    def prepare(self, xp: ModuleType) -> None:
        """Make what the lattice fixes in the library ``xp`` now: every level's kernels,
        transfers and start vectors (in the hierarchy's precision and in float64) and the
        free-dof maps. Setups and solves in ``xp`` then copy no array of the lattice's
        size from the host: what a loop resident on a device calls before its first
        iteration (otherwise the first setup makes them)."""
        for dtype in [xp.float64] + ([xp.float32] if self.precision == "mixed" else []):
            self._level_transfers(xp, dtype)
            self._level_seeds(xp, dtype)
        self._free_maps(xp)

    def _free_maps(self, xp: ModuleType) -> tuple:
        """The free dofs' lattice positions ``(n,)`` and each lattice dof's free dof (``n``
        where eliminated), as index arrays of ``xp`` (copied there once)."""
        if id(xp) not in self._maps:
            positions = np.asarray(self.structure.positions, dtype=np.int64)
            slots = np.full(self.geometries[0].free.size, self.structure.n, dtype=np.int64)
            slots[positions] = np.arange(self.structure.n)
            self._maps[id(xp)] = (xp.asarray(positions), xp.asarray(slots))
        return self._maps[id(xp)]

    def to_lattice(self, x):
        """A free-dof vector ``(n,)`` as the lattice array ``(nc, *reversed shape)``."""
        xp = namespace(x)
        _, slots = self._free_maps(xp)
        padded = xp.concat([x, xp.zeros(1, dtype=x.dtype)])
        return xp.reshape(xp.take(padded, slots), self.geometries[0].free.shape)

    def to_free(self, lattice):
        """The free-dof vector ``(n,)`` of a lattice array."""
        xp = namespace(lattice)
        positions, _ = self._free_maps(xp)
        return xp.take(xp.reshape(lattice, (-1,)), positions)

    # ------------------------------------------------------------ coefficients
    def _lattice_coefficients(self, coefficients):
        xp = namespace(coefficients)
        n_cells = self.structure.n_cells
        if tuple(coefficients.shape) != (n_cells,):
            raise ValueError(f"device multigrid: coefficients must have shape ({n_cells},), "
                             f"got {tuple(coefficients.shape)}")
        if not bool(xp.all(xp.isfinite(coefficients))):
            raise NonFiniteError("device multigrid: the coefficients hold NaN or infinity")
        if not bool(xp.all(coefficients > 0.0)):
            raise SolverError("device multigrid: the coefficients must be positive (a void "
                              "cell needs a small stiffness, e.g. SIMP's E_min)")
        return xp.reshape(xp.astype(coefficients, xp.float64), self.structure.cells[::-1])

    def setup(self, coefficients) -> None:
        """Build the hierarchy for ``coefficients`` ``(n_cells,)`` (lattice order); a
        solve with the same coefficients reuses it."""
        start = time.perf_counter()
        xp = namespace(coefficients)
        s64 = self._lattice_coefficients(coefficients)
        dtype = xp.float32 if self.precision == "mixed" else xp.float64
        kernels = self._level_kernels(xp, dtype)
        kernels64 = self._level_kernels(xp, xp.float64)
        levels, s, s_coarse64 = [], xp.astype(s64, dtype), s64
        for index, level_kernels in enumerate(kernels):
            if index:
                s = kernels[index - 1].coarsen_coefficients(s)
                s_coarse64 = kernels64[index - 1].coarsen_coefficients(s_coarse64)
            if index == len(kernels) - 1 and len(kernels) > 1:
                break  # the coarsest level is the dense solve
            levels.append(_Level(level_kernels, s, self._level_seeds(xp, dtype)[index]))
        for level, transfer in zip(levels, self._level_transfers(xp, dtype), strict=False):
            level.transfer = transfer
        coarse = _DenseCoarse(kernels64[-1], s_coarse64)
        self._held = (s64, levels, coarse)
        self.stats["setup_seconds"] = time.perf_counter() - start

    def release(self) -> None:
        """Drop the hierarchy of the last setup (the next solve sets one up again): what a
        loop whose coefficients change at every iteration calls after its solve, so that
        the memory is free for other work until then."""
        self._held = None

    def _prepared(self, coefficients):
        """The held hierarchy, rebuilt unless it is of these coefficients."""
        xp = namespace(coefficients)
        held = self._held
        if held is None or namespace(held[0]) is not xp or not bool(xp.all(
                xp.reshape(held[0], (-1,)) == xp.astype(coefficients, xp.float64))):
            self.setup(coefficients)
        return self._held

    # ------------------------------------------------------------ the V-cycle
    def _vcycle(self, levels: list[_Level], coarse: _DenseCoarse, r, index: int = 0):
        """One V-cycle from zero for ``A_index x = r``: symmetric, a CG preconditioner."""
        if index == len(levels) or levels[index].transfer is None:
            return coarse.solve(r)
        level = levels[index]
        x = self._smooth(level, r, None)
        residual = r - level.apply(x)
        x = x + level.transfer.prolong(
            self._vcycle(levels, coarse, level.transfer.restrict(residual), index + 1))
        return self._smooth(level, r, x)

    def _smooth(self, level: _Level, b, x):
        """Smooth ``A x = b`` from ``x`` (None: from zero, saving a product)."""
        return smooth(level.apply, level.inverse_diagonal, level.lambda_max, b, x,
                      smoother=self.smoother, degree=self.degree,
                      ops=ArrayOps(level.kernels.xp))

    # ------------------------------------------------------------ solves
    def solve(self, coefficients, f, x0=None):
        """``u = A(coefficients)⁻¹ f`` by multigrid-preconditioned CG.

        Parameters
        ----------
        coefficients : array
            ``(n_cells,)`` positive per-cell coefficients, lattice order.
        f : array
            ``(n,)`` right-hand side (free dofs), or ``(n, k)``: one solve per column.
        x0 : array, optional
            Initial guess of ``f``'s shape.

        Returns
        -------
        array
            ``u`` of ``f``'s shape, float64, in the library of the inputs.

        Raises
        ------
        ConvergenceError
            If CG does not reach ``rtol`` within ``maxiter`` iterations.
        """
        xp = namespace(coefficients, f)
        if f.ndim == 2:
            return xp.stack([self.solve(coefficients, f[:, j],
                                        None if x0 is None else x0[:, j])
                             for j in range(f.shape[1])], axis=1)
        if tuple(f.shape) != (self.structure.n,):
            raise ValueError(f"device multigrid: f must have shape ({self.structure.n},), "
                             f"got {tuple(f.shape)}")
        if not bool(xp.all(xp.isfinite(f))):
            raise NonFiniteError("device multigrid: the right-hand side holds NaN or infinity")
        s64, levels, coarse = self._prepared(coefficients)
        start = time.perf_counter()
        fine64 = self._level_kernels(xp, xp.float64)[0]
        b = self.to_lattice(xp.astype(f, xp.float64))
        guess = None if x0 is None else self.to_lattice(xp.astype(x0, xp.float64))
        x = self._pcg(lambda v: fine64.apply(s64, v),
                      lambda r: self._preconditioned(levels, coarse, r), b, guess)
        self.stats["solve_seconds"] = time.perf_counter() - start
        return self.to_free(x)

    def _preconditioned(self, levels, coarse, r):
        xp = namespace(r)
        if self.precision == "double":
            return self._vcycle(levels, coarse, r)
        return xp.astype(self._vcycle(levels, coarse, xp.astype(r, xp.float32)), xp.float64)

    def _pcg(self, apply, precondition, b, x0):
        """Preconditioned CG on lattice arrays until the true relative residual is at
        most ``rtol``."""
        maxiter = min(self.structure.n, 1000) if self.maxiter is None else self.maxiter
        x, iterations, residual = pcg(apply, precondition, b, x0, rtol=self.rtol,
                                      maxiter=maxiter, ops=ArrayOps(namespace(b)),
                                      name="device multigrid")
        self.stats.update(iterations=iterations, residual=residual)
        if residual > self.rtol:
            raise ConvergenceError(
                f"device multigrid did not converge: relative residual {residual:.3e} > "
                f"rtol {self.rtol:.1e} after {iterations} iterations (levels "
                f"{self.stats['levels']}); raise maxiter or rtol",
                iterations=iterations, residual=residual, tolerance=self.rtol)
        return x

    # ------------------------------------------------------------ gradients
    def cell_energies(self, u, v=None):
        """``u_eᵀ K_ref v_e`` per cell ``(n_cells,)``, lattice order (``v`` defaults to
        ``u``): the compliance gradient is ``−cell_energies(u)``.

        Parameters
        ----------
        u, v : array
            ``(n,)`` free-dof vectors, float64.
        """
        xp = namespace(u) if v is None else namespace(u, v)
        fine = self._level_kernels(xp, xp.float64)[0]
        a = self.to_lattice(xp.astype(u, xp.float64))
        b = a if v is None else self.to_lattice(xp.astype(v, xp.float64))
        return xp.reshape(fine.cell_bilinear(a, b), (-1,))

    def apply(self, coefficients, x):
        """``A(coefficients) x`` for a free-dof vector ``x`` ``(n,)`` (float64)."""
        xp = namespace(coefficients, x)
        fine = self._level_kernels(xp, xp.float64)[0]
        s = self._lattice_coefficients(coefficients)
        return self.to_free(fine.apply(s, self.to_lattice(xp.astype(x, xp.float64))))


class DeviceLatticeSolver(LinearSolver):
    """:class:`LatticeMultigrid` as a solver of matrix-free
    :class:`~fesens.solvers.lattice_operator.LatticeOperator` s: an instance given to
    :func:`fesens.ad.lattice.lattice_solve` as its ``solver`` runs the solve and the
    adjoint solve (the same hierarchy) in the library of ``device``.

    Its arrays in and out are numpy's, as the primitive's are; with ``device="gpu"`` each
    solve copies ``f`` to the GPU and ``u`` back (a loop that keeps its state on the GPU
    calls :class:`LatticeMultigrid` itself).

    Parameters
    ----------
    device : {"cpu", "gpu"}
        Where the solve runs (:func:`array_library`).
    **options
        Options of :class:`LatticeMultigrid` (``rtol``, ``precision``, ...).
    """

    name = "device_gmg"
    symmetric = True
    is_direct = False

    def __init__(self, *, device: str = "cpu", **options: Any) -> None:
        super().__init__()
        self.xp = array_library(device)
        self.device = device
        self.options = options
        self.multigrid: LatticeMultigrid | None = None
        self._coefficients = None
        self._stats.update(last_iterations=None, last_residual=None)

    @property
    def rtol(self) -> float:
        """The relative residual the solves reach (settable between solves, as an
        optimization's adaptive tolerance does)."""
        return self.options.get("rtol", 1e-8)

    @rtol.setter
    def rtol(self, value: float) -> None:
        self.options["rtol"] = value
        if self.multigrid is not None:
            self.multigrid.rtol = value

    def factorize(self, A: LatticeOperator) -> None:
        """Set up the hierarchy of ``A``'s coefficients (on the device)."""
        if not isinstance(A, LatticeOperator):
            raise SolverError("device_gmg solves matrix-free lattice operators only "
                              f"(got {type(A).__name__}); for an assembled matrix use 'gmg'")
        if A.structure.springs is not None:  # its levels are rediscretized from the cells
            raise SolverError("the device multigrid has no springs on its levels: use gmg "
                              "with device = 'cpu' (springs on the matrix-free operator)")
        self._matrix, self._held = None, None
        with self._timed("numeric_seconds"):
            if self.multigrid is None or self.multigrid.structure is not A.structure:
                refuse_unless_fits(self.device, A.structure.n)
                self.multigrid = LatticeMultigrid(A.structure, **self.options)
                self._stats["n_symbolic"] += 1
            self._coefficients = self.xp.asarray(A.coefficients)
            self.multigrid.setup(self._coefficients)
        self._stats["n_numeric"] += 1
        self._matrix = A

    def _factorize(self, A) -> None:  # factorize() takes lattice operators only
        raise SolverError("device_gmg solves matrix-free lattice operators only")

    def _solve(self, b: np.ndarray, x0: np.ndarray | None, transpose: bool) -> np.ndarray:
        xp = self.xp
        x = self.multigrid.solve(self._coefficients, xp.asarray(b),
                                 None if x0 is None else xp.asarray(x0))
        self._stats.update(last_iterations=self.multigrid.stats["iterations"],
                           last_residual=self.multigrid.stats["residual"])
        return x if xp is np else x.get()  # CuPy's copy to the host

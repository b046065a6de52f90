"""The multigrid hierarchy of a structured grid: prolongations, Galerkin coarse operators,
Chebyshev or Jacobi smoothers, a direct coarsest solve, and the V-cycle.

The solver layer knows no mesh: a :class:`StructuredGrid` is the lattice shape and, for
every lattice point and component, the row of the matrix that holds it (``-1`` for a dof
the matrix has eliminated, a Dirichlet dof). The fem layer builds it
(:func:`fesens.fem.model.structured_grid.structured_grid`).

Coarsening keeps every second lattice point per axis, and the last one: an axis of ``n``
intervals gets ``ceil(n / 2)``, so an odd count leaves one coarse interval spanning a
single fine interval instead of stopping. Prolongation is (bi/tri)linear interpolation in
lattice index, per component (``P = Pz ⊗ Py ⊗ Px ⊗ I``); a coarse dof is eliminated when
the fine dof at its point is (Dirichlet conditions are injected), and the rows of
eliminated fine dofs are dropped. Coarse operators are Galerkin, ``A_c = Pᵀ A P``
(Amir, Aage & Lazarov, SMO 2014). Coarsening stops when a coarse level has at most
``coarse_size`` dofs (the finest level is coarsened at least once, so that a small problem
still gets a multigrid, not one direct solve) or no axis can halve; that level is
factorized by CHOLMOD (SuperLU without scikit-sparse).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from fesens.errors import SolverError
from fesens.solvers.base import LinearSolver
from fesens.solvers.krylov import ArrayOps, PooledOps, largest_eigenvalue, smooth
from fesens.solvers.parallel import RowBlocks, SlabPool
from fesens.solvers.registry import make_solver, solver_class


@dataclass(frozen=True)
class StructuredGrid:
    """Where a matrix's unknowns sit on a tensor lattice.

    Attributes
    ----------
    shape : tuple of int
        Lattice points per axis, ``(Nx, Ny[, Nz])``, each at least 2.
    rows : numpy.ndarray
        ``(Nx * Ny [* Nz], n_components)`` integers: the matrix row of component ``k`` at
        lattice point ``a + Nx * (b + Ny * c)``, or ``-1`` where the dof is eliminated.
        Every row of the matrix appears exactly once.
    """

    shape: tuple[int, ...]
    rows: np.ndarray

    def __post_init__(self) -> None:
        rows = np.asarray(self.rows)
        if rows.ndim != 2 or rows.shape[0] != int(np.prod(self.shape)) or min(self.shape) < 2:
            raise ValueError(f"StructuredGrid: rows must have shape (prod(shape)="
                             f"{int(np.prod(self.shape))}, n_components) and every axis at "
                             f"least 2 points; got shape {self.shape}, rows {rows.shape}")

    @property
    def n_components(self) -> int:
        return int(self.rows.shape[1])


def coarse_points(n_points: int) -> np.ndarray:
    """Fine indices of the coarse points of an axis: every second one and the last."""
    coarse = np.arange(0, n_points, 2)
    return coarse if coarse[-1] == n_points - 1 else np.append(coarse, n_points - 1)


def _interpolation_1d(n_points: int) -> sp.csr_matrix:
    """Linear interpolation ``(n_points, n_coarse)`` from :func:`coarse_points`."""
    coarse = coarse_points(n_points)
    fine = np.arange(n_points)
    right = np.searchsorted(coarse, fine)  # first coarse point at or after each fine one
    on_coarse = coarse[right] == fine
    left = np.where(on_coarse, right, right - 1)
    span = np.maximum(coarse[right] - coarse[left], 1)  # 0 on coarse points
    weight = np.where(on_coarse, 1.0, (coarse[right] - fine) / span)
    rows = np.concatenate([fine, fine])
    cols = np.concatenate([left, right])
    vals = np.concatenate([weight, np.where(on_coarse, 0.0, 1.0 - weight)])
    P = sp.csr_matrix((vals, (rows, cols)), shape=(n_points, coarse.size))
    P.eliminate_zeros()
    return P


@dataclass
class Level:
    """One level: its operator, smoother data and the prolongation from the next one.

    ``A`` is a sparse matrix or a matrix-free operator (the fine level's
    :class:`~fesens.solvers.lattice_operator.LatticeOperator`, the first coarse level's
    :class:`~fesens.solvers.lattice_coarse.StencilOperator`). ``product`` applies ``A``
    (such an operator itself, or ``A`` in blocks of rows on the hierarchy's threads),
    ``prolong`` and ``restrict`` apply ``P`` and ``Pᵀ`` so.
    """

    A: sp.csr_matrix | Any
    shape: tuple[int, ...]
    inverse_diagonal: np.ndarray = field(repr=False)
    lambda_max: float = 0.0
    P: sp.csr_matrix | None = field(default=None, repr=False)
    product: object = field(default=None, repr=False)
    prolong: RowBlocks | None = field(default=None, repr=False)
    restrict: RowBlocks | None = field(default=None, repr=False)

    def connect(self, transfer: Transfer) -> None:
        """Set the prolongation from the next coarser level."""
        self.P, self.prolong, self.restrict = transfer.P, transfer.prolong, transfer.restrict


@dataclass(frozen=True)
class Transfer:
    """The prolongation ``P`` onto a level from the next coarser lattice (its ``shape``
    and ``free`` dofs), with its threaded products: what depends on the grid alone, so a
    rebuild on the same grid reuses it (:class:`Hierarchy`'s ``transfers``). Onto a
    matrix-free fine level, ``P`` is its :class:`~fesens.solvers.lattice_coarse.
    LatticeProlongation` (applied by slicing, itself ``prolong`` and its ``T`` ``restrict``)."""

    P: sp.csr_matrix | Any
    shape: tuple[int, ...]
    free: np.ndarray
    prolong: RowBlocks | Any
    restrict: RowBlocks | Any


class Hierarchy:
    """Levels of a :class:`StructuredGrid` for the matrix ``A``, and the V-cycle.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix, shape (n, n)
        Symmetric positive definite, its rows placed by ``grid``.
    grid : StructuredGrid
    smoother : {"chebyshev", "jacobi"}
    degree : int
        Chebyshev degree, or Jacobi sweeps, before and after the coarse correction.
    coarse_size : int
        Coarsening stops at a coarse level of at most this many dofs.
    pool : SlabPool, optional
        The threads of the sparse products (default: a pool of the usable cores or
        ``FESENS_THREADS``). The results do not depend on their number.
    transfers : list of Transfer, optional
        The prolongations of an earlier hierarchy on the same grid, finest first: used
        where present, and the list is extended with those built here.
    """

    def __init__(self, A: sp.csr_matrix, grid: StructuredGrid, *, smoother: str,
                 degree: int, coarse_size: int, pool: SlabPool | None = None,
                 transfers: list[Transfer] | None = None) -> None:
        self.smoother, self.degree = smoother, degree
        self.pool = SlabPool() if pool is None else pool
        self.ops = PooledOps(self.pool)
        self.levels = [self._level(A, grid.shape)]
        self.stop_reason = ""
        shape, free = grid.shape, grid.rows >= 0
        # a matrix-free operator numbers its rows by its own grid, and its first transfer
        # slices the lattice: no check and no row order (75 MB at 160x80x80 cells); the
        # sparse one then serves only a coarse level with every dof eliminated
        prolongation = (self._fine_prolongation(grid, A.shape[0]) if sp.issparse(A)
                        else _lattice_prolongation)
        while True:
            if len(self.levels) > 1 and self.levels[-1].A.shape[0] <= coarse_size:
                self.stop_reason = f"at most coarse_size={coarse_size} dofs"
                break
            if max(shape) <= 2:
                self.stop_reason = "no axis has more than one interval left"
                break
            index = len(self.levels) - 1
            if transfers is not None and index < len(transfers):
                transfer = transfers[index]
            else:
                transfer = self._transfer(A if index == 0 else None, prolongation, shape, free)
                if transfers is not None:
                    transfers.append(transfer)
            prolongation = _lattice_prolongation
            P, shape, free = transfer.P, transfer.shape, transfer.free
            if P.shape[1] == 0:
                self.stop_reason = "every coarse dof is a Dirichlet dof"
                break
            self.levels[-1].connect(transfer)
            self.levels.append(self._level(_galerkin(self.levels[-1].A, P, transfer.restrict),
                                           shape))
        self.coarse_solver = self._coarse_solver(self.levels[-1].A)

    def refresh_fine(self, A: sp.csr_matrix) -> None:
        """Replace the finest operator (and its smoother data), keeping coarse levels."""
        fine = self.levels[0]
        fresh = self._level(A, fine.shape)
        fresh.P, fresh.prolong, fresh.restrict = fine.P, fine.prolong, fine.restrict
        self.levels[0] = fresh
        if len(self.levels) == 1:
            self.coarse_solver = self._coarse_solver(A)

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        """Lattice points per axis of every level, finest first."""
        return [level.shape for level in self.levels]

    @property
    def sizes(self) -> list[int]:
        """Dofs of every level, finest first."""
        return [level.A.shape[0] for level in self.levels]

    def _level(self, A: sp.csr_matrix, shape: tuple[int, ...]) -> Level:
        diagonal = A.diagonal()
        if not np.all(diagonal > 0.0):
            raise SolverError(
                f"gmg: a level of {A.shape[0]} dofs has {int(np.sum(diagonal <= 0.0))} "
                "non-positive diagonal entries; multigrid-CG needs a symmetric positive "
                "definite matrix")
        product = A if not sp.issparse(A) else RowBlocks(A, self.pool)
        level = Level(A, shape, 1.0 / diagonal, product=product)
        # from a seeded vector, with whole-vector dot products: the estimate is computed
        # once per build and needs no pieces to be independent of the thread count
        seed = np.random.default_rng(0).uniform(0.5, 1.5, A.shape[0])
        level.lambda_max = largest_eigenvalue(lambda v: product @ v, level.inverse_diagonal,
                                              seed, ArrayOps(np))
        return level

    def _transfer(self, fine, prolongation, shape: tuple[int, ...], free: np.ndarray
                  ) -> Transfer:
        """The transfer onto the level of ``shape`` and ``free``: a matrix-free ``fine``
        operator's own, by slicing its lattice (no ``P`` and ``Pᵀ``: 56 MB at 96x48x48
        cells), else the sparse ``P`` of ``prolongation`` in row blocks."""
        sliced = None if fine is None or sp.issparse(fine) else fine.prolongation()
        if sliced is not None:
            return Transfer(sliced, sliced.coarse_shape, sliced.coarse_free, sliced, sliced.T)
        P, coarse_shape, coarse_free = prolongation(shape, free)
        return Transfer(P, coarse_shape, coarse_free, RowBlocks(P, self.pool),
                        RowBlocks(P.T, self.pool))

    @staticmethod
    def _fine_prolongation(grid: StructuredGrid, n: int):
        """The first coarsening, with its rows put in the matrix's row order."""
        lattice_rows = grid.rows[grid.rows >= 0]  # lattice order, point-major
        if lattice_rows.size != n or not np.array_equal(np.sort(lattice_rows), np.arange(n)):
            raise SolverError(
                f"gmg: the grid places {lattice_rows.size} dofs but the matrix has {n} rows "
                "(each must appear once); the grid belongs to another matrix")
        order = np.argsort(lattice_rows)

        def prolongation(shape, free):
            P, coarse_shape, coarse_free = _lattice_prolongation(shape, free)
            return P[order], coarse_shape, coarse_free

        return prolongation

    @staticmethod
    def _coarse_solver(A) -> LinearSolver:
        solver = make_solver("cholmod" if solver_class("cholmod").available() else "superlu")
        solver.factorize(A if sp.issparse(A) else A.tocsr())
        return solver

    def vcycle(self, r: np.ndarray, index: int = 0) -> np.ndarray:
        """One V-cycle from zero for ``A_index x = r``: symmetric, so a CG preconditioner."""
        if index == len(self.levels) - 1:
            return self.coarse_solver.solve(r)
        level = self.levels[index]
        x = self._smooth(level, r, None)
        residual = level.product @ x
        np.subtract(r, residual, out=residual)  # in place: one vector fewer
        # rebound to its restriction: the fine residual goes before the coarse
        # correction and the smoothing after it (24 MB at 160x80x80 cells)
        residual = level.restrict @ residual
        x += level.prolong @ self.vcycle(residual, index + 1)
        return self._smooth(level, r, x)

    def _smooth(self, level: Level, b: np.ndarray, x: np.ndarray | None) -> np.ndarray:
        """Smooth ``A x = b`` from ``x`` (None: from zero, saving a product)."""
        return smooth(lambda v: level.product @ v, level.inverse_diagonal, level.lambda_max,
                      b, x, smoother=self.smoother, degree=self.degree, ops=self.ops)


def _lattice_prolongation(shape: tuple[int, ...], free: np.ndarray):
    """Prolongation from the coarse lattice of ``shape`` onto the free dofs of ``free``.

    ``free`` is ``(prod(shape), n_components)`` booleans, lattice order. Returns the
    prolongation ``(n_free_fine, n_free_coarse)``, the coarse shape and coarse ``free``.
    """
    n_components = free.shape[1]
    P = sp.identity(n_components, format="csr")
    # x fastest, component fastest of all: kron(Pz, kron(Py, kron(Px, I)))
    for n_points in shape:
        P = sp.kron(_interpolation_1d(n_points), P, format="csr")
    kept = [coarse_points(n) for n in shape]
    coarse_shape = tuple(c.size for c in kept)
    grid = free.reshape(*shape[::-1], n_components)
    coarse_free = grid[np.ix_(*kept[::-1], np.arange(n_components))]
    coarse_free = coarse_free.reshape(-1, n_components)
    P = P[np.flatnonzero(free.ravel())][:, np.flatnonzero(coarse_free.ravel())]
    return P.tocsr(), coarse_shape, coarse_free


def _galerkin(A, P: sp.csr_matrix, restrict: RowBlocks):
    """``Pᵀ A P``: the operator's own cell-by-cell form (a matrix-free
    :class:`~fesens.solvers.lattice_operator.LatticeOperator` has ``coarse_operator``, a
    :class:`~fesens.solvers.lattice_coarse.StencilOperator`), else a sparse product in
    blocks of rows of ``Pᵀ`` (``restrict``) on its pool, or a stencil operator's own
    ``galerkin`` (the CSR product's bit for bit)."""
    if hasattr(A, "coarse_operator"):
        coarse = A.coarse_operator()
        if coarse.shape != (P.shape[1], P.shape[1]):
            raise SolverError(f"gmg: the operator's Galerkin coarse level has shape "
                              f"{coarse.shape}, the prolongation {P.shape}; the operator "
                              "and the grid disagree")
        return coarse
    # the product's rounding leaves it symmetric to ~1e-15 relative only, and the
    # coarsest level's Cholesky reads one triangle: the average of the two triangles
    # keeps every level exactly symmetric (without it a 2-level gmg on a 170-dof
    # cantilever stalled at a relative residual of 1e-10)
    coarse = (restrict.sparse_product(A, P) if sp.issparse(A)
              else A.galerkin(P, restrict.matrix))
    return ((coarse + coarse.T) * 0.5).tocsr()

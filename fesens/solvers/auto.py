"""What a bare ``make_solver("auto")`` gives: a direct solver or CG with AMG, chosen from
the matrix at :meth:`~fesens.solvers.LinearSolver.factorize`.

A model knows its dimension and mesh and resolves ``auto`` itself
(:meth:`fesens.fem.model.solvers.SolverChoice.auto_solver`); a matrix alone does not.
:class:`AutoSolver` reads the number of unknowns ``n`` and of nonzeros per row, which
suggest the dimension (:data:`~fesens.solvers.policy.ROW_NNZ_3D`), estimates the factor
(:func:`fesens.solvers.memory.factor_bytes`) and decides by ``auto``'s one rule
(:func:`fesens.solvers.policy.matrix_choice`):

* the direct backend of ``solver_class("auto")`` (CHOLMOD, else SuperLU, which it says:
  :func:`~fesens.solvers.registry.warn_direct_fallback`) when the factor
  fits in the available memory and the matrix is 2D-like or has at most
  :data:`~fesens.solvers.policy.DIRECT_MAX_3D_UNKNOWNS` unknowns, or when it is not
  symmetric (CG needs SPD);
* otherwise CG with the default preconditioner (AMG when pyamg is installed).

The choice and a one-line reason are in :attr:`AutoSolver.stats` (``"choice"``,
``"reason"``); the backend is kept while the matrix keeps its shape and number of nonzeros.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from fesens.solvers.base import LinearSolver
from fesens.solvers.iterative import CGSolver, NearNullspace
from fesens.solvers.memory import available_bytes
from fesens.solvers.policy import matrix_choice
from fesens.solvers.preconditioners import default_preconditioner
from fesens.solvers.registry import register_alias_maker, solver_class, warn_direct_fallback


class AutoSolver(LinearSolver):
    """A direct solver or CG with AMG, chosen at the first :meth:`factorize`.

    Parameters
    ----------
    dim : {2, 3}, optional
        The dimension of the problem, if known; default: guessed from the nonzeros per row
        (:data:`~fesens.solvers.policy.ROW_NNZ_3D`).
    near_nullspace : array_like (n, k) or callable, optional
        Near-null-space vectors for AMG, should CG be chosen (for elasticity the rigid-body
        modes on the free dofs; see :class:`~fesens.solvers.IterativeSolver`).
    **options
        Options of the direct backend (e.g. ``check_residual``), checked now; CG runs with
        its defaults (``rtol`` 1e-10).

    Attributes
    ----------
    choice : str or None
        The backend chosen (``"cholmod"``, ``"superlu"`` or ``"cg"``), None before the first
        :meth:`factorize`.
    reason : str
        Why, in one line.
    """

    name = "auto"

    def __init__(self, *, dim: int | None = None, near_nullspace: NearNullspace = None,
                 **options: Any) -> None:
        super().__init__()
        if dim not in (None, 2, 3):
            raise ValueError(f"dim must be 2 or 3 (or None to guess it), got {dim!r}")
        self.dim = dim
        self.near_nullspace = near_nullspace
        self._direct = solver_class("auto")(**options)
        self._backend: LinearSolver | None = None
        self._decided_for: tuple[int, int] | None = None
        self.choice: str | None = None
        self.reason = "not decided yet: factorize a matrix first"

    @property
    def backend(self) -> LinearSolver | None:
        """The chosen backend's instance (None before the first :meth:`factorize`)."""
        return self._backend

    @property
    def on_analysis(self):  # type: ignore[override]
        """The direct backend's listener of its analysis' work (it is the one analysing)."""
        return self._direct.on_analysis

    @on_analysis.setter
    def on_analysis(self, listener) -> None:
        self._direct.on_analysis = listener

    @property
    def is_direct(self) -> bool:  # type: ignore[override]
        """Whether the chosen backend is direct (True before the choice)."""
        return True if self._backend is None else self._backend.is_direct

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        """Whether the chosen (before the choice: the direct) backend assumes ``A = Aᵀ``."""
        return (self._direct if self._backend is None else self._backend).symmetric

    @property
    def stats(self) -> dict[str, Any]:
        """The chosen backend's :attr:`~fesens.solvers.LinearSolver.stats`, plus ``choice``
        and ``reason``."""
        stats = dict(self._stats if self._backend is None else self._backend.stats)
        stats.update(choice=self.choice, reason=self.reason)
        return stats

    def _factorize(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        size = (A.shape[0], A.nnz)
        if self._backend is None or size != self._decided_for:
            self.choice, self.reason = choose(A, self.dim)
            self._backend = self._direct if self.choice == self._direct.name else self._cg()
            self._decided_for = size
            if self._backend is self._direct:
                warn_direct_fallback(self.choice)
        self._backend.factorize(A)

    def _cg(self) -> LinearSolver:
        return CGSolver(preconditioner=default_preconditioner(),
                        near_nullspace=self.near_nullspace)

    def _solve(self, b: np.ndarray, x0: np.ndarray | None, transpose: bool) -> np.ndarray:
        backend = self._backend
        return backend.solve_transpose(b, x0) if transpose else backend.solve(b, x0)


register_alias_maker("auto", AutoSolver)


def choose(A: sp.csr_matrix | sp.csc_matrix, dim: int | None = None) -> tuple[str, str]:
    """The backend ``auto`` picks for ``A`` and why: ``(name, one-line reason)``, in the
    memory available now (:func:`fesens.solvers.policy.matrix_choice`).

    Parameters
    ----------
    A : scipy sparse CSR or CSC matrix, shape (n, n)
    dim : {2, 3}, optional
        The problem's dimension; default: 3 when ``A`` has
        :data:`~fesens.solvers.policy.ROW_NNZ_3D` or more nonzeros per row, else 2.
    """
    return matrix_choice(A, dim, available_bytes())

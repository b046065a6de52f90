"""What a bare ``make_solver("auto")`` gives: a direct solver or CG with AMG, chosen from
the matrix at :meth:`~fesens.solvers.LinearSolver.factorize`.

A model knows its dimension and mesh and resolves ``auto`` itself
(:meth:`fesens.fem.model_solvers.SolverChoice.auto_solver`); a matrix alone does not.
:class:`AutoSolver` reads the number of unknowns ``n`` and of nonzeros per row, which
suggest the dimension (:data:`ROW_NNZ_3D`), estimates the factor
(:func:`fesens.solvers.memory.factor_bytes`) and decides:

* the direct backend of ``solver_class("auto")`` (CHOLMOD, else SuperLU, which it says:
  :func:`~fesens.solvers.base.warn_direct_fallback`) when the factor
  fits in the available memory and the matrix is 2D-like or has at most
  :data:`DIRECT_MAX_3D_UNKNOWNS` unknowns, or when it is not symmetric (CG needs SPD);
* otherwise CG with the default preconditioner (AMG when pyamg is installed).

The choice and a one-line reason are in :attr:`AutoSolver.stats` (``"choice"``,
``"reason"``); the backend is kept while the matrix keeps its shape and number of nonzeros.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from fesens.solvers.base import LinearSolver, solver_class, warn_direct_fallback
from fesens.solvers.iterative import NearNullspace, is_symmetric
from fesens.solvers.memory import available_bytes, factor_bytes
from fesens.solvers.preconditioners import default_preconditioner

#: A matrix of more unknowns than this that looks 3D is solved by CG + AMG even when its
#: factor fits: measured on a 2-core machine, CHOLMOD took 2.5 s per gradient at
#: 92k unknowns (48x24x24 hex8) but 24 s at 212k, where CG + AMG took 10.4 s. A model's
#: ``auto`` uses the same limit (``fesens.fem.model_solvers``).
DIRECT_MAX_3D_UNKNOWNS = 150_000
#: Nonzeros per row from which a matrix counts as 3D: linear 2D elasticity has at most
#: about 18 (quad4; tri3 about 14), linear 3D elasticity 40 or more (tet4 about 43, tet10
#: and hex8 about 80). Scalar 3D problems (hex8 27, tet4 about 14) count as 2D and
#: quadratic 2D elasticity (tri6, quad8, quad9: about 38-50) as 3D: give ``dim`` for those.
ROW_NNZ_3D = 30


class AutoSolver(LinearSolver):
    """A direct solver or CG with AMG, chosen at the first :meth:`factorize`.

    Parameters
    ----------
    dim : {2, 3}, optional
        The dimension of the problem, if known; default: guessed from the nonzeros per row
        (:data:`ROW_NNZ_3D`).
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
        from fesens.solvers.iterative import CGSolver

        return CGSolver(preconditioner=default_preconditioner(),
                        near_nullspace=self.near_nullspace)

    def _solve(self, b: np.ndarray, x0: np.ndarray | None, transpose: bool) -> np.ndarray:
        backend = self._backend
        return backend.solve_transpose(b, x0) if transpose else backend.solve(b, x0)


def choose(A: sp.csr_matrix | sp.csc_matrix, dim: int | None = None) -> tuple[str, str]:
    """The backend ``auto`` picks for ``A`` and why: ``(name, one-line reason)``.

    Parameters
    ----------
    A : scipy sparse CSR or CSC matrix, shape (n, n)
    dim : {2, 3}, optional
        The problem's dimension; default: 3 when ``A`` has :data:`ROW_NNZ_3D` or more
        nonzeros per row, else 2.
    """
    n = A.shape[0]
    per_row = A.nnz / max(n, 1)
    if dim is None:
        dim = 3 if per_row >= ROW_NNZ_3D else 2
        shape = f"{n} unknowns, {per_row:.0f} nonzeros per row ({dim}D-like)"
    else:
        shape = f"{n} unknowns ({dim}D)"
    direct = solver_class("auto").name
    needed, available = factor_bytes(n, dim), available_bytes()
    factor = f"factor about {_size(needed)}"
    if available is not None:
        factor += f" of {_size(available)} available"
    if prefers_direct(n, dim, needed, available):
        return direct, f"{shape}: {factor}, direct"
    why = (f"more than {DIRECT_MAX_3D_UNKNOWNS} unknowns in 3D"
           if available is None or needed <= available else "the factor does not fit")
    if not is_symmetric(A):
        return direct, f"{shape}: {factor}, {why}, but not symmetric (CG needs SPD): direct"
    return "cg", f"{shape}: {factor}, {why}: CG with {default_preconditioner()}"


def prefers_direct(n: float, dim: int, needed: float, available: float | None,
                   limit: float | None = None) -> bool:
    """``auto``'s rule, for models, config checks and bare matrices alike: a direct
    factorization when its estimated ``needed`` bytes fit in ``available`` (None: unknown,
    assumed to fit) and the problem is 2D or has at most ``limit`` unknowns (default
    :data:`DIRECT_MAX_3D_UNKNOWNS`)."""
    fits = available is None or needed <= available
    return fits and (dim < 3 or n <= (DIRECT_MAX_3D_UNKNOWNS if limit is None else limit))


def _size(n_bytes: float) -> str:
    """``"12 MiB"`` below a GiB, ``"3.5 GiB"`` above."""
    return f"{n_bytes / 2**20:.0f} MiB" if n_bytes < 2**30 else f"{n_bytes / 2**30:.3g} GiB"

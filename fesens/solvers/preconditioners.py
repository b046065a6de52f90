"""Preconditioners for the Krylov backends: smoothed-aggregation AMG (pyamg), Jacobi, none.

Each builder takes the matrix and returns something scipy's Krylov solvers accept as ``M``
(an approximation of ``A^{-1}``), or None for no preconditioning.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from fesens.errors import SolverError

try:
    import pyamg
except ImportError:  # optional dependency
    pyamg = None

Preconditioner = LinearOperator | sp.spmatrix | None


def amg_available() -> bool:
    """Whether pyamg is importable."""
    return pyamg is not None


def default_preconditioner() -> str:
    """``"amg"`` when pyamg is installed, else ``"jacobi"``."""
    return "amg" if amg_available() else "jacobi"


def check_preconditioner(name: str) -> None:
    """Validate a preconditioner name.

    Raises
    ------
    ValueError
        If ``name`` is not ``"amg"``, ``"jacobi"`` or ``"none"``.
    SolverError
        If ``name`` is ``"amg"`` and pyamg is not installed.
    """
    if name not in _BUILDERS:
        raise ValueError(f"unknown preconditioner {name!r}; choose one of {sorted(_BUILDERS)}")
    if name == "amg" and not amg_available():
        raise SolverError(
            "preconditioner 'amg' needs pyamg (pip install 'fesens[amg]'); "
            "or use preconditioner='jacobi'"
        )


def make_preconditioner(
    name: str, A: sp.csr_matrix | sp.csc_matrix, *, symmetric: bool
) -> Preconditioner:
    """Build a preconditioner for ``A``.

    Parameters
    ----------
    name : {"amg", "jacobi", "none"}
    A : scipy sparse CSR or CSC matrix or array, shape (n, n)
    symmetric : bool
        Whether ``A`` is symmetric (CG, MINRES); the preconditioner is then symmetric
        positive definite for SPD ``A``.

    Returns
    -------
    LinearOperator or sparse matrix, shape (n, n), or None
    """
    check_preconditioner(name)
    return _BUILDERS[name](A, symmetric)


def _amg(A: sp.csr_matrix | sp.csc_matrix, symmetric: bool) -> LinearOperator:
    """One V-cycle of smoothed-aggregation AMG (symmetric Gauss-Seidel smoothing)."""
    hierarchy = pyamg.smoothed_aggregation_solver(
        A.tocsr(), symmetry="hermitian" if symmetric else "nonsymmetric"
    )
    return hierarchy.aspreconditioner(cycle="V")


def _jacobi(A: sp.csr_matrix | sp.csc_matrix, symmetric: bool) -> sp.spmatrix:
    """``diag(1 / |A_ii|)``: the Jacobi preconditioner, kept positive definite."""
    diagonal = np.abs(A.diagonal())
    n_zero = int(np.count_nonzero(diagonal == 0.0))
    if n_zero:
        raise SolverError(
            f"Jacobi preconditioner: {n_zero} zero diagonal entries; "
            "use preconditioner='amg' or 'none'"
        )
    return sp.diags(1.0 / diagonal, format="csr")


def _none(A: sp.csr_matrix | sp.csc_matrix, symmetric: bool) -> None:
    return None


_BUILDERS: dict[str, Callable[[sp.csr_matrix | sp.csc_matrix, bool], Preconditioner]] = {
    "amg": _amg,
    "jacobi": _jacobi,
    "none": _none,
}

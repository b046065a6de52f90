"""Preconditioners for the Krylov backends: smoothed-aggregation AMG (pyamg), Jacobi, none.

Each builder takes the matrix and returns something scipy's Krylov solvers accept as ``M``
(an approximation of ``A^{-1}``), or None for no preconditioning.

Smoothed aggregation builds its coarse spaces from the *near-null space* of ``A``: the
vectors ``A`` maps to (almost) zero before Dirichlet conditions. pyamg's default, the
constant vector, is right for scalar problems (heat conduction) but not for elasticity,
whose near-null space is the rigid-body motions (3 in 2D, 6 in 3D). Without them AMG on
an elasticity matrix converges no faster than Jacobi (hundreds of CG iterations instead of
about twenty); pass them as ``near_nullspace`` (see
:func:`fesens.fem.model.rigid_modes.rigid_body_modes`, restricted to the free dofs).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from fesens.errors import NonFiniteError, SolverError

try:
    import pyamg
except ImportError:  # optional dependency
    pyamg = None

Preconditioner = LinearOperator | sp.spmatrix | None

# The coarsest level of smoothed aggregation, tuned on unstructured 3D elasticity with SIMP
# densities (benchmarks/bench_amg.py, RESULTS.md "AMG tuning on unstructured
# meshes"): Gmsh boxes of tet4 (151k dofs) and tet10 (128k dofs), contrast 1e-3..1,
# rigid-body modes, CG to 1e-8, one thread. Stopping at up to 500 unknowns factorized by
# splu, instead of pyamg's 10 solved by a dense pseudo-inverse (two more levels whose
# V-cycle only approximates what the direct solve settles), cut the CG iterations from 100
# to 72 (tet4) and from 118 to 50 (tet10) and took setup + one solve to 0.59-0.83x (tet4)
# and 0.49-0.74x (tet10) of pyamg's defaults, setup + 3 solves to 0.56-0.71x and 0.41-0.65x
# (two runs on the shared machine). No other option won on both meshes in both runs:
# adding the strength threshold theta 0.01 gained more on tet4, less on tet10; dropping the
# candidate improvement saved setup but weakens the V-cycle on near-rigid errors (2D,
# tests); Jacobi, point Gauss-Seidel, Chebyshev smoothing, naive aggregation and the
# evolution strength were slower than pyamg's defaults.
#: Largest coarsest level (pyamg's default: 10) and its direct solver (default: pinv).
AMG_MAX_COARSE, AMG_COARSE_SOLVER = 500, "splu"

#: Preconditioners built from a near-null space when one is given (AMG: the rigid-body modes
#: of an elastic body), in pyamg and in PETSc (GAMG).
READS_NEAR_NULLSPACE = frozenset({"amg"})

#: Preconditioners whose operator for ``A^T`` is their operator for ``A`` (for any ``A``):
#: Jacobi reads the diagonal only, which ``A`` and ``A^T`` share.
TRANSPOSE_INVARIANT = frozenset({"jacobi", "none"})


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


def check_near_nullspace(vectors: np.ndarray, n: int | None = None) -> np.ndarray:
    """Validated near-null-space vectors as a float64 array of shape (n, k).

    Parameters
    ----------
    vectors : array_like, shape (n,) or (n, k)
        One vector or ``k`` vectors as columns, e.g. rigid-body modes on the free dofs.
    n : int, optional
        Required number of rows (the size of the matrix).

    Raises
    ------
    TypeError
        If ``vectors`` is not real.
    ValueError
        If it is not 1D or 2D, has no column, or does not have ``n`` rows.
    NonFiniteError
        If it holds NaN or infinity.
    """
    vectors = np.asarray(vectors)
    if np.iscomplexobj(vectors) or not np.issubdtype(vectors.dtype, np.number):
        raise TypeError(f"near_nullspace must be a real array, got dtype {vectors.dtype}")
    if vectors.ndim == 1:
        vectors = vectors[:, None]
    if vectors.ndim != 2 or vectors.shape[1] == 0:
        raise ValueError(f"near_nullspace must have shape (n,) or (n, k), got {vectors.shape}")
    if n is not None and vectors.shape[0] != n:
        raise ValueError(
            f"near_nullspace has {vectors.shape[0]} rows but the matrix has {n}: give the "
            "vectors on the unknowns of the matrix (for a FEM model: the free dofs, "
            "modes[model.assembler.free])"
        )
    if not np.all(np.isfinite(vectors)):
        raise NonFiniteError("near_nullspace contains NaN or infinity")
    return np.ascontiguousarray(vectors, dtype=np.float64)


def make_preconditioner(
    name: str,
    A: sp.csr_matrix | sp.csc_matrix,
    *,
    symmetric: bool,
    near_nullspace: np.ndarray | None = None,
) -> Preconditioner:
    """Build a preconditioner for ``A``.

    Parameters
    ----------
    name : {"amg", "jacobi", "none"}
    A : scipy sparse CSR or CSC matrix or array, shape (n, n)
    symmetric : bool
        Whether ``A`` is symmetric (CG, MINRES); the preconditioner is then symmetric
        positive definite for SPD ``A``.
    near_nullspace : numpy.ndarray, shape (n,) or (n, k), optional
        Near-null-space vectors of ``A`` (AMG only; the others ignore them). Default: the
        constant vector.

    Returns
    -------
    LinearOperator or sparse matrix, shape (n, n), or None

    Raises
    ------
    ValueError, TypeError, NonFiniteError
        If ``near_nullspace`` is invalid (see :func:`check_near_nullspace`).
    SolverError
        If the preconditioner cannot be built for ``A`` (Jacobi: zero diagonal entries).
    """
    check_preconditioner(name)
    if near_nullspace is not None:
        near_nullspace = check_near_nullspace(near_nullspace, A.shape[0])
    return _BUILDERS[name](A, symmetric, near_nullspace)


def _amg(
    A: sp.csr_matrix | sp.csc_matrix, symmetric: bool, near_nullspace: np.ndarray | None
) -> LinearOperator:
    """One V-cycle of smoothed-aggregation AMG (symmetric block Gauss-Seidel smoothing; the
    coarsest level of :data:`AMG_MAX_COARSE` unknowns solved by :data:`AMG_COARSE_SOLVER`)."""
    hierarchy = pyamg.smoothed_aggregation_solver(
        A.tocsr(), B=near_nullspace, symmetry="hermitian" if symmetric else "nonsymmetric",
        max_coarse=AMG_MAX_COARSE, coarse_solver=AMG_COARSE_SOLVER,
    )
    return hierarchy.aspreconditioner(cycle="V")


def _jacobi(
    A: sp.csr_matrix | sp.csc_matrix, symmetric: bool, near_nullspace: np.ndarray | None
) -> sp.spmatrix:
    """``diag(1 / |A_ii|)``: the Jacobi preconditioner, kept positive definite."""
    diagonal = np.abs(A.diagonal())
    n_zero = int(np.count_nonzero(diagonal == 0.0))
    if n_zero:
        raise SolverError(
            f"Jacobi preconditioner: {n_zero} zero diagonal entries; "
            "use preconditioner='amg' or 'none'"
        )
    return sp.diags(1.0 / diagonal, format="csr")


def _none(
    A: sp.csr_matrix | sp.csc_matrix, symmetric: bool, near_nullspace: np.ndarray | None
) -> None:
    return None


_Builder = Callable[[sp.csr_matrix | sp.csc_matrix, bool, np.ndarray | None], Preconditioner]
_BUILDERS: dict[str, _Builder] = {
    "amg": _amg,
    "jacobi": _jacobi,
    "none": _none,
}

"""What the solver ``auto`` stands for: one rule, for a model, a bare matrix, a filter and
a memory estimate, with the reason of each choice.

The rule, in order:

* under an MPI launch of several ranks, PETSc's CG + GAMG (:func:`distributed_choice`);
* a direct factorization (CHOLMOD, else SuperLU: ``solver_class("auto")``) when its
  estimated factor fits in the available memory and the problem is 2D or has at most
  :data:`DIRECT_MAX_3D_UNKNOWNS` unknowns (:func:`prefers_direct`);
* otherwise CG with geometric multigrid (``gmg``) where the unknowns sit on a lattice,
  matrix-free where the model allows it, and then on the GPU (``device = "gpu"``) when
  CuPy finds a CUDA device whose free memory holds the estimate of
  :func:`~fesens.solvers.devices.device_bytes` (:func:`gpu_memory`);
* otherwise CG with the default preconditioner (AMG when pyamg is installed); a bare
  matrix that is not symmetric stays direct (CG needs SPD).

The tangent of a nonlinear model that is not declared positive definite at every Newton
iterate stays direct whatever its size (:func:`tangent_choice`): CHOLMOD with LDL^T, then
LU, for the factorizations it finds not positive definite where the tangent is symmetric,
LU where it is not.

Callers measure the memory (:func:`fesens.solvers.memory.available_bytes`) and say
whether the unknowns sit on a lattice; the functions here decide and say why.
"""

from __future__ import annotations

from collections.abc import Callable

import scipy.sparse as sp

from fesens.solvers.devices import device_bytes, gpu_memory, size_text
from fesens.solvers.iterative import is_symmetric
from fesens.solvers.memory import factor_bytes
from fesens.solvers.preconditioners import default_preconditioner
from fesens.solvers.registry import SOLVER_ALIASES, solver_class

#: A problem of more unknowns than this that is (or looks) 3D is solved iteratively even
#: when its factor fits: measured on a 2-core machine, CHOLMOD took 2.5 s per gradient at
#: 92k unknowns (48x24x24 hex8) but 24 s at 212k, where CG + AMG took 10.4 s.
DIRECT_MAX_3D_UNKNOWNS = 150_000
#: Nonzeros per row from which a bare matrix counts as 3D: linear 2D elasticity has at
#: most about 18 (quad4; tri3 about 14), linear 3D elasticity 40 or more (tet4 about 43,
#: tet10 and hex8 about 80). Scalar 3D problems (hex8 27, tet4 about 14) count as 2D and
#: quadratic 2D elasticity (tri6, quad8, quad9: about 38-50) as 3D: give ``dim`` for those.
ROW_NNZ_3D = 30
#: The backend of the lattice branch (CG with geometric multigrid) and of the MPI branch.
MULTIGRID = "gmg"
DISTRIBUTED = "petsc"
#: The backend of a symmetric tangent that may be indefinite: Cholesky, LDL^T and LU
#: where it fails.
CHOLESKY_LU = "cholmod_lu"
#: The alias of the general direct backends (UMFPACK, else SuperLU).
LU = "lu"
#: The alias this module decides (a key of :data:`~fesens.solvers.registry.SOLVER_ALIASES`).
AUTO = "auto"


class AutoChoice(str):
    """The backend ``auto`` chose (a name) with ``options`` and ``reason`` (one line)."""

    options: dict
    reason: str

    def __new__(cls, name: str, options: dict, reason: str) -> AutoChoice:
        choice = super().__new__(cls, name)
        choice.options, choice.reason = options, reason
        return choice

    def line(self) -> str:
        """``solver: <name>[, option=value ...] (auto: <reason>)``, what a job prints."""
        options = "".join(f", {key}={value}" for key, value in self.options.items())
        return f"solver: {self}{options} (auto: {self.reason})"


def is_auto(spec: object) -> bool:
    """Whether the solver ``spec`` (a name, a solver instance, a ``(name, options)`` pair)
    is the alias ``auto``, which this module decides."""
    return isinstance(spec, str) and spec == AUTO


def prefers_direct(n: float, dim: int, needed: float, available: float | None) -> bool:
    """Whether ``auto`` factorizes: the estimated ``needed`` bytes of the factor fit in
    ``available`` (None: unknown, assumed to fit) and the problem is 2D or has at most
    :data:`DIRECT_MAX_3D_UNKNOWNS` unknowns ``n``."""
    fits = available is None or needed <= available
    return fits and (dim < 3 or n <= DIRECT_MAX_3D_UNKNOWNS)


def distributes(name: str) -> bool:
    """Whether the solver ``name`` solves across the ranks of an MPI launch (``auto`` does:
    it picks :func:`distributed_choice` there).

    Raises
    ------
    ValueError
        If ``name`` is unknown.
    """
    return is_auto(name) or solver_class(name).distributes


def distributed_choice(ranks: int) -> AutoChoice:
    """What ``auto`` solves with under an MPI launch of ``ranks`` ranks, and why."""
    return AutoChoice(DISTRIBUTED, {"preconditioner": "amg"},
                      f"MPI launch on {ranks} ranks: PETSc's CG + GAMG solves across them")


def model_choice(n: int, dim: int, needed: float, available: float | None, *,
                 ranks: int = 1, on_lattice: Callable[[], bool],
                 matrix_free_refusal: Callable[[], str | None],
                 device_ok: bool = True) -> AutoChoice:
    """The backend ``auto`` stands for on a model, and why.

    Parameters
    ----------
    n : int
        The model's free unknowns.
    dim : int
        Its mesh's dimension.
    needed, available : float
        The estimated bytes of the direct factor, the memory available (None: unknown).
    ranks : int, default 1
        The ranks of the MPI launch.
    on_lattice : callable
        Whether the unknowns sit on a lattice (asked only when the choice depends on it).
    matrix_free_refusal : callable
        Why the model cannot be solved matrix-free, or None when it can (asked likewise).
    device_ok : bool, default True
        Whether the device multigrid may solve it (False: springs, which only the CPU's
        matrix-free operator adds).
    """
    if ranks > 1:
        return distributed_choice(ranks)
    if prefers_direct(n, dim, needed, available):
        size = f"{dim}D" if dim < 3 else f"3D with {n} <= {DIRECT_MAX_3D_UNKNOWNS} free unknowns"
        return AutoChoice(solver_class("auto").name, {},
                          f"{size}, factor about {needed / 2**20:.0f} MiB")
    fits = available is None or needed <= available
    why = (f"3D with {n} > {DIRECT_MAX_3D_UNKNOWNS} free unknowns" if fits else
           f"the factor of {n} unknowns needs about {needed / 2**30:.3g} GiB, more than "
           f"the {available / 2**30:.3g} GiB available")
    if _multigrid_on(on_lattice):
        refusal = matrix_free_refusal()
        if refusal is None:
            options, where = _device_of(n) if device_ok else ({}, "")
            return AutoChoice(MULTIGRID, {"matrix_free": True, **options},
                              f"{why}; lattice of identical linear cells: matrix-free "
                              f"multigrid-CG{where}")
        return AutoChoice(MULTIGRID, {}, f"{why}; structured mesh: multigrid-CG (assembled: "
                                         f"{refusal})")
    preconditioner = default_preconditioner()
    return AutoChoice("cg", {"preconditioner": preconditioner},
                      f"{why}; unstructured mesh: CG with {preconditioner} preconditioner")


def _device_of(n: int) -> tuple[dict, str]:
    """The ``device`` option of the matrix-free multigrid for ``n`` unknowns and the words
    that say why: the GPU when CuPy finds one whose free memory holds the estimate, else
    nothing (the CPU, said only where a GPU was found)."""
    free = gpu_memory()
    if free is None:
        return {}, ""
    needed = device_bytes(n)
    if needed > free:
        return {}, (f" on the CPU: the GPU has {size_text(free)} free, less than the about "
                    f"{size_text(needed)} the design needs")
    return {"device": "gpu"}, (f" on the GPU: about {size_text(needed)} of its {size_text(free)} "
                               "free")


def tangent_choice(symmetric: bool, definite: bool) -> AutoChoice | None:
    """The backend ``auto`` stands for on the tangent ``∂R/∂u`` of a nonlinear model, and
    why; None where that is the model's ``auto`` (:func:`model_choice`): a symmetric tangent
    that stays positive definite at every Newton iterate.

    Parameters
    ----------
    symmetric : bool
        Whether the tangent is symmetric (e.g. it derives from a stored energy).
    definite : bool
        Whether it stays positive definite at every Newton iterate (a hyperelastic body's
        need not, past a buckling load or under large rotations).
    """
    if symmetric and definite:
        return None
    lu = solver_class(LU).name
    if not symmetric:
        return AutoChoice(lu, {}, "the tangent is not symmetric: LU")
    why = "symmetric tangent, which may be indefinite at a Newton iterate"
    if _registered(CHOLESKY_LU):
        return AutoChoice(CHOLESKY_LU, {}, f"{why}: CHOLMOD, and for each factorization "
                                           f"found not positive definite LDL^T, then LU ({lu})")
    return AutoChoice(lu, {}, f"{why}: LU (CHOLMOD, scikit-sparse, is not installed)")


def matrix_choice(A: sp.csr_matrix | sp.csc_matrix, dim: int | None,
                  available: float | None) -> tuple[str, str]:
    """The backend ``auto`` picks for a bare matrix ``A`` and why: ``(name, reason)``.

    Parameters
    ----------
    A : scipy sparse CSR or CSC matrix, shape (n, n)
    dim : {2, 3} or None
        The problem's dimension; None: 3 when ``A`` has :data:`ROW_NNZ_3D` or more
        nonzeros per row, else 2.
    available : float or None
        The memory available (bytes; None: unknown).
    """
    n = A.shape[0]
    per_row = A.nnz / max(n, 1)
    if dim is None:
        dim = 3 if per_row >= ROW_NNZ_3D else 2
        shape = f"{n} unknowns, {per_row:.0f} nonzeros per row ({dim}D-like)"
    else:
        shape = f"{n} unknowns ({dim}D)"
    direct = solver_class("auto").name
    needed = factor_bytes(n, dim)
    factor = f"factor about {size_text(needed)}"
    if available is not None:
        factor += f" of {size_text(available)} available"
    if prefers_direct(n, dim, needed, available):
        return direct, f"{shape}: {factor}, direct"
    why = (f"more than {DIRECT_MAX_3D_UNKNOWNS} unknowns in 3D"
           if available is None or needed <= available else "the factor does not fit")
    if not is_symmetric(A):
        return direct, f"{shape}: {factor}, {why}, but not symmetric (CG needs SPD): direct"
    return "cg", f"{shape}: {factor}, {why}: CG with {default_preconditioner()}"


def filter_choice(n: int, dim: int, on_lattice: Callable[[], bool]) -> str | None:
    """The backend ``auto`` stands for on a PDE filter's matrix of ``n`` unknowns (one per
    mesh point): multigrid when a model of that size on that lattice would take it,
    regardless of the memory; None to leave ``auto`` to the matrix (:func:`matrix_choice`)."""
    if prefers_direct(n, dim, 0.0, None) or not _multigrid_on(on_lattice):
        return None
    return MULTIGRID


def solve_kind(name: str, options: dict) -> str:
    """``"direct"``, ``"iterative"`` or ``"matrix_free"``: how the backend ``name`` (not an
    alias) with ``options`` solves a model."""
    cls = solver_class(name)
    if cls.is_direct:
        return "direct"
    return "matrix_free" if cls.offers_matrix_free and options.get("matrix_free") else \
        "iterative"


def _multigrid_on(on_lattice: Callable[[], bool]) -> bool:
    """Whether the multigrid backend is installed and the unknowns sit on a lattice."""
    return _registered(MULTIGRID) and on_lattice()


def _registered(name: str) -> bool:
    """Whether the backend ``name`` is registered and installed."""
    try:
        return bool(solver_class(name).available()) and name not in SOLVER_ALIASES
    except ValueError:
        return False



"""Sparse linear solvers behind one interface: factorize once, solve many times.

Backends (see :func:`available_solvers`): ``"cholmod"`` (sparse Cholesky, scikit-sparse),
``"cholmod_lu"`` (CHOLMOD, and LU for a matrix it finds not positive definite),
``"superlu"`` and ``"umfpack"`` (sparse LU), ``"cg"``, ``"minres"``, ``"gmres"`` (Krylov
methods with AMG or Jacobi preconditioning), ``"petsc"`` and ``"petsc_direct"`` (PETSc's KSP
with GAMG or BoomerAMG, and MUMPS; optional: ``make petsc``). :func:`make_solver` also
accepts the aliases of :data:`SOLVER_ALIASES`: ``"auto"`` (CHOLMOD if installed, else
SuperLU) and ``"lu"`` (UMFPACK if installed, else SuperLU). :func:`solver_class` answers
what a name stands for (``solver_class("auto").symmetric``, ``.is_direct``) without creating
a solver.

Examples
--------
>>> solver = make_solver("auto")            # doctest: +SKIP
>>> solver.factorize(K)                     # doctest: +SKIP
>>> u = solver.solve(f)                     # doctest: +SKIP
>>> lam = solver.solve_transpose(u_bar)     # adjoint: same factorization  # doctest: +SKIP
"""

from fesens.solvers.auto import AutoSolver
from fesens.solvers.base import DirectSolver, FesensPerformanceWarning, LinearSolver
from fesens.solvers.cholmod import CholmodSolver, cholmod_available
from fesens.solvers.iterative import CGSolver, GmresSolver, IterativeSolver, MinresSolver
from fesens.solvers.lu import SuperLUSolver, UmfpackSolver
from fesens.solvers.multigrid import MultigridCGSolver
from fesens.solvers.petsc import PetscDirectSolver, PetscSolver
from fesens.solvers.preconditioners import amg_available
from fesens.solvers.registry import (
    SOLVER_ALIASES,
    available_solvers,
    make_solver,
    register_solver,
    solver_class,
)

__all__ = [
    "SOLVER_ALIASES",
    "AutoSolver",
    "CGSolver",
    "CholmodSolver",
    "DirectSolver",
    "FesensPerformanceWarning",
    "GmresSolver",
    "IterativeSolver",
    "LinearSolver",
    "MinresSolver",
    "MultigridCGSolver",
    "PetscDirectSolver",
    "PetscSolver",
    "SuperLUSolver",
    "UmfpackSolver",
    "amg_available",
    "available_solvers",
    "cholmod_available",
    "make_solver",
    "register_solver",
    "solver_class",
]

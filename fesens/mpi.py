"""One problem on several MPI ranks (``mpirun -n N fesens ...``): who this rank is, who
writes, and how a failure ends every rank.

How fesens runs under MPI. Every rank runs the same program on the whole model: it reads
the config, builds the mesh and assembles the whole matrix; the ``petsc`` solver backend
(:mod:`fesens.solvers.petsc`) then solves it distributed, each rank owning a contiguous
block of rows of the PETSc matrix (KSP CG + GAMG or hypre, or MUMPS), and gives every rank
the whole solution. Everything downstream of the solve (sensitivities, filters, volume,
the OC and MMA updates) is computed identically on every rank from identical inputs, so the
ranks never disagree and need no other communication; rank 0 writes the results folder and
prints the progress. The work that is distributed is the linear solve (its matrix,
preconditioner and Krylov iterations); assembly and the design update are replicated, so
each rank needs the memory of a serial run plus its share of PETSc's matrix
(``docs/scaling.md`` states what that means for a cluster run).

A rank that fails exits at once with its exit code (:func:`exit_now`), without the
collective MPI finalization, and ``mpirun`` then ends the other ranks: none is left
waiting in a collective operation. The command line does so for every error; in a script,
:func:`world` (which every distributed solve calls) installs a ``sys.excepthook`` that does
it for an uncaught exception.

Nothing here imports MPI unless the process was started by an MPI launcher (the
environment variables of Open MPI, MPICH/Hydra or PMIx say so): a serial run never loads
PETSc.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from fesens.errors import FesensError

#: (size, rank) environment variables of the MPI launchers: Open MPI, MPICH/Hydra, PMIx.
LAUNCHER_VARIABLES = (("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
                      ("PMI_SIZE", "PMI_RANK"), ("PMIX_SIZE", "PMIX_RANK"))


class MPIError(FesensError, RuntimeError):
    """An MPI launch fesens cannot serve (no petsc4py, more ranks than cells, ...)."""


@dataclass(frozen=True)
class World:
    """This process's place among the ranks of its MPI launch (``size`` 1: a serial run)."""

    rank: int = 0
    size: int = 1

    @property
    def is_root(self) -> bool:
        """True on the rank that writes results and prints progress (rank 0)."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        """True when more than one rank runs the problem."""
        return self.size > 1


def launched() -> World:
    """The rank and size the MPI launcher announced in the environment, without importing
    MPI (``World()`` when no launcher started this process)."""
    for size_name, rank_name in LAUNCHER_VARIABLES:
        size = os.environ.get(size_name)
        if size is not None:
            return World(int(os.environ.get(rank_name, "0")), int(size))
    return World()


def world() -> World:
    """This process's :class:`World`; under an MPI launch of several ranks, PETSc is
    initialized and asked (its communicator is the one the solves use).

    Raises
    ------
    MPIError
        Launched on several ranks while petsc4py is missing (the distributed solves need
        it), or PETSc sees another number of ranks than the launcher announced.
    """
    announced = launched()
    if not announced.distributed:
        return announced
    try:
        import petsc4py

        petsc4py.init(sys.argv[:1])
        from petsc4py import PETSc
    except ImportError:
        raise MPIError(
            f"fesens was started by MPI on {announced.size} ranks, but petsc4py is not "
            "installed: distributed runs solve with PETSc. Install it with `make petsc` "
            "(Debian's petsc-dev and petsc4py), or run without mpirun") from None
    comm = PETSc.COMM_WORLD
    found = World(comm.getRank(), comm.getSize())
    if sys.excepthook is not _exit_on_uncaught:  # a script's uncaught error ends every rank
        sys.excepthook = _exit_on_uncaught
    if found.size != announced.size:
        raise MPIError(
            f"the MPI launcher announced {announced.size} ranks but PETSc sees {found.size}: "
            "petsc4py was built against another MPI than the one running mpirun; rebuild it "
            "with `make petsc`")
    return found


def check_distributes(setting: str, distributes: bool) -> None:
    """Under a launch of several ranks, refuse a linear solver that does not solve across
    them (every rank would solve the whole system alone); ``setting`` names it for the
    message, e.g. ``solver.backend = "cholmod"``."""
    ranks = launched()
    if ranks.distributed and not distributes:
        raise MPIError(
            f"{setting} cannot solve across the {ranks.size} MPI ranks of this launch (every "
            "rank would solve the whole system alone); use the backend \"petsc\" (CG + "
            "GAMG), \"petsc_direct\" (MUMPS) or \"auto\" (which picks petsc under MPI)")


def check_rank_count(n_cells: int, where: str) -> None:
    """Refuse a launch with more ranks than ``n_cells`` (a rank would own no rows)."""
    size = launched().size
    if size > n_cells:
        raise MPIError(
            f"{where}: {size} MPI ranks for {n_cells} cells; every rank needs at least one "
            f"cell's rows: run with mpirun -n {max(1, n_cells)} or fewer")


def _exit_on_uncaught(kind, value, trace) -> None:
    """``sys.excepthook`` of a distributed launch: report the uncaught exception, then
    :func:`exit_now` (a normal exit would wait in MPI's collective finalization while the
    other ranks wait for this one inside a solve)."""
    sys.__excepthook__(kind, value, trace)
    exit_now(130 if issubclass(kind, KeyboardInterrupt) else 1)


def exit_now(code: int) -> None:
    """End this process with ``code`` at once, flushing its output but skipping the
    collective MPI finalization (``mpirun`` then ends the other ranks)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

"""One problem on several MPI ranks (``mpirun -n N fesens ...``): who this rank is, who
writes, and how a failure ends every rank.

How fesens runs under MPI. A design run splits one problem among the ranks (the
*distributed model*, :mod:`fesens.config.mpi_run`): every rank reads the config and the
mesh, the cells are partitioned (PETSc DMDA blocks on a structured grid, PT-Scotch on the
cell graph otherwise: :mod:`fesens.fem.partition.cells`), and each rank keeps its cells
only: it builds their model, assembles their matrices, and PETSc adds the ranks'
contributions into one distributed matrix (:mod:`fesens.solvers.petsc_distributed`);
sensitivities are computed per rank for its cells, the density filter is a distributed
matrix, responses and volume are sums over the ranks (:class:`Collective`), and the OC and
MMA updates reduce over the ranks. Rank 0 writes the results folder (the whole mesh's fields,
gathered) and prints the progress. A config the distributed model does not offer yet (an
eigen objective, stress constraints, physics sections)
runs *replicated*: every rank builds the whole model and only the linear solve is
distributed (each rank owns a block of rows of the PETSc matrix); `fesens solve` and
`fesens sensitivity` run that way too. ``docs/scaling.md`` states what either costs.

A rank that fails exits at once with its exit code (:func:`exit_now`), without the
collective MPI finalization, and ``mpirun`` then ends the other ranks: none is left
waiting in a collective operation. The command line does so for every error; in a script,
:func:`world` (which every distributed solve calls) installs a ``sys.excepthook`` that does
it for an uncaught exception.

Nothing here imports MPI unless the process was started by an MPI launcher (the
environment variables of Open MPI, MPICH/Hydra or PMIx say so): a serial run never loads
PETSc. NumPy too is imported by the reductions that use it, not with the module: the
``fesens`` command imports this module at start-up, also for commands that compute nothing.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fesens.errors import FesensError

if TYPE_CHECKING:
    import numpy as np

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


def petsc_module() -> Any:
    """``petsc4py.PETSc``, PETSc initialized on the first call without its signal handlers:
    they would turn a signal that Python handles or ignores (Ctrl-C's SIGINT; SIGPIPE from
    the pipe of a study's worker process that died) into an abort of this process.

    Raises
    ------
    ImportError
        If petsc4py is missing.
    """
    import petsc4py

    petsc4py.init([*sys.argv[:1], "-no_signal_handler"])  # once: later calls do nothing
    from petsc4py import PETSc

    return PETSc


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
        PETSc = petsc_module()
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


class Collective:
    """Reductions over the ranks among which one problem's arrays are split (each rank
    holds a part: its cells' densities, its rows); this base class is the serial one, where
    every reduction is the value itself.

    Every rank must call the same reductions in the same order (they are collective). A
    reduced value is identical on every rank (computed on rank 0 and broadcast), so the
    ranks take the same decisions (a bisection's branch, a line search's step).
    """

    rank = 0
    size = 1

    @property
    def distributed(self) -> bool:
        """True when the arrays are split among several ranks."""
        return self.size > 1

    def sum(self, value):
        """The sum over the ranks of ``value`` (a number or an array, elementwise)."""
        return value

    def max(self, value):
        """The largest over the ranks of ``value`` (a number or an array, elementwise)."""
        return value

    def min(self, value):
        """The smallest over the ranks of ``value`` (a number or an array, elementwise)."""
        return value

    def dot(self, a, b) -> float:
        """``Σ_ranks a_r · b_r``: the dot product of two split vectors."""
        import numpy as np

        return float(self.sum(float(np.dot(a, b))))

    def allgather(self, part: np.ndarray) -> np.ndarray:
        """The ranks' parts concatenated in rank order, on every rank."""
        import numpy as np

        return np.asarray(part)

    def gather(self, part: np.ndarray) -> np.ndarray | None:
        """The ranks' parts concatenated in rank order on rank 0; None on the others."""
        import numpy as np

        return np.asarray(part)

    def bcast(self, value):
        """Rank 0's ``value`` on every rank."""
        return value

    def barrier(self) -> None:
        """Wait until every rank gets here."""


#: The reductions of a serial run (every reduction is the value itself).
SERIAL = Collective()


class MPICollective(Collective):
    """:class:`Collective` over an mpi4py communicator (PETSc's ``COMM_WORLD``)."""

    def __init__(self, comm) -> None:
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()

    def _reduce(self, value, op):
        import numpy as np

        array = np.asarray(value, dtype=float)
        result = self.comm.reduce(array, op=op, root=0)  # rank 0 reduces, all get its result
        result = self.comm.bcast(result, root=0)
        return float(result) if np.ndim(value) == 0 else result

    def sum(self, value):
        from mpi4py import MPI

        return self._reduce(value, MPI.SUM)

    def max(self, value):
        from mpi4py import MPI

        return self._reduce(value, MPI.MAX)

    def min(self, value):
        from mpi4py import MPI

        return self._reduce(value, MPI.MIN)

    def allgather(self, part: np.ndarray) -> np.ndarray:
        import numpy as np

        parts = self.comm.allgather(np.asarray(part))
        return np.concatenate(parts)

    def gather(self, part: np.ndarray) -> np.ndarray | None:
        import numpy as np

        parts = self.comm.gather(np.asarray(part), root=0)
        return np.concatenate(parts) if parts is not None else None

    def bcast(self, value):
        return self.comm.bcast(value, root=0)

    def barrier(self) -> None:
        self.comm.Barrier()


def collective() -> Collective:
    """The :class:`Collective` of this launch: :data:`SERIAL` in a serial run, else one over
    PETSc's ``COMM_WORLD`` (through mpi4py).

    Raises
    ------
    MPIError
        Under an MPI launch without petsc4py or mpi4py (``make petsc`` installs both).
    """
    if not world().distributed:
        return SERIAL
    from petsc4py import PETSc

    try:
        return MPICollective(PETSc.COMM_WORLD.tompi4py())
    except ImportError:
        raise MPIError("distributed runs reduce with mpi4py, which is not installed: run "
                       "`make petsc` (or pip install mpi4py)") from None

"""The jobs under ``mpirun -n N`` (the command line or a script calling them): rank 0
writes the results folder and prints; every other rank runs the same job silently into a
private temporary folder, removed when it ends (:mod:`fesens.mpi` says why the ranks
compute the same thing).

On ``--resume`` the other ranks start from a copy of rank 0's checkpoint and records (the
results folder is on a file system all ranks see, as on a cluster).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fesens.mpi import world
from fesens.workflow.common import silent

#: What a rank needs of rank 0's folder to resume: the records, not the pictures and VTUs.
RESUME_FILES = ("config.toml", "checkpoint.npz", "history.csv", "summary.json")


@dataclass(frozen=True)
class RankOutput:
    """Where this rank writes and what it prints."""

    out_dir: Path
    force: bool
    echo: Callable[[str], None]


@contextmanager
def rank_output(out_dir: Path, *, force: bool, resume: bool,
                echo: Callable[[str], None]) -> Iterator[RankOutput]:
    """``out_dir`` and ``echo`` on rank 0 (and in a serial run); on the other ranks a
    temporary folder (a copy of the resume files with ``resume``) and no output."""
    rank = world()
    if rank.is_root:
        yield RankOutput(out_dir, force, echo)
        return
    private = Path(tempfile.mkdtemp(prefix=f"fesens-rank{rank.rank}-"))
    try:
        if resume:
            for name in RESUME_FILES:
                if (out_dir / name).is_file():
                    shutil.copy2(out_dir / name, private / name)
        yield RankOutput(private, not resume, silent)
    finally:
        shutil.rmtree(private, ignore_errors=True)

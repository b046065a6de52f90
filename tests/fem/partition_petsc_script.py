"""Run under ``mpirun -n N``: every rank computes ``cell_ranks`` of a hex8 box (DMDA blocks)
and of a tet4 box whose cells are shuffled (graph partitioning), and writes them to
``<folder>/rank<r>.json`` (tests/fem/test_partition_petsc.py runs it on 2 ranks; one file
per rank, since mpirun may join the ranks' lines of output).
"""

import json
import sys
from pathlib import Path

import numpy as np

from fesens.fem.partition.cells import cell_ranks
from fesens.mesh import Mesh, box
from fesens.mpi import world


def shuffled_tets(nx: int, ny: int, nz: int) -> Mesh:
    """``box(nx, ny, nz, cell_type="tet4")`` with its cells in a random order."""
    mesh = box(nx, ny, nz, cell_type="tet4")
    order = np.random.default_rng(0).permutation(mesh.n_cells)
    return Mesh(mesh.points, mesh.cells[order], "tet4")


def main(folder: Path) -> None:
    ranks = world()
    result = {"size": ranks.size,
              "hex": cell_ranks(box(12, 6, 4), ranks.size).tolist(),
              "tet": cell_ranks(shuffled_tets(12, 6, 4), ranks.size).tolist()}
    (folder / f"rank{ranks.rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""Splitting a mesh's cells among MPI ranks: fesens.fem.partition.petsc (DMDA blocks,
PETSc's graph partitioning) through fesens.fem.partition.cells.cell_ranks.

On two ranks (partition_petsc_script.py under mpirun): a hex8 box goes to two blocks of
the lattice, the same on both ranks; a tet4 box whose cells are shuffled (so that no
numbering helps) goes to two balanced parts whose cut is close to the best plane's.
"""

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from mpi_launch import mpirun
from partition_petsc_script import shuffled_tets

from fesens.fem.partition.cells import cell_adjacency, cell_ranks
from fesens.fem.partition.petsc import dmda_ranges, graph_ranks
from fesens.mesh import box, rectangle
from fesens.mpi import MPIError
from fesens.solvers.petsc import petsc4py_available

needs_mpi = pytest.mark.skipif(not petsc4py_available() or shutil.which("mpirun") is None,
                               reason="petsc4py or mpirun missing (make petsc installs both)")
SCRIPT = Path(__file__).with_name("partition_petsc_script.py")


def _mpirun(ranks: int, *arguments: str, cwd: Path, timeout: float = 300):
    """``mpirun -n ranks python arguments`` (mpi_launch.py's command line)."""
    return mpirun(ranks, sys.executable, *arguments, cwd=cwd, timeout=timeout)


def _cut(adjacency, ranks: np.ndarray) -> int:
    """Facets between cells of different ranks."""
    pairs = adjacency.tocoo()
    return int(np.sum(ranks[pairs.row] != ranks[pairs.col])) // 2


def _best_plane_cut(mesh, adjacency) -> int:
    """The smallest cut of the bisections at the median centroid along one axis."""
    centre = mesh.cell_centroids()
    return min(_cut(adjacency, (c > np.median(c)).astype(int)) for c in centre.T)


def test_the_cell_graph_links_cells_sharing_a_facet():
    graph = cell_adjacency(rectangle(3, 2))  # cells 0 1 2 / 3 4 5
    expected = {(0, 1), (1, 2), (3, 4), (4, 5), (0, 3), (1, 4), (2, 5)}
    pairs = graph.tocoo()
    assert set(zip(pairs.row.tolist(), pairs.col.tolist(), strict=True)) == (
        expected | {(b, a) for a, b in expected})
    assert np.all(graph.data == 1)
    tets = cell_adjacency(box(1, 1, 1, cell_type="tet4"))  # 6 Kuhn tetrahedra in a ring
    assert tets.sum(axis=1).tolist() == [[2]] * 6


def test_one_rank_needs_no_petsc_and_too_many_ranks_are_refused():
    mesh = rectangle(3, 2)
    assert cell_ranks(mesh, 1).tolist() == [0] * 6
    assert [r.tolist() for r in dmda_ranges((3, 2))] == [[3], [2]]
    assert graph_ranks(cell_adjacency(mesh), 1).tolist() == [0] * 6
    with pytest.raises(MPIError, match="6 cells among 7 MPI ranks.*mpirun -n 6 or fewer"):
        cell_ranks(mesh, 7)
    with pytest.raises(MPIError, match=r"ranks of this launch \(1\), asked for 2"):
        graph_ranks(cell_adjacency(mesh), 2)


def test_a_random_split_fails_the_cut_check():
    """The check applied to PT-Scotch's partition below can fail."""
    mesh = shuffled_tets(12, 6, 4)
    adjacency = cell_adjacency(mesh)
    contiguous = (np.arange(mesh.n_cells) >= mesh.n_cells // 2).astype(int)
    assert _cut(adjacency, contiguous) > 5 * _best_plane_cut(mesh, adjacency)


@needs_mpi
def test_two_ranks_split_a_lattice_into_blocks_and_a_tet_mesh_by_its_graph(tmp_path):
    result = _mpirun(2, str(SCRIPT), str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert ranks[0] == ranks[1] and ranks[0]["size"] == 2  # every rank has the same split
    # hex8 12x6x4, cells x fastest: each rank one block of the lattice
    hexes = np.array(ranks[0]["hex"]).reshape(4, 6, 12)  # [z, y, x]
    for rank in range(2):
        z, y, x = np.nonzero(hexes == rank)
        assert len(x) > 0
        extents = [np.ptp(a) + 1 for a in (x, y, z)]
        assert len(x) == np.prod(extents)  # the cells fill their bounding box
    assert set(hexes.ravel().tolist()) == {0, 1}
    # tet4, shuffled: balanced, and a cut near the best plane's
    tets = np.array(ranks[0]["tet"])
    mesh = shuffled_tets(12, 6, 4)
    counts = np.bincount(tets, minlength=2)
    assert len(counts) == 2 and counts.min() > 0
    assert counts.max() <= 1.1 * mesh.n_cells / 2
    adjacency = cell_adjacency(mesh)
    assert _cut(adjacency, tets) <= 1.5 * _best_plane_cut(mesh, adjacency)

"""fesens.fem.partition.mesh_part: one rank's part of a mesh and the numberings across the ranks.

Every property is checked against the whole mesh with plain loops or set operations (not
with the code under test): each cell on one rank, node owners the lowest rank of their
cells, the rank-ordered node numbering, the named sets restricted to each part.
"""

import numpy as np
import pytest

from fesens.errors import MeshError
from fesens.fem.partition.mesh_part import lattice_cell_ranks, partition_mesh
from fesens.mesh import FacetSet, Mesh, box, rectangle
from fesens.mesh.structured import lattice_of


def _split_2d() -> tuple[Mesh, np.ndarray]:
    """A 6x4 rectangle; ranks: x < 0.5 -> 0, else 1, except the top row (y > 0.75) -> 2."""
    mesh = rectangle(6, 4)
    centre = mesh.cell_centroids()
    ranks = np.where(centre[:, 0] < 0.5, 0, 1)
    ranks[centre[:, 1] > 0.75] = 2
    return mesh, ranks


def _split_3d() -> tuple[Mesh, np.ndarray]:
    """A 4x3x2 box of tetrahedra dealt out as 0, 1, 0, 1, ... (ragged part boundaries)."""
    mesh = box(4, 3, 2, cell_type="tet4")
    return mesh, np.arange(mesh.n_cells) % 2


def _with_sets(mesh: Mesh) -> Mesh:
    """``mesh`` plus a cell set, and a facet set without cells holding every boundary facet
    and one interior facet of every cell pair sharing one (shared by two ranks)."""
    mesh.cell_sets["low"] = np.flatnonzero(mesh.cell_centroids()[:, 1] < 0.4)
    facets, owners = mesh.all_facets()
    keys = np.sort(facets, axis=1)
    _, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
    mesh.facet_sets["every"] = FacetSet(mesh.type_info.facet_type, facets[first])
    assert (counts == 2).any() and (counts == 1).any()
    return mesh


def _owners_by_loop(mesh: Mesh, ranks: np.ndarray) -> np.ndarray:
    owner = {}
    for cell, nodes in enumerate(mesh.cells):
        for node in nodes:
            owner[int(node)] = min(owner.get(int(node), 99), int(ranks[cell]))
    return np.array([owner[node] for node in range(mesh.n_points)])


def _rows(array: np.ndarray) -> list[tuple[int, ...]]:
    return sorted(map(tuple, np.asarray(array).tolist()))


@pytest.mark.parametrize("split", [_split_2d, _split_3d], ids=["rectangle-3", "tet-box-2"])
def test_the_parts_hold_every_cell_once_and_number_the_nodes_by_rank(split):
    mesh, ranks = split()
    size = int(ranks.max()) + 1
    parts = [partition_mesh(mesh, ranks, rank) for rank in range(size)]
    assert np.array_equal(np.sort(np.concatenate([p.cells for p in parts])),
                          np.arange(mesh.n_cells))
    owner = _owners_by_loop(mesh, ranks)
    order = np.full(mesh.n_points, -1)
    start = 0
    for rank, part in enumerate(parts):
        assert (part.rank, part.size, part.n_global_cells, part.n_global_nodes) == (
            rank, size, mesh.n_cells, mesh.n_points)
        assert np.array_equal(part.cells, np.flatnonzero(ranks == rank))
        assert part.cell_start == int(np.sum(ranks < rank))
        assert part.cell_counts.tolist() == [int(np.sum(ranks == r)) for r in range(size)]
        # the local mesh is the global one renumbered
        assert np.array_equal(part.nodes, np.unique(mesh.cells[part.cells]))
        assert np.array_equal(part.nodes[part.mesh.cells], mesh.cells[part.cells])
        assert np.array_equal(part.mesh.points, mesh.points[part.nodes])
        assert np.array_equal(part.owned, owner[part.nodes] == rank)
        # owned nodes: the next contiguous range, in increasing global id
        owned = part.node_order[part.owned]
        assert part.owned_node_range == (start, start + len(owned))
        assert np.array_equal(owned, np.arange(start, start + len(owned)))
        start += len(owned)
        order[part.nodes[part.owned]] = owned
        assert np.allclose(part.center, mesh.points.mean(axis=0))
    assert np.array_equal(np.sort(order), np.arange(mesh.n_points))  # a permutation
    for part in parts:  # every rank numbers a shared node as its owner does
        assert np.array_equal(part.node_order, order[part.nodes])


@pytest.mark.parametrize("split", [_split_2d, _split_3d], ids=["rectangle-3", "tet-box-2"])
def test_named_sets_are_restricted_to_each_part_and_facets_split_once(split):
    mesh, ranks = split()
    mesh = _with_sets(mesh)
    size = int(ranks.max()) + 1
    parts = [partition_mesh(mesh, ranks, rank) for rank in range(size)]
    for name, facet_set in mesh.facet_sets.items():
        gathered = []
        for part in parts:
            local = part.mesh.facet_sets[name]
            assert local.cells is not None
            facets, cells = part.nodes[local.facets], part.cells[local.cells]
            gathered += _rows(facets)
            for facet, cell in zip(facets, cells, strict=True):  # a face of its cell
                assert set(facet) <= set(mesh.cells[cell])
            if facet_set.cells is not None:  # the facets of the part's cells
                mine = ranks[facet_set.cells] == part.rank
                assert _rows(facets) == _rows(facet_set.facets[mine])
                assert sorted(cells) == sorted(facet_set.cells[mine])
            else:  # an interior facet goes to the lower rank of its two cells
                for facet, cell in zip(facets, cells, strict=True):
                    having = [c for c in range(mesh.n_cells) if set(facet) <= set(mesh.cells[c])]
                    assert ranks[cell] == min(ranks[having])
        assert sorted(gathered) == _rows(facet_set.facets)  # every facet exactly once
    for part in parts:
        for name, ids in mesh.node_sets.items():
            assert np.array_equal(part.nodes[part.mesh.node_sets[name]],
                                  np.intersect1d(ids, part.nodes))
        for name, ids in mesh.cell_sets.items():
            assert np.array_equal(part.cells[part.mesh.cell_sets[name]],
                                  np.intersect1d(ids, part.cells))


def test_local_ids_of_global_ones():
    mesh, ranks = _split_2d()
    part = partition_mesh(mesh, ranks, 1)
    assert np.array_equal(part.local_cells([part.cells[2], 0, part.cells[0], 10**6]), [0, 2])
    assert np.array_equal(part.local_nodes(part.nodes[[3, 1, 3]]), [1, 3])
    assert part.local_nodes([]).size == 0


def test_a_rank_without_cells_is_refused():
    mesh = rectangle(2, 2)
    with pytest.raises(MeshError, match=r"rank 1 of 3 gets no cell.*run with fewer ranks"):
        partition_mesh(mesh, np.array([0, 2, 0, 2]), 0)
    with pytest.raises(MeshError, match=r"rank 2 of 3 gets no cell.*run with fewer ranks"):
        partition_mesh(mesh, np.array([0, 1, 0, 1]), 0, size=3)
    with pytest.raises(MeshError, match=r"shape \(4,\)"):
        partition_mesh(mesh, np.array([0, 1, 0]), 0)
    with pytest.raises(MeshError, match="rank 2 is outside 0..1"):
        partition_mesh(mesh, np.array([0, 1, 0, 1]), 2)


def test_lattice_blocks_of_a_rectangle():
    mesh = rectangle(4, 3)  # cells numbered x fastest
    ranks = lattice_cell_ranks(mesh, lattice_of(mesh), [np.array([2, 2]), np.array([1, 2])])
    assert ranks.tolist() == [0, 0, 1, 1,
                              2, 2, 3, 3,
                              2, 2, 3, 3]


def test_lattice_blocks_of_a_box_renumbered():
    mesh = box(4, 2, 2)
    ranges = [np.array([1, 3]), np.array([1, 1]), np.array([2])]
    expected = [0, 1, 1, 1,  2, 3, 3, 3,   # z layer 0: y row 0, y row 1
                0, 1, 1, 1,  2, 3, 3, 3]   # z layer 1
    assert lattice_cell_ranks(mesh, lattice_of(mesh), ranges).tolist() == expected
    # the same cells with other node and cell numbers, each cell's corners listed from
    # another one (turned a quarter about z): each cell keeps its block
    rng = np.random.default_rng(3)
    nodes, cells = rng.permutation(mesh.n_points), rng.permutation(mesh.n_cells)
    new_id = np.argsort(nodes)
    turned = mesh.cells[cells][:, [1, 2, 3, 0, 5, 6, 7, 4]]
    shuffled = Mesh(mesh.points[nodes], new_id[turned], "hex8")
    ranks = lattice_cell_ranks(shuffled, lattice_of(shuffled), ranges)
    assert ranks.tolist() == np.array(expected)[cells].tolist()


def test_lattice_ranges_that_do_not_fit_are_refused():
    mesh = rectangle(4, 3)
    with pytest.raises(MeshError, match=r"ranges\[1\] = \[1, 1\] .* 3 cells along axis 1"):
        lattice_cell_ranks(mesh, lattice_of(mesh), [[2, 2], [1, 1]])
    triangles = rectangle(4, 3, cell_type="tri3")
    with pytest.raises(MeshError, match="needs quad4 or hex8 cells, got tri3"):
        lattice_cell_ranks(triangles, lattice_of(triangles), [[4], [3]])


def test_a_point_of_no_cell_is_numbered_last_and_held_by_no_part():
    mesh = rectangle(2, 1)
    lonely = Mesh(np.vstack([mesh.points[:1] - 5.0, mesh.points]), mesh.cells + 1, "quad4")
    parts = [partition_mesh(lonely, [0, 1], rank) for rank in range(2)]
    assert [part.owned_node_range for part in parts] == [(0, 4), (4, 6)]
    assert all(0 not in part.nodes for part in parts)
    assert sorted(np.concatenate([p.node_order[p.owned] for p in parts])) == list(range(6))

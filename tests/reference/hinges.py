"""One-node hinges of a thresholded design on a structured grid of cells (numpy only).

Compliant mechanisms designed with a density interpolation tend to "cheat" with hinges:
two solid cells that touch at a single node (or, in 3D, along an edge or at a node) and
nowhere else nearby, a joint that a printed or cut part does not have (Sigmund 1997;
Wang, Lazarov & Sigmund, Struct. Multidisc. Optim. 43 (2011) 767-784, Fig. 13). This module
counts them, independently of fesens, on a design thresholded at 0.5.

Definition
----------
The cells form a grid ``(nx, ny)`` or ``(nx, ny, nz)``; a cell is solid where its density
is ``> 0.5`` (void otherwise; cells outside the grid are void). Every node of the grid (the
boundary's too) has a block of ``2^d`` cells around it, ``2 x 2`` in 2D, ``2 x 2 x 2`` in
3D. Two cells of a block are *face neighbours* when their block indices differ in exactly
one axis (they share an edge in 2D, a face in 3D). The node is a **hinge node** when the
solid cells of its block fall into two or more groups that are not connected through face
neighbours inside the block. Any two cells of a block share at least the node, so then two
solid cells meet at the node (in 3D possibly along an edge through it) with no solid path
around it through face neighbours in the block:

* 2D: exactly the diagonal pairs ``[[1, 0], [0, 1]]`` and ``[[0, 1], [1, 0]]`` (three or
  four solid cells are always connected, two adjacent ones too);
* 3D: e.g. two cells sharing only the node (opposite corners of the block), or two cells
  sharing only an edge through it with both cells that would bridge them void (also when
  the edge continues into the next block: its other end node is counted on its own).

The count is the number of hinge nodes.
"""

from __future__ import annotations

import itertools

import numpy as np


def _components(pattern: int, offsets: list[tuple[int, ...]]) -> int:
    """Number of face-connected groups of the solid cells of one block (bit k of
    ``pattern`` set: cell ``offsets[k]`` solid)."""
    solid = [k for k in range(len(offsets)) if pattern >> k & 1]
    parent = {k: k for k in solid}

    def root(k):
        while parent[k] != k:
            k = parent[k]
        return k

    for a, b in itertools.combinations(solid, 2):
        if sum(p != q for p, q in zip(offsets[a], offsets[b], strict=True)) == 1:
            parent[root(a)] = root(b)
    return len({root(k) for k in solid})


def hinge_nodes(solid: np.ndarray) -> np.ndarray:
    """Boolean array over the grid's nodes ``(nx + 1, ny + 1[, nz + 1])``: which are hinge
    nodes (module docstring) of the boolean cell grid ``solid`` ``(nx, ny[, nz])``."""
    solid = np.asarray(solid, dtype=bool)
    dim = solid.ndim
    if dim not in (2, 3):
        raise ValueError(f"a 2D or 3D grid of cells, got {dim} axes")
    padded = np.pad(solid, 1)  # cells outside the grid are void
    offsets = list(itertools.product((0, 1), repeat=dim))
    code = np.zeros(tuple(n + 1 for n in solid.shape), dtype=np.int64)
    for k, offset in enumerate(offsets):  # block cell at node + offset - 1
        window = tuple(slice(o, o + n + 1) for o, n in zip(offset, solid.shape, strict=True))
        code |= padded[window].astype(np.int64) << k
    table = np.array([_components(p, offsets) >= 2 for p in range(2 ** len(offsets))])
    return table[code]


def count_hinges(density: np.ndarray, threshold: float = 0.5) -> int:
    """The number of hinge nodes of ``density`` (a grid ``(nx, ny[, nz])``) thresholded at
    ``threshold`` (solid above it)."""
    return int(hinge_nodes(np.asarray(density) > threshold).sum())


def grid_of_cells(centroids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` ``(n_cells,)`` of cells with ``centroids`` ``(n_cells, d)`` on a
    structured grid, arranged as the grid ``(nx, ny[, nz])`` (axis 0: x)."""
    centroids = np.asarray(centroids, dtype=float)
    keys = [np.unique(np.round(c, 9), return_inverse=True) for c in centroids.T]
    shape = tuple(len(k[0]) for k in keys)
    if np.prod(shape) != len(values):
        raise ValueError(f"the centroids do not form a full grid: {shape} for "
                         f"{len(values)} cells")
    grid = np.full(shape, np.nan)
    grid[tuple(k[1] for k in keys)] = values
    return grid

"""Ground structures: a grid of nodes and every candidate bar between them.

The classic starting point of truss topology optimization (Dorn, Gomory & Greenberg,
"Automatic design of optimal structures", 1964): nodes on a regular grid, a ``line2`` cell
(bar) between every pair of nodes within a distance, and the optimizer sizes the bars
(most of them vanish). Two bars that overlap on a line are never both candidates: a bar
joins two grid nodes only if no third grid node lies on it, i.e. its integer grid offset
``(i, j[, k])`` has ``gcd(|i|, |j|, |k|) = 1``; longer collinear connections are made of
these shorter bars.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import gcd

import numpy as np

from fesens.errors import MeshError
from fesens.mesh.mesh import Mesh

#: Side names of the grid: ``(lower, upper)`` per axis.
_SIDES = (("left", "right"), ("bottom", "top"), ("back", "front"))


def _offsets(dim: int, reach: float) -> np.ndarray:
    """Integer grid offsets of the candidate bars, one of each ``±`` pair, ``(n, dim)``.

    Offsets with ``|offset| ≤ reach`` whose components are coprime (no grid node between
    the ends), and lexicographically positive (so each bar is listed once).
    """
    r = int(np.floor(reach))
    axes = [np.arange(-r, r + 1)] * dim
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, dim)
    keep = []
    for offset in grid:
        first = offset[np.flatnonzero(offset)[:1]]
        if first.size == 0 or first[0] < 0 or np.linalg.norm(offset) > reach + 1e-9:
            continue
        divisor = 0
        for component in offset:
            divisor = gcd(divisor, abs(int(component)))
        if divisor == 1:
            keep.append(offset)
    return np.array(keep, dtype=np.int64)


def ground_structure(
    divisions: Sequence[int],
    size: Sequence[float],
    *,
    reach: float | None = None,
    origin: Sequence[float] | None = None,
) -> Mesh:
    """A ground structure: nodes on a grid and candidate bars between them.

    Parameters
    ----------
    divisions : sequence of int
        Grid cells per axis, ``(nx, ny)`` (2D) or ``(nx, ny, nz)`` (3D); the grid has
        ``(nx + 1)(ny + 1)[(nz + 1)]`` nodes.
    size : sequence of float
        Side lengths ``(lx, ly[, lz])``.
    reach : float, optional
        Longest candidate bar, in grid steps (an offset ``(i, j)`` is a candidate when
        ``sqrt(i² + j²) ≤ reach``); default: every pair of nodes (the full ground
        structure). Must be at least ``sqrt(2)`` in 2D (``sqrt(3)`` in 3D) so that the
        diagonals make the grid stable.
    origin : sequence of float, optional
        Lower corner (default: the origin).

    Returns
    -------
    Mesh
        ``line2`` cells (bars) in 2D or 3D space; node sets ``left``, ``right`` (x min/max),
        ``bottom``, ``top`` (y min/max) and in 3D ``back``, ``front`` (z min/max).

    Raises
    ------
    MeshError
        Divisions that are not positive integers, sizes that are not positive, a reach
        that leaves the grid a mechanism.
    """
    divisions = tuple(divisions)
    dim = len(divisions)
    if dim not in (2, 3) or len(size) != dim:
        raise MeshError(f"ground_structure needs 2 or 3 divisions and as many sizes, got "
                        f"divisions {divisions} and size {tuple(size)}")
    if any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1
           for n in divisions):
        raise MeshError(f"divisions must be positive integers, got {divisions}")
    lengths = np.asarray(size, dtype=float)
    if not np.all(np.isfinite(lengths) & (lengths > 0)):
        raise MeshError(f"size must be positive finite numbers, got {tuple(size)}")
    shape = np.array(divisions) + 1
    reach = float(np.linalg.norm(shape - 1)) if reach is None else float(reach)
    if not reach >= np.sqrt(dim) - 1e-9:
        raise MeshError(f"reach={reach:g} grid steps leaves the grid without diagonals (a "
                        f"mechanism); give reach >= {np.sqrt(dim):.4g}")
    index = np.indices(tuple(shape[::-1])).reshape(dim, -1)[::-1].T  # x fastest
    strides = np.concatenate([[1], np.cumprod(shape[:-1])])
    bars = []
    for offset in _offsets(dim, reach):
        start = index[np.all((index + offset >= 0) & (index + offset < shape), axis=1)]
        bars.append(np.stack([start @ strides, (start + offset) @ strides], axis=1))
    points = np.zeros(dim) if origin is None else np.asarray(origin, dtype=float)
    points = points + index / np.maximum(shape - 1, 1) * lengths
    mesh = Mesh(points, np.concatenate(bars), "line2")
    for axis in range(dim):
        lower, upper = _SIDES[axis]
        mesh.node_sets[lower] = np.flatnonzero(index[:, axis] == 0)
        mesh.node_sets[upper] = np.flatnonzero(index[:, axis] == shape[axis] - 1)
    return mesh

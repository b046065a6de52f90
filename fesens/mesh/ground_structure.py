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

import numpy as np

from fesens.errors import MeshError, TooLargeError
from fesens.mesh.mesh import Mesh

#: Side names of the grid: ``(lower, upper)`` per axis.
_SIDES = (("left", "right"), ("bottom", "top"), ("back", "front"))


def _offsets(reach: float, shape: np.ndarray) -> np.ndarray:
    """Integer grid offsets of the candidate bars, one of each ``±`` pair, ``(n, dim)``.

    Offsets with ``|offset| ≤ reach`` whose components are coprime (no grid node between
    the ends), and lexicographically positive (so each bar is listed once); none longer
    per axis than the grid of ``shape`` nodes (they would join no nodes). Built one value of
    the first component at a time, so the candidates need no more than one slab in memory.
    """
    r = [int(min(np.floor(reach), n - 1)) for n in shape]
    rest = np.stack(np.meshgrid(*[np.arange(-m, m + 1) for m in r[1:]], indexing="ij"),
                    axis=-1).reshape(-1, len(shape) - 1)
    rest_squared = (rest.astype(float) ** 2).sum(axis=1)
    # lexicographically positive: a positive first component, or a zero one and a
    # positive first non-zero component among the others
    nonzero = rest != 0
    rest_first = np.take_along_axis(rest, nonzero.argmax(axis=1)[:, None], axis=1)[:, 0]
    kept = []
    for first in range(0, r[0] + 1):
        keep = np.sqrt(first**2 + rest_squared) <= reach + 1e-9
        keep &= np.gcd.reduce(np.abs(rest), axis=1, initial=first) == 1
        if first == 0:
            keep &= rest_first > 0
        kept.append(np.column_stack([np.full(int(keep.sum()), first), rest[keep]]))
    return np.concatenate(kept).astype(np.int64)


def _full_reach(divisions: Sequence[int], reach: float | None) -> float:
    """``reach``, or the grid's diagonal (every pair of nodes) when None."""
    return float(np.linalg.norm(divisions)) if reach is None else float(reach)


def candidate_bars(divisions: Sequence[int], reach: float | None = None) -> int:
    """The number of bars of :func:`ground_structure` ``(divisions, ..., reach=reach)``,
    counted without building them (``Σ`` over the bar offsets ``o`` of the nodes
    ``∏ (n_a + 1 − |o_a|)`` that have a partner at that offset)."""
    shape = np.asarray(divisions, dtype=np.int64) + 1
    offsets = _offsets(_full_reach(divisions, reach), shape)
    return int(np.prod(np.maximum(shape - np.abs(offsets), 0), axis=1).sum())


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
    TooLargeError
        When the bars do not fit in memory (the message gives their number,
        :func:`candidate_bars`).
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
    reach = _full_reach(divisions, reach)
    if not reach >= np.sqrt(dim) - 1e-9:
        raise MeshError(f"reach={reach:g} grid steps leaves the grid without diagonals (a "
                        f"mechanism); give reach >= {np.sqrt(dim):.4g}")
    index = np.indices(tuple(shape[::-1])).reshape(dim, -1)[::-1].T  # x fastest
    strides = np.concatenate([[1], np.cumprod(shape[:-1])])
    try:
        bars = []
        for offset in _offsets(reach, shape):
            start = index[np.all((index + offset >= 0) & (index + offset < shape), axis=1)]
            bars.append(np.stack([start @ strides, (start + offset) @ strides], axis=1))
        points = np.zeros(dim) if origin is None else np.asarray(origin, dtype=float)
        points = points + index / np.maximum(shape - 1, 1) * lengths
        mesh = Mesh(points, np.concatenate(bars), "line2")
    except MemoryError:
        raise TooLargeError(
            f"a ground structure of {divisions} cells with reach {reach:g} has "
            f"{candidate_bars(divisions, reach):,} candidate bars, more than the memory "
            "holds; give a reach of a few grid steps or fewer cells") from None
    for axis in range(dim):
        lower, upper = _SIDES[axis]
        mesh.node_sets[lower] = np.flatnonzero(index[:, axis] == 0)
        mesh.node_sets[upper] = np.flatnonzero(index[:, axis] == shape[axis] - 1)
    return mesh

"""An independent count of the cells of a design that violate an overhang rule (numpy only).

The rule is the one of Langelaar's additive-manufacturing filter (M. Langelaar, Struct.
Multidisc. Optim. 55 (2017) 871–883 in 2D; Additive Manufacturing 12 (2016) 60–70 in 3D):
a design printed layer by layer from a build plate needs every solid cell above the first
layer to rest on a solid cell of its *supporting region* in the layer right below. For a
critical angle ``α`` measured from the build plate (45° in the papers), the region holds the
cells of the layer below whose centroids lie within the lateral distance ``h_build / tan α``
of the cell's centroid (the three cells under it in 2D, the five of a cross in 3D at 45° on
cubic cells; the cell right below only at 90°): a cone of half-angle ``90° − α`` about the
build direction. ``α`` is taken as printed to two decimals, so the distance is compared with
a relative slack of ``RADIUS_SLACK`` (the radius of 26.57° is 2 cells up to 4·10⁻⁵).

Written from the papers' rule without fesens: the grid is built from the cell centroids, and
the region of each solid cell is found by measuring its distance to every cell of the layer
below, one cell at a time.
"""

from __future__ import annotations

import math

import numpy as np

AXES = "xyz"
#: Relative slack on the region's radius (a critical angle printed to two decimals).
RADIUS_SLACK = 1e-3


def grid_from_centroids(centroids: np.ndarray, values: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The cell values ``(n_cells,)`` as an array indexed ``[i_x, i_y(, i_z)]`` and the cell
    size per axis ``(dim,)``, from the cell centroids ``(n_cells, dim)`` of a full, evenly
    spaced lattice of cells."""
    centroids = np.asarray(centroids, dtype=float)
    index, spacing, shape = [], [], []
    for axis in range(centroids.shape[1]):
        coordinates = np.unique(np.round(centroids[:, axis], 9))
        h = float(np.min(np.diff(coordinates))) if len(coordinates) > 1 else math.inf
        position = np.rint((centroids[:, axis] - coordinates[0]) / h) if len(coordinates) > 1 \
            else np.zeros(len(centroids))
        index.append(position.astype(int))
        spacing.append(h)
        shape.append(len(coordinates))
    grid = np.zeros(shape, dtype=np.asarray(values).dtype)
    grid[tuple(index)] = values
    return grid, np.array(spacing)


def _axis_and_sign(direction) -> tuple[int, int]:
    """``(axis, sign)`` of ``'+z'``-style names and unit vectors along an axis."""
    if isinstance(direction, str):
        return AXES.index(direction[1]), 1 if direction[0] == "+" else -1
    vector = np.asarray(direction, dtype=float)
    axis = int(np.argmax(np.abs(vector)))
    return axis, int(np.sign(vector[axis]))


def unsupported_cells(solid: np.ndarray, direction, angle: float = 45.0,
                      spacing=None) -> np.ndarray:
    """The solid cells that break the overhang rule, as a bool array of ``solid``'s shape.

    Parameters
    ----------
    solid : numpy.ndarray of bool
        The thresholded design on the lattice, indexed ``[i_x, i_y(, i_z)]``.
    direction : str or sequence of float
        The build direction, ``'+y'``, ``'-x'``, ... or a unit vector along an axis: the
        build plate lies under the first layer, at the lowest coordinate along it.
    angle : float
        The critical angle in degrees from the build plate.
    spacing : sequence of float, optional
        The cell size per axis (default 1).
    """
    solid = np.asarray(solid, dtype=bool)
    dim = solid.ndim
    spacing = np.ones(dim) if spacing is None else np.asarray(spacing, dtype=float)
    axis, sign = _axis_and_sign(direction)
    lateral = [a for a in range(dim) if a != axis]
    radius = 0.0 if angle >= 90.0 else spacing[axis] / math.tan(math.radians(angle))
    # Every cell's lateral centroid coordinates, for the distances within a layer.
    centres = np.stack(np.meshgrid(*[np.arange(n) * (spacing[a] if np.isfinite(spacing[a])
                                                      else 0.0)
                                     for a, n in enumerate(solid.shape)], indexing="ij"),
                       axis=-1)
    violating = np.zeros_like(solid)
    base = 0 if sign > 0 else solid.shape[axis] - 1
    for cell in zip(*np.nonzero(solid), strict=True):
        if cell[axis] == base:
            continue
        below = list(cell)
        below[axis] -= sign
        layer = [slice(None)] * dim
        layer[axis] = below[axis]
        layer = tuple(layer)
        offset = centres[layer] - centres[tuple(cell)]
        distance = np.sqrt(np.sum(offset[..., lateral] ** 2, axis=-1))
        region = distance <= radius * (1.0 + RADIUS_SLACK) + 1e-12
        if not np.any(solid[layer] & region):
            violating[tuple(cell)] = True
    return violating


def count_unsupported(solid: np.ndarray, direction, angle: float = 45.0,
                      spacing=None) -> int:
    """The number of :func:`unsupported_cells`."""
    return int(np.count_nonzero(unsupported_cells(solid, direction, angle, spacing)))


def non_discreteness(rho: np.ndarray) -> float:
    """Sigmund's measure of non-discreteness ``M_nd = 4 Σ ρ(1 − ρ) / n · 100 %`` of the cell
    densities ``rho`` ``(n_cells,)``: 0 for a 0/1 design, 100 % for all cells at 0.5."""
    rho = np.asarray(rho, dtype=float)
    return float(400.0 * np.sum(rho * (1.0 - rho)) / rho.size)

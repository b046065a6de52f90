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

Along an oblique unit build direction ``n`` (:func:`unsupported_cells_oblique`) the rule is
Gaynor & Guest's support cone (A. T. Gaynor, J. K. Guest, Struct. Multidisc. Optim. 54 (2016)
1157–1172) on the cells that touch a cell: the build plate is the plane normal to ``n``
through the domain's lowest point, the cells touching it (the lowest centroids ``n · c``)
need no support, and every other solid cell needs a solid cell ``s`` that touches it (a
face, an edge or a corner in common) with ``c_e − c_s`` within ``90° − α`` of ``n``. Along
an axis at 45° and 90° this is Langelaar's region again. Written as a brute-force loop: every
solid cell against every cell of the grid, angles by ``arccos``.
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


#: Slack (degrees) on the cone's half-angle (a critical angle printed to two decimals).
ANGLE_SLACK = 0.01


def unsupported_cells_oblique(solid: np.ndarray, normal, angle: float,
                              spacing=None) -> np.ndarray:
    """The solid cells that break the cone rule along the unit vector ``normal`` (module
    docstring), as a bool array of ``solid``'s shape ``[i_x, i_y(, i_z)]``; ``angle`` in
    degrees from the build plate, ``spacing`` the cell size per axis (default 1)."""
    solid = np.asarray(solid, dtype=bool)
    normal = np.asarray(normal, dtype=float)
    spacing = np.ones(solid.ndim) if spacing is None else np.asarray(spacing, dtype=float)
    spacing = np.where(np.isfinite(spacing), spacing, 1.0)
    index = np.array(list(np.ndindex(*solid.shape)))            # (n_cells, dim)
    centres = index * spacing
    heights = centres @ normal
    solid_flat = solid[tuple(index.T)]
    violating = np.zeros_like(solid)
    for cell, centre, height, is_solid in zip(index, centres, heights, solid_flat,
                                              strict=True):
        if not is_solid or height <= heights.min() + 1e-9:
            continue
        # Every cell of the grid against this one: touching, solid, inside the cone.
        d = centre - centres
        length = np.linalg.norm(d, axis=1)
        touching = np.all(np.abs(d) <= spacing * 1.000001, axis=1) & (length > 0)
        cosine = np.divide(d @ normal, length, out=np.zeros(len(d)), where=length > 0)
        cone = np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))
        supported = np.any(touching & solid_flat & (cone <= 90.0 - angle + ANGLE_SLACK))
        violating[tuple(cell)] = not supported
    return violating


def unsupported_by_rule(solid: np.ndarray, direction, angle: float = 45.0,
                        spacing=None) -> np.ndarray:
    """:func:`unsupported_cells` for a direction along an axis, else
    :func:`unsupported_cells_oblique`."""
    if not isinstance(direction, str) and np.count_nonzero(np.asarray(direction)) > 1:
        return unsupported_cells_oblique(solid, direction, angle, spacing)
    return unsupported_cells(solid, direction, angle, spacing)


def count_unsupported(solid: np.ndarray, direction, angle: float = 45.0,
                      spacing=None) -> int:
    """The number of :func:`unsupported_by_rule` cells."""
    return int(np.count_nonzero(unsupported_by_rule(solid, direction, angle, spacing)))


def non_discreteness(rho: np.ndarray) -> float:
    """Sigmund's measure of non-discreteness ``M_nd = 4 Σ ρ(1 − ρ) / n · 100 %`` of the cell
    densities ``rho`` ``(n_cells,)``: 0 for a 0/1 design, 100 % for all cells at 0.5."""
    rho = np.asarray(rho, dtype=float)
    return float(400.0 * np.sum(rho * (1.0 - rho)) / rho.size)

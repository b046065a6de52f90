"""Minimum length scales: measured on a thresholded 2D design, and the one the robust
formulation's filter radius and thresholds prescribe.

**Measured** (:func:`minimum_sizes`): the smallest solid (void) feature size of a design on a
lattice of square cells is the largest diameter ``D`` such that the solid (void) cells are a
union of disks of diameter ``D`` lying in them, i.e. the morphological opening by that disk
leaves them unchanged (the disk "fits everywhere"; Serra's granulometry). The disk of
diameter ``D`` cells is the set of cells whose centres lie in a closed circle of diameter
``D`` centred on a cell centre (``D`` odd) or on a cell corner (``D`` even), so that it is
exactly ``D`` cells wide along both axes: a straight bar ``w`` cells wide measures ``w``.
The opening is computed from distances (:class:`scipy.spatial.cKDTree`): the disk fits
where the nearest cell of the other phase is farther than ``D/2`` from its centre. The
design is mirrored across the edges of its domain before the opening, so a member that
meets the domain's edge (a symmetry line, a support) is not cut short there. A boundary
that is not parallel to an axis is a staircase of cells with single-cell steps that no disk
wider than a cell reaches; :func:`minimum_sizes` forgives one cell of such roughness.

**Prescribed** (:func:`prescribed_sizes`): the analysis of Qian & Sigmund (2013) for the
density filter and the Heaviside projection as ``β → ∞``: the thinnest solid member of the
design variables that still exists in the eroded design has a filtered peak ``ρ̃ = η_e``; the
width of that member's intermediate design (where ``ρ̃ ≥ η_i``) is the smallest solid size
the blueprint can have. The void size is the same with ``1 − ρ̃`` and ``η_d``. The filtered
profile across a straight member of the plane is that of the 2D cone kernel
``max(0, r − |x|)`` (this package's density filter) integrated along the member,

    k(s) = r √(r² − s²) − s² ln((r + √(r² − s²)) / |s|),   |s| < r,

and the widths follow by root finding (:func:`scipy.optimize.brentq`).

References
----------
X. Qian, O. Sigmund, "Topological design of electromechanical actuators with robustness toward
over- and under-etching", Computer Methods in Applied Mechanics and Engineering 253 (2013)
237–251.

F. Wang, B. S. Lazarov, O. Sigmund, "On projection methods, convergence and robust
formulations in topology optimization", Structural and Multidisciplinary Optimization 43
(2011) 767–784.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import integrate, ndimage, optimize, spatial

from fesens.mesh.mesh import Mesh
from fesens.opt.cell_lattice import cell_lattice


@dataclass(frozen=True)
class FeatureSizes:
    """Smallest feature sizes in mesh units (``inf``: the phase is absent or fills the
    domain, so nothing limits it; 0: a feature narrower than one cell)."""

    solid: float
    void: float


def disk(diameter: int) -> np.ndarray:
    """The disk of ``diameter`` cells: ``(D, D)`` booleans, cells whose centres lie in the
    closed circle of diameter ``D`` about the array's centre."""
    if diameter < 1:
        raise ValueError(f"a disk needs a diameter ≥ 1 cell, got {diameter!r}")
    offsets = np.arange(diameter) - (diameter - 1) / 2.0
    return offsets[:, None] ** 2 + offsets[None, :] ** 2 <= (diameter / 2.0) ** 2


def minimum_size(phase: np.ndarray, roughness: int = 0) -> float:
    """The largest diameter (cells) of a disk that fits everywhere in ``phase``: every cell
    of ``phase`` lies in a disk of that diameter that lies in ``phase``.

    Parameters
    ----------
    phase : numpy.ndarray
        ``(nx, ny)`` booleans: the cells of one phase (solid or void).
    roughness : int
        Cells of the phase that lie within this many cells (8-neighbours) of a fitting disk
        count as covered (0: exact). A boundary that is not parallel to an axis is a
        staircase of cells whose single-cell steps no disk of more than a cell reaches;
        ``roughness = 1`` forgives them, while a member narrower than the disk still fails
        (no disk fits in it at all).

    Returns
    -------
    float
        A whole number of cells, at least 1 (a disk of one cell is the cell); ``inf`` when
        ``phase`` is empty or fills the domain.
    """
    phase = np.asarray(phase, dtype=bool)
    if phase.ndim != 2:
        raise ValueError(f"a 2D design is needed, got {phase.ndim} dimensions")
    if not phase.any() or phase.all():
        return np.inf
    pad = max(phase.shape)
    padded = np.pad(phase, pad, mode="symmetric")
    # The opening by disk(D), one query each way: a disk centred at c fits when the nearest
    # cell of the other phase is farther than D/2 from c (a cell centre for odd D, a cell
    # corner for even D); a cell is covered when such a centre lies within D/2 of it.
    other = spatial.cKDTree(np.argwhere(~padded))
    centres = {1: np.argwhere(np.ones(padded.shape, dtype=bool)).astype(float),
               0: np.argwhere(np.ones(np.subtract(padded.shape, 1), dtype=bool)) + 0.5}
    clearance = {parity: other.query(points)[0] for parity, points in centres.items()}
    cells = np.argwhere(phase) + pad
    for size in range(int(np.ceil(2.0 * max(c.max() for c in clearance.values()))), 1, -1):
        radius = size / 2.0
        fitting = centres[size % 2][clearance[size % 2] > radius]
        if fitting.size == 0:
            continue
        covered = np.zeros(padded.shape, dtype=bool)
        reach = spatial.cKDTree(fitting).query(cells, distance_upper_bound=radius + 1e-9)[0]
        covered[tuple(cells[np.isfinite(reach)].T)] = True
        if roughness:
            covered = ndimage.binary_dilation(covered, np.ones((3, 3), dtype=bool),
                                              iterations=roughness)
        if covered[tuple(cells.T)].all():
            return float(size)
    return 1.0


def minimum_sizes(mesh: Mesh, density: np.ndarray, threshold: float = 0.5,
                  roughness: int = 1) -> FeatureSizes:
    """The smallest solid and void feature sizes of a 2D design on a structured grid.

    Parameters
    ----------
    mesh : Mesh
        quad4 cells of a full tensor lattice with square cells (:func:`~fesens.mesh.rectangle`).
    density : numpy.ndarray
        ``(n_cells,)`` densities; solid where ``density > threshold``.
    threshold : float
    roughness : int
        As :func:`minimum_size` (default: one cell of staircase forgiven).

    Returns
    -------
    FeatureSizes
        In mesh units (cells times the cell size).
    """
    lattice = cell_lattice(mesh, "the length-scale measurement")
    spacing = np.asarray(lattice.spacing, dtype=float)
    if len(lattice.shape) != 2 or not np.isclose(spacing[0], spacing[1]):
        raise ValueError("the length-scale measurement needs a 2D lattice of square cells, "
                         f"got {lattice.shape} cells of size {spacing}")
    solid = lattice.to_grid(np.asarray(density, dtype=float)) > threshold
    return FeatureSizes(*(minimum_size(phase, roughness) * float(spacing[0])
                          for phase in (solid, ~solid)))


def member_kernel(s: np.ndarray, radius: float) -> np.ndarray:
    """The cone kernel ``max(0, r − |x|)`` of the plane integrated along a straight member,
    at distances ``s`` across it (the module docstring's ``k(s)``), ``s`` any shape."""
    s = np.abs(np.asarray(s, dtype=float))
    inside = s < radius
    h = np.sqrt(np.clip(radius**2 - s**2, 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        log = np.where(s > 0, np.log((radius + h) / np.where(s > 0, s, 1.0)), 0.0)
    return np.where(inside, radius * h - s**2 * log, 0.0)


def _member_profile(half_width: float, s: float, radius: float) -> float:
    """The filtered density at distance ``s`` from the axis of a solid member of design
    variables ``|t| < half_width`` (the kernel normalised to a unit integral, π r³/3)."""
    value, _ = integrate.quad(lambda t: float(member_kernel(s - t, radius)),
                              -half_width, half_width, points=[s - radius, s, s + radius],
                              limit=200)
    return value / (np.pi * radius**3 / 3.0)


def prescribed_size(radius: float, eta_outer: float, eta_blueprint: float = 0.5) -> float:
    """The smallest solid size of the blueprint that a filter radius and two thresholds
    prescribe (Qian & Sigmund 2013; the module docstring).

    Parameters
    ----------
    radius : float
        Filter radius ``r`` (mesh units).
    eta_outer : float
        ``η_e`` for the solid size, ``1 − η_d`` for the void size; above ``eta_blueprint``.
    eta_blueprint : float
        ``η_i`` for the solid size, ``1 − η_i`` for the void size.

    Returns
    -------
    float
        Width (mesh units) of the intermediate design of the thinnest member the eroded
        design keeps.
    """
    if not 0.0 < eta_blueprint < eta_outer < 1.0:
        raise ValueError(f"need 0 < eta_blueprint < eta_outer < 1, got {eta_blueprint!r}, "
                         f"{eta_outer!r}")
    half = optimize.brentq(lambda a: _member_profile(a, 0.0, radius) - eta_outer,
                           1e-9 * radius, 2.0 * radius, xtol=1e-12 * radius)
    edge = optimize.brentq(lambda s: _member_profile(half, s, radius) - eta_blueprint,
                           0.0, half + radius, xtol=1e-12 * radius)
    return 2.0 * edge


def prescribed_sizes(radius: float, thresholds: tuple[float, float, float]) -> FeatureSizes:
    """The blueprint's smallest solid and void sizes for filter radius ``radius`` and the
    thresholds ``(η_e, η_i, η_d)`` of a :class:`~fesens.opt.robust.RobustProjection`."""
    eta_e, eta_i, eta_d = thresholds
    return FeatureSizes(prescribed_size(radius, eta_e, eta_i),
                        prescribed_size(radius, 1.0 - eta_d, 1.0 - eta_i))

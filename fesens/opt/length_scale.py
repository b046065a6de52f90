"""Minimum length scales: measured on a thresholded 2D design, and the one the robust
formulation's filter radius and thresholds prescribe.

**Measured** (:func:`minimum_sizes`): the smallest solid (void) feature size of a design on a
lattice of square cells is the largest diameter ``D`` such that the solid (void) cells are a
union of disks of diameter ``D`` lying in them, i.e. the morphological opening by that disk
leaves them unchanged (the disk "fits everywhere"; Serra's granulometry). The disk of
diameter ``D`` cells is the set of cells whose centres lie in a closed circle of diameter
``D`` centred on a cell centre (``D`` odd) or on a cell corner (``D`` even), so that it is
exactly ``D`` cells wide along both axes: a straight bar ``w`` cells wide measures ``w``.
The openings are :func:`scipy.ndimage.binary_erosion` followed by
:func:`scipy.ndimage.binary_dilation` with that disk. The design is mirrored across the
edges of its domain before the opening, so a member that meets the domain's edge (a
symmetry line, a support) is not cut short there.

**Prescribed** (:func:`prescribed_sizes`): the analysis of Qian & Sigmund (2013, §3) for the
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
from scipy import integrate, ndimage, optimize

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


def _opening_keeps(phase: np.ndarray, diameter: int) -> bool:
    """Whether the opening of ``phase`` ``(nx, ny)`` by :func:`disk` ``(diameter)`` is
    ``phase`` itself (mirrored across the domain's edges by ``diameter`` cells)."""
    structure = disk(diameter)
    padded = np.pad(phase, diameter, mode="symmetric")
    # an even disk has no centre cell: ndimage puts its origin at index D // 2, the same for
    # the erosion and the dilation, which then reflects the disk, so that the dilation
    # places each disk back where the erosion found it
    opened = ndimage.binary_dilation(ndimage.binary_erosion(padded, structure), structure)
    inner = (slice(diameter, -diameter),) * phase.ndim
    return bool(np.array_equal(opened[inner], phase))


def minimum_size(phase: np.ndarray) -> float:
    """The largest diameter (cells) of a disk that fits everywhere in ``phase``.

    Parameters
    ----------
    phase : numpy.ndarray
        ``(nx, ny)`` booleans: the cells of one phase (solid or void).

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
    size = 1
    while size < max(phase.shape) and _opening_keeps(phase, size + 1):
        size += 1
    return float(size)


def minimum_sizes(mesh: Mesh, density: np.ndarray, threshold: float = 0.5) -> FeatureSizes:
    """The smallest solid and void feature sizes of a 2D design on a structured grid.

    Parameters
    ----------
    mesh : Mesh
        quad4 cells of a full tensor lattice with square cells (:func:`~fesens.mesh.rectangle`).
    density : numpy.ndarray
        ``(n_cells,)`` densities; solid where ``density > threshold``.
    threshold : float

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
    return FeatureSizes(*(minimum_size(phase) * float(spacing[0]) for phase in (solid, ~solid)))


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

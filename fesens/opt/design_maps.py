"""Design maps: a reduced design vector to the full per-cell field, by grouping cells.

Mirror symmetry and extrusion both tie cells together: every cell takes the value of one
design variable, its group's (``x_full = x[owner]``, a fixed linear map ``A`` with one 1 per
row). The map is :func:`~fesens.ad.linear_map.apply_linear` of a :class:`CellGroups`, its
VJP the sum of each group's cotangents (``Aᵀ g``, one ``bincount``). In a design chain the
map comes first, before the density filter: the filter then sees an exactly symmetric
(extruded) field, and a filter whose stencil respects the symmetry keeps it so.

* :class:`MirrorSymmetry`: design variables on one side of axis-aligned planes, mirrored to
  the other; cells are matched by reflecting their centroids (any mesh whose cells mirror
  each other, structured or not).
* :class:`Extrusion`: one variable per column of cells along an axis of a lattice of cells
  (:func:`~fesens.opt.cell_lattice.cell_lattice`): a constant cross-section, as extruded or
  cast parts need.

:meth:`CellGroups.combine` ties several together (a symmetric, extruded design).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from fesens.ad.linear_map import apply_linear
from fesens.errors import MeshError, PassiveRegionError
from fesens.mesh.mesh import Mesh
from fesens.opt.cell_lattice import AXES, axis_index, cell_lattice

#: Centroids closer than this fraction of the cell size count as mirror images.
MIRROR_RTOL = 1e-6

#: What a cell is to a design problem, by the code :func:`passive_kinds` gives it.
PASSIVE_KINDS = ("designed", "passive solid", "passive void")


def passive_kinds(solid: np.ndarray, void: np.ndarray) -> np.ndarray:
    """``(n_cells,)`` the index in :data:`PASSIVE_KINDS` of each cell, from the boolean
    masks ``solid`` and ``void`` ``(n_cells,)`` (disjoint)."""
    return np.asarray(solid, dtype=np.int8) + 2 * np.asarray(void, dtype=np.int8)


class CellGroups:
    """A partition of the cells into groups, each the cells of one design variable.

    Parameters
    ----------
    owner : numpy.ndarray
        ``(n_cells,)`` the group (design variable) of each cell, ``0 .. n_reduced − 1``,
        every group used.

    Attributes
    ----------
    n_reduced : int
        Number of design variables.
    representatives : numpy.ndarray
        ``(n_reduced,)`` one cell of each group (the lowest id).
    """

    def __init__(self, owner: np.ndarray):
        self.owner = np.asarray(owner, dtype=np.int64)
        self.n_cells = self.owner.size
        self.n_reduced = int(self.owner.max()) + 1 if self.n_cells else 0
        sizes = np.bincount(self.owner, minlength=self.n_reduced)
        if np.any(sizes == 0):
            raise ValueError("every design variable must own a cell")
        self.representatives = np.full(self.n_reduced, self.n_cells, dtype=np.int64)
        np.minimum.at(self.representatives, self.owner, np.arange(self.n_cells))

    def __call__(self, x):
        """The full field ``(n_cells,)`` of the reduced design ``x`` ``(n_reduced,)``
        (traced: a fixed linear map)."""
        return apply_linear(self, x)

    def apply(self, x: np.ndarray) -> np.ndarray:
        """``A x``: each cell's group's value, ``(n_cells,)``."""
        return np.asarray(x)[self.owner]

    def apply_transpose(self, g: np.ndarray) -> np.ndarray:
        """``Aᵀ g``: the sum of ``g`` ``(n_cells,)`` over each group, ``(n_reduced,)``."""
        return np.bincount(self.owner, weights=g, minlength=self.n_reduced)

    def reduce(self, values: np.ndarray) -> np.ndarray:
        """The reduced design ``(n_reduced,)`` of a full field ``(n_cells,)`` that is
        constant on each group (its representatives' values)."""
        return np.asarray(values)[self.representatives]

    def mixed_pair(self, kinds: np.ndarray) -> tuple[int, int] | None:
        """Two cells of one group whose ``kinds`` differ, or None when every group is
        uniform.

        Parameters
        ----------
        kinds : numpy.ndarray
            ``(n_cells,)`` a label per cell (e.g. designed, passive solid, passive void).

        Returns
        -------
        tuple of int or None
            ``(cell, other)``: the lowest cell whose kind differs from its group's
            representative's, and that representative.
        """
        kinds = np.asarray(kinds)
        group_kind = kinds[self.representatives][self.owner]
        differ = np.flatnonzero(kinds != group_kind)
        if differ.size == 0:
            return None
        cell = int(differ[0])
        return cell, int(self.representatives[self.owner[cell]])

    @classmethod
    def combine(cls, *groupings: CellGroups) -> CellGroups:
        """The groups that satisfy every one of ``groupings`` at once (e.g. a symmetric,
        extruded design): cells tied by any of them share one variable (the connected
        components of the ties).

        Raises
        ------
        ValueError
            If the groupings are of different numbers of cells, or none is given.
        """
        sizes = {g.n_cells for g in groupings}
        if len(sizes) != 1:
            raise ValueError(f"combine needs groupings of one mesh, got cell counts {sizes}"
                             if sizes else "combine needs at least one grouping")
        n_cells = sizes.pop()
        cells = np.arange(n_cells)
        ties = [(cells, g.representatives[g.owner]) for g in groupings]
        rows, cols = (np.concatenate(side) for side in zip(*ties, strict=True))
        graph = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n_cells, n_cells))
        _, owner = connected_components(graph, directed=False)
        return CellGroups(owner)


class MirrorSymmetry(CellGroups):
    """Mirror symmetry of the design about axis-aligned planes.

    Parameters
    ----------
    mesh : Mesh
    planes : mapping of axis to float or None, or sequence of axes
        The planes, by the axis normal to each (``'x'``, ``'y'``, ``'z'`` or 0, 1, 2) and its
        position on that axis (None: the middle of the mesh's bounding box); at most one
        plane per axis.
    tolerance : float, optional
        Largest distance between a reflected centroid and its image's centroid; default
        :data:`MIRROR_RTOL` times the cell size.

    Raises
    ------
    MeshError
        If a cell has no mirror image (naming it and where its image should be).
    ValueError
        For an unknown axis or two planes normal to one axis.
    """

    def __init__(self, mesh: Mesh, planes: Mapping | tuple | list | str,
                 tolerance: float | None = None):
        planes = _planes(mesh, planes)
        centroids = mesh.cell_centroids()
        tolerance = MIRROR_RTOL * _cell_size(mesh, centroids) if tolerance is None \
            else float(tolerance)
        tree = cKDTree(centroids)
        owner = np.arange(mesh.n_cells)
        # Planes normal to different axes commute: reflecting the owner into the lower side
        # of each plane in turn leaves the other coordinates, so the lower sides' cells are
        # the design variables.
        for axis, position in planes.items():
            image = _mirror_images(tree, centroids, axis, position, tolerance)
            upper = centroids[:, axis] > position + tolerance
            owner = np.where(upper[owner], image[owner], owner)
        self.planes = planes
        super().__init__(np.unique(owner, return_inverse=True)[1].ravel())


class Extrusion(CellGroups):
    """One design variable per column of cells along ``axis``: the design is constant
    along it (an extruded cross-section).

    Parameters
    ----------
    mesh : Mesh
        quad4 or hex8 cells on a lattice.
    axis : str or int
        ``'x'``, ``'y'``, ``'z'`` (or 0, 1, 2).

    Raises
    ------
    MeshError
        For a mesh that is not a lattice of cells.
    ValueError
        For an unknown axis.
    """

    def __init__(self, mesh: Mesh, axis: str | int):
        self.axis = axis_index(axis, mesh.dim)
        lattice = cell_lattice(mesh, "extrusion")
        section = [n for a, n in enumerate(lattice.shape) if a != self.axis]
        columns = np.expand_dims(np.arange(int(np.prod(section))).reshape(section), self.axis)
        super().__init__(lattice.from_grid(np.broadcast_to(columns, lattice.shape))
                         .astype(np.int64))


def _planes(mesh: Mesh, planes) -> dict[int, float]:
    """``{axis index: position}`` of the planes (positions defaulting to the middle of the
    bounding box)."""
    if isinstance(planes, str | int):
        planes = [planes]
    items = planes.items() if isinstance(planes, Mapping) else [(p, None) for p in planes]
    lower, upper = mesh.bounding_box()
    out: dict[int, float] = {}
    for axis, position in items:
        index = axis_index(axis, mesh.dim)
        if index in out:
            raise ValueError(f"two symmetry planes normal to the {AXES[index]} axis: give at "
                             "most one per axis")
        out[index] = 0.5 * (lower[index] + upper[index]) if position is None \
            else float(position)
    if not out:
        raise ValueError("no symmetry plane given: name at least one axis")
    return out


def _cell_size(mesh: Mesh, centroids: np.ndarray) -> float:
    """A typical cell size: the distance from a centroid to its nearest other centroid
    (the smallest over the cells)."""
    if mesh.n_cells < 2:
        return 1.0
    distances, _ = cKDTree(centroids).query(centroids, k=2)
    return float(distances[:, 1].min())


def _mirror_images(tree: cKDTree, centroids: np.ndarray, axis: int, position: float,
                   tolerance: float) -> np.ndarray:
    """The cell whose centroid is each cell's centroid reflected about the plane ``x_axis
    = position``, ``(n_cells,)``.

    Raises
    ------
    MeshError
        If some cell has none within ``tolerance``, or two cells share one image.
    """
    reflected = centroids.copy()
    reflected[:, axis] = 2.0 * position - reflected[:, axis]
    distance, image = tree.query(reflected)
    missing = np.flatnonzero(distance > tolerance)
    if missing.size:
        cell = int(missing[0])
        raise MeshError(
            f"{missing.size} cells have no mirror image about the plane {AXES[axis]} = "
            f"{position:g}: e.g. cell {cell} (centroid {np.round(centroids[cell], 6)}) has "
            f"no cell with its centroid at {np.round(reflected[cell], 6)} (nearest: "
            f"{distance[cell]:.3g} away, tolerance {tolerance:.3g}); use a mesh that is "
            "symmetric about the plane, or move the plane")
    if np.any(image[image] != np.arange(len(image))):
        raise MeshError(f"the cells are not mirror images of each other about the plane "
                        f"{AXES[axis]} = {position:g}: two cells share one image")
    return image


def refuse_mixed_ties(design_map: CellGroups, kinds: np.ndarray,
                      centroids: Callable[[], np.ndarray]) -> None:
    """Refuse a design map that ties a passive cell to a cell of another kind.

    The passive values are set after the design map, so such a tie would silently break
    (a one-sided passive region gives a symmetric problem an asymmetric design).

    Parameters
    ----------
    design_map : CellGroups
    kinds : numpy.ndarray
        ``(n_cells,)`` each cell's kind (:func:`passive_kinds`).
    centroids : callable
        ``() -> (n_cells, dim)`` the cell centroids, for the message (called on refusal).

    Raises
    ------
    PassiveRegionError
        Naming the two cells, their kinds and centroids, and the fix.
    """
    pair = design_map.mixed_pair(kinds)
    if pair is None:
        return
    points = centroids()
    cell, other = (f"cell {i} ({PASSIVE_KINDS[kinds[i]]}, centroid "
                   f"{np.round(points[i], 6).tolist()})" for i in pair)
    raise PassiveRegionError(
        f"the design map ties {cell} to {other}: passive_solid and passive_void must be "
        "mapped onto themselves by the design map (solid onto solid, void onto void); add "
        "the tied cells (mirror images, whole extruded columns) to the passive set, or "
        "give no design_map")

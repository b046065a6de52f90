"""The :class:`Mesh`: points, one volume cell type, and named node/facet/cell sets."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from fesens.errors import MeshError, UnknownGroupError
from fesens.mesh.cell_types import BAR_CELL_TYPES, VOLUME_CELL_TYPES, CellType, cell_type
from fesens.mesh.facet_set import FacetSet
from fesens.mesh.validation import (
    check_element_quality,
    checked_connectivity,
    checked_facet_set,
    checked_ids,
)

#: A coordinate predicate: takes points ``(n, dim)`` and returns a boolean mask ``(n,)``.
Predicate = Callable[[np.ndarray], np.ndarray]


def _names_hint(kind: str, names) -> str:
    available = ", ".join(sorted(names)) or "none"
    return f"available {kind} sets: {available}"


@dataclass
class Mesh:
    """An unstructured mesh of a single volume cell type.

    Parameters
    ----------
    points : array_like
        Node coordinates, shape ``(n_points, dim)`` with ``dim`` 2 or 3.
    cells : array_like
        Connectivity, shape ``(n_cells, n_nodes_per_cell)``, VTK node ordering.
    cell_type : str
        One of ``tri3, tri6, quad4, tet4, tet10, hex8`` (meshio names accepted).
    node_sets, facet_sets, cell_sets : dict, optional
        Named groups: node ids, :class:`FacetSet`, cell ids.

    Raises
    ------
    MeshError
        Empty mesh, unknown cell type, dimension mismatch, node ids out of range,
        named sets with ids out of range.
    DegenerateElementError
        Inverted or degenerate cells (see
        :func:`~fesens.mesh.validation.check_element_quality`).
    """

    points: np.ndarray
    cells: np.ndarray
    cell_type: str
    node_sets: dict[str, np.ndarray] = field(default_factory=dict)
    facet_sets: dict[str, FacetSet] = field(default_factory=dict)
    cell_sets: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check and normalise the mesh; runs on construction.

        Call it again after modifying points, cells or sets in place: it also drops
        cached topology (models built on the mesh keep their own caches: build a new
        model after such a change). Arrays become contiguous (float points, int64 ids),
        flat 3D points of 2D cells lose their z column.

        Raises
        ------
        MeshError, DegenerateElementError
            As documented for the class.
        """
        self._boundary = None
        ctype = cell_type(self.cell_type)
        bars = ctype.name in BAR_CELL_TYPES  # 1D cells in 2D/3D space (trusses)
        if ctype.name not in VOLUME_CELL_TYPES and not bars:
            raise MeshError(
                f"cell type {self.cell_type!r} cannot carry a discretisation; "
                f"use one of {', '.join(VOLUME_CELL_TYPES + BAR_CELL_TYPES)}"
            )
        self.cell_type = ctype.name
        self.points = np.ascontiguousarray(self.points, dtype=float)
        if self.points.ndim != 2 or self.points.shape[0] == 0:
            raise MeshError("empty mesh: no points")
        if np.ndim(self.cells) != 2 or np.shape(self.cells)[0] == 0:
            raise MeshError("empty mesh: no cells")
        self.cells = checked_connectivity(self.cells, len(self.points))
        if self.points.shape[1] not in (2, 3):
            raise MeshError(f"points must have 2 or 3 coordinates, got {self.points.shape[1]}")
        if self.cells.shape[1] != ctype.n_nodes:
            raise MeshError(
                f"{ctype.name} cells need {ctype.n_nodes} nodes each, got {self.cells.shape[1]}"
            )
        if ctype.dim > self.points.shape[1]:
            raise MeshError(
                f"mixed dimensions: {ctype.dim}D cells ({ctype.name}) "
                f"on {self.points.shape[1]}D points"
            )
        if ctype.dim < self.points.shape[1] and not bars:
            # 2D cells on 3D points: accept only if the mesh is flat in z.
            if ctype.dim == 2 and np.allclose(self.points[:, 2], self.points[0, 2]):
                self.points = np.ascontiguousarray(self.points[:, :2])
            else:
                raise MeshError(
                    f"mixed dimensions: {ctype.dim}D cells ({ctype.name}) "
                    f"on {self.points.shape[1]}D points that are not planar"
                )
        if not np.all(np.isfinite(self.points)):
            raise MeshError("mesh points contain NaN or infinity")
        check_element_quality(self.points, self.cells, self.cell_type)
        self.node_sets = {
            name: checked_ids(f"node set {name!r}", ids, self.n_points)
            for name, ids in self.node_sets.items()
        }
        self.cell_sets = {
            name: checked_ids(f"cell set {name!r}", ids, self.n_cells)
            for name, ids in self.cell_sets.items()
        }
        self.facet_sets = {
            name: checked_facet_set(name, facet_set, self.cell_type, self.n_points,
                                    self.n_cells)
            for name, facet_set in self.facet_sets.items()
        }

    # ------------------------------------------------------------------ basic facts
    @property
    def dim(self) -> int:
        """Spatial dimension (2 or 3)."""
        return self.points.shape[1]

    @property
    def n_points(self) -> int:
        return self.points.shape[0]

    @property
    def n_cells(self) -> int:
        return self.cells.shape[0]

    @property
    def type_info(self) -> CellType:
        """The :class:`~fesens.mesh.cell_types.CellType` of the cells."""
        return cell_type(self.cell_type)

    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper corners, each shape ``(dim,)``."""
        return self.points.min(axis=0), self.points.max(axis=0)

    def __repr__(self) -> str:
        return (
            f"Mesh({self.n_cells} {self.cell_type} cells, {self.n_points} points, "
            f"{self.dim}D; node sets {sorted(self.node_sets)}, facet sets "
            f"{sorted(self.facet_sets)}, cell sets {sorted(self.cell_sets)})"
        )

    # ------------------------------------------------------------------ topology
    def all_facets(self) -> tuple[np.ndarray, np.ndarray]:
        """Every facet of every cell.

        Returns
        -------
        facets : numpy.ndarray
            Node ids, shape ``(n_cells * n_local_facets, n_facet_nodes)``.
        owners : numpy.ndarray
            Cell id of each facet, shape ``(n_cells * n_local_facets,)``.
        """
        local = np.asarray(self.type_info.local_facets)
        facets = self.cells[:, local].reshape(-1, local.shape[1])
        owners = np.repeat(np.arange(self.n_cells), local.shape[0])
        return facets, owners

    def boundary_facets(self) -> FacetSet:
        """Facets that belong to exactly one cell (the mesh boundary)."""
        if self._boundary is None:
            facets, owners = self.all_facets()
            n_corners = cell_type(self.type_info.facet_type).n_corners
            keys = np.sort(facets[:, :n_corners], axis=1)
            _, inverse, counts = np.unique(
                keys, axis=0, return_inverse=True, return_counts=True
            )
            once = counts[inverse.ravel()] == 1
            self._boundary = FacetSet(self.type_info.facet_type, facets[once], owners[once])
        return self._boundary

    # ------------------------------------------------------------------ selection
    def nodes(self, where: str | Predicate) -> np.ndarray:
        """Node ids of a named node set (or facet set) or of nodes matching a predicate.

        Parameters
        ----------
        where : str or callable
            A node-set or facet-set name, or a predicate ``f(points) -> bool mask``
            evaluated on all points, shape ``(n_points, dim) -> (n_points,)``.

        Returns
        -------
        numpy.ndarray
            Sorted node ids.

        Raises
        ------
        UnknownGroupError
            Unknown name (the message lists the available names).
        MeshError
            The predicate selects nothing or returns the wrong shape.
        """
        if isinstance(where, str):
            if where in self.node_sets:
                return np.asarray(self.node_sets[where], dtype=np.int64)
            if where in self.facet_sets:
                return self.facet_sets[where].nodes
            raise UnknownGroupError(
                f"no node or facet set named {where!r}; "
                f"{_names_hint('node', self.node_sets)}; {_names_hint('facet', self.facet_sets)}"
            )
        mask = self._evaluate_predicate(where, self.points)
        return np.flatnonzero(mask)

    def facets(self, where: str | Predicate) -> FacetSet:
        """A named facet set, or the boundary facets whose nodes all satisfy a predicate."""
        if isinstance(where, str):
            try:
                return self.facet_sets[where]
            except KeyError:
                raise UnknownGroupError(
                    f"no facet set named {where!r}; {_names_hint('facet', self.facet_sets)}"
                ) from None
        boundary = self.boundary_facets()
        mask = self._evaluate_predicate(where, self.points)
        keep = mask[boundary.facets].all(axis=1)
        cells = None if boundary.cells is None else boundary.cells[keep]
        return FacetSet(boundary.facet_type, boundary.facets[keep], cells)

    def cell_ids(self, where: str | Predicate) -> np.ndarray:
        """Ids of a named cell set, or of the cells whose centroid satisfies a predicate."""
        if isinstance(where, str):
            try:
                return np.asarray(self.cell_sets[where], dtype=np.int64)
            except KeyError:
                raise UnknownGroupError(
                    f"no cell set named {where!r}; {_names_hint('cell', self.cell_sets)}"
                ) from None
        return np.flatnonzero(self._evaluate_predicate(where, self.cell_centroids()))

    def cell_centroids(self) -> np.ndarray:
        """Mean of each cell's corner nodes, shape ``(n_cells, dim)``."""
        corners = self.cells[:, : self.type_info.n_corners]
        return self.points[corners].mean(axis=1)

    def nearest_node(self, point) -> int:
        """Id of the node closest to ``point`` (shape ``(dim,)``)."""
        point = np.asarray(point, dtype=float)
        if point.shape != (self.dim,):
            raise MeshError(f"point must have {self.dim} coordinates, got shape {point.shape}")
        return int(np.argmin(np.sum((self.points - point) ** 2, axis=1)))

    @staticmethod
    def _evaluate_predicate(predicate: Predicate, coords: np.ndarray) -> np.ndarray:
        mask = np.asarray(predicate(coords))
        if mask.shape != (len(coords),) or mask.dtype != bool:
            raise MeshError(
                "a selection predicate must map coordinates (n, dim) to a boolean mask (n,); "
                f"got {mask.dtype} array of shape {mask.shape}"
            )
        if not mask.any():
            raise MeshError("the selection predicate matched nothing")
        return mask

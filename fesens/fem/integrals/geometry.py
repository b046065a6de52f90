"""Isoparametric geometry of all cells at once: Jacobians, physical gradients, weights.

For a cell with nodes ``x_a`` and reference shape functions ``N_a(ξ)``:

* ``J_ij = Σ_a x_(a,i) ∂N_a/∂ξ_j``         (Jacobian, ``dx/dξ``)
* ``∂N_a/∂x_i = Σ_j ∂N_a/∂ξ_j (J⁻¹)_ji``   (chain rule)
* ``dΩ = det J · w_q``                      (quadrature weight in physical space)

When every cell is a translated copy of the first one (structured grids), the arrays
are computed for that one cell and broadcast (leading axis of length 1): the element
matrices of all cells are then identical, which keeps memory O(1) in the number of cells.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from fesens.ad.numpy_wrapper import det, getval, inv
from fesens.errors import DegenerateElementError, MeshError
from fesens.fem.elements import reference_element
from fesens.mesh.cell_types import cell_type
from fesens.mesh.mesh import FacetSet, Mesh


@dataclass(frozen=True)
class CellGeometry:
    """Quadrature data of all cells.

    Attributes
    ----------
    N : numpy.ndarray
        Shape functions at the quadrature points, ``(n_qp, n_nodes)``.
    dNdx : numpy.ndarray
        Physical gradients, ``(n_geom, n_qp, n_nodes, dim)``.
    dx : numpy.ndarray
        Physical quadrature weights ``det J · w``, ``(n_geom, n_qp)``.
    x : numpy.ndarray
        Physical quadrature points, ``(n_cells, n_qp, dim)``; of the mesh's own
        coordinates formed on first read, since a matrix-free solve, which needs only the
        one cell matrix of a lattice, never reads them (192 bytes per hex8 cell).
    uniform : bool
        True when ``n_geom == 1``: all cells share one geometry.
    """

    N: np.ndarray
    dNdx: np.ndarray
    dx: np.ndarray
    uniform: bool
    quadrature_points: Callable[[], Any] = field(repr=False, compare=False)  # forms ``x``

    @cached_property
    def x(self) -> np.ndarray:
        return self.quadrature_points()

    @property
    def volumes(self) -> np.ndarray:
        """Cell volumes (areas in 2D), ``(n_geom,)``."""
        return self.dx.sum(axis=1)


def cells_are_translates(mesh: Mesh) -> bool:
    """True when every cell is a translated copy of cell 0 (same shape and node order)."""
    coords = mesh.points[mesh.cells]
    relative = coords - coords[:, :1, :]
    size = np.ptp(relative[0], axis=0).max()
    return bool(np.abs(relative - relative[0]).max() <= 1e-12 * max(size, 1e-300))


def cell_geometry(mesh: Mesh, order: int | None = None, points=None) -> CellGeometry:
    """Shape functions, physical gradients and weights at the quadrature points of all cells.

    Parameters
    ----------
    mesh : Mesh
    order : int, optional
        Quadrature order; default: the element's stiffness order.
    points : array_like, optional
        Node coordinates ``(n_points, dim)`` replacing ``mesh.points``; may be traced
        (:mod:`fesens.ad`), and then so is everything returned but ``N``, batched over the
        cells (every cell its own geometry).

    Raises
    ------
    DegenerateElementError
        If ``det J <= 0`` at any quadrature point (inverted or degenerate cells, listed).
    """
    element = reference_element(mesh.cell_type)
    xi, w = element.quadrature(order)
    N = element.shape(xi)
    dN = element.shape_gradients(xi)  # (n_qp, n_nodes, dim)
    uniform = points is None and cells_are_translates(mesh)
    # one cell's coordinates when all cells share its geometry: no (n_cells, n_nodes, dim) copy
    geom_coords = (mesh.points[mesh.cells[:1]] if uniform
                   else (mesh.points if points is None else points)[mesh.cells])
    J = np.einsum("eai,qaj->eqij", geom_coords, dN, optimize=True)
    detJ = det(J)
    bad = np.flatnonzero((getval(detJ) <= 0).any(axis=1))
    if bad.size:
        ids = np.arange(mesh.n_cells) if uniform else bad
        raise DegenerateElementError(
            f"{ids.size} cells have a non-positive Jacobian determinant (inverted or "
            f"degenerate); cell ids: {ids[:20].tolist()}{' ...' if ids.size > 20 else ''}",
            ids,
        )
    invJ = inv(J)
    dNdx = np.einsum("qaj,eqji->eqai", dN, invJ, optimize=True)
    if points is None:  # kept by the model; formed when first read
        return CellGeometry(N=N, dNdx=dNdx, dx=detJ * w, uniform=uniform,
                            quadrature_points=lambda: quadrature_points(mesh, N))
    x = quadrature_points(mesh, N, points)  # traced with the points: formed in their trace
    return CellGeometry(N=N, dNdx=dNdx, dx=detJ * w, uniform=uniform,
                        quadrature_points=lambda: x)


def quadrature_points(mesh: Mesh, N: np.ndarray, points=None) -> np.ndarray:
    """Physical quadrature points ``(n_cells, n_qp, dim)`` of shape functions ``N``
    ``(n_qp, n_nodes)`` at node coordinates ``points`` (default: the mesh's; may be traced)."""
    coords = (mesh.points if points is None else points)[mesh.cells]  # (n_cells, n_nodes, dim)
    return np.einsum("qa,eai->eqi", N, coords, optimize=True)


@dataclass(frozen=True)
class FacetGeometry:
    """Quadrature data of a set of facets (for boundary integrals).

    Attributes
    ----------
    N : numpy.ndarray
        Facet shape functions at the quadrature points, ``(n_qp, n_facet_nodes)``.
    dS : numpy.ndarray
        Physical surface (2D: length) weights, ``(n_facets, n_qp)``.
    x : numpy.ndarray
        Physical quadrature points, ``(n_facets, n_qp, dim)``.
    normal : numpy.ndarray
        Unit outward normals, ``(n_facets, n_qp, dim)``.
    """

    N: np.ndarray
    dS: np.ndarray
    x: np.ndarray
    normal: np.ndarray


def facet_geometry(mesh: Mesh, facet_set: FacetSet, order: int | None = None,
                   points=None) -> FacetGeometry:
    """Shape functions, surface weights and outward normals on the facets of ``facet_set``.

    The surface element is ``|∂x/∂ξ|`` for edges (2D) and ``|∂x/∂ξ₁ × ∂x/∂ξ₂|`` for faces
    (3D). When the owning cells are known, each quadrature point's normal points away from
    its owner (against :func:`facet_inward_directions`, decided on the coordinates' values:
    right for curved cells of any order, whose corner centroid may lie outside the cell);
    otherwise it follows the facet's node order (counter-clockwise seen from outside).
    ``points`` (possibly traced) replace ``mesh.points`` as in :func:`cell_geometry`.

    Raises
    ------
    DegenerateElementError
        If a facet has zero length or area.
    MeshError
        If a facet's nodes are not all nodes of its owner cell.
    """
    element = reference_element(facet_set.facet_type)
    xi, w = element.quadrature(order if order is not None else element.mass_order)
    N = element.shape(xi)
    dN = element.shape_gradients(xi)  # (n_qp, n_fn, dim - 1)
    coordinates = mesh.points if points is None else points
    coords = coordinates[facet_set.facets]  # (n_f, n_fn, dim)
    tangents = np.einsum("fai,qaj->fqij", coords, dN, optimize=True)  # (n_f, n_qp, dim, dim - 1)
    if mesh.dim == 2:
        t = tangents[..., 0]
        normal = np.stack([t[..., 1], -t[..., 0]], axis=-1)
    else:
        normal = np.cross(tangents[..., 0], tangents[..., 1])
    measure = np.linalg.norm(normal, axis=-1)
    if (getval(measure) <= 0).any():
        bad = np.flatnonzero((getval(measure) <= 0).any(axis=1))
        raise DegenerateElementError(
            f"{bad.size} facets have zero length/area; facet indices: {bad[:20].tolist()}", bad
        )
    normal = normal / measure[..., None]
    x = np.einsum("qa,fai->fqi", N, coords, optimize=True)
    if facet_set.cells is not None:
        inward = facet_inward_directions(mesh, facet_set, xi, getval(coordinates))
        flip = np.einsum("fqi,fqi->fq", getval(normal), inward) > 0
        normal = np.where(flip[..., None], -normal, normal)
    return FacetGeometry(N=N, dS=measure * w, x=x, normal=normal)


def facet_inward_directions(mesh: Mesh, facet_set: FacetSet, xi: np.ndarray,
                            points: np.ndarray | None = None) -> np.ndarray:
    """Physical directions into each facet's owner cell at the facet's reference points.

    A reference facet is flat in its owner's reference cell, so the facet's shape functions
    interpolate the owner's reference node coordinates exactly: ``ξ(η) = Σ_a N_a(η) ξ_(l(a))``
    with ``l(a)`` the place of facet node ``a`` in the owner's node list. The reference
    direction from there to the reference cell's centre points into the cell, and so does
    its image ``d = J(ξ) (ξ_c − ξ)`` under the owner's Jacobian whenever ``det J > 0``,
    however curved the cell (its corner centroid, by contrast, may lie outside it).

    Parameters
    ----------
    mesh : Mesh
    facet_set : FacetSet
        With ``cells`` set to the owners.
    xi : numpy.ndarray
        Reference points on the facet element, ``(n_qp, dim - 1)``.
    points : numpy.ndarray, optional
        Node coordinates ``(n_points, dim)`` (values, not traced); default ``mesh.points``.

    Returns
    -------
    numpy.ndarray
        ``d``, ``(n_facets, n_qp, dim)``; its length carries no meaning, only its sign
        against a normal.

    Raises
    ------
    MeshError
        If a facet's nodes are not all nodes of its owner cell.
    """
    cell_element = reference_element(mesh.cell_type)
    facet_element = reference_element(facet_set.facet_type)
    owner_nodes = mesh.cells[facet_set.cells]  # (n_f, n_cell_nodes)
    match = facet_set.facets[:, :, None] == owner_nodes[:, None, :]  # (n_f, n_fn, n_cn)
    missing = np.flatnonzero(~match.any(axis=2).all(axis=1))
    if missing.size:
        raise MeshError(
            f"{missing.size} facets have nodes that are not nodes of their owner cell (e.g. "
            f"facet {int(missing[0])}, nodes {facet_set.facets[missing[0]].tolist()}, owner "
            f"cell {int(facet_set.cells[missing[0]])}); a facet set's cells must be the "
            "cells the facets bound")
    # facets sharing one placement in their owners share their reference points: evaluate
    # the owner's shape gradients once per placement (a handful), not per facet
    placements, which = np.unique(match.argmax(axis=2), axis=0, return_inverse=True)
    xi_cell = np.einsum("qa,pai->pqi", facet_element.shape(xi), cell_element.nodes[placements])
    n_corners = cell_type(mesh.cell_type).n_corners
    towards_centre = cell_element.nodes[:n_corners].mean(axis=0) - xi_cell  # (n_p, n_qp, dim)
    dN = cell_element.shape_gradients(xi_cell.reshape(-1, mesh.dim))
    dN = dN.reshape(*xi_cell.shape[:2], *dN.shape[1:])  # (n_p, n_qp, n_cn, dim)
    weights = np.einsum("pqaj,pqj->pqa", dN, towards_centre)  # ∂N_a/∂ξ · (ξ_c − ξ)
    coordinates = mesh.points if points is None else points
    which = which.ravel()
    inward = np.empty((len(facet_set), len(xi), mesh.dim))
    for placement, weight in enumerate(weights):  # a loop over placements, not facets:
        # no (n_facets, n_qp, n_cell_nodes) array of weights
        held = which == placement
        inward[held] = np.einsum("fai,qa->fqi", coordinates[owner_nodes[held]], weight)
    return inward

"""Fields at arbitrary points: locate the cell containing each point, interpolate there.

A point is located by trying the cells whose centroids are nearest (a KD-tree on the
cell centroids, :class:`scipy.spatial.cKDTree`): for each candidate, the inverse
isoparametric map ``x(ξ) = Σ_a N_a(ξ) x_a = p`` is solved by Newton's method on the
reference element (``ξ ← ξ − J⁻¹ (x(ξ) − p)``, from the reference centroid), and the cell
is accepted when the converged ``ξ`` lies in the reference domain (up to a tolerance).
The value at the point is then ``Σ_a N_a(ξ) v_a`` of the cell's nodal values ``v_a``.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.spatial import cKDTree

from fesens.errors import FesensWarning, MeshError, PointOutsideMeshError
from fesens.fem.elements import reference_element
from fesens.fem.elements.base import ReferenceElement
from fesens.fem.post.recovery import is_simplex
from fesens.mesh.mesh import Mesh

#: A point farther than this fraction of the mesh's extent from its nearest node misses it.
NODE_TOLERANCE = 1e-6


class OffNodeWarning(FesensWarning):
    """A point given by coordinates does not hit a node; the nearest node is used."""


def nearest_node(mesh: Mesh, point) -> tuple[int, float, float]:
    """``(node, distance, tolerance)``: the node nearest to ``point`` ``(dim,)``, its
    distance, and the distance above which the point misses it (:data:`NODE_TOLERANCE`
    times the mesh's extent, the largest side of its bounding box)."""
    node = mesh.nearest_node(point)
    distance = float(np.linalg.norm(mesh.points[node] - np.asarray(point, dtype=float)))
    return node, distance, NODE_TOLERANCE * float(np.ptp(mesh.points, axis=0).max())


def beyond_bounding_box(mesh: Mesh, point, tolerance: float) -> bool:
    """Whether ``point`` ``(dim,)`` lies outside the mesh's bounding box by more than
    ``tolerance`` along an axis."""
    low, high = mesh.bounding_box()
    coords = np.asarray(point, dtype=float)
    return bool(np.any(coords < low - tolerance) or np.any(coords > high + tolerance))


def node_at(mesh: Mesh, point, what: str) -> int:
    """The node nearest to ``point``; warns (:class:`OffNodeWarning`) when ``point`` misses
    it, naming ``what`` (e.g. "point load 'F'"), the distance and the node used.

    Raises
    ------
    PointOutsideMeshError
        ``point`` lies outside the mesh's bounding box (by more than
        :data:`NODE_TOLERANCE` times its extent): the nearest node would be a guess.
    """
    node, distance, tolerance = nearest_node(mesh, point)
    if beyond_bounding_box(mesh, point, tolerance):
        low, high = mesh.bounding_box()
        raise PointOutsideMeshError(
            f"{what} at {np.asarray(point, dtype=float).tolist()} is outside the mesh, whose "
            f"bounding box spans {low.tolist()} to {high.tolist()} (tolerance {tolerance:.3g}, "
            f"{NODE_TOLERANCE:g} of its extent); give a point in the mesh")
    if distance > tolerance:
        warnings.warn(f"{what} at {np.asarray(point, dtype=float).tolist()} is not on a node: "
                      f"using the nearest node {node} at {mesh.points[node].tolist()}, "
                      f"{distance:.6g} away", OffNodeWarning, stacklevel=3)
    return node


#: Candidate cells tried per point: first the nearest few, then more for the points left.
_CANDIDATES = (8, 64)
_NEWTON_STEPS = 30


def checked_points(mesh: Mesh, points) -> np.ndarray:
    """``points`` as a float array ``(n, dim)`` (a single point ``(dim,)`` gives ``n = 1``).

    Raises
    ------
    MeshError
        If the shape does not match the mesh's dimension, or a coordinate is not finite.
    """
    array = np.asarray(points, dtype=float)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] != mesh.dim:
        raise MeshError(f"probe points must have shape (n, {mesh.dim}) for this {mesh.dim}D "
                        f"mesh, got shape {np.shape(points)}")
    if not np.all(np.isfinite(array)):
        raise MeshError("probe points contain NaN or infinity")
    return array


def _inside(element: ReferenceElement, xi: np.ndarray, tolerance: float) -> np.ndarray:
    """Whether reference points ``(n, dim)`` lie in the reference domain, ``(n,)``."""
    if is_simplex(element):
        return np.all(xi >= -tolerance, axis=1) & (xi.sum(axis=1) <= 1 + tolerance)
    return np.all(np.abs(xi) <= 1 + tolerance, axis=1)


def inverse_map(element: ReferenceElement, cell_coordinates: np.ndarray,
                points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reference coordinates ``(n, dim)`` of ``points`` ``(n, dim)`` in the cells with node
    coordinates ``(n, n_nodes, dim)``, and whether Newton's method converged ``(n,)``."""
    size = np.ptp(cell_coordinates, axis=1).max(axis=1)
    xi = np.broadcast_to(element.nodes.mean(axis=0), points.shape).copy()
    residual = np.full(len(points), np.inf)
    for _ in range(_NEWTON_STEPS):
        x = np.einsum("pa,pai->pi", element.basis(xi), cell_coordinates)
        r = x - points
        residual = np.linalg.norm(r, axis=1)
        active = residual > 1e-12 * size
        if not active.any():
            break
        J = np.einsum("pai,paj->pij", cell_coordinates[active],
                      element.basis_gradients(xi[active]))
        with np.errstate(all="ignore"):
            step = np.linalg.solve(J, r[active][:, :, None])[:, :, 0]
        xi[active] = np.clip(xi[active] - np.nan_to_num(step, nan=10.0), -5.0, 5.0)
    return xi, residual <= 1e-9 * size


def locate(mesh: Mesh, points, tolerance: float = 1e-8) -> tuple[np.ndarray, np.ndarray]:
    """The cell containing each point and the point's reference coordinates there.

    Parameters
    ----------
    mesh : Mesh
    points : array_like
        ``(n, dim)``.
    tolerance : float
        How far outside the reference domain (in reference coordinates) still counts as
        inside (points on a facet or a node belong to one of the cells sharing it).

    Returns
    -------
    cells : numpy.ndarray
        ``(n,)`` cell ids.
    xi : numpy.ndarray
        ``(n, dim)`` reference coordinates.

    Raises
    ------
    PointOutsideMeshError
        If points lie in no cell; the message lists them (by index and coordinates).
    """
    points = checked_points(mesh, points)
    element = reference_element(mesh.cell_type)
    tree = cKDTree(mesh.cell_centroids())
    cells = np.full(len(points), -1)
    xi = np.zeros_like(points)
    tried = 0
    for n_candidates in _CANDIDATES:
        todo = np.flatnonzero(cells < 0)
        k = min(n_candidates, mesh.n_cells)
        if todo.size == 0 or k <= tried:
            break
        _, near = tree.query(points[todo], k=k)
        near = np.reshape(near, (todo.size, k))
        for j in range(tried, k):
            left = cells[todo] < 0
            ids, candidates = todo[left], near[left, j]
            if ids.size == 0:
                break
            ref, converged = inverse_map(element, mesh.points[mesh.cells[candidates]],
                                         points[ids])
            found = converged & _inside(element, ref, tolerance)
            cells[ids[found]], xi[ids[found]] = candidates[found], ref[found]
        tried = k
    outside = np.flatnonzero(cells < 0)
    if outside.size:
        listed = "; ".join(f"#{i} {points[i].tolist()}" for i in outside[:10])
        low, high = mesh.bounding_box()
        raise PointOutsideMeshError(
            f"{outside.size} of {len(points)} probe points lie outside the mesh (which spans "
            f"{low.tolist()} to {high.tolist()}): {listed}{' ...' if outside.size > 10 else ''}"
        )
    return cells, xi


def interpolate(mesh: Mesh, nodal_values: np.ndarray, points) -> np.ndarray:
    """Nodal values ``(n_points, ...)`` interpolated at ``points`` ``(n, dim)`` → ``(n, ...)``
    with the shape functions of the containing cells (:func:`locate`)."""
    cells, xi = locate(mesh, points)
    N = reference_element(mesh.cell_type).basis(xi)  # (n, n_nodes)
    values = np.asarray(nodal_values)[mesh.cells[cells]]  # (n, n_nodes, ...)
    return np.einsum("pa,pa...->p...", N, values)

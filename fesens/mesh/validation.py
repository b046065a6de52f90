"""Mesh checks: element quality (degenerate or inverted cells) and named-set ids.

Both run from :meth:`Mesh.validate <fesens.mesh.mesh.Mesh.validate>`, i.e. whenever a
:class:`~fesens.mesh.mesh.Mesh` is built; they are vectorised over all cells.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from fesens.errors import DegenerateElementError, MeshError
from fesens.mesh.cell_types import cell_type

if TYPE_CHECKING:
    from fesens.mesh.mesh import FacetSet, Mesh

#: ``|det J| / h**dim`` below this (``h``: longest cell edge) counts as degenerate.
DEGENERATE_TOLERANCE = 1e-12

#: Ids listed in an error message (all of them are in the exception's ``cell_ids``).
_MAX_LISTED = 20

# Reference coordinates of the corners of the tensor-product cells (VTK order).
_TENSOR_CORNERS = {
    "quad4": np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]),
    "hex8": np.array(
        [
            [-1, -1, -1],
            [1, -1, -1],
            [1, 1, -1],
            [-1, 1, -1],
            [-1, -1, 1],
            [1, -1, 1],
            [1, 1, 1],
            [-1, 1, 1],
        ]
    ),
}


@cache
def _jacobian_edges(name: str) -> np.ndarray:
    """Corner pairs whose differences are the Jacobian columns at each evaluation point.

    For quad4/hex8 the Jacobian is evaluated at every corner: its column ``d`` is (up to
    the factor 1/2) the cell edge leaving that corner along reference direction ``d``.
    For simplices it is constant: columns are the edges from vertex 0.

    Returns
    -------
    numpy.ndarray
        Local corner ids ``(start, end)``, shape ``(n_evaluation_points, dim, 2)``.
    """
    corners = _TENSOR_CORNERS.get(name)
    dim = cell_type(name).dim
    if corners is None:
        return np.array([[(0, k) for k in range(1, dim + 1)]])
    pairs = np.empty((len(corners), dim, 2), dtype=np.int64)
    for c, corner in enumerate(corners):
        for d in range(dim):
            neighbour = corner.copy()
            neighbour[d] = -neighbour[d]
            other = int(np.flatnonzero((corners == neighbour).all(axis=1))[0])
            pairs[c, d] = (c, other) if corner[d] < 0 else (other, c)
    return pairs


def corner_jacobian_ratios(points: np.ndarray, cells: np.ndarray, name: str) -> np.ndarray:
    """Scaled Jacobian determinants ``det J / h**dim`` at the corners of each cell.

    ``J`` is built from the corner nodes only (midside nodes of quadratic cells are
    ignored); ``h`` is the longest edge vector used, so the ratio is scale-free:
    1 for a unit square corner, about 0.5 for a right isosceles triangle.

    Parameters
    ----------
    points : numpy.ndarray
        Node coordinates, shape ``(n_points, dim)``.
    cells : numpy.ndarray
        Connectivity, shape ``(n_cells, n_nodes_per_cell)``.
    name : str
        fesens cell-type name.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_cells, n_evaluation_points)``: 4 for quad4, 8 for hex8, 1 for simplices.
    """
    pairs = _jacobian_edges(name)
    columns = points[cells[:, pairs[..., 1]]] - points[cells[:, pairs[..., 0]]]
    det = np.linalg.det(columns)  # columns: (n_cells, n_eval, dim, dim)
    h = np.linalg.norm(columns, axis=-1).max(axis=(1, 2))
    scale = np.where(h > 0, h, 1.0) ** points.shape[1]
    return det / scale[:, None]


def _listed(ids: np.ndarray) -> str:
    more = f" (+{len(ids) - _MAX_LISTED} more)" if len(ids) > _MAX_LISTED else ""
    return f"{ids[:_MAX_LISTED].tolist()}{more}"


def check_element_quality(mesh: Mesh) -> None:
    """Raise if any cell is inverted or degenerate.

    A cell is *inverted* if its Jacobian determinant is negative at some corner
    (clockwise node order in 2D, mirrored in 3D, or a non-convex / twisted quad or hex),
    and *degenerate* if ``|det J|`` is below ``DEGENERATE_TOLERANCE * h**dim`` at some
    corner (collapsed edges or faces).

    Parameters
    ----------
    mesh : Mesh

    Raises
    ------
    DegenerateElementError
        Lists the first offending ids in the message; all are in ``.cell_ids``.
    """
    ratios = corner_jacobian_ratios(mesh.points, mesh.cells, mesh.cell_type)
    worst = ratios.min(axis=1)
    inverted = np.flatnonzero(worst < -DEGENERATE_TOLERANCE)
    degenerate = np.flatnonzero(np.abs(worst) <= DEGENERATE_TOLERANCE)
    if len(inverted) == 0 and len(degenerate) == 0:
        return
    problems = []
    if len(inverted):
        problems.append(
            f"{len(inverted)} inverted (negative Jacobian determinant; clockwise or "
            f"mirrored node order, or a non-convex cell): ids {_listed(inverted)}"
        )
    if len(degenerate):
        problems.append(
            f"{len(degenerate)} degenerate (zero Jacobian determinant): ids {_listed(degenerate)}"
        )
    bad = np.union1d(inverted, degenerate)
    raise DegenerateElementError(
        f"{len(bad)} of {mesh.n_cells} {mesh.cell_type} cells are invalid: " + "; ".join(problems),
        bad,
    )


def checked_ids(what: str, ids, upper: int, ndim: int = 1) -> np.ndarray:
    """Validate a set of ids and return it as an int64 array.

    Parameters
    ----------
    what : str
        Name of the set, for the message (``"node set 'left'"``).
    ids : array_like
        Ids, shape ``(n,)`` (or ``(n, k)`` with ``ndim=2``).
    upper : int
        Ids must lie in ``0 .. upper - 1``.
    ndim : int
        Expected number of array dimensions.

    Raises
    ------
    MeshError
        Non-integer ids, wrong shape, or ids out of range (the message names the set).
    """
    array = np.asarray(ids)
    if array.ndim != ndim:
        raise MeshError(f"{what} must be a {ndim}-D array of ids, got shape {array.shape}")
    if array.size == 0:
        return np.zeros(array.shape, dtype=np.int64)
    if not np.issubdtype(array.dtype, np.integer):
        raise MeshError(f"{what} must hold integer ids, got dtype {array.dtype}")
    outside = (array < 0) | (array >= upper)
    if outside.any():
        raise MeshError(
            f"{what} refers to ids outside 0..{upper - 1}: {_listed(np.unique(array[outside]))}"
        )
    return array.astype(np.int64, copy=False)


def checked_facet_set(name: str, facet_set: FacetSet, mesh: Mesh) -> FacetSet:
    """Validate a facet set against ``mesh`` and return it with int64 arrays.

    Raises
    ------
    MeshError
        Wrong facet type or node count, node or owner ids out of range, or an owner
        array whose length differs from the number of facets.
    """
    what = f"facet set {name!r}"
    expected = cell_type(mesh.type_info.facet_type)
    if cell_type(facet_set.facet_type).name != expected.name:
        raise MeshError(
            f"{what} holds {facet_set.facet_type} facets; "
            f"{mesh.cell_type} cells have {expected.name} facets"
        )
    facets = np.asarray(facet_set.facets)
    if facets.size == 0:
        facets = facets.reshape(0, expected.n_nodes)
    facets = checked_ids(what, facets, mesh.n_points, ndim=2)
    if facets.shape[1] != expected.n_nodes:
        raise MeshError(
            f"{what} must have shape (n_facets, {expected.n_nodes}), got {facets.shape}"
        )
    owners = facet_set.cells
    if owners is not None:
        owners = checked_ids(f"owner cells of {what}", owners, mesh.n_cells)
        if owners.shape != (len(facets),):
            raise MeshError(
                f"{what} has {len(facets)} facets but owner cells of shape {owners.shape}"
            )
    return type(facet_set)(expected.name, facets, owners)

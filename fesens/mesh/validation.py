"""Mesh checks: element quality (degenerate or inverted cells) and named-set ids.

Both run from :meth:`Mesh.validate <fesens.mesh.mesh.Mesh.validate>`, i.e. whenever a
:class:`~fesens.mesh.mesh.Mesh` is built; they are vectorised over all cells. They read the
mesh's arrays (points, cells, cell type), not the mesh, which is built on them.
"""

from __future__ import annotations

from functools import cache
from itertools import product

import numpy as np

from fesens.errors import DegenerateElementError, MeshError
from fesens.mesh.cell_types import CENTRE_NODES, MIDSIDE_EDGES, cell_type
from fesens.mesh.facet_set import FacetSet

#: ``|det J| / h**dim`` below this (``h``: longest cell edge) counts as degenerate.
DEGENERATE_TOLERANCE = 1e-12

#: Ids listed in an error message (all of them are in the exception's ``cell_ids``).
_MAX_LISTED = 20

# Reference coordinates of the corners of the tensor-product cells (VTK order).
_QUAD_CORNERS = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]])
_HEX_CORNERS = np.array(
    [[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1],
     [-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1]]
)
_TENSOR_CORNERS = {
    "quad4": _QUAD_CORNERS, "quad8": _QUAD_CORNERS, "quad9": _QUAD_CORNERS,
    "hex8": _HEX_CORNERS, "hex20": _HEX_CORNERS, "hex27": _HEX_CORNERS,
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


#: Where each cell type's Jacobian determinant is checked, in this order:
#:
#: * ``corner``: the map of the corner nodes alone (mid-side nodes ignored) at the corners,
#:   for triangles, tetrahedra and quadrilaterals. Exact for linear simplices (constant J)
#:   and quad4 (det J is linear in ξ and η, so its minimum is at a corner): clockwise,
#:   mirrored, non-convex or collapsed cells.
#: * ``integration point``: the full map at the Gauss points of the stiffness rule (2 or 3
#:   per direction), for quadratic quadrilaterals and every hexahedron. A valid distorted
#:   hexahedron (warped faces, as in the MacNeal-Harder solid patch test) may have a slightly
#:   negative corner Jacobian; a cell inverted where it is integrated has a negative one here.
#: * ``node``: the full map at every node, for quadratic triangles, tetrahedra and
#:   quadrilaterals: a mid-side node moved past the quarter point of its edge (or off it)
#:   folds the cell. Only a negative value refuses a cell here: zero is the quarter-point
#:   (crack-tip) element.
_RULES = {
    "tri3": ("corner",), "tet4": ("corner",), "quad4": ("corner",),
    "tri6": ("corner", "node"), "tet10": ("corner", "node"),
    "quad8": ("corner", "integration point", "node"),
    "quad9": ("corner", "integration point", "node"),
    "hex8": ("integration point",), "hex20": ("integration point",),
    "hex27": ("integration point",),
}


@cache
def _reference_nodes(name: str) -> np.ndarray:
    """Reference coordinates of the nodes of ``name`` (VTK order), ``(n_nodes, dim)``."""
    info = cell_type(name)
    corners = _TENSOR_CORNERS.get(name)
    if corners is None:
        corners = np.vstack([np.zeros(info.dim), np.eye(info.dim)])
    corners = corners.astype(float)
    nodes = [corners] + [corners[list(edge)].mean(axis=0, keepdims=True)
                         for edge in MIDSIDE_EDGES.get(name, ())]
    nodes += [corners[list(group)].mean(axis=0, keepdims=True)
              for group in CENTRE_NODES.get(name, ())]
    return np.vstack(nodes)


@cache
def _geometry_gradients(name: str, rule: str) -> np.ndarray:
    """Reference gradients of the cell's shape functions at the points of ``rule``.

    The shape functions are found from their polynomial space (monomials ``ξ^e``: total
    degree <= p on simplices; degree <= p in each variable on Lagrange quadrilaterals and
    hexahedra; the serendipity ones at most one exponent 2) as the basis that is 1 at its
    node and 0 at the others, so this module needs no finite-element code.

    Returns
    -------
    numpy.ndarray
        ``(n_points, n_nodes, dim)``; ``n_nodes`` counts the corners only for ``corner``.
    """
    info = cell_type(name)
    nodes = _reference_nodes(name)
    if rule == "corner":  # the map of the corners alone
        nodes = nodes[: info.n_corners]
        name = {3: "tri3", 4: "tet4" if info.dim == 3 else "quad4", 8: "hex8"}[info.n_corners]
    degree = 1 if len(nodes) == info.n_corners else 2
    exponents = np.array(list(product(range(degree + 1), repeat=info.dim)))
    if name not in _TENSOR_CORNERS:
        exponents = exponents[exponents.sum(axis=1) <= degree]
    elif name in ("quad8", "hex20"):
        exponents = exponents[(exponents == 2).sum(axis=1) <= 1]
    coefficients = np.linalg.inv(np.prod(nodes[:, None, :] ** exponents, axis=-1))
    if rule == "corner":
        points = nodes[: info.n_corners]
    elif rule == "node":
        points = nodes
    else:
        line = np.polynomial.legendre.leggauss(degree + 1)[0]
        points = np.array(list(product(line, repeat=info.dim)))
    gradients = np.empty((len(points), len(exponents), info.dim))
    for k in range(info.dim):
        lowered = exponents.copy()
        lowered[:, k] = np.maximum(lowered[:, k] - 1, 0)
        gradients[..., k] = exponents[:, k] * np.prod(points[:, None, :] ** lowered, axis=-1)
    return np.einsum("pmk,mn->pnk", gradients, coefficients)


def jacobian_ratios(points: np.ndarray, cells: np.ndarray, name: str, rule: str) -> np.ndarray:
    """Scaled Jacobian determinants ``det J / h**dim`` at the points of one check rule.

    Parameters
    ----------
    points : numpy.ndarray
        Node coordinates, shape ``(n_points, dim)``.
    cells : numpy.ndarray
        Connectivity, shape ``(n_cells, n_nodes_per_cell)``.
    name : str
        fesens cell-type name.
    rule : {"corner", "node", "integration point"}
        The corners (of the corner nodes' map), all nodes, or the Gauss points (2 or 3 per
        direction) of a quadrilateral or hexahedron; see ``_RULES``.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_cells, n_evaluation_points)``; ``h`` is the longest Jacobian column
        (reference-edge tangent) of the cell, so the ratio is scale-free.
    """
    gradients = _geometry_gradients(name, rule)
    jacobians = np.einsum("cni,pnk->cpik", points[cells[:, : gradients.shape[1]]], gradients,
                          optimize=True)
    h = np.linalg.norm(jacobians, axis=-2).max(axis=(1, 2))
    scale = np.where(h > 0, h, 1.0) ** points.shape[1]
    return np.linalg.det(jacobians) / scale[:, None]


def _check_bar_lengths(points: np.ndarray, cells: np.ndarray, name: str) -> None:
    """Raise if a bar (1D cell) has zero length: ``L ≤ DEGENERATE_TOLERANCE`` times the
    mesh's extent."""
    lengths = np.linalg.norm(points[cells[:, 1]] - points[cells[:, 0]], axis=1)
    extent = max(float(np.ptp(points, axis=0).max()), 1e-300)
    bad = np.flatnonzero(lengths <= DEGENERATE_TOLERANCE * extent)
    if len(bad):
        raise DegenerateElementError(
            f"{len(bad)} of {len(cells)} {name} cells are invalid: zero length "
            f"(both ends on the same point): ids {_listed(bad)}", bad)


#: Cells whose Jacobians :func:`check_element_quality` evaluates at once.
_QUALITY_BLOCK = 20_000


def check_element_quality(points: np.ndarray, cells: np.ndarray, name: str) -> None:
    """Raise if any cell is inverted or degenerate.

    The Jacobian determinant is checked where the cell type's criterion says (see
    ``_RULES``: corners of linear cells, nodes of quadratic ones, integration points of
    quadrilaterals and hexahedra). A cell is *inverted* if it is negative at one of those
    points (clockwise node order in 2D, mirrored in 3D, a non-convex or twisted cell, a
    misplaced mid-side node), and *degenerate* if ``|det J|`` is below
    ``DEGENERATE_TOLERANCE * h**dim`` there (collapsed edges or faces).

    Parameters
    ----------
    points : numpy.ndarray
        Node coordinates ``(n_points, dim)``.
    cells : numpy.ndarray
        Connectivity ``(n_cells, n_nodes_per_cell)``, int64, every id a node.
    name : str
        The fesens name of the cell type (``"hex8"``).

    Raises
    ------
    DegenerateElementError
        Names the rule that refused each group of cells and lists their first ids; all
        are in ``.cell_ids``.
    """
    if cell_type(name).dim == 1:
        return _check_bar_lengths(points, cells, name)
    problems, bad = [], []
    n_cells = len(cells)
    refused = np.zeros(n_cells, dtype=bool)
    for rule in _RULES[name]:
        # in blocks of cells: the Jacobians of all points of a large mesh at once would
        # need ~2 kB per hex8 cell of temporaries
        worst = np.concatenate([
            jacobian_ratios(points, cells[start:start + _QUALITY_BLOCK], name, rule).min(axis=1)
            for start in range(0, n_cells, _QUALITY_BLOCK)])
        where = "at a node" if rule == "node" else f"at an {rule}" if rule[0] == "i" \
            else f"at a {rule}"
        inverted = np.flatnonzero((worst < -DEGENERATE_TOLERANCE) & ~refused)
        refused[inverted] = True
        degenerate = np.flatnonzero((np.abs(worst) <= DEGENERATE_TOLERANCE) & ~refused
                                    & (rule != "node"))
        refused[degenerate] = True
        if len(inverted):
            problems.append(
                f"{len(inverted)} inverted (negative Jacobian determinant {where}; clockwise "
                f"or mirrored node order, a non-convex or twisted cell, or a misplaced "
                f"mid-side node): ids {_listed(inverted)}"
            )
        if len(degenerate):
            problems.append(f"{len(degenerate)} degenerate (zero Jacobian determinant {where}): "
                            f"ids {_listed(degenerate)}")
        bad += [inverted, degenerate]
    if not problems:
        return
    bad = np.unique(np.concatenate(bad))
    raise DegenerateElementError(
        f"{len(bad)} of {n_cells} {name} cells are invalid: " + "; ".join(problems),
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


def checked_connectivity(cells, n_points: int) -> np.ndarray:
    """The connectivity ``(n_cells, n_nodes_per_cell)`` as int64, every id a node.

    Integer ids, or floats that are whole numbers, are accepted.

    Raises
    ------
    MeshError
        Ids that are not whole numbers, or outside ``0 .. n_points - 1`` (a negative id
        would wrap around to the last nodes): the message names the first offending cell,
        its id and how many cells are affected.
    """
    array = np.asarray(cells)
    if array.ndim != 2:
        raise MeshError(f"cells must be a 2-D array (n_cells, n_nodes), got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.integer):
        if not np.issubdtype(array.dtype, np.floating):
            raise MeshError(f"cells must hold integer node ids, got dtype {array.dtype}")
        whole = np.isfinite(array) & (array == np.round(array))
        if not whole.all():
            cell, node = np.argwhere(~whole)[0]
            raise MeshError(f"cells must hold integer node ids: cell {cell} has "
                            f"{float(array[cell, node]):g}")
    outside = (array < 0) | (array >= n_points)
    bad_cells = np.flatnonzero(outside.any(axis=1))
    if len(bad_cells):
        cell = bad_cells[0]
        node = array[cell][outside[cell]][0]
        raise MeshError(
            f"cells refer to node ids outside 0..{n_points - 1}; offending cells: "
            f"{_listed(bad_cells)} (cell {cell} refers to node {node:g}; the mesh has "
            f"{n_points} nodes)")
    return np.ascontiguousarray(array, dtype=np.int64)


def checked_facet_set(name: str, facet_set: FacetSet, cells_name: str, n_points: int,
                      n_cells: int) -> FacetSet:
    """Validate a facet set against a mesh of ``n_points`` nodes and ``n_cells`` cells of
    type ``cells_name`` and return it with int64 arrays.

    Raises
    ------
    MeshError
        Wrong facet type or node count, node or owner ids out of range, or an owner
        array whose length differs from the number of facets.
    """
    what = f"facet set {name!r}"
    expected = cell_type(cell_type(cells_name).facet_type)
    if cell_type(facet_set.facet_type).name != expected.name:
        raise MeshError(
            f"{what} holds {facet_set.facet_type} facets; "
            f"{cells_name} cells have {expected.name} facets"
        )
    facets = np.asarray(facet_set.facets)
    if facets.size == 0:
        facets = facets.reshape(0, expected.n_nodes)
    facets = checked_ids(what, facets, n_points, ndim=2)
    if facets.shape[1] != expected.n_nodes:
        raise MeshError(
            f"{what} must have shape (n_facets, {expected.n_nodes}), got {facets.shape}"
        )
    owners = facet_set.cells
    if owners is not None:
        owners = checked_ids(f"owner cells of {what}", owners, n_cells)
        if owners.shape != (len(facets),):
            raise MeshError(
                f"{what} has {len(facets)} facets but owner cells of shape {owners.shape}"
            )
    return type(facet_set)(expected.name, facets, owners)

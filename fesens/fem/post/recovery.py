"""Nodal values of a field known at the quadrature points (stresses, fluxes).

Two recoveries, generic over the element type (written from the reference element's data):

* **Superconvergent patch recovery** (SPR; Zienkiewicz & Zhu, "The superconvergent patch
  recovery and a posteriori error estimates. Part 1", IJNME 33 (1992) 1331–1364). For each
  vertex node, its *patch* is the cells around it. A complete polynomial of the element's
  degree ``p`` in the physical coordinates (``p = 1``: tri3, quad4, tet4, hex8; ``p = 2``:
  the quadratic elements) is fitted by least squares to the values at the sampling (=
  quadrature) points of the patch, and evaluated at every node of the patch. Patches of
  interior vertices give every node of theirs a value, boundary nodes included (the
  recommendation of ZZ: boundary values from interior patches); a node that gets values
  from several patches takes their mean. A node no interior patch reaches (e.g. a
  corner of a triangle mesh) takes the fit over the cells within two layers around it,
  and, with too few sampling points there, the extrapolated values below. The
  recovered field of a polynomial of degree ``p`` (e.g. the constant stress of a linear
  displacement) is exact.
* **Extrapolation** from the quadrature points of each cell: a polynomial in the
  reference coordinates (complete of degree ``d`` on simplices, of degree ``d`` in each
  variable on quadrilaterals/hexahedra, the largest ``d`` the points determine: constant
  for one point, linear for tri6/tet10, (bi/tri)linear for 2 x 2 (x 2) Gauss points,
  (bi/tri)quadratic for 3 x 3 (x 3)) fitted to the cell's quadrature values and evaluated
  at the cell's nodes, then averaged over the cells at each node.
"""

from __future__ import annotations

from itertools import product

import numpy as np
import scipy.sparse as sp

from fesens.fem.elements.base import ReferenceElement
from fesens.mesh.cell_types import cell_type
from fesens.mesh.mesh import Mesh

#: Patches fitted in one batch (the batched least-squares arrays hold about 10 kB per
#: patch in 3D, so a million-cell mesh is fitted in ~50 batches of ~200 MB).
_PATCHES_PER_FIT = 20_000


def is_simplex(element: ReferenceElement) -> bool:
    """True for an element on the unit simplex, False on ``[-1, 1]^d``."""
    return bool(element.nodes.min() >= 0.0)


def _exponents(dim: int, degree: int, tensor: bool) -> np.ndarray:
    """Monomial exponents ``(n_terms, dim)``: total degree ``≤ degree`` or, ``tensor``,
    degree ``≤ degree`` in each variable."""
    powers = [e for e in product(range(degree + 1), repeat=dim)
              if tensor or sum(e) <= degree]
    return np.array(sorted(powers, key=lambda e: (sum(e), e[::-1])), dtype=int)


def _monomials(x: np.ndarray, exponents: np.ndarray) -> np.ndarray:
    """``Π_k x_k^e_k`` for points ``(..., dim)`` → ``(..., n_terms)``."""
    return np.prod(x[..., None, :] ** exponents, axis=-1)


def extrapolation_matrix(element: ReferenceElement, xi: np.ndarray) -> np.ndarray:
    """``E`` ``(n_nodes, n_qp)``: nodal values ``E @ a_q`` of the polynomial fitted to
    quadrature values ``a_q`` at reference points ``xi`` ``(n_qp, dim)`` (module docstring).
    """
    tensor = not is_simplex(element)
    best = np.ones((element.n_nodes, 1)) / len(xi)
    for degree in range(1, 4):
        exponents = _exponents(element.dim, degree, tensor)
        if len(exponents) > len(xi):
            break
        A = _monomials(xi, exponents)
        if np.linalg.matrix_rank(A) < len(exponents):
            break
        best = _monomials(element.nodes, exponents) @ np.linalg.pinv(A)
    return best


def extrapolated_cell_values(element: ReferenceElement, xi: np.ndarray,
                             values: np.ndarray) -> np.ndarray:
    """Values at each cell's nodes ``(n_cells, n_nodes, ...)`` from quadrature values
    ``(n_cells, n_qp, ...)`` (:func:`extrapolation_matrix`)."""
    return np.einsum("aq,eq...->ea...", extrapolation_matrix(element, xi), values)


def nodal_mean(cells: np.ndarray, cell_node_values: np.ndarray, n_points: int) -> np.ndarray:
    """Unweighted mean over the cells at each node of per-cell nodal values
    ``(n_cells, n_nodes, ...)`` → ``(n_points, ...)`` (NaN at nodes of no cell)."""
    tail = cell_node_values.shape[2:]
    flat = cell_node_values.reshape(cells.size, -1)
    total = np.zeros((n_points, flat.shape[1]))
    np.add.at(total, cells.ravel(), flat)
    count = np.bincount(cells.ravel(), minlength=n_points).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (total / count[:, None]).reshape(n_points, *tail)


def element_degree(mesh: Mesh) -> int:
    """Polynomial degree of the cells: 1 with corner nodes only, else 2."""
    info = cell_type(mesh.cell_type)
    return 1 if info.n_nodes == info.n_corners else 2


def boundary_vertices(mesh: Mesh) -> np.ndarray:
    """Boolean mask ``(n_points,)`` of the nodes on a boundary facet."""
    mask = np.zeros(mesh.n_points, dtype=bool)
    mask[mesh.boundary_facets().facets.ravel()] = True
    return mask


def patch_recovery(mesh: Mesh, x_qp: np.ndarray, values: np.ndarray,
                   fallback: np.ndarray, points: np.ndarray | None = None) -> np.ndarray:
    """SPR nodal values ``(n_points, ...)`` (module docstring).

    Parameters
    ----------
    mesh : Mesh
    x_qp : numpy.ndarray
        Physical sampling points ``(n_cells, n_qp, dim)``.
    values : numpy.ndarray
        Values there, ``(n_cells, n_qp, ...)``.
    fallback : numpy.ndarray
        Nodal values ``(n_points, ...)`` for nodes no patch fit reaches (extrapolated).
    points : numpy.ndarray, optional
        Node coordinates ``(n_points, dim)`` replacing ``mesh.points`` (moved nodes).
    """
    coords = mesh.points if points is None else np.asarray(points, dtype=float)
    n_cells, n_qp = values.shape[:2]
    flat = values.reshape(n_cells, n_qp, -1)
    exponents = _exponents(mesh.dim, element_degree(mesh), tensor=False)
    n_corners = cell_type(mesh.cell_type).n_corners
    corner_ids = mesh.cells[:, :n_corners]
    node_cells = sp.csr_matrix(
        (np.ones(corner_ids.size), (corner_ids.ravel(), np.repeat(np.arange(n_cells),
                                                                  n_corners))),
        shape=(mesh.n_points, n_cells))
    node_cells.sum_duplicates()
    sizes = np.diff(node_cells.indptr)
    interior = ~boundary_vertices(mesh)
    coefficients = np.full((mesh.n_points, len(exponents), flat.shape[2]), np.nan)
    scales = np.ones(mesh.n_points)
    sums = np.zeros((mesh.n_points, flat.shape[2]))
    counts = np.zeros(mesh.n_points)
    for size in np.unique(sizes[sizes > 0]):
        same_size = np.flatnonzero((sizes == size) & interior)
        # patches in chunks: the batched fits hold about 10 kB per patch (3D)
        for vertices in np.array_split(same_size, max(1, -(-same_size.size // _PATCHES_PER_FIT))):
            _fit_and_spread(mesh, coords, x_qp, flat, exponents, vertices, node_cells, size,
                            coefficients, scales, sums, counts)
    out = fallback.reshape(mesh.n_points, -1).copy()

    reached = counts > 0
    out[reached] = sums[reached] / counts[reached, None]
    missed = np.flatnonzero(~reached & (np.bincount(mesh.cells.ravel(),
                                                    minlength=mesh.n_points) > 0))
    if missed.size:
        out[missed] = _wide_patch_values(mesh, coords, x_qp, flat, exponents, missed, out[missed])
    return out.reshape(mesh.n_points, *values.shape[2:])


def _fit_and_spread(mesh, coords, x_qp, flat, exponents, vertices, node_cells, size,
                    coefficients, scales, sums, counts) -> None:
    """Fit the patches of ``vertices`` (all of ``size`` cells) and add each fit's values at
    the nodes of its patch to ``sums`` and ``counts`` (in place)."""
    if vertices.size == 0:
        return
    patch_cells = node_cells.indices[node_cells.indptr[vertices][:, None]
                                     + np.arange(size)]  # (P, size)
    fitted, scale = _fit(mesh, coords, x_qp, flat, exponents, vertices, patch_cells)
    coefficients[vertices], scales[vertices] = fitted, scale
    good = ~np.isnan(fitted[:, 0, 0])
    if not good.any():
        return
    # every node of the patch, once per patch
    nodes = np.sort(mesh.cells[patch_cells[good]].reshape(int(good.sum()), -1), axis=1)
    first = np.ones(nodes.shape, dtype=bool)
    first[:, 1:] = nodes[:, 1:] != nodes[:, :-1]
    owner = np.broadcast_to(vertices[good][:, None], nodes.shape)[first]
    ids = nodes[first]
    np.add.at(sums, ids, _evaluate(coords, coefficients, scales, owner, ids, exponents))
    counts += np.bincount(ids, minlength=mesh.n_points)


def _fit(mesh, coords, x_qp, flat, exponents, vertices, patch_cells):
    """Least-squares coefficients ``(P, n_terms, n_comp)`` (NaN for a patch with too few
    or degenerate sampling points) and length scales ``(P,)`` of the patches of
    ``vertices`` ``(P,)``, all with the same number of cells ``patch_cells`` ``(P, k)``."""
    n_patches = len(vertices)
    xs = x_qp[patch_cells].reshape(n_patches, -1, mesh.dim) - coords[vertices][:, None]
    scale = np.abs(xs).max(axis=(1, 2))
    A = _monomials(xs / scale[:, None, None], exponents)  # (P, S, T)
    b = flat[patch_cells].reshape(n_patches, -1, flat.shape[2])  # (P, S, C)
    coefficients = np.full((n_patches, len(exponents), flat.shape[2]), np.nan)
    if A.shape[1] < A.shape[2]:
        return coefficients, scale
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    good = s[:, -1] > 1e-8 * s[:, 0]
    # Vᵀ diag(1/s) Uᵀ b, per patch
    projected = np.matmul(U[good].transpose(0, 2, 1), b[good]) / s[good][:, :, None]
    coefficients[good] = np.matmul(Vt[good].transpose(0, 2, 1), projected)
    return coefficients, scale


def _wide_patch_values(mesh, coords, x_qp, flat, exponents, nodes, default):
    """Values at ``nodes`` no interior patch reaches (e.g. a corner of a triangle mesh):
    the fit over the cells within two layers around each node (``default`` where those
    are too few)."""
    incidence = sp.csr_matrix((np.ones(mesh.cells.size), (mesh.cells.ravel(), np.repeat(
        np.arange(mesh.n_cells), mesh.cells.shape[1]))), shape=(mesh.n_points, mesh.n_cells))
    layers = (incidence[nodes] @ incidence.T @ incidence).tocsr()
    out = default.copy()
    for k, node in enumerate(nodes):
        cells = layers.indices[layers.indptr[k]:layers.indptr[k + 1]]
        fitted, scale = _fit(mesh, coords, x_qp, flat, exponents, np.array([node]), cells[None, :])
        if not np.isnan(fitted[0, 0, 0]):
            out[k] = fitted[0, 0]  # the constant term: the fit at the node itself
    return out


def _evaluate(coords, coefficients, scales, vertices, nodes, exponents):
    """The fit of the patch of each of ``vertices`` ``(n,)`` at ``nodes`` ``(n,)``."""
    local = (coords[nodes] - coords[vertices]) / scales[vertices][:, None]
    return np.einsum("nt,ntc->nc", _monomials(local, exponents), coefficients[vertices])

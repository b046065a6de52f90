"""Boundary (facet) matrices carried by the cells that own the facets: Robin terms.

A Robin condition ``h (u − u∞)`` on boundary facets adds ``h ∫_Γ N Nᵀ dS`` to the stiffness.
Every boundary facet belongs to one cell and its nodes are nodes of that cell, so the facet
matrix is one more *cell* matrix ``K⁽ʰ⁾_e`` (zero in cells without such facets): it joins
the cached-pattern assembly (:class:`~fesens.fem.assembly.assembler.Assembler`) as a component whose
coefficient is ``h`` and leaves the sparsity pattern unchanged (it is built once per mesh). The
matrices are traced functions of the node coordinates (shape sensitivities).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fesens.ad.numpy_wrapper import untake
from fesens.errors import BoundaryConditionError
from fesens.fem.elements import reference_element
from fesens.fem.integrals.geometry import facet_geometry
from fesens.mesh.cell_types import cell_type
from fesens.mesh.mesh import FacetSet, Mesh


@dataclass(frozen=True)
class OwnedFacets:
    """Boundary facets with the cell that owns each and their nodes' places in it.

    Attributes
    ----------
    facets : FacetSet
        The facets, with ``cells`` set to the owners.
    local : numpy.ndarray
        ``(n_facets, n_facet_nodes)``: position of each facet node in its owner's node list.
    """

    facets: FacetSet
    local: np.ndarray


def owned_boundary_facets(mesh: Mesh, facet_set: FacetSet, what: str) -> OwnedFacets:
    """Match the facets of ``facet_set`` to the mesh boundary and to their owner cells.

    Parameters
    ----------
    mesh : Mesh
    facet_set : FacetSet
    what : str
        Names the condition in error messages (e.g. ``"convection 'top'"``).

    Raises
    ------
    BoundaryConditionError
        An empty set, facets of the wrong type, or facets that are not on the boundary of
        the mesh (interior facets, or facets of another mesh); the message counts them.
    """
    if len(facet_set) == 0:
        raise BoundaryConditionError(f"{what}: the facet set is empty")
    boundary = mesh.boundary_facets()
    if facet_set.facet_type != boundary.facet_type:
        raise BoundaryConditionError(
            f"{what}: facets of type {facet_set.facet_type}, but the boundary of this "
            f"{mesh.cell_type} mesh has {boundary.facet_type} facets")
    n_corners = cell_type(boundary.facet_type).n_corners
    keys = np.sort(np.concatenate([boundary.facets[:, :n_corners],
                                   facet_set.facets[:, :n_corners]]), axis=1)
    _, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    position = np.full(inverse.max() + 1, -1, dtype=np.int64)
    position[inverse[:len(boundary)]] = np.arange(len(boundary))
    match = position[inverse[len(boundary):]]
    if np.any(match < 0):
        bad = np.flatnonzero(match < 0)
        raise BoundaryConditionError(
            f"{what}: {bad.size} of {len(facet_set)} facets are not on the boundary of the "
            f"mesh (interior facets, e.g. with nodes {facet_set.facets[bad[0]].tolist()}); "
            "a boundary condition needs a set of boundary facets")
    owners = boundary.cells[match]
    cells = mesh.cells[owners]
    local = np.argmax(cells[:, None, :] == facet_set.facets[:, :, None], axis=2)
    return OwnedFacets(FacetSet(facet_set.facet_type, facet_set.facets, owners), local)


def facet_mass_cell_matrices(mesh: Mesh, owned: OwnedFacets, thickness: float = 1.0,
                             points=None):
    """``t ∫_Γ N_a N_b dS`` of the facets, added into their owners' cell matrices.

    Parameters
    ----------
    mesh : Mesh
    owned : OwnedFacets
        From :func:`owned_boundary_facets`.
    thickness : float
        Out-of-plane thickness ``t`` (2D).
    points : array, optional
        Node coordinates ``(n_points, dim)``, possibly traced (default: the mesh's).

    Returns
    -------
    array
        ``(n_cells, n_cell_nodes, n_cell_nodes)`` (one scalar unknown per node), zero in
        cells that own none of the facets; traced when ``points`` is.
    """
    facets = owned.facets
    element = reference_element(facets.facet_type)
    geom = facet_geometry(mesh, facets, order=element.mass_order, points=points)
    mass = np.einsum("fq,qa,qb->fab", geom.dS * thickness, geom.N, geom.N)
    n_cells, nd = mesh.cells.shape
    index = (facets.cells[:, None, None] * nd * nd + owned.local[:, :, None] * nd
             + owned.local[:, None, :])
    return np.reshape(untake(np.ravel(mass), index.ravel(), (n_cells * nd * nd,)),
                      (n_cells, nd, nd))

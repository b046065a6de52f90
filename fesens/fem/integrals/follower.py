"""Follower pressure: a pressure on the deformed boundary, along its current normal.

A pressure ``p`` on the current (deformed) facet pushes along the current outward normal
``n``: the nodal forces are ``f_a = −∫_γ p N_a n da``. With the facet parametrised by its
reference coordinates ``ξ`` (an edge, 2D) or ``(ξ, η)`` (a face, 3D) and the current node
positions ``x = X + u``, ``n da = ∂x/∂ξ × ∂x/∂η dξ dη`` (3D) and ``n da = rot(∂x/∂ξ) t dξ``
(2D, per unit thickness ``t``, ``rot(a) = (a_y, −a_x)``), so (Bonet & Wood, *Nonlinear
Continuum Mechanics for Finite Element Analysis*, 2nd ed., 2008, §8.4.1: "Follower
pressure")

    f_a = −Σ_q w_q p N_a(ξ_q) s (∂x/∂ξ × ∂x/∂η)(ξ_q)        (3D)
    f_a = −t Σ_q w_q p N_a(ξ_q) s rot(∂x/∂ξ)(ξ_q)           (2D)

with ``s = ±1`` the orientation that makes the normal outward (fixed from the reference
coordinates: a facet does not turn inside out). The forces are a function of the facet's
current node positions (linear in 2D, quadratic in 3D), so the residual ``R = F_int − f``
gets the load stiffness ``−∂f/∂x``:

    ∂f_a/∂x_b = −Σ_q w_q p N_a s (∂N_b/∂η [∂x/∂ξ]_× − ∂N_b/∂ξ [∂x/∂η]_×)   (3D)
    ∂f_a/∂x_b = −t Σ_q w_q p N_a s ∂N_b/∂ξ Rot,  Rot = [[0, 1], [−1, 0]]    (2D)

(``[a]_×`` the cross-product matrix, ``[a]_× b = a × b``). It is not symmetric on an open
surface (on a closed one, or one whose boundary is fixed, the pressure has a potential
``p V`` and its symmetric part is all that acts).

Functions of this module are physics-agnostic geometry: they know facets, node positions
and a pressure, not what the unknowns mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fesens.fem.elements import reference_element
from fesens.fem.integrals.facets import OwnedFacets, owned_boundary_facets
from fesens.fem.integrals.geometry import facet_inward_directions
from fesens.mesh.mesh import FacetSet, Mesh

#: ``rot(a) = Rot a = (a_y, −a_x)``: the outward normal of an edge run counter-clockwise.
_ROT = np.array([[0.0, 1.0], [-1.0, 0.0]])


@dataclass(frozen=True)
class FollowerFacets:
    """Boundary facets under a follower pressure, with their quadrature.

    Attributes
    ----------
    owned : OwnedFacets
        The facets, their owner cells and their nodes' places in them.
    weighted_N : numpy.ndarray
        ``w_q N_a(ξ_q)``, ``(n_qp, n_facet_nodes)``.
    dN : numpy.ndarray
        ``∂N_a/∂ξ`` at the quadrature points, ``(n_qp, n_facet_nodes, dim − 1)``.
    orientation : numpy.ndarray
        ``s = ±1`` per facet, ``(n_facets,)``: the sign that turns the facet's raw normal
        outward.
    """

    owned: OwnedFacets
    weighted_N: np.ndarray
    dN: np.ndarray
    orientation: np.ndarray

    @property
    def nodes(self) -> np.ndarray:
        """The facets' nodes, ``(n_facets, n_facet_nodes)``."""
        return self.owned.facets.facets


def follower_facets(mesh: Mesh, facet_set: FacetSet, what: str) -> FollowerFacets:
    """The boundary facets of ``facet_set`` with their owners, quadrature and outward
    orientation (from the mesh's coordinates: away from the inside of the owner cell, by
    its Jacobian at the facet's points, which holds for curved cells).

    Raises
    ------
    BoundaryConditionError
        An empty set or facets that are not on the boundary (as
        :func:`~fesens.fem.integrals.facets.owned_boundary_facets`).
    """
    owned = owned_boundary_facets(mesh, facet_set, what)
    element = reference_element(facet_set.facet_type)
    xi, w = element.quadrature(element.mass_order)
    N, dN = element.shape(xi), element.shape_gradients(xi)
    x = mesh.points[owned.facets.facets]  # (n_f, n_fn, dim)
    normal = _raw_normals(x, dN)  # (n_f, n_qp, dim)
    # one sign per facet, from directions into the owner cell through its Jacobian: a
    # corner centroid can lie outside a curved quadratic cell and flip the normal
    inward = facet_inward_directions(mesh, owned.facets, xi)
    outward = -np.einsum("fqi,fqi->f", normal, inward)
    return FollowerFacets(owned, w[:, None] * N, dN, np.where(outward < 0, -1.0, 1.0))


def _raw_normals(x, dN):
    """``∂x/∂ξ × ∂x/∂η`` (3D) or ``rot(∂x/∂ξ)`` (2D) at the quadrature points, ``(n_f,
    n_qp, dim)``, of node positions ``x`` ``(n_f, n_fn, dim)`` (traced when ``x`` is)."""
    tangents = np.einsum("fai,qaj->fqij", x, dN)  # (n_f, n_qp, dim, dim − 1)
    if np.shape(x)[-1] == 2:
        return np.einsum("ij,fqj->fqi", _ROT, tangents[..., 0])
    return np.cross(tangents[..., 0], tangents[..., 1])


def follower_forces(facets: FollowerFacets, x, p, thickness: float = 1.0):
    """The nodal forces ``f_a = −∫_γ p N_a n da`` of a follower pressure.

    Parameters
    ----------
    facets : FollowerFacets
    x : array
        Current node positions of the facets, ``(n_facets, n_facet_nodes, dim)``; traced
        or plain.
    p : array
        Pressure per facet (positive pushes into the body), ``(n_facets,)``; traced or
        plain.
    thickness : float
        Out-of-plane thickness (2D).

    Returns
    -------
    array
        ``(n_facets, n_facet_nodes, dim)``; traced when ``x`` or ``p`` is.
    """
    return -thickness * np.einsum("f,qa,fqi->fai", facets.orientation * p,
                                  facets.weighted_N, _raw_normals(x, facets.dN))


def follower_stiffness(facets: FollowerFacets, x: np.ndarray, p: np.ndarray,
                       thickness: float = 1.0) -> np.ndarray:
    """The load stiffness ``∂f_a/∂x_b`` of :func:`follower_forces` (plain arrays).

    Parameters
    ----------
    facets : FollowerFacets
    x : numpy.ndarray
        Current node positions, ``(n_facets, n_facet_nodes, dim)``.
    p : numpy.ndarray
        Pressure per facet, ``(n_facets,)``.
    thickness : float

    Returns
    -------
    numpy.ndarray
        ``(n_facets, n_facet_nodes, dim, n_facet_nodes, dim)``, ``[f, a, i, b, j] =
        ∂f_ai/∂x_bj``; not symmetric.
    """
    scale = -thickness * facets.orientation * p  # (n_f,)
    dim = x.shape[-1]
    if dim == 2:
        # ∂rot(∂x/∂ξ)/∂x_b = ∂N_b/∂ξ Rot
        return np.einsum("f,qa,qb,ij->faibj", scale, facets.weighted_N, facets.dN[..., 0],
                         _ROT)
    tangents = np.einsum("fai,qaj->fqij", x, facets.dN)
    cross_xi, cross_eta = _cross_matrix(tangents[..., 0]), _cross_matrix(tangents[..., 1])
    # ∂(a × c)/∂x_b = ∂N_b/∂η [a]_× − ∂N_b/∂ξ [c]_×, a = ∂x/∂ξ, c = ∂x/∂η
    d_normal = (np.einsum("qb,fqij->fqbij", facets.dN[..., 1], cross_xi)
                - np.einsum("qb,fqij->fqbij", facets.dN[..., 0], cross_eta))
    return np.einsum("f,qa,fqbij->faibj", scale, facets.weighted_N, d_normal)


def _cross_matrix(a: np.ndarray) -> np.ndarray:
    """``[a]_×`` ``(..., 3, 3)`` with ``[a]_× b = a × b``, of ``a`` ``(..., 3)``."""
    out = np.zeros((*a.shape, 3))
    out[..., 0, 1], out[..., 0, 2] = -a[..., 2], a[..., 1]
    out[..., 1, 0], out[..., 1, 2] = a[..., 2], -a[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -a[..., 1], a[..., 0]
    return out

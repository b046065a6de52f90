"""The :class:`ReferenceElement` and the shape-function families its instances share.

Families (all vectorised over points ``xi`` of shape ``(n_points, dim)``):

* ``simplex_p1``: linear Lagrange on the unit simplex, ``N_a = λ_a`` (barycentric).
* ``simplex_p2``: quadratic Lagrange on the unit simplex, corners ``λ_a (2 λ_a - 1)``,
  mid-edge nodes ``4 λ_a λ_b`` for each edge ``(a, b)``.
* ``tensor_q1``: multilinear Lagrange on ``[-1, 1]^d``, ``N_a = Π_k (1 + ξ_k ξ_(a,k)) / 2``.
* ``tensor_q2``: triquadratic (biquadratic) Lagrange on ``[-1, 1]^d``,
  ``N_a = Π_k L_(a,k)(ξ_k)`` with the 1D quadratics ``L = ξ (ξ + ξ_a) / 2`` at the ends
  ``ξ_a = ±1`` and ``L = 1 - ξ²`` at the midpoint ``ξ_a = 0``.
* ``serendipity_2``: quadratic serendipity on ``[-1, 1]^d`` (corners and mid-edge nodes;
  Zienkiewicz & Taylor, *The Finite Element Method*, vol. 1, §8.7), corners
  ``N_a = Π_k (1 + ξ_k ξ_(a,k)) / 2 · (Σ_k ξ_k ξ_(a,k) - d + 1)``, mid-edge nodes
  (``ξ_(a,m) = 0``) ``N_a = (1 - ξ_m²) Π_(k≠m) (1 + ξ_k ξ_(a,k)) / 2``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from fesens.fem.elements.quadrature import Rule
from fesens.mesh.cell_types import CENTRE_NODES, MIDSIDE_EDGES


@dataclass(frozen=True, eq=False)
class ReferenceElement:
    """A Lagrange finite element on its reference domain.

    Attributes
    ----------
    name : str
        fesens cell-type name (see :mod:`fesens.mesh.cell_types`).
    nodes : numpy.ndarray
        Reference coordinates of the nodes, ``(n_nodes, dim)``, VTK/meshio order (read-only).
    default_order : int
        Quadrature order of the stiffness matrix: integrates ``∇N_a · ∇N_b`` exactly on an
        affine cell (degree ``2 (p - 1)``, at least 1), hence also ``∫ N_a b`` for a constant
        ``b``.
    mass_order : int
        Quadrature order integrating ``N_a N_b`` exactly on an affine cell (degree ``2 p``),
        hence also the consistent load of any traction or body force interpolated by the
        element's own shape functions (in particular linear ones).
    basis : callable
        ``xi (n_points, dim) -> N (n_points, n_nodes)``; unchecked, use :meth:`shape`.
    basis_gradients : callable
        ``xi (n_points, dim) -> dN/dξ (n_points, n_nodes, dim)``; unchecked.
    rule : callable
        ``order -> (points (n_qp, dim), weights (n_qp,))`` on the reference domain.
    """

    name: str
    nodes: np.ndarray = field(repr=False)
    default_order: int
    mass_order: int
    basis: Callable[[np.ndarray], np.ndarray] = field(repr=False)
    basis_gradients: Callable[[np.ndarray], np.ndarray] = field(repr=False)
    rule: Callable[[int], Rule] = field(repr=False)

    def __post_init__(self) -> None:
        nodes = np.array(self.nodes, dtype=float)
        nodes.setflags(write=False)
        object.__setattr__(self, "nodes", nodes)

    @property
    def dim(self) -> int:
        """Reference (topological) dimension."""
        return self.nodes.shape[1]

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return self.nodes.shape[0]

    def shape(self, xi: np.ndarray) -> np.ndarray:
        """Shape functions at reference points ``xi`` ``(n_points, dim)``.

        Returns
        -------
        numpy.ndarray
            ``N``, shape ``(n_points, n_nodes)``.
        """
        return self.basis(self._checked_points(xi))

    def shape_gradients(self, xi: np.ndarray) -> np.ndarray:
        """Reference gradients ``∂N_a/∂ξ_j`` at points ``xi`` ``(n_points, dim)``.

        Returns
        -------
        numpy.ndarray
            ``dN``, shape ``(n_points, n_nodes, dim)``.
        """
        return self.basis_gradients(self._checked_points(xi))

    def quadrature(self, order: int | None = None) -> Rule:
        """Quadrature rule on the reference domain, exact to ``order`` (default: stiffness).

        Returns
        -------
        points : numpy.ndarray
            ``(n_qp, dim)``.
        weights : numpy.ndarray
            ``(n_qp,)``, summing to the reference measure.
        """
        return self.rule(self.default_order if order is None else order)

    def _checked_points(self, xi: np.ndarray) -> np.ndarray:
        xi = np.asarray(xi, dtype=float)
        if xi.ndim != 2 or xi.shape[1] != self.dim:
            raise ValueError(
                f"{self.name}: reference points must have shape (n_points, {self.dim}), "
                f"got {xi.shape}"
            )
        return xi


def _barycentric(xi: np.ndarray) -> np.ndarray:
    """``λ``, ``(n_points, dim + 1)``: ``λ_0 = 1 - Σ ξ``, ``λ_k = ξ_k``."""
    return np.column_stack([1 - xi.sum(axis=1), xi])


def _barycentric_gradients(dim: int) -> np.ndarray:
    """``∂λ_a/∂ξ``, ``(dim + 1, dim)``."""
    return np.vstack([-np.ones(dim), np.eye(dim)])


def simplex_p1(xi: np.ndarray) -> np.ndarray:
    """Linear simplex shape functions, ``(n_points, dim + 1)``."""
    return _barycentric(xi)


def simplex_p1_gradients(xi: np.ndarray) -> np.ndarray:
    """Their (constant) gradients, ``(n_points, dim + 1, dim)``."""
    n_points, dim = xi.shape
    return np.repeat(_barycentric_gradients(dim)[None], n_points, axis=0)


def simplex_p2(xi: np.ndarray, edges: Sequence[tuple[int, int]]) -> np.ndarray:
    """Quadratic simplex shape functions, ``(n_points, dim + 1 + n_edges)``."""
    lam = _barycentric(xi)
    a, b = np.array(edges).T
    return np.hstack([lam * (2 * lam - 1), 4 * lam[:, a] * lam[:, b]])


def simplex_p2_gradients(xi: np.ndarray, edges: Sequence[tuple[int, int]]) -> np.ndarray:
    """Their gradients, ``(n_points, dim + 1 + n_edges, dim)``."""
    lam = _barycentric(xi)[:, :, None]
    dlam = _barycentric_gradients(xi.shape[1])
    a, b = np.array(edges).T
    corners = (4 * lam - 1) * dlam
    mids = 4 * (lam[:, a] * dlam[b] + lam[:, b] * dlam[a])
    return np.concatenate([corners, mids], axis=1)


def tensor_q1(xi: np.ndarray, nodes: Sequence[Sequence[float]]) -> np.ndarray:
    """Multilinear shape functions on ``[-1, 1]^d`` with corner ``nodes``, ``(n_points, 2^d)``."""
    return np.prod((1 + xi[:, None, :] * np.asarray(nodes)) / 2, axis=-1)


def tensor_q1_gradients(xi: np.ndarray, nodes: Sequence[Sequence[float]]) -> np.ndarray:
    """Their gradients, ``(n_points, 2^d, d)``: ``ξ_(a,k) / 2 · Π_(j≠k) (1 + ξ_j ξ_(a,j)) / 2``."""
    nodes = np.asarray(nodes)
    factors = (1 + xi[:, None, :] * nodes) / 2
    gradients = np.empty_like(factors)
    for k in range(nodes.shape[1]):
        gradients[..., k] = nodes[:, k] / 2 * np.delete(factors, k, axis=-1).prod(axis=-1)
    return gradients


def tensor_quadratic_nodes(name: str, corners: Sequence[Sequence[float]]) -> np.ndarray:
    """Reference nodes of the quadratic quadrilateral or hexahedron ``name`` (VTK order):
    the ``corners``, the midpoints of :data:`~fesens.mesh.cell_types.MIDSIDE_EDGES`, then
    the centroids of :data:`~fesens.mesh.cell_types.CENTRE_NODES`, ``(n_nodes, dim)``."""
    corners = np.asarray(corners, dtype=float)
    mids = [corners[list(edge)].mean(axis=0) for edge in MIDSIDE_EDGES[name]]
    centres = [corners[list(group)].mean(axis=0) for group in CENTRE_NODES.get(name, ())]
    return np.vstack([corners, *mids, *centres]) if centres else np.vstack([corners, *mids])


def _product_gradients(factors: np.ndarray, derivatives: np.ndarray) -> np.ndarray:
    """``∂/∂ξ_k Π_j f_j(ξ_j) = f_k'(ξ_k) Π_(j≠k) f_j(ξ_j)``, ``(n_points, n_nodes, d)``."""
    gradients = np.empty_like(factors)
    for k in range(factors.shape[-1]):
        gradients[..., k] = derivatives[..., k] * np.delete(factors, k, axis=-1).prod(axis=-1)
    return gradients


def _quadratic_factors(xi: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 1D Lagrange quadratics ``L_(a,k)(ξ_k)`` and their derivatives,
    ``(n_points, n_nodes, d)`` each."""
    x, a = xi[:, None, :], nodes[None]
    factors = np.where(a == 0, 1 - x**2, x * (x + a) / 2)
    derivatives = np.where(a == 0, -2 * x, x + a / 2)
    return factors, derivatives


def tensor_q2(xi: np.ndarray, nodes: Sequence[Sequence[float]]) -> np.ndarray:
    """Tensor-product quadratic Lagrange shape functions, ``(n_points, 3^d)``."""
    return _quadratic_factors(xi, np.asarray(nodes))[0].prod(axis=-1)


def tensor_q2_gradients(xi: np.ndarray, nodes: Sequence[Sequence[float]]) -> np.ndarray:
    """Their gradients, ``(n_points, 3^d, d)``."""
    return _product_gradients(*_quadratic_factors(xi, np.asarray(nodes)))


def _serendipity_factors(
    xi: np.ndarray, nodes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-coordinate factors ``f`` (``(1 + ξ ξ_a) / 2``, or ``1 - ξ²`` where ``ξ_a = 0``),
    their derivatives, the corner factor ``g = Σ ξ_k ξ_(a,k) - d + 1`` (1 at mid-edge nodes)
    ``(n_points, n_nodes)`` and its gradient ``(n_points, n_nodes, d)``."""
    x, a = xi[:, None, :], nodes[None]
    factors = np.where(a == 0, 1 - x**2, (1 + x * a) / 2)
    derivatives = np.where(a == 0, -2 * x, a / 2)
    corner = (nodes != 0).all(axis=1)
    g = np.where(corner, (x * a).sum(axis=-1) - nodes.shape[1] + 1, 1.0)
    dg = np.where(corner[:, None], a, 0.0) * np.ones_like(x)
    return factors, derivatives, g, dg


def serendipity_2(xi: np.ndarray, nodes: Sequence[Sequence[float]]) -> np.ndarray:
    """Quadratic serendipity shape functions, ``(n_points, n_nodes)`` (8 in 2D, 20 in 3D)."""
    factors, _, g, _ = _serendipity_factors(xi, np.asarray(nodes))
    return factors.prod(axis=-1) * g


def serendipity_2_gradients(xi: np.ndarray, nodes: Sequence[Sequence[float]]) -> np.ndarray:
    """Their gradients, ``(n_points, n_nodes, d)``: product rule on ``Π_k f_k · g``."""
    factors, derivatives, g, dg = _serendipity_factors(xi, np.asarray(nodes))
    return _product_gradients(factors, derivatives) * g[..., None] + \
        factors.prod(axis=-1)[..., None] * dg

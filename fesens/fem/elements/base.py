"""The :class:`ReferenceElement` and the shape-function families its instances share.

Families (all vectorised over points ``xi`` of shape ``(n_points, dim)``):

* ``simplex_p1``: linear Lagrange on the unit simplex, ``N_a = λ_a`` (barycentric).
* ``simplex_p2``: quadratic Lagrange on the unit simplex, corners ``λ_a (2 λ_a - 1)``,
  mid-edge nodes ``4 λ_a λ_b`` for each edge ``(a, b)``.
* ``tensor_q1``: multilinear Lagrange on ``[-1, 1]^d``, ``N_a = Π_k (1 + ξ_k ξ_(a,k)) / 2``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from fesens.fem.quadrature import Rule


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

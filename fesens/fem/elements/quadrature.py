"""Quadrature rules on the reference domains of the fesens elements.

Every rule returns ``(points, weights)``: reference points ``(n_qp, dim)`` and positive
weights ``(n_qp,)`` that sum to the measure of the reference domain.

Reference domains (consistent with :mod:`fesens.mesh.cell_types`):

* line ``[-1, 1]``, quadrilateral ``[-1, 1]^2``, hexahedron ``[-1, 1]^3``
  (Gauss-Legendre and its tensor products; measures 2, 4, 8);
* unit triangle ``(0,0), (1,0), (0,1)`` (area 1/2) and unit tetrahedron
  ``(0,0,0), (1,0,0), (0,1,0), (0,0,1)`` (volume 1/6), symmetric rules;
* a point (``dim = 0``, measure 1), the facet of a line.

``order`` is the polynomial degree integrated exactly: the total degree on simplices, the
degree in each variable separately on lines, quadrilaterals and hexahedra. Each function
returns the cheapest tabulated rule that reaches the requested order.
"""

from __future__ import annotations

import operator
from itertools import permutations
from math import sqrt

import numpy as np

#: ``(points (n_qp, dim), weights (n_qp,))``.
Rule = tuple[np.ndarray, np.ndarray]


# Generators of the symmetric orbits, as barycentric coordinates.
def _aab(a: float) -> tuple[float, ...]:
    return (a, a, 1 - 2 * a)


def _abc(a: float, b: float) -> tuple[float, ...]:
    return (a, b, 1 - a - b)


def _aaab(a: float) -> tuple[float, ...]:
    return (a, a, a, 1 - 3 * a)


def _aabb(a: float) -> tuple[float, ...]:
    return (a, a, 1 / 2 - a, 1 / 2 - a)


# Symmetric simplex rules as (weight, barycentric generator) pairs; every distinct permutation
# of a generator is a point with that weight. Weights are normalised to sum to 1 over all
# points (they are scaled by the simplex measure on output). Keys: exact degree.
# Triangle: degrees 1-2 Strang & Fix (1973); 4, 5 and 6 Dunavant (1985), "High degree efficient
# symmetrical Gaussian quadrature rules for the triangle", IJNME 21:1129-1148 (1, 3, 6, 7 and 12
# points, all weights positive). Dunavant's 4-point degree-3 rule has a negative weight, so
# order 3 uses the 6-point degree-4 rule.
_TRIANGLE: dict[int, tuple[tuple[float, tuple[float, ...]], ...]] = {
    1: ((1.0, (1 / 3, 1 / 3, 1 / 3)),),
    2: ((1 / 3, _aab(1 / 6)),),
    4: (
        (0.22338158967801146570, _aab(0.44594849091596488632)),
        (0.10995174365532186764, _aab(0.09157621350977074346)),
    ),
    5: (
        (9 / 40, (1 / 3, 1 / 3, 1 / 3)),
        ((155 + sqrt(15)) / 1200, _aab((6 + sqrt(15)) / 21)),
        ((155 - sqrt(15)) / 1200, _aab((6 - sqrt(15)) / 21)),
    ),
    6: (
        (0.050844906370206816921, _aab(0.06308901449150222834)),
        (0.116786275726379366030, _aab(0.24928674517091042129)),
        (0.082851075618373575194, _abc(0.05314504984481694735, 0.31035245103378440542)),
    ),
}

# Tetrahedron: degree 1 centroid; degree 2 Keast (1986), "Moderate-degree tetrahedral quadrature
# formulas", CMAME 55:339-348, rule 1 (4 points); degree 5 Walkington (2000), "Quadrature on
# simplices of arbitrary dimension", 14 points (also Gellert & Harbord 1991, Table VI). The
# degree-3 (5 points) and degree-4 (11 points) Keast rules have negative weights, so orders 3
# and 4 use the 14-point degree-5 rule, whose weights are all positive.
_TETRAHEDRON: dict[int, tuple[tuple[float, tuple[float, ...]], ...]] = {
    1: ((1.0, (1 / 4, 1 / 4, 1 / 4, 1 / 4)),),
    2: ((1 / 4, _aaab((5 - sqrt(5)) / 20)),),
    5: (
        (6 * 0.018781320953002641800, _aaab(0.31088591926330060980)),
        (6 * 0.012248840519393658257, _aaab(0.092735250310891226402)),
        (6 * 0.0070910034628469110730, _aabb(0.045503704125649649492)),
    ),
}

_SIMPLICES = {2: ("triangle", _TRIANGLE, 1 / 2), 3: ("tetrahedron", _TETRAHEDRON, 1 / 6)}


def _checked_order(order: int) -> int:
    order = operator.index(order)
    if order < 0:
        raise ValueError(f"quadrature order must be >= 0, got {order}")
    return order


def gauss_line(order: int) -> Rule:
    """Gauss-Legendre rule on ``[-1, 1]`` exact for polynomials of degree ``<= order``.

    Uses ``order // 2 + 1`` points.

    Returns
    -------
    points : numpy.ndarray
        ``(n_qp, 1)``.
    weights : numpy.ndarray
        ``(n_qp,)``, summing to 2.
    """
    points, weights = np.polynomial.legendre.leggauss(_checked_order(order) // 2 + 1)
    return points[:, None], weights


def _gauss_tensor(order: int, dim: int) -> Rule:
    line_points, line_weights = gauss_line(order)
    grids = np.meshgrid(*[line_points[:, 0]] * dim, indexing="ij")
    weight_grids = np.meshgrid(*[line_weights] * dim, indexing="ij")
    points = np.stack([grid.ravel() for grid in grids], axis=-1)
    return points, np.prod([grid.ravel() for grid in weight_grids], axis=0)


def gauss_quad(order: int) -> Rule:
    """Tensor Gauss rule on ``[-1, 1]^2``, exact for degree ``<= order`` in each variable.

    Returns
    -------
    points : numpy.ndarray
        ``(n_qp, 2)`` with ``n_qp = (order // 2 + 1) ** 2``.
    weights : numpy.ndarray
        ``(n_qp,)``, summing to 4.
    """
    return _gauss_tensor(order, 2)


def gauss_hex(order: int) -> Rule:
    """Tensor Gauss rule on ``[-1, 1]^3``, exact for degree ``<= order`` in each variable.

    Returns
    -------
    points : numpy.ndarray
        ``(n_qp, 3)`` with ``n_qp = (order // 2 + 1) ** 3``.
    weights : numpy.ndarray
        ``(n_qp,)``, summing to 8.
    """
    return _gauss_tensor(order, 3)


def simplex_rule(dim: int, order: int) -> Rule:
    """Symmetric rule on the unit triangle (``dim=2``) or tetrahedron (``dim=3``).

    Exact for polynomials of total degree ``<= order``; all weights are positive.
    Available orders: triangle up to 6, tetrahedron up to 5 (sources in the module).

    Returns
    -------
    points : numpy.ndarray
        ``(n_qp, dim)`` Cartesian reference coordinates.
    weights : numpy.ndarray
        ``(n_qp,)``, summing to 1/2 (triangle) or 1/6 (tetrahedron).

    Raises
    ------
    ValueError
        If ``dim`` is not 2 or 3, or no tabulated rule reaches ``order``.
    """
    if dim not in _SIMPLICES:
        raise ValueError(f"simplex rules exist for dim 2 and 3, got dim={dim}")
    shape, table, measure = _SIMPLICES[dim]
    order = _checked_order(order)
    degrees = [degree for degree in table if degree >= order]
    if not degrees:
        raise ValueError(f"no {shape} rule of order {order}; available up to {max(table)}")
    barycentric = []
    weights = []
    for weight, generator in table[min(degrees)]:
        orbit = sorted(set(permutations(generator)))
        barycentric.extend(orbit)
        weights.extend([weight * measure] * len(orbit))
    return np.array(barycentric)[:, 1:], np.array(weights)


def point_rule(order: int = 0) -> Rule:
    """The one-point rule of a point (``dim = 0``), exact for every ``order``.

    Returns
    -------
    points : numpy.ndarray
        ``(1, 0)``.
    weights : numpy.ndarray
        ``(1,)`` equal to 1.
    """
    _checked_order(order)
    return np.zeros((1, 0)), np.ones(1)

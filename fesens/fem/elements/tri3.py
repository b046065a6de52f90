"""Linear triangle ``tri3``: P1 Lagrange on the unit triangle.

Nodes (VTK order): ``(0, 0), (1, 0), (0, 1)``. Shape functions are the barycentric
coordinates ``N_0 = 1 - ξ - η``, ``N_1 = ξ``, ``N_2 = η``.
"""

from __future__ import annotations

from functools import partial

from fesens.fem.elements.base import ReferenceElement, simplex_p1, simplex_p1_gradients
from fesens.fem.elements.quadrature import simplex_rule

TRI3 = ReferenceElement(
    name="tri3",
    nodes=((0, 0), (1, 0), (0, 1)),
    default_order=1,  # constant gradients: one centroid point
    mass_order=2,  # N_a N_b is quadratic
    basis=simplex_p1,
    basis_gradients=simplex_p1_gradients,
    rule=partial(simplex_rule, 2),
)

"""Linear tetrahedron ``tet4``: P1 Lagrange on the unit tetrahedron.

Nodes (VTK order): ``(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)``. Shape functions are the
barycentric coordinates ``N_0 = 1 - ξ - η - ζ``, ``N_1 = ξ``, ``N_2 = η``, ``N_3 = ζ``.
"""

from __future__ import annotations

from functools import partial

from fesens.fem.elements.base import ReferenceElement, simplex_p1, simplex_p1_gradients
from fesens.fem.elements.quadrature import simplex_rule

TET4 = ReferenceElement(
    name="tet4",
    nodes=((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)),
    default_order=1,  # constant gradients: one centroid point
    mass_order=2,  # N_a N_b is quadratic: 4 points
    basis=simplex_p1,
    basis_gradients=simplex_p1_gradients,
    rule=partial(simplex_rule, 3),
)

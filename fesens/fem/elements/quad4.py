"""Bilinear quadrilateral ``quad4``: Q1 Lagrange on ``[-1, 1]^2``.

Nodes (VTK order, counter-clockwise): ``(-1, -1), (1, -1), (1, 1), (-1, 1)``.
``N_a = (1 + ξ ξ_a)(1 + η η_a) / 4``.
"""

from __future__ import annotations

from functools import partial

from fesens.fem.elements.base import ReferenceElement, tensor_q1, tensor_q1_gradients
from fesens.fem.elements.quadrature import gauss_quad

_CORNERS = ((-1, -1), (1, -1), (1, 1), (-1, 1))

QUAD4 = ReferenceElement(
    name="quad4",
    nodes=_CORNERS,
    # 2 x 2 Gauss points (exact to degree 3 in each variable) for both: on a parallelogram
    # ∇N_a · ∇N_b and N_a N_b are at most quadratic in each variable.
    default_order=3,
    mass_order=3,
    basis=partial(tensor_q1, nodes=_CORNERS),
    basis_gradients=partial(tensor_q1_gradients, nodes=_CORNERS),
    rule=gauss_quad,
)

"""Trilinear hexahedron ``hex8``: Q1 Lagrange on ``[-1, 1]^3``.

Nodes (VTK order): the quad4 corners of the face ``ζ = -1``, then those of ``ζ = +1``.
``N_a = (1 + ξ ξ_a)(1 + η η_a)(1 + ζ ζ_a) / 8``.
"""

from __future__ import annotations

from functools import partial

from fesens.fem.elements.base import ReferenceElement, tensor_q1, tensor_q1_gradients
from fesens.fem.elements.quadrature import gauss_hex

_CORNERS = (
    (-1, -1, -1),
    (1, -1, -1),
    (1, 1, -1),
    (-1, 1, -1),
    (-1, -1, 1),
    (1, -1, 1),
    (1, 1, 1),
    (-1, 1, 1),
)

HEX8 = ReferenceElement(
    name="hex8",
    nodes=_CORNERS,
    # 2 x 2 x 2 Gauss points (exact to degree 3 in each variable) for both: on a
    # parallelepiped ∇N_a · ∇N_b and N_a N_b are at most quadratic in each variable.
    default_order=3,
    mass_order=3,
    basis=partial(tensor_q1, nodes=_CORNERS),
    basis_gradients=partial(tensor_q1_gradients, nodes=_CORNERS),
    rule=gauss_hex,
)

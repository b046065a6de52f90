"""Triquadratic Lagrange hexahedron ``hex27`` on ``[-1, 1]^3``.

Nodes (VTK order): the hex20 nodes, then the centres of the faces
x = -1, x = +1, y = -1, y = +1, z = -1, z = +1 and the cell centre ``(0, 0, 0)``.
Shape functions: ``tensor_q2`` of :mod:`fesens.fem.elements.base`.
"""

from __future__ import annotations

from functools import partial

from fesens.fem.elements.base import (
    ReferenceElement,
    tensor_q2,
    tensor_q2_gradients,
    tensor_quadratic_nodes,
)
from fesens.fem.elements.quadrature import gauss_hex

_NODES = tensor_quadratic_nodes("hex27", (
        (-1, -1, -1), (1, -1, -1), (1, 1, -1), (-1, 1, -1),
        (-1, -1, 1), (1, -1, 1), (1, 1, 1), (-1, 1, 1),
    ))

HEX27 = ReferenceElement(
    name="hex27",
    nodes=_NODES,
    # 3 x 3 x 3 Gauss points (exact to degree 5 in each variable) for both: on a parallelepiped
    # ∇N_a · ∇N_b and N_a N_b are at most quartic in each variable.
    default_order=5,
    mass_order=5,
    basis=partial(tensor_q2, nodes=_NODES),
    basis_gradients=partial(tensor_q2_gradients, nodes=_NODES),
    rule=gauss_hex,
)

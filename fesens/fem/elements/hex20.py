"""Serendipity hexahedron ``hex20`` on ``[-1, 1]^3``.

Nodes (VTK order): the hex8 corners, then the midpoints of edges (0-1),
(1-2), (2-3), (3-0), (4-5), (5-6), (6-7), (7-4), (0-4), (1-5), (2-6), (3-7).
Shape functions: ``serendipity_2`` of :mod:`fesens.fem.elements.base`.
"""

from __future__ import annotations

from functools import partial

from fesens.fem.elements.base import (
    ReferenceElement,
    serendipity_2,
    serendipity_2_gradients,
    tensor_quadratic_nodes,
)
from fesens.fem.elements.quadrature import gauss_hex

_NODES = tensor_quadratic_nodes("hex20", (
        (-1, -1, -1), (1, -1, -1), (1, 1, -1), (-1, 1, -1),
        (-1, -1, 1), (1, -1, 1), (1, 1, 1), (-1, 1, 1),
    ))

HEX20 = ReferenceElement(
    name="hex20",
    nodes=_NODES,
    # 3 x 3 x 3 Gauss points (exact to degree 5 in each variable) for both: on a parallelepiped
    # ∇N_a · ∇N_b and N_a N_b are at most quartic in each variable.
    default_order=5,
    mass_order=5,
    basis=partial(serendipity_2, nodes=_NODES),
    basis_gradients=partial(serendipity_2_gradients, nodes=_NODES),
    rule=gauss_hex,
)

"""Serendipity quadrilateral ``quad8`` on ``[-1, 1]^2``.

Nodes (VTK order): the quad4 corners, then the midpoints of edges
(0-1), (1-2), (2-3), (3-0).
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
from fesens.fem.elements.quadrature import gauss_quad

_NODES = tensor_quadratic_nodes("quad8", ((-1, -1), (1, -1), (1, 1), (-1, 1)))

QUAD8 = ReferenceElement(
    name="quad8",
    nodes=_NODES,
    # 3 x 3 Gauss points (exact to degree 5 in each variable) for both: on a parallelogram
    # ∇N_a · ∇N_b and N_a N_b are at most quartic in each variable.
    default_order=5,
    mass_order=5,
    basis=partial(serendipity_2, nodes=_NODES),
    basis_gradients=partial(serendipity_2_gradients, nodes=_NODES),
    rule=gauss_quad,
)

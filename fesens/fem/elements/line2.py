"""Linear line ``line2`` on ``[-1, 1]`` (facet of tri3 and quad4).

Nodes: ``-1, 1``. ``N_0 = (1 - ξ) / 2``, ``N_1 = (1 + ξ) / 2`` (the 1-D case of Q1).
"""

from __future__ import annotations

from functools import partial

from fesens.fem.elements.base import ReferenceElement, tensor_q1, tensor_q1_gradients
from fesens.fem.elements.quadrature import gauss_line

_ENDS = ((-1,), (1,))

LINE2 = ReferenceElement(
    name="line2",
    nodes=_ENDS,
    default_order=1,  # constant gradients: one Gauss point
    mass_order=2,  # N_a N_b is quadratic (2 points): exact loads for linear tractions
    basis=partial(tensor_q1, nodes=_ENDS),
    basis_gradients=partial(tensor_q1_gradients, nodes=_ENDS),
    rule=gauss_line,
)

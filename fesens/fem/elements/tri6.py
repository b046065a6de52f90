"""Quadratic triangle ``tri6``: P2 Lagrange on the unit triangle.

Nodes (VTK order): corners ``(0, 0), (1, 0), (0, 1)``, then the midpoints of edges
(0-1), (1-2), (2-0). With barycentric ``λ`` (``λ_0 = 1 - ξ - η``, ``λ_1 = ξ``, ``λ_2 = η``):
corners ``N_a = λ_a (2 λ_a - 1)``, mid-edge nodes ``N = 4 λ_a λ_b``.
"""

from __future__ import annotations

from functools import partial

from fesens.fem.elements.base import ReferenceElement, simplex_p2, simplex_p2_gradients
from fesens.fem.elements.quadrature import simplex_rule
from fesens.mesh.cell_types import MIDSIDE_EDGES

_EDGES = MIDSIDE_EDGES["tri6"]

TRI6 = ReferenceElement(
    name="tri6",
    nodes=((0, 0), (1, 0), (0, 1), (0.5, 0), (0.5, 0.5), (0, 0.5)),
    default_order=2,  # linear gradients: ∇N_a · ∇N_b is quadratic (3 points)
    mass_order=4,  # N_a N_b is quartic (6 points)
    basis=partial(simplex_p2, edges=_EDGES),
    basis_gradients=partial(simplex_p2_gradients, edges=_EDGES),
    rule=partial(simplex_rule, 2),
)

"""Quadratic line ``line3`` on ``[-1, 1]`` (facet of tri6).

Nodes (VTK order): ends ``-1, 1``, then the midpoint ``0``.
``N_0 = ξ (ξ - 1) / 2``, ``N_1 = ξ (ξ + 1) / 2``, ``N_2 = 1 - ξ²``.
"""

from __future__ import annotations

import numpy as np

from fesens.fem.elements.base import ReferenceElement
from fesens.fem.elements.quadrature import gauss_line


def _shape(xi: np.ndarray) -> np.ndarray:
    """``(n_points, 3)``."""
    x = xi[:, 0]
    return np.column_stack([x * (x - 1) / 2, x * (x + 1) / 2, 1 - x**2])


def _gradients(xi: np.ndarray) -> np.ndarray:
    """``(n_points, 3, 1)``."""
    x = xi[:, 0]
    return np.column_stack([x - 0.5, x + 0.5, -2 * x])[:, :, None]


LINE3 = ReferenceElement(
    name="line3",
    nodes=((-1,), (1,), (0,)),
    default_order=2,  # linear gradients: 2 Gauss points
    mass_order=4,  # N_a N_b is quartic (3 points): exact loads for quadratic tractions
    basis=_shape,
    basis_gradients=_gradients,
    rule=gauss_line,
)

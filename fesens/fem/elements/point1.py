"""Point ``point1``: the 0-D facet of line2 and line3, with ``N = [[1]]``."""

from __future__ import annotations

import numpy as np

from fesens.fem.elements.base import ReferenceElement
from fesens.fem.elements.quadrature import point_rule


def _shape(xi: np.ndarray) -> np.ndarray:
    """``(n_points, 1)`` of ones."""
    return np.ones((len(xi), 1))


def _gradients(xi: np.ndarray) -> np.ndarray:
    """``(n_points, 1, 0)``: no reference directions."""
    return np.zeros((len(xi), 1, 0))


POINT1 = ReferenceElement(
    name="point1",
    nodes=np.zeros((1, 0)),
    default_order=0,
    mass_order=0,
    basis=_shape,
    basis_gradients=_gradients,
    rule=point_rule,
)

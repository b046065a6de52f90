"""Spring supports on the matrix-free lattice: a constant stiffness ``k`` on some rows of
``K_ff`` (a nodal spring, design-independent), which the lattice operator adds to its
product and diagonal and the first coarse level to its stencil as ``Pᵀ diag(k) P``."""

from __future__ import annotations

import numpy as np


def checked_springs(springs: tuple[np.ndarray, np.ndarray], n: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, k)`` as int64 and float arrays, checked: distinct rows in ``[0, n)``,
    finite positive ``k``."""
    rows = np.asarray(springs[0], dtype=np.int64).ravel()
    k = np.asarray(springs[1], dtype=float).ravel()
    if rows.shape != k.shape:
        raise ValueError(f"LatticeStructure: springs need one stiffness per row, got "
                         f"{rows.size} rows and {k.size} values")
    if rows.size and (rows.min() < 0 or rows.max() >= n or np.unique(rows).size != rows.size):
        raise ValueError(f"LatticeStructure: spring rows must be distinct free-dof rows in "
                         f"[0, {n})")
    if not np.all(np.isfinite(k) & (k > 0)):
        raise ValueError("LatticeStructure: spring stiffnesses must be finite and > 0")
    return rows, k

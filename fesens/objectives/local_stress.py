"""Local stress constraints: one relaxed constraint ``g_j ≤ 0`` per cell, traced.

Two relaxations of ``σ_vm,j ≤ σ_lim`` that vanish in void cells (where the stress of the
solid material, which a void cell would carry if it were solid, is meaningless):

``"polynomial"``
    The polynomial vanishing constraint of Giraldo-Londoño & Paulino, "PolyStress: a
    Matlab implementation for topology optimization with local stress constraints using
    the augmented Lagrangian method", Struct. Multidisc. Optim. 63 (2021) 2065–2097:
    ``g_j = ρ_j · x_j (x_j² + 1)`` with ``x_j = σ_j / σ_lim − 1`` and ``σ_j`` the cell's
    von Mises stress of the solid material (``σ = D₀ B u``). ``g_j ≤ 0`` where
    ``σ_j ≤ σ_lim`` or ``ρ_j = 0``; the cubic grows fast above the limit.
``"qp"``
    The qp-relaxation of Le, Norato, Bruns, Ha & Tortorelli, "Stress-based topology
    optimization for continua", Struct. Multidisc. Optim. 41 (2010) 605–620:
    ``g_j = ρ_j^q σ_j / σ_lim − 1`` (``q < p`` of SIMP; they take ``q = 0.5``).

Both use the cell-mean stress of :func:`~fesens.objectives.static.von_mises_squared` (for
a parallelogram quad4 cell, the stress at its centroid).
"""

from __future__ import annotations

import numpy as np

from fesens.objectives.differentiable import State
from fesens.objectives.static import von_mises_squared

#: The relaxations :func:`stress_violations` offers.
RELAXATIONS = ("polynomial", "qp")


def relaxed_von_mises(state: State, rho, relaxation: str = "polynomial",
                      exponent: float = 0.5):
    """The cell von Mises stress each relaxation bounds, ``(n_cells,)`` (traced): of the
    solid material (``"polynomial"``) or scaled by ``ρ^q`` (``"qp"``, ``q = exponent``).

    Parameters
    ----------
    state : State
        A single-load-case solution of a physics with stresses.
    rho : array_like
        Physical densities ``(n_cells,)`` (traced allowed).
    relaxation : {"polynomial", "qp"}
    exponent : float
        ``q`` of the qp-relaxation.
    """
    _check_relaxation(relaxation)
    n_cells = state.model.mesh.n_cells
    scale = np.ones(n_cells) if relaxation == "polynomial" else rho ** exponent
    # a tiny floor keeps the square root differentiable in a cell without stress
    return np.sqrt(von_mises_squared(state, scale) + 1e-300)


def stress_violations(state: State, rho, limit: float, relaxation: str = "polynomial",
                      exponent: float = 0.5):
    """The relaxed local constraints ``g_j`` of every cell, ``(n_cells,)`` (traced); the
    cell meets the limit where ``g_j ≤ 0`` (the module docstring).

    Parameters
    ----------
    state : State
    rho : array_like
        Physical densities ``(n_cells,)``.
    limit : float
        ``σ_lim`` (> 0).
    relaxation : {"polynomial", "qp"}
    exponent : float
        ``q`` of the qp-relaxation.
    """
    if not limit > 0.0:
        raise ValueError(f"the stress limit must be > 0, got {limit!r}")
    ratio = relaxed_von_mises(state, rho, relaxation, exponent) / limit
    if relaxation == "qp":
        return ratio - 1.0
    excess = ratio - 1.0
    return rho * excess * (excess * excess + 1.0)


def _check_relaxation(relaxation: str) -> None:
    if relaxation not in RELAXATIONS:
        raise ValueError(f"relaxation {relaxation!r} is not one of {', '.join(RELAXATIONS)}")

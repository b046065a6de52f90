"""The inputs of one stepped run, by name: what its primitive traces and what its adjoint
returns a cotangent of (a tree of :mod:`fesens.ad.tree_primitive`; an adjoint asks
``traced.forces``, never an argument number). ``f`` marks the free dofs, ``c`` the
constrained ones; an input a run does not have (no prescribed values) is None.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.ad.sparse import PatternMatrix


def rayleigh_damping(damping) -> tuple:
    """``(c_M, c_K)`` of ``C = c_M M + c_K K`` from a run's ``damping``, checked (each may be
    traced).

    Raises
    ------
    ValueError
        Not a pair, or a coefficient that is not a finite number ``>= 0``.
    """
    try:
        mass_damping, stiffness_damping = damping
    except (TypeError, ValueError):
        raise ValueError(f"damping must be the Rayleigh pair (c_M, c_K), got "
                         f"{damping!r}") from None
    for name, value in (("c_M", mass_damping), ("c_K", stiffness_damping)):
        raw = np.asarray(getval(value), dtype=float)
        if raw.shape != () or not np.isfinite(raw) or raw < 0:
            raise ValueError(f"Rayleigh damping {name} must be a finite number >= 0, "
                             f"got {raw!r}")
    return mass_damping, stiffness_damping


class HeatInputs(NamedTuple):
    """A linear first-order run ``M Ṫ + K T = F h(t)``.

    Attributes
    ----------
    stiffness, mass : PatternMatrix
        ``K_ff``, ``M_ff`` (one pattern).
    coupling_stiffness, coupling_mass : PatternMatrix or None
        ``K_fc``, ``M_fc``.
    forces : ndarray, (n_free, n_loads)
        ``F``: each load term's vector.
    histories : ndarray, (N + 1, n_loads)
        ``H``: each load term's factor per level.
    prescribed : ndarray or None, (n_constrained,)
        ``g``: the prescribed values.
    prescribed_history : ndarray or None, (N + 1,)
        ``φ_g``: their factor per level.
    initial : ndarray, (n_free,)
        ``T_0`` on the free dofs.
    term_args : tuple
        The step term's further arguments.
    """

    stiffness: PatternMatrix
    mass: PatternMatrix
    coupling_stiffness: PatternMatrix | None
    coupling_mass: PatternMatrix | None
    forces: np.ndarray
    histories: np.ndarray
    prescribed: np.ndarray | None
    prescribed_history: np.ndarray | None
    initial: np.ndarray
    term_args: tuple = ()


class NonlinearHeatInputs(NamedTuple):
    """A nonlinear first-order run ``M Ṫ + R_int(T) = F h(t)``: as :class:`HeatInputs`
    without the stiffness, with the internal forces' inputs.

    Attributes
    ----------
    points : ndarray or None, (n_points, dim)
        Node coordinates (None: the mesh's).
    fields : dict
        The model's material fields by name, each ``()`` or ``(n_cells,)``.
    """

    mass: PatternMatrix
    coupling_mass: PatternMatrix | None
    forces: np.ndarray
    histories: np.ndarray
    prescribed: np.ndarray | None
    prescribed_history: np.ndarray | None
    initial: np.ndarray
    points: np.ndarray | None
    fields: dict
    term_args: tuple = ()


class DynamicInputs(NamedTuple):
    """A structural dynamics run ``M ü + C u̇ + K u = F h(t)``, ``C = c_M M + c_K K``.

    Attributes
    ----------
    stiffness, mass : PatternMatrix
        ``K_ff``, ``M_ff`` (one pattern).
    mass_damping, stiffness_damping : float
        The Rayleigh coefficients ``c_M``, ``c_K``.
    forces, histories : ndarray
        ``F`` ``(n_free, n_loads)`` and ``H`` ``(N + 1, n_loads)``.
    initial_displacement, initial_velocity : ndarray, (n_free,)
        ``u_0``, ``v_0``.
    coupling_stiffness, coupling_mass : PatternMatrix or None
        ``K_fc``, ``M_fc``.
    prescribed : ndarray or None, (n_constrained,)
        ``g`` of the prescribed motion ``g φ(t)``.
    prescribed_rates : ndarray or None, (N + 1, 3)
        ``[φ, φ̇, φ̈]`` per level.
    term_args : tuple
        The step term's further arguments.
    """

    stiffness: PatternMatrix
    mass: PatternMatrix
    mass_damping: float
    stiffness_damping: float
    forces: np.ndarray
    histories: np.ndarray
    initial_displacement: np.ndarray
    initial_velocity: np.ndarray
    coupling_stiffness: PatternMatrix | None
    coupling_mass: PatternMatrix | None
    prescribed: np.ndarray | None
    prescribed_rates: np.ndarray | None
    term_args: tuple = ()

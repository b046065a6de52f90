"""What the structural plasticity verification tests (the thick-walled cylinder of Hill 1950
and the perforated strip's limit load) add to ``examples/plastic_verification.py``, whose
closed forms, meshes and models they share: Hill's plastic radius at a pressure, the
tolerances, the pressure tables, Howland's first yield of the strip and the solves. Every
reference is a formula; none comes from fesens.

Units: ``E = 70000``, ``ν = 0.3``, ``σ_y = 250``, perfectly plastic von Mises, plane strain;
``k = σ_y/√3`` is the shear yield stress.
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.optimize import brentq

from fesens.fem.analysis.incremental import IncrementalAnalysis
from fesens.mesh import Mesh
from tests.examples.example_helpers import EXAMPLES

sys.path.insert(0, str(EXAMPLES))  # the examples are scripts, not a package
from plastic_verification import (  # noqa: E402  (the examples folder, put on the path above)
    NU,
    SIGMA_Y,
    A,
    B,
    W,
    cylinder_mesh,
    cylinder_model,
    cylinder_slice,
    elastic_limit_pressure,
    end_reactions,
    hill_outer_displacement,
    hill_pressure,
    hill_pressure_at,
    lame_outer_displacement,
    limit_pressure,
    outer_displacement,
    strip_limit_load,
    strip_mesh,
    strip_model,
)

#: The example's closed forms (Lamé, Hill 1950 ch. V, the net section at 2k) and meshes,
#: which the tests read from here with what they add.
__all__ = [
    "HILL_DISPLACEMENT_TOL", "HILL_PRESSURE_TOL", "cylinder_mesh", "cylinder_slice",
    "elastic_limit_pressure", "hill_outer_displacement", "hill_pressure_at", "hill_radius",
    "lame_outer_displacement", "limit_pressure", "outer_displacement", "plastic_pressures",
    "solve_cylinder", "solve_strip", "strip_first_yield_load", "strip_limit_load",
    "strip_mesh",
]


def hill_radius(p: float) -> float:
    """The elastic–plastic boundary at the pressure ``p`` (``hill_pressure`` increases)."""
    return brentq(lambda c: hill_pressure(c) - p, A, B)


#: Hill's pressure–displacement relation holds exactly at ν = 1/2 (σ_z the mean stress in
#: the plastic zone); at ν = 0.3 the J2 solution's σ_θ − σ_r lies a little below 2k there,
#: so the tube carries a little less than Hill's at a given outer displacement. These
#: bound that model difference plus the meshes' error: on the pressure at the measured
#: displacement (fesens is 0.1-0.4 % below Hill's on the meshes of the tests) and on the
#: displacement at a given pressure, which near the limit grows fast with the pressure.
HILL_PRESSURE_TOL, HILL_DISPLACEMENT_TOL = 0.006, 0.03


def plastic_pressures(n: int) -> np.ndarray:
    """0, the first yield, then ``n`` pressures closing in on 0.98 p_lim."""
    p_e, p_lim = elastic_limit_pressure(), limit_pressure()
    closing = 1.0 - (1.0 - np.linspace(0.0, 1.0, n + 1)[1:]) ** 2
    return np.concatenate([[0.0, p_e], p_e + (0.98 * p_lim - p_e) * closing])


#: Howland's (1930, Phil. Trans. R. Soc. A 229, 49–86) elastic stress concentration at the
#: edge of a circular hole in a long strip, hole diameter half the width, on the gross
#: section's stress (as tabulated by Peterson's *Stress Concentration Factors*)
HOWLAND_K = 4.32


def strip_first_yield_load() -> float:
    """The quarter strip's end load per unit thickness at which the hole's edge ``(R, 0)``
    first yields: there ``σ_yy = K σ``, ``σ_xx = σ_xy = 0`` (a free surface) and plane
    strain's ``σ_zz = ν σ_yy``, so von Mises reads ``K σ √(1 − ν + ν²) = σ_y`` on the gross
    stress ``σ`` over the half-width ``W``."""
    return SIGMA_Y / (HOWLAND_K * np.sqrt(1.0 - NU + NU**2)) * W


def solve_cylinder(mesh: Mesh, pressures, **options):
    """The ring's increments through ``pressures`` (the load factors of the unit pressure);
    returns the model and the history's record."""
    model = cylinder_model(mesh, **options)
    return model, IncrementalAnalysis(model, factors=np.asarray(pressures, float)).solve()


def solve_strip(mesh: Mesh, end_displacement: float, factors, **options):
    """The quarter strip with its end ``y = L`` moved by ``factors * end_displacement``
    (``options`` go to the model); returns the model, the record and the end's reaction
    per increment ``(N+1,)``."""
    model = strip_model(mesh, end_displacement, **options)
    solution = IncrementalAnalysis(model, factors=np.asarray(factors, float)).solve()
    return model, solution, end_reactions(model, solution.reactions)

"""Closed forms and meshes of the structural plasticity verification (the thick-walled
cylinder of Hill 1950 and the perforated strip's limit load), shared by the fast and the
slow tests. Every reference here is a formula; none comes from fesens.

Units: ``E = 70000``, ``ν = 0.3``, ``σ_y = 250``, perfectly plastic von Mises, plane strain;
``k = σ_y/√3`` is the shear yield stress.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from fesens.fem.analysis.incremental import IncrementalAnalysis
from fesens.mesh import Mesh, box, plate_with_hole, quarter_annulus
from fesens.physics.elastoplasticity import Elastoplasticity

E, NU, SIGMA_Y = 70e3, 0.3, 250.0
K = SIGMA_Y / np.sqrt(3.0)
#: the cylinder's inner and outer radii
A, B = 1.0, 2.0
#: the strip's half-width, hole radius and half-length
W, R, L = 10.0, 5.0, 18.0


# --- the thick-walled cylinder: Hill 1950, The Mathematical Theory of Plasticity, ch. V --

def elastic_limit_pressure(nu: float = NU) -> float:
    """First yield at the bore: Lamé's stresses ``σ_r, σ_θ = A ∓ B/r²`` with plane
    strain's ``σ_z = 2νA`` in von Mises, ``3J₂ = 3B²/a⁴ + (1 − 2ν)²A²`` (exact for every
    ν; Hill's ``k (1 − a²/b²)`` at ν = 1/2)."""
    return SIGMA_Y * (B**2 - A**2) / np.sqrt(3.0 * B**4 + (1.0 - 2.0 * nu) ** 2 * A**4)


def lame_outer_displacement(p: float, nu: float = NU) -> float:
    """The elastic ring's outer radial displacement under the bore pressure ``p`` (plane
    strain): ``u(b) = 2 (1 − ν²) p a² b / (E (b² − a²))``."""
    return 2.0 * (1.0 - nu**2) * p * A**2 * B / (E * (B**2 - A**2))


def hill_pressure(c):
    """The pressure with the plastic zone ``a ≤ r ≤ c``: ``2k [ln(c/a) + (b² − c²)/(2b²)]``
    (Hill: ``σ_θ − σ_r = 2k`` in the plastic zone, exact at ν = 1/2)."""
    return 2.0 * K * (np.log(c / A) + (B**2 - c**2) / (2.0 * B**2))


def hill_radius(p: float) -> float:
    """The elastic–plastic boundary at the pressure ``p`` (``hill_pressure`` increases)."""
    return brentq(lambda c: hill_pressure(c) - p, A, B)


def hill_outer_displacement(c, nu: float = NU):
    """The outer radial displacement with the plastic zone ``a ≤ r ≤ c``: the elastic ring
    ``c ≤ r ≤ b`` at first yield on ``r = c``, ``u(b) = 2 (1 − ν²) k c² / (E b)``."""
    return 2.0 * (1.0 - nu**2) * K * c**2 / (E * B)


def hill_pressure_at(u_outer, nu: float = NU):
    """Hill's pressure at the outer radial displacement ``u_outer``: the plastic radius
    ``c`` from :func:`hill_outer_displacement`, then :func:`hill_pressure` (the
    pressure–displacement relation, well conditioned near the limit where ``u`` is not)."""
    return hill_pressure(np.sqrt(u_outer * E * B / (2.0 * (1.0 - nu**2) * K)))


def limit_pressure() -> float:
    """``p_lim = 2k ln(b/a)``: for every ν (at collapse the strain rates are plastic, plane
    strain makes ``σ_z`` the mean stress and ``σ_θ − σ_r = 2k`` across the wall)."""
    return 2.0 * K * np.log(B / A)


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


# --- the perforated strip: the plane-strain limit load ------------------------------------

def strip_limit_load() -> float:
    """The limit load of a quarter of the strip per unit thickness, ``2k (W − R)``: the
    ligament at the plane-strain yield stress ``2k``. Exact by the two theorems of limit
    analysis (Hill 1950, ch. VIII): ``σ_yy = 2k`` in ``R ≤ |x| ≤ W`` and zero elsewhere is
    statically admissible (free hole and edges; lower bound); the wedge ``x − R ≥ |y|`` at
    each free edge moving inwards at ``v`` while the halves separate at ``2v`` slides on
    two 45° bands of length ``√2 (W − R)`` at the jump ``√2 v``, dissipating
    ``4k (W − R) v`` per ligament side, the same load (upper bound)."""
    return 2.0 * K * (W - R)


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


# --- meshes and models ------------------------------------------------------------------

def cylinder_mesh(n_radial: int, n_angular: int, cell_type: str = "quad8") -> Mesh:
    """A quarter of the ring ``a ≤ r ≤ b`` (sides ``inner``, ``outer``, ``x_axis``,
    ``y_axis``)."""
    return quarter_annulus(n_radial, n_angular, A, B, cell_type)


def cylinder_slice(n_radial: int, n_angular: int, thickness: float = 0.1) -> Mesh:
    """The quarter ring as one layer of hex8 cells, ``0 ≤ z ≤ thickness`` (the unit box's
    x mapped to the radius, y to the angle; its sides renamed as the 2D mesh's, ``back``
    and ``front`` the faces ``z = 0`` and ``z = thickness``)."""
    mesh = box(n_radial, n_angular, 1, 1.0, 1.0, thickness, "hex8")
    x, y, z = mesh.points.T
    radius, angle = A + (B - A) * x, 0.5 * np.pi * y
    mesh.points = np.column_stack([radius * np.sin(0.5 * np.pi - angle),
                                   radius * np.sin(angle), z])
    for old, new in (("left", "inner"), ("right", "outer"), ("bottom", "x_axis"),
                     ("top", "y_axis")):
        mesh.node_sets[new] = mesh.node_sets.pop(old)
        mesh.facet_sets[new] = mesh.facet_sets.pop(old)
    mesh.validate()
    return mesh


def strip_mesh(n_radial: int, n_angular: int, cell_type: str = "quad8") -> Mesh:
    """A quarter of the strip ``[0, W] x [0, L]`` less the hole ``r < R``: the plate with
    a hole ``[0, W]²`` stretched along y above ``y = R`` by ``(L − W)((y − R)/(W − R))²``
    (smooth, so quadratic cells stay valid). Sides ``hole``, ``right`` (the free edge),
    ``top`` (the moved end), ``x_axis``, ``y_axis``."""
    mesh = plate_with_hole(n_radial, n_angular, R, W, cell_type, grading=1.15)
    y = mesh.points[:, 1]
    stretch = (L - W) * (np.maximum(y - R, 0.0) / (W - R)) ** 2
    mesh.points = np.column_stack([mesh.points[:, 0], y + stretch])
    mesh.validate()
    return mesh


def radial_unit(points: np.ndarray) -> np.ndarray:
    """``e_r`` at ``points`` ``(n, dim)``: the bore pressure as a traction ``p e_r``, which
    needs no facet normal (those of a coarse curved ring's owner-centroid test flip)."""
    radial = np.array(points, dtype=float)
    if radial.shape[1] == 3:
        radial[:, 2] = 0.0
    return radial / np.linalg.norm(radial, axis=1, keepdims=True)


def cylinder_model(mesh: Mesh, nu: float = NU, **options) -> Elastoplasticity:
    """The ring with symmetry conditions and a unit pressure on the bore (``w = 0`` on
    both faces of a 3D slice: plane strain); ``options`` go to the model."""
    model = Elastoplasticity(mesh, E=E, nu=nu, yield_stress=SIGMA_Y, **options)
    model.fix("x_axis", components="y").fix("y_axis", components="x")
    if mesh.dim == 3:
        model.fix("back", components="z").fix("front", components="z")
    model.surface_load("inner", radial_unit, name="pressure")
    return model


def outer_displacement(mesh: Mesh, displacements: np.ndarray) -> np.ndarray:
    """The outer surface's radial displacement on the x axis per increment ``(N+1,)``
    (the mean over the nodes at ``(b, 0[, z])``), from ``(N+1, n_dofs)``."""
    nodes = np.intersect1d(mesh.node_sets["outer"], mesh.node_sets["x_axis"])
    return displacements[:, mesh.dim * nodes].mean(axis=1)


def solve_cylinder(mesh: Mesh, pressures, nu: float = NU, **options):
    """The ring's increments through ``pressures`` (the load factors of the unit pressure);
    returns the model and the history's record."""
    model = cylinder_model(mesh, nu, **options)
    return model, IncrementalAnalysis(model, factors=np.asarray(pressures, float)).solve()


def solve_strip(mesh: Mesh, end_displacement: float, factors, **options):
    """The quarter strip with its end ``y = L`` moved by ``factors * end_displacement``
    (``options`` go to the model); returns the model, the record and the end's reaction
    per increment ``(N+1,)``."""
    model = Elastoplasticity(mesh, E=E, nu=NU, yield_stress=SIGMA_Y, **options)
    model.fix("x_axis", components="y").fix("y_axis", components="x")
    model.fix("top", components="y", value=end_displacement)
    solution = IncrementalAnalysis(model, factors=np.asarray(factors, float)).solve()
    dofs = model.dofmap.node_dofs(mesh.node_sets["top"], [1]).ravel()
    return model, solution, solution.reactions[:, dofs].sum(axis=1)

"""Shape sensitivities: gradients with respect to the node coordinates ``X (n_points, dim)``.

``model.solve(points=X)`` recomputes the element kernels, the surface and volume load
vectors and the cell volumes from ``X``, so every objective has a gradient ``dJ/dX``. Each
check is a Taylor test along a smooth random direction (rate within
:data:`~adjoint_helpers.RATE_TOLERANCE` of 2) and central differences
(:func:`fesens.ad.check_grad`), on every element type, for perturbations of all nodes, of the
interior nodes only (a pure re-meshing of the same domain) and of the boundary nodes only
(a change of the domain).

Closed forms at the end: the derivatives of a cantilever's tip deflection with respect to
its length and height (Timoshenko beam theory) and of a thick cylinder's bore displacement
with respect to the bore radius (Lamé), each also against a finite difference of the FE
value itself.
"""

import numpy as np
import pytest
from adjoint_helpers import (
    CELL_TYPES_2D,
    CELL_TYPES_3D,
    FD_STEP,
    RATE_TOLERANCE,
    beam,
    cantilever,
    densities,
    plate,
)

from fesens.ad import check_grad, grad, taylor_test
from fesens.mesh import Mesh, box, quarter_annulus, rectangle
from fesens.objectives import compliance, mean_value, stress_pnorm, value_at, volume
from fesens.physics import Elasticity, HeatConduction

#: First Taylor step, relative to the typical cell size: small enough for the third-order
#: terms (from 1e-3 up, a few tables start at rates 1.6-1.8), far enough above round-off
#: (the smallest remainders are still ~1e-12 of J).
RELATIVE_STEP = 2e-4
#: The volume is a polynomial of low degree in X with small second-order terms: larger
#: steps keep its remainders above round-off.
VOLUME_STEP = 2e-2

CASES = [(cell_type, plane) for cell_type in CELL_TYPES_2D for plane in ("stress", "strain")]
CASES += [(cell_type, None) for cell_type in CELL_TYPES_3D]
IDS = [f"{c}-{p or '3d'}" for c, p in CASES]


def far_corner(mesh: Mesh) -> np.ndarray:
    """The corner of the bounding box opposite to the origin (a free node of :func:`beam`)."""
    return mesh.points.max(axis=0)


OBJECTIVES = {
    "compliance": compliance,
    "value_at": lambda state: value_at(state, far_corner(state.model.mesh), component=1),
    "mean_value": lambda state: mean_value(state, "right", component=1),
    "stress_pnorm": lambda state: stress_pnorm(state, p=6.0),
}


# ---------------------------------------------------------------- directions and the check
def boundary_nodes(mesh: Mesh) -> np.ndarray:
    """Sorted ids of the nodes on the mesh boundary."""
    return np.unique(mesh.boundary_facets().facets)


def node_subset(mesh: Mesh, which: str) -> np.ndarray:
    """``"all"``, ``"interior"`` or ``"boundary"`` node ids."""
    on_boundary = boundary_nodes(mesh)
    if which == "boundary":
        return on_boundary
    if which == "interior":
        return np.setdiff1d(np.arange(mesh.n_points), on_boundary)
    return np.arange(mesh.n_points)


def smooth_direction(mesh: Mesh, which: str = "all", seed: int = 0) -> np.ndarray:
    """A smooth random velocity field ``(n_points, dim)``, zero outside the ``which`` nodes.

    Each component is a sum of three random plane waves of wave numbers up to 2 over the
    bounding box, scaled to a largest entry of 1: smooth on the scale of the cells (a step
    of a few percent of a cell keeps every element valid) and spread over the whole mesh
    (no node is singled out).
    """
    rng = np.random.default_rng(seed)
    lower, upper = mesh.bounding_box()
    xi = (mesh.points - lower) / (upper - lower)
    field = np.zeros_like(mesh.points)
    for component in range(mesh.dim):
        for _ in range(3):
            wave = rng.integers(-2, 3, mesh.dim)
            field[:, component] += rng.standard_normal() * np.sin(
                np.pi * xi @ wave + rng.uniform(0.0, 2.0 * np.pi))
    mask = np.zeros(mesh.n_points, dtype=bool)
    mask[node_subset(mesh, which)] = True
    field[~mask] = 0.0
    return field / np.abs(field).max()


def cell_size(mesh: Mesh) -> float:
    """Typical cell size: the cube root (square root in 2D) of the mean cell volume."""
    extent = np.prod(np.ptp(mesh.points, axis=0))
    return float((extent / mesh.n_cells) ** (1.0 / mesh.dim))


def assert_shape_gradient(fun, mesh: Mesh, which: str = "all", seed: int = 0,
                          relative_step: float = RELATIVE_STEP, direction=None) -> None:
    """Taylor rate 2 along ``direction`` (default :func:`smooth_direction`; first step
    ``relative_step`` times the cell size) and central differences for ``dJ/dX``."""
    X = mesh.points.copy()
    if direction is None:
        direction = smooth_direction(mesh, which, seed)
    result = taylor_test(fun, X, direction, step=relative_step * cell_size(mesh),
                         verbose=False)
    assert abs(result.rate - 2.0) < RATE_TOLERANCE, result.table()
    check_grad(fun, X, n_directions=1, eps=FD_STEP * cell_size(mesh))


def shape_functional(model, objective):
    """``X ↦ objective(model.solve(points=X))``."""
    return lambda X: objective(model.solve(points=X))


# ---------------------------------------------------------------- every element type
@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize(("cell_type", "plane"), CASES, ids=IDS)
def test_shape_gradient_per_element_type(cell_type, plane, objective):
    model = beam(cell_type, plane)
    assert_shape_gradient(shape_functional(model, OBJECTIVES[objective]), model.mesh)


@pytest.mark.parametrize("which", ["interior", "boundary"])
@pytest.mark.parametrize(("cell_type", "plane"), CASES, ids=IDS)
def test_shape_gradient_of_interior_or_boundary_nodes(cell_type, plane, which):
    """Interior nodes only (the same domain, re-meshed) and boundary nodes only (a new
    domain): both parts of the gradient are exact, for the energy and for the stress."""
    model = beam(cell_type, plane)
    objective = OBJECTIVES["stress_pnorm" if which == "interior" else "compliance"]
    assert_shape_gradient(shape_functional(model, objective), model.mesh, which, seed=1)


def test_interior_motion_changes_a_linear_field_not_at_all():
    """Patch test in X: with an affine exact solution (uniform tension, no body force), the
    FE solution is exact on any mesh of the same domain, so moving only interior nodes
    leaves the compliance unchanged and its interior gradient is zero (to round-off)."""
    mesh = rectangle(4, 3, 2.0, 1.0, cell_type="quad4")
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress")
    model.fix("left", components=0).fix(lambda p: (p[:, 0] == 0) & (p[:, 1] == 0))
    model.traction("right", (1.0, 0.0))
    gradient = grad(shape_functional(model, compliance))(mesh.points.copy())
    interior = node_subset(mesh, "interior")
    assert np.abs(gradient[interior]).max() < 1e-12 * np.abs(gradient).max()


# ---------------------------------------------------------------- loads that depend on X
def load_case(kind: str, cell_type: str) -> Elasticity:
    """A clamped beam of ``cell_type`` with a single load of ``kind``: a traction, a
    pressure (its normal and facet lengths move), a body force, or the same densities
    given as functions of the coordinates (evaluated at the mesh's coordinates, so the
    load follows the material)."""
    two_d = cell_type in CELL_TYPES_2D
    mesh = (rectangle(4, 2, 2.0, 1.0, cell_type=cell_type) if two_d
            else box(3, 2, 2, 3.0, 1.0, 1.0, cell_type=cell_type))
    model = (Elasticity(mesh, E=1.0, nu=0.3, plane="strain") if two_d
             else Elasticity(mesh, E=1.0, nu=0.3))
    model.fix("left")
    dim = mesh.dim

    def down(points):  # a linearly varying density pointing down
        values = np.zeros((len(points), dim))
        values[:, 1] = -1.0 - points[:, 0] + 0.5 * points[:, 1]
        return values

    if kind == "traction":
        model.traction("top", (0.3, -1.0, 0.2)[:dim])
    elif kind == "pressure":
        model.pressure("top", 0.7)
    elif kind == "pressure_function":
        model.pressure("top", lambda p: 1.0 + p[:, 0])
    elif kind == "body_force":
        model.body_force((0.2, -1.0, 0.1)[:dim])
    elif kind == "body_force_function":
        model.body_force(down)
    else:  # traction_function
        model.traction("right", down)
    return model


LOADS = ["traction", "pressure", "body_force", "traction_function", "pressure_function",
         "body_force_function"]


@pytest.mark.parametrize("cell_type", ["tri3", "tri6", "quad4", "tet4", "hex8"])
@pytest.mark.parametrize("kind", LOADS)
def test_shape_gradient_of_load_vectors(kind, cell_type):
    model = load_case(kind, cell_type)
    # Compliances up to 1e3 here (E = 1): larger steps keep the table above round-off.
    assert_shape_gradient(shape_functional(model, compliance), model.mesh, seed=12,
                          relative_step=5 * RELATIVE_STEP)


@pytest.mark.parametrize("objective", ["compliance", "value_at", "stress_pnorm"])
@pytest.mark.parametrize("cell_type", ["tri6", "quad4"])
def test_shape_gradient_with_all_loads_and_prescribed_displacements(cell_type, objective):
    """A point load, a traction, a body force and a non-zero, non-rigid prescribed
    displacement of the clamp (the Dirichlet lift ``K_fc g`` depends on X too)."""
    model = cantilever(cell_type, "stress", prescribed=True)
    assert np.any(model.prescribed_values() != 0)
    assert_shape_gradient(shape_functional(model, OBJECTIVES[objective]), model.mesh, seed=3)


def test_shape_gradient_on_a_curved_domain_with_pressure():
    """A quarter ring (tri6, curved sides) under internal pressure, symmetry supports."""
    mesh = quarter_annulus(2, 4, 1.0, 2.0, cell_type="tri6")
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="strain")
    model.fix("x_axis", components=1).fix("y_axis", components=0)
    model.pressure("inner", 0.1)
    for objective in (compliance, lambda s: value_at(s, (1.0, 0.0), component=0),
                      lambda s: stress_pnorm(s, p=6.0)):
        assert_shape_gradient(shape_functional(model, objective), mesh, seed=4)


def test_shape_gradient_together_with_material_and_dirichlet_values():
    """X traced together with Young's moduli and the prescribed values: one gradient."""
    model = cantilever("quad4", "strain", prescribed=True)
    g0 = model.prescribed_values()
    point = {"X": model.mesh.points.copy(), "E": densities(model.mesh.n_cells, seed=5),
             "g": g0}
    rng = np.random.default_rng(5)
    direction = {"X": smooth_direction(model.mesh, seed=5),
                 "E": rng.standard_normal(model.mesh.n_cells),
                 "g": rng.standard_normal(g0.size)}

    def J(p):
        return stress_pnorm(model.solve(points=p["X"], E=p["E"], dirichlet=p["g"]), p=6.0)

    result = taylor_test(J, point, direction, step=1e-3, verbose=False)
    assert abs(result.rate - 2.0) < RATE_TOLERANCE, result.table()
    check_grad(J, point, eps=FD_STEP)


# ---------------------------------------------------------------- heat conduction
def heat_box(cell_type: str) -> HeatConduction:
    """A 3D block: prescribed temperature on ``left``, a heat source, a flux on ``right``."""
    model = HeatConduction(box(3, 2, 2, 3.0, 1.0, 1.0, cell_type=cell_type), conductivity=2.0)
    model.fix("left", value=lambda p: 1.0 + 0.5 * p[:, 1])
    model.heat_source(1.0)
    model.flux("right", 0.5)
    return model


@pytest.mark.parametrize("which", ["all", "interior", "boundary"])
@pytest.mark.parametrize("case", ["quad4-2d", "tet10-3d"])
def test_thermal_compliance_shape_gradient(case, which):
    model = plate() if case == "quad4-2d" else heat_box("tet10")
    # Moving interior nodes changes the temperature very little (remainders ~1e-13 of J at
    # the default step): larger steps keep the table above round-off.
    assert_shape_gradient(shape_functional(model, compliance), model.mesh, which, seed=6,
                          relative_step=10 * RELATIVE_STEP)


def test_mean_temperature_shape_gradient_hex8():
    model = heat_box("hex8")
    J = shape_functional(model, lambda s: mean_value(s, "right"))
    assert_shape_gradient(J, model.mesh, seed=7)


# ---------------------------------------------------------------- the volume
def dilated_direction(mesh: Mesh, which: str, seed: int) -> np.ndarray:
    """:func:`smooth_direction` plus a dilation about the centroid (on the same nodes).

    The volume is a polynomial in X (degree ``dim`` for simplices): along some smooth
    directions its second-order term nearly vanishes and the Taylor remainders cross zero
    (tet4 along seed 8: rates 3.6, 0.4, 1.6); the dilation's second-order term
    (``V (1 + ε)^dim``) keeps it clear of zero.
    """
    direction = smooth_direction(mesh, which, seed)
    dilation = mesh.points - mesh.points.mean(axis=0)
    dilation[np.all(direction == 0, axis=1)] = 0.0
    return direction + dilation / np.abs(dilation).max()


@pytest.mark.parametrize("cell_type", CELL_TYPES_2D + CELL_TYPES_3D)
def test_volume_shape_gradient(cell_type):
    model = beam(cell_type, "stress" if cell_type in CELL_TYPES_2D else None)
    mesh = model.mesh
    x = densities(mesh.n_cells, seed=8)
    assert_shape_gradient(lambda X: volume(model, x, points=X), mesh,
                          relative_step=VOLUME_STEP, direction=dilated_direction(mesh, "all", 8))
    assert_shape_gradient(lambda X: volume(model, x, fraction=True, points=X), mesh,
                          relative_step=VOLUME_STEP,
                          direction=dilated_direction(mesh, "boundary", 9))


@pytest.mark.parametrize("cell_type", ["tri3", "quad4", "tet4", "hex8"])
def test_volume_gradient_is_the_boundary_normal_velocity(cell_type):
    """``dV[V] = ∮ V·n dS``: the volume's gradient vanishes at interior nodes and, for a
    uniform dilation ``V = X``, ``dV[X] = dim · V`` (Euler's identity: V is homogeneous of
    degree ``dim`` in X)."""
    model = beam(cell_type, "stress" if cell_type in CELL_TYPES_2D else None)
    X = model.mesh.points.copy()
    gradient = grad(lambda X: volume(model, points=X))(X)
    interior = node_subset(model.mesh, "interior")
    assert np.abs(gradient[interior]).max() < 1e-13
    total = float(volume(model, points=X))
    assert np.sum(gradient * X) == pytest.approx(model.mesh.dim * total, rel=1e-13)


# ---------------------------------------------------------------- finite-difference spot check
def central_difference(fun, x: np.ndarray, direction: np.ndarray, h: float) -> float:
    """Fourth-order central difference of ``f`` along ``direction``:
    ``[8 (f(x+hV) − f(x−hV)) − (f(x+2hV) − f(x−2hV))] / 12h`` (truncation ``O(h⁴)``, so a
    step of 1e-3 leaves truncation and round-off both near 1e-10 relative)."""
    values = {k: float(fun(x + k * h * direction)) for k in (-2, -1, 1, 2)}
    return (8 * (values[1] - values[-1]) - (values[2] - values[-2])) / (12 * h)


@pytest.mark.parametrize("objective", ["compliance", "stress_pnorm"])
def test_gradient_components_match_central_differences(objective):
    """A few single coordinates (a node of the loaded right edge, of the top edge with its
    traction, interior ones, one of the moving clamp): ``∂J/∂X_(a,i)`` against a
    fourth-order central difference (the interior entries are small, down to 1e-5 of the
    largest: their tolerance is the round-off of J, 1e-9 of the largest entry)."""
    model = cantilever("tri6", "strain", prescribed=True)
    mesh = model.mesh
    J = shape_functional(model, OBJECTIVES[objective])
    X = mesh.points.copy()
    gradient = grad(J)(X)
    middle = node_subset(mesh, "interior")[20]
    entries = [(mesh.nearest_node((2.0, 0.5)), 0), (mesh.nearest_node((1.0, 1.0)), 1),
               (middle, 0), (middle, 1), (mesh.nearest_node((0.0, 0.5)), 1)]
    for node, component in entries:
        unit = np.zeros_like(X)
        unit[node, component] = 1.0
        difference = central_difference(J, X, unit, 1e-3)
        assert gradient[node, component] == pytest.approx(
            difference, rel=1e-7, abs=1e-9 * np.abs(gradient).max()), (node, component)


# ---------------------------------------------------------------- closed form: cantilever
# Timoshenko beam theory (S. Timoshenko, J. Gere, *Mechanics of Materials*, §9.11 on shear
# deformation; Timoshenko & Goodier, *Theory of Elasticity*, §21): an end-loaded cantilever
# of length L, height h and thickness t deflects at the tip by
#     δ = P L³ / (3 E I) + P L / (κ G A),   I = t h³ / 12, A = t h, κ = 5/6, G = E / 2(1+ν).
# The end load here is a uniform shear traction τ on the end face, P = τ t h, so
#     δ = 4 τ L³ / (E h²) + τ L / (κ G),
#     ∂δ/∂L = 12 τ L² / (E h²) + τ / (κ G),   ∂δ/∂h = −8 τ L³ / (E h³).
BEAM = {"E": 1000.0, "nu": 0.3, "t": 1.0, "tau": 1.0, "L": 10.0, "h": 1.0}


def timoshenko_tip_derivatives(E, nu, t, tau, L, h) -> tuple[float, float]:
    """``(∂δ/∂L, ∂δ/∂h)`` of the tip deflection above."""
    shear_modulus, kappa = E / (2 * (1 + nu)), 5.0 / 6.0
    return (12 * tau * L**2 / (E * h**2) + tau / (kappa * shear_modulus),
            -8 * tau * L**3 / (E * h**3))


def test_cantilever_tip_deflection_derivatives_match_timoshenko():
    """Moving the nodes by ``X' = X diag(L'/L, 1)`` (or ``diag(1, h'/h)``) changes the length
    (height) of the beam, so ``dδ/dL = Σ (dδ/dX) · V`` with ``V = dX/dL = (x/L, 0)`` and
    ``dδ/dh`` with ``V = (0, y/h)`` (mid-plane on y = 0). A slender tri6 beam (L/h = 10,
    4 cells through the height, clamped end, plane stress): the FE derivatives are within
    0.2 % of Timoshenko's (0.17 % for L, 0.14 % for h; the full clamp of the FE model, which
    also stops the warping of the end section, is the main difference), and equal a
    fourth-order central difference of the FE deflection along V to 1e-7."""
    E, nu, t, tau, L, h = (BEAM[k] for k in ("E", "nu", "t", "tau", "L", "h"))
    mesh = rectangle(40, 4, L, h, cell_type="tri6", origin=(0.0, -h / 2))
    model = Elasticity(mesh, E=E, nu=nu, plane="stress", thickness=t)
    model.fix("left")
    model.traction("right", (0.0, -tau))

    def tip_deflection(X):
        return -value_at(model.solve(points=X), (L, 0.0), component=1)

    X = mesh.points.copy()
    gradient = grad(tip_deflection)(X)
    zero = np.zeros(mesh.n_points)
    velocities = {"L": np.column_stack([X[:, 0] / L, zero]),
                  "h": np.column_stack([zero, X[:, 1] / h])}
    closed_form = dict(zip("Lh", timoshenko_tip_derivatives(E, nu, t, tau, L, h),
                           strict=True))
    for name, velocity in velocities.items():
        derivative = float(np.sum(gradient * velocity))
        assert derivative == pytest.approx(closed_form[name], rel=5e-3), name
        difference = central_difference(tip_deflection, X, velocity, 1e-3 * BEAM[name])
        assert derivative == pytest.approx(difference, rel=1e-7), name


# ---------------------------------------------------------------- closed form: Lamé
# Lamé's thick cylinder (Timoshenko & Goodier, *Theory of Elasticity*, §28): inner radius a,
# outer radius b, internal pressure p, free outer surface. With σ_r = A − B/r²,
# σ_θ = A + B/r² and σ_r(a) = −p, σ_r(b) = 0: A = p a²/(b² − a²), B = p a² b²/(b² − a²).
# Plane strain (ε_z = 0): u/r = ε_θ = (1+ν)/E ((1−ν) σ_θ − ν σ_r) = (1+ν)/E ((1−2ν) A + B/r²),
# so at the bore
#     u(a) = (1+ν) p a ((1−2ν) a² + b²) / (E (b² − a²)),
#     du(a)/da = (1+ν) p / E · [(3(1−2ν) a² + b²)(b² − a²) + 2a² ((1−2ν) a² + b²)] / (b² − a²)².
CYLINDER = {"E": 1.0, "nu": 0.3, "p": 1e-2, "a": 1.0, "b": 2.0}


def lame_bore_displacement_derivative(E, nu, p, a, b) -> float:
    """``du(a)/da`` of the bore's radial displacement above (the bore moves with a)."""
    squares = b**2 - a**2
    g, dg = (1 - 2 * nu) * a**3 + b**2 * a, 3 * (1 - 2 * nu) * a**2 + b**2
    return (1 + nu) * p / E * (dg * squares + 2 * a * g) / squares**2


def cylinder(n: int, cell_type: str) -> Elasticity:
    """Quarter cylinder, ``n`` cells across the wall, symmetry supports, bore pressure."""
    c = CYLINDER
    mesh = quarter_annulus(n, 2 * n, c["a"], c["b"], cell_type=cell_type)
    model = Elasticity(mesh, E=c["E"], nu=c["nu"], plane="strain")
    model.fix("x_axis", components=1).fix("y_axis", components=0)
    model.pressure("inner", c["p"])
    return model


def bore_radius_velocity(X: np.ndarray) -> np.ndarray:
    """``V = (b − r)/(b − a) e_r``: the bore moves radially by 1, the outer surface stays."""
    c = CYLINDER
    r = np.hypot(X[:, 0], X[:, 1])
    return ((c["b"] - r) / (c["b"] - c["a"]))[:, None] * X / r[:, None]


@pytest.mark.parametrize(("cell_type", "sizes", "errors", "fd_rtol"), [
    ("quad4", (4, 8, 16), (7.0e-3, 2.0e-3, 5.1e-4), 1e-8),
    ("tri6", (4, 8), (1.2e-3, 1.9e-4), 1e-8),
])
def test_cylinder_bore_displacement_derivative_matches_lame(cell_type, sizes, errors,
                                                             fd_rtol):
    """``du(a)/da = Σ (du_x(a, 0)/dX) · V`` against Lamé. The relative error (measured
    values in the parameters, asserted within 30 %) falls with the mesh size like h² for
    quad4 (7.0e-3, 2.0e-3, 5.1e-4 for 4, 8, 16 cells across the wall) and faster for tri6
    (1.2e-3, 1.9e-4; 2.8e-5 at 16), like the displacement itself. The pressure load follows
    the bore (its facets lengthen), and the node at (a, 0) moves with it, so the derivative
    is the total one of ``u(a; a)``. The same derivative from a fourth-order central
    difference of the FE value along V agrees to round-off."""
    c = CYLINDER
    exact = lame_bore_displacement_derivative(c["E"], c["nu"], c["p"], c["a"], c["b"])
    for n, expected_error in zip(sizes, errors, strict=True):
        model = cylinder(n, cell_type)

        def bore_displacement(X, model=model):
            return value_at(model.solve(points=X), (c["a"], 0.0), component=0)

        X = model.mesh.points.copy()
        velocity = bore_radius_velocity(X)
        derivative = float(np.sum(grad(bore_displacement)(X) * velocity))
        error = abs(derivative / exact - 1)
        assert error == pytest.approx(expected_error, rel=0.3), (n, derivative, exact)
        difference = central_difference(bore_displacement, X, velocity, 1e-3)
        assert derivative == pytest.approx(difference, rel=fd_rtol), n

"""Every elasticity objective × every parameter kind: Taylor rate 2 and finite differences.

The model is the cantilever of :func:`adjoint_helpers.cantilever` (6 x 3 quad4, plane
stress) with a moving clamp (``g ≠ 0``), so the Dirichlet lift is part of every solve.
"""

import numpy as np
import pytest
from adjoint_helpers import CORNER, assert_gradient, cantilever, densities, distort

from fesens.ad import grad
from fesens.mesh import box, rectangle
from fesens.objectives import (
    Differentiable,
    compliance,
    displacement_at,
    displacement_norm,
    mean_displacement,
    misfit,
    stress_ks,
    stress_pnorm,
    volume,
)

MODEL = cantilever()
N_CELLS = MODEL.mesh.n_cells
G0 = MODEL.prescribed_values()
RNG = np.random.default_rng(7)
#: Synthetic measurements: the y-displacement at the nodes of ``right`` and ``top`` of the
#: cantilever with another E field, plus noise (the misfit is far from its minimum).
MEASURED_NODES = np.union1d(MODEL.mesh.nodes("right"), MODEL.mesh.nodes("top"))
_TRUE = MODEL.solve(E=RNG.uniform(0.8, 1.6, N_CELLS), solver="superlu").u
MEASURED = _TRUE[2 * MEASURED_NODES + 1] + 1e-3 * RNG.standard_normal(MEASURED_NODES.size)

OBJECTIVES = {
    "compliance": compliance,
    "displacement_norm": displacement_norm,
    "displacement_at": lambda state: displacement_at(state, CORNER, component=1),
    "mean_displacement": lambda state: mean_displacement(state, "right", component=1),
    "stress_pnorm": lambda state: stress_pnorm(state, p=8.0),
    "stress_ks": lambda state: stress_ks(state, rho=20.0),
    "misfit": lambda state: misfit(state, MEASURED_NODES, MEASURED, component=1),
}

#: Smaller first Taylor step for Poisson's ratio (its natural scale is 0.1, not 1).
NU_STEP = 2e-3
#: kind -> (starting point, traced solve of the cantilever's problem for that parameter)
PARAMETERS = {
    "density": (densities(N_CELLS, seed=1), lambda pb, x: pb.solve(scale=x**3)),
    "E_field": (RNG.uniform(0.5, 1.5, N_CELLS), lambda pb, E: pb.solve(E=E)),
    "E_scalar": (1.3, lambda pb, E: pb.solve(E=E)),
    "nu_field": (RNG.uniform(0.2, 0.35, N_CELLS), lambda pb, nu: pb.solve(nu=nu)),
    "nu_scalar": (0.28, lambda pb, nu: pb.solve(nu=nu)),
    "point_load": (1.2, lambda pb, m: pb.solve(loads={"tip": m})),
    "traction": (0.8, lambda pb, m: pb.solve(loads={"traction": m})),
    "body_force": (1.5, lambda pb, m: pb.solve(loads={"gravity": m})),
    "dirichlet": (G0 + 0.05 * RNG.standard_normal(G0.size),
                  lambda pb, g: pb.solve(dirichlet=g)),
    "several": (
        {"x": densities(N_CELLS, seed=5), "E": RNG.uniform(0.5, 1.5, N_CELLS), "nu": 0.28,
         "tip": 1.2, "traction": 0.8, "g": G0 + 0.05 * RNG.standard_normal(G0.size)},
        lambda pb, p: pb.solve(scale=p["x"] ** 3, E=p["E"], nu=p["nu"],
                               loads={"tip": p["tip"], "traction": p["traction"]},
                               dirichlet=p["g"]),
    ),
}

#: Combinations in which the objective is affine in the parameter (u is affine in load
#: magnitudes and in g; compliance fᵀu with f independent of g).
AFFINE = {(objective, kind)
          for objective in ("displacement_at", "mean_displacement")
          for kind in ("point_load", "traction", "body_force", "dirichlet")}
AFFINE.add(("compliance", "dirichlet"))


@pytest.mark.parametrize("kind", PARAMETERS)
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_objective_gradient(objective, kind):
    problem = Differentiable(cantilever())
    x0, solve = PARAMETERS[kind]
    J = OBJECTIVES[objective]

    def fun(x):
        return J(solve(problem, x))

    step = NU_STEP if kind.startswith("nu") else None
    assert_gradient(fun, x0, affine=(objective, kind) in AFFINE, step=step)


def test_parameters_not_used_get_zero_gradient():
    problem = Differentiable(cantilever(prescribed=False))
    x = densities(N_CELLS, seed=3)
    g = grad(lambda p: compliance(problem.solve(scale=p["x"] ** 3, E=p["E"])))(
        {"x": x, "E": 1.0, "unused": np.ones(4)})
    assert np.array_equal(g["unused"], np.zeros(4))
    # With fixed loads and g = 0, a stiffer cell or material lowers the compliance.
    assert np.all(g["x"] < 0) and g["E"] < 0


# ------------------------------------------------------------------ volume (linear)
def cell_measures(mesh) -> np.ndarray:
    """Cell areas/volumes from the corners alone: ½|det| (triangles), ⅙|det| (tetrahedra),
    the shoelace formula (quadrilaterals), ``(n_cells,)``."""
    if mesh.cell_type == "quad4":
        x, y = mesh.points[mesh.cells, 0], mesh.points[mesh.cells, 1]
        return 0.5 * np.abs(np.sum(x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y,
                                   axis=1))
    corners = mesh.points[mesh.cells[:, : mesh.dim + 1]]
    edges = corners[:, 1:] - corners[:, :1]
    return np.abs(np.linalg.det(edges)) / (2.0 if mesh.dim == 2 else 6.0)


VOLUME_MESHES = {
    "tri6": rectangle(6, 3, 2.0, 1.0, cell_type="tri6"),
    "quad4-distorted": distort(rectangle(6, 3, 2.0, 1.0, cell_type="quad4")),
    "tet4": box(2, 2, 1, 1.0, 0.5, 0.25, cell_type="tet4"),
}


@pytest.mark.parametrize("name", VOLUME_MESHES)
@pytest.mark.parametrize("fraction", [False, True])
def test_volume_is_the_closed_form(name, fraction):
    mesh = VOLUME_MESHES[name]
    x = densities(mesh.n_cells, seed=4)
    measures = cell_measures(mesh)
    lengths = np.ptp(mesh.points, axis=0)
    assert measures.sum() == pytest.approx(np.prod(lengths), rel=1e-12)
    weights = measures / (measures.sum() if fraction else 1.0)
    assert volume(mesh, x, fraction=fraction) == pytest.approx(x @ weights, rel=1e-12)
    gradient = grad(lambda x: volume(mesh, x, fraction=fraction))(x)
    assert np.allclose(gradient, weights, rtol=1e-12, atol=0)


# ------------------------------------------------------------------ objective options
def right_half(centroids: np.ndarray) -> np.ndarray:
    return centroids[:, 0] > 1.0


#: Options of the objectives (cell subsets, relaxed stress, weights, predicates), each
#: differentiated with respect to the SIMP densities ``x``: ``J(state, x)``.
VARIANTS = {
    "stress_pnorm_relaxed_subset": lambda s, x: stress_pnorm(
        s, p=10.0, stress_scale=x**0.5, cells=right_half),
    "stress_ks_default_rho": lambda s, x: stress_ks(s, reference=0.5),
    "stress_ks_relaxed_subset": lambda s, x: stress_ks(
        s, rho=30.0, stress_scale=x**0.5, cells=right_half),
    "misfit_weighted": lambda s, x: misfit(
        s, MEASURED_NODES, MEASURED, component=1,
        weights=np.linspace(1.0, 2.0, MEASURED_NODES.size)),
    "mean_displacement_predicate": lambda s, x: mean_displacement(
        s, lambda p: p[:, 0] > 1.5, component=0),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_objective_options_density_gradient(variant):
    problem = Differentiable(cantilever())
    J = VARIANTS[variant]
    x = densities(N_CELLS, seed=6)
    assert_gradient(lambda x: J(problem.solve(scale=x**3), x), x)


def test_volume_follows_a_mesh_modified_in_place():
    """``Mesh.validate()`` after an in-place change of the points must not leave stale cell
    volumes behind (the objectives cache them on the mesh)."""
    mesh = rectangle(3, 2, 1.0, 1.0)
    x = densities(mesh.n_cells, seed=7)
    assert volume(mesh, x, fraction=False) == pytest.approx(x.sum() / mesh.n_cells, rel=1e-12)
    mesh.points *= 2.0
    mesh.validate()
    assert volume(mesh, x) == pytest.approx(4.0 * x.sum() / mesh.n_cells, rel=1e-12)

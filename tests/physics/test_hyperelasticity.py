"""Finite-strain elasticity: the patch test at finite strain, the small-load limit, uniaxial
tension in closed form, the tangent, inversion, the constants' checks and gradients through
the Newton solve (the elastica is in ``test_hyperelasticity_elastica.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from fesens.ad import check_grad, taylor_test
from fesens.errors import NewtonError
from fesens.fem.elements import reference_element
from fesens.mesh.generators import box, rectangle
from fesens.objectives import compliance
from fesens.physics import PHYSICS
from fesens.physics.elasticity import Elasticity
from fesens.physics.hyperelastic_law import hyperelastic_law, lame_constants
from fesens.physics.hyperelasticity import FiniteStrainElasticity

LAWS = ("neo-hookean", "saint-venant-kirchhoff")


#: The cell of the corners of each quadratic cell type.
CORNER_CELLS = {"tri6": "tri3", "quad8": "quad4", "quad9": "quad4", "tet10": "tet4",
                "hex20": "hex8", "hex27": "hex8"}


def distorted(mesh, amount: float, seed: int = 0):
    """``mesh`` with its interior corner nodes moved at random by up to ``amount`` (the
    boundary stays where it is) and its other nodes where the corners' linear map puts
    them, so that quadratic cells keep straight edges (on curved ones the default rule does
    not integrate ``∫ ∇N_a`` exactly in 3D). The mesh is changed in place and returned."""
    points, cells = mesh.points, mesh.cells
    n_corners = mesh.type_info.n_corners
    low, high = points.min(axis=0), points.max(axis=0)
    interior = ~(np.isclose(points, low) | np.isclose(points, high)).any(axis=1)
    moved = np.zeros(len(points), dtype=bool)
    moved[cells[:, :n_corners]] = True
    moved &= interior
    rng = np.random.default_rng(seed)
    points[moved] += amount * rng.uniform(-1, 1, (moved.sum(), points.shape[1]))
    if mesh.cell_type in CORNER_CELLS:
        element = reference_element(mesh.cell_type)
        N = reference_element(CORNER_CELLS[mesh.cell_type]).shape(element.nodes[n_corners:])
        points[cells[:, n_corners:]] = np.einsum("ka,eac->ekc", N, points[cells[:, :n_corners]])
    return mesh


def on_boundary(mesh):
    low, high = mesh.points.min(axis=0), mesh.points.max(axis=0)
    return lambda p: (np.isclose(p, low) | np.isclose(p, high)).any(axis=1)


# ------------------------------------------------------------ patch test
PATCH_MESHES = {
    "tri3": lambda: rectangle(4, 3, 1.0, 0.75, "tri3"),
    "quad4": lambda: rectangle(4, 3, 1.0, 0.75, "quad4"),
    "tri6": lambda: rectangle(3, 3, 1.0, 0.75, "tri6"),
    "quad8": lambda: rectangle(3, 3, 1.0, 0.75, "quad8"),
    "quad9": lambda: rectangle(3, 3, 1.0, 0.75, "quad9"),
    "hex8": lambda: box(3, 3, 3, 1.0, 1.0, 1.0, "hex8"),
    "tet10": lambda: box(2, 2, 2, 1.0, 1.0, 1.0, "tet10"),
    "hex20": lambda: box(2, 2, 2, 1.0, 1.0, 1.0, "hex20"),
    "hex27": lambda: box(2, 2, 2, 1.0, 1.0, 1.0, "hex27"),
}


@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("cell_type", list(PATCH_MESHES))
def test_patch_test_homogeneous_finite_deformation(cell_type, law):
    """Patch test at finite strain (Zienkiewicz & Taylor, *The Finite Element Method*,
    vol. 1, 6th ed., 2005, §9.5; Bonet & Wood 2008, §8): a homogeneous deformation
    ``x = F X`` prescribed on the boundary of a distorted mesh is reproduced exactly at
    every node, and the first Piola–Kirchhoff stress is the closed form ``P(F)`` of the
    law in every cell, since isoparametric cells contain the affine fields."""
    mesh = distorted(PATCH_MESHES[cell_type](), 0.06)
    dim = mesh.dim
    F = np.array([[1.25, 0.12, -0.05], [-0.08, 0.85, 0.1], [0.04, -0.06, 1.1]])[:dim, :dim]
    model = FiniteStrainElasticity(mesh, E=200.0, nu=0.3, law=law)
    model.fix(on_boundary(mesh), value=lambda p: p @ (F - np.eye(dim)).T)
    solution = model.solve(steps=2)
    expected = mesh.points @ (F - np.eye(dim)).T
    error = np.abs(solution.displacement - expected).max() / np.abs(expected).max()
    assert error < 1e-10
    lam, mu = lame_constants(200.0, 0.3, "strain" if dim == 2 else None)
    P = hyperelastic_law(law).first_piola(F - np.eye(dim), lam, mu)
    assert np.abs(solution.first_piola() - P).max() < 1e-9 * np.abs(P).max()
    sigma = P @ F.T / np.linalg.det(F)
    assert np.abs(solution.cauchy() - sigma).max() < 1e-9 * np.abs(sigma).max()
    assert np.allclose(solution.jacobian(), np.linalg.det(F), rtol=1e-12)


# ------------------------------------------------------------ the small-load limit
@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("cell_type", ["quad8", "tri3"])
def test_small_loads_give_linear_plane_strain_elasticity(cell_type, law):
    """At a load 10⁻⁶ of one that bends the cantilever by a tenth of its length, the
    finite-strain solution is the linear plane-strain one (its linearisation at F = I is
    Hooke's law with the same Lamé constants) to 10⁻⁶ relative."""
    mesh = distorted(rectangle(12, 3, 2.0, 0.3, cell_type), 0.01)
    rng = np.random.default_rng(3)
    E = 100.0 * (1.0 + rng.random(mesh.n_cells))
    models = [Elasticity(mesh, E=E, nu=0.3, plane="strain"),
              FiniteStrainElasticity(mesh, E=E, nu=0.3, law=law)]
    scale = 1e-6
    for model in models:
        model.fix("left")
        model.traction("right", (0.0, -0.1 * scale))
        model.body_force((0.02 * scale, -0.005 * scale))
        model.point_load("top", (0.0, 0.0005 * scale))
    linear = models[0].solve().displacement
    # strains of 1e-8: the laws keep full relative precision there (no F − F⁻ᵀ, no
    # ln det F), so Newton reaches its default relative tolerance
    finite = models[1].solve().displacement
    assert 0.1 < np.abs(linear).max() / scale < 0.3  # the reference load bends it by ~L/10
    assert np.abs(finite - linear).max() < 1e-6 * np.abs(linear).max()


# ------------------------------------------------------------ uniaxial tension
def neo_hookean_uniaxial(stretch: float, lam: float, mu: float, plane_strain: bool):
    """Nominal stress ``P₁₁`` and lateral stretch of a compressible neo-Hookean bar under
    uniaxial tension (Bonet & Wood 2008, §6.4.3: ``P = μ (F − F⁻ᵀ) + λ ln J F⁻ᵀ``) with
    ``F = diag(λ₁, λ₂, λ₃)``: the lateral stresses vanish,
    ``μ (λ₂ − 1/λ₂) + λ ln J / λ₂ = 0``, with ``λ₃ = λ₂`` (3D, ``J = λ₁ λ₂²``) or
    ``λ₃ = 1`` (plane strain, ``J = λ₁ λ₂``: then ``P₃₃ = λ ln J ≠ 0``, so the bar is in
    uniaxial tension in its plane only). ``P₁₁ = μ (λ₁ − 1/λ₁) + λ ln J / λ₁``."""
    power = 1 if plane_strain else 2

    def lateral_stress(l2):
        return mu * (l2 - 1 / l2) + lam * np.log(stretch * l2 ** power) / l2

    l2 = brentq(lateral_stress, 0.2, 1.5)
    J = stretch * l2 ** power
    return mu * (stretch - 1 / stretch) + lam * np.log(J) / stretch, l2


@pytest.mark.parametrize(("dim", "cell_type"), [(3, "hex8"), (2, "quad4"), (2, "quad8")])
def test_uniaxial_tension_against_the_closed_form(dim, cell_type):
    """A block on symmetry planes (x = 0, y = 0, z = 0) pulled by a dead traction ``P₁₁``
    on x = L: the computed stretches are the closed form of
    :func:`neo_hookean_uniaxial` (3D: Bonet & Wood's uniaxial case; 2D: plane strain,
    derived there) along the whole curve, to 1e-9."""
    E, nu = 10.0, 0.3
    lam, mu = lame_constants(E, nu, None if dim == 3 else "strain")
    mesh = (box(2, 2, 2, 2.0, 1.0, 1.0, cell_type) if dim == 3
            else rectangle(3, 2, 2.0, 1.0, cell_type))
    model = FiniteStrainElasticity(mesh, E=E, nu=nu)
    model.fix("left", components=[0])
    model.fix("bottom", components=[1])
    if dim == 3:
        model.fix("back", components=[2])
    traction = np.zeros(dim)
    traction[0] = 1.0
    model.traction("right", traction, name="pull")
    right, top = mesh.nodes("right"), mesh.nodes("top")
    for stretch in (1.05, 1.4, 2.0):
        P11, l2 = neo_hookean_uniaxial(stretch, lam, mu, dim == 2)
        solution = model.solve(loads={"pull": P11}, steps=4)
        u = solution.displacement
        assert np.allclose(u[right, 0], 2.0 * (stretch - 1.0), rtol=1e-9, atol=0)
        assert np.allclose(u[top, 1], l2 - 1.0, rtol=1e-9, atol=0)
        assert solution.first_piola()[:, 0, 0] == pytest.approx(P11, rel=1e-9)


# ------------------------------------------------------------ the tangent and Newton
@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("cell_type", ["quad8", "tet4"])
def test_tangent_is_the_derivative_of_the_residual(cell_type, law):
    """The assembled tangent equals the central difference of the assembled residual at a
    deformed state (all free columns), to the differences' truncation."""
    mesh = (rectangle(3, 2, 1.0, 0.5, cell_type) if cell_type == "quad8"
            else box(2, 1, 1, 1.0, 0.5, 0.5, cell_type))
    model = FiniteStrainElasticity(mesh, E=np.linspace(50, 80, mesh.n_cells), nu=0.35,
                                   law=law)
    model.fix("left")
    fields = model.material_fields()
    X = mesh.points
    u = (0.1 * np.c_[np.sin(2 * X[:, 0]) * X[:, 1], X[:, 0] ** 2, X[:, 0] * X[:, -1]]
         )[:, :mesh.dim].ravel()
    u[model.constrained_dofs] = 0.0
    f = np.zeros(model.dofmap.n_dofs)
    K = model.tangent(u, fields).tocsr().toarray()
    free = model.free_dofs
    h = 1e-6
    columns = []
    for dof in free:
        step = np.zeros_like(u)
        step[dof] = h
        columns.append((model.residual(u + step, fields, f)
                        - model.residual(u - step, fields, f)) / (2 * h))
    difference = np.array(columns).T
    assert np.abs(K - difference).max() < 1e-6 * np.abs(K).max()
    assert np.abs(K - K.T).max() < 1e-12 * np.abs(K).max()


def test_newton_converges_quadratically():
    """With the consistent tangent the residual norms of a load step fall quadratically
    once close (Nocedal & Wright, *Numerical Optimization*, 2nd ed., 2006, Thm. 3.5): the
    order ``log(r_(k+1)/r_k) / log(r_k/r_(k-1))`` reaches 2 (a wrong tangent: 1)."""
    model = FiniteStrainElasticity(rectangle(4, 4, 1.0, 1.0, "quad8"), E=10.0, nu=0.3)
    model.fix("bottom").traction("top", (1.5, 1.0))
    solution = model.solve(steps=4, newton={"line_search": None, "rtol": 1e-14,
                                            "adaptive": False})
    attempt = solution.report.attempts[-1]
    r = attempt.residuals
    assert attempt.converged and len(r) <= 8
    r = r[r > 1e-11 * r[0]]  # above round-off
    orders = np.log(r[2:] / r[1:-1]) / np.log(r[1:-1] / r[:-2])
    assert orders[-3:].max() > 1.8, attempt.residuals


def test_a_bent_3d_cantilever_converges_without_cut_backs():
    """A hex20 cantilever bent to a deflection of half its length in 2 load steps: the
    default (energy) line search converges in a few iterations per step, where a residual
    one stalls on the stretched first iterates (measured: 20 iterations against 496 with
    34 cut-backs)."""
    model = FiniteStrainElasticity(box(6, 2, 2, 3.0, 0.5, 0.5, "hex20"), E=100.0, nu=0.3)
    model.fix("left")
    model.traction("right", (0.0, 0.0, -0.5))
    model.body_force((0.0, -0.1, 0.0))
    solution = model.solve(steps=2)
    assert solution.report.cutbacks == []
    assert solution.report.iterations <= 30
    assert solution.displacement[:, 2].min() < -1.5


# ------------------------------------------------------------ inversion and the constants
def test_a_load_that_inverts_elements_stops_naming_them():
    """Pressing the top of a unit block 2.4 down in 3 steps: the first step (0.8) converges,
    the second (1.6) and its cut-back (1.2) press the top below the bottom, which inverts
    cells whatever the state; Newton stops naming them and keeps the first step."""
    mesh = rectangle(3, 1, 1.0, 1.0, "quad4")  # every node on the bottom or the top
    model = FiniteStrainElasticity(mesh, E=10.0, nu=0.3)
    model.fix("bottom").fix("top", components=[1], value=-2.4)
    with pytest.raises(NewtonError, match=r"det F <= 0.*inverted element\(s\) \[") as caught:
        model.solve(steps=3, newton={"max_cutbacks": 1, "adaptive": False})
    error = caught.value
    assert error.load_factor == pytest.approx(1.0 / 3.0)
    assert "inverted element(s) [" in error.reason
    assert error.state.shape == (model.dofmap.n_dofs,)
    top = mesh.nodes("top")
    assert np.allclose(error.state.reshape(-1, 2)[top, 1], -0.8)
    assert np.abs(error.state.reshape(-1, 2)[top, 0]).max() > 0.01  # the top spreads
    assert model.inadmissibility(error.state, model.material_fields()) is None


def test_constants_out_of_range_are_refused():
    mesh = rectangle(2, 2)
    with pytest.raises(ValueError, match="Poisson's ratio nu must lie in"):
        FiniteStrainElasticity(mesh, E=1.0, nu=0.5)
    with pytest.raises(ValueError, match="Poisson's ratio nu must lie in"):
        FiniteStrainElasticity(mesh, E=1.0, nu=-1.0)
    with pytest.raises(ValueError, match="Young's modulus E must be > 0"):
        FiniteStrainElasticity(mesh, E=0.0)
    model = FiniteStrainElasticity(mesh).fix("left")
    with pytest.raises(ValueError, match="scale must be > 0"):
        model.solve(scale=np.zeros(mesh.n_cells))
    with pytest.raises(ValueError, match="unknown hyperelastic law 'mooney'"):
        FiniteStrainElasticity(mesh, law="mooney")


def test_registered_with_its_solution_fields():
    assert PHYSICS.get("hyperelasticity") is FiniteStrainElasticity
    model = FiniteStrainElasticity(rectangle(4, 2, 2.0, 1.0, "quad4"), E=50.0, nu=0.3)
    model.fix("left").pressure("right", -2.0)
    solution = model.solve(steps=2)
    assert solution.strain_energy() > 0
    assert solution.deformed_points().shape == model.mesh.points.shape
    assert solution.nodal_stress().shape == (model.mesh.n_points, 2, 2)
    data = {**solution.point_data(), **solution.cell_data()}
    assert data["stress"].shape == (model.mesh.n_cells, 6)
    assert data["nodal_von_mises"].shape == (model.mesh.n_points,)
    assert solution.von_mises().min() > 0


# ------------------------------------------------------------ gradients
@pytest.fixture
def beam():
    mesh = distorted(rectangle(6, 2, 2.0, 0.4, "quad8"), 0.02)
    model = FiniteStrainElasticity(mesh, E=100.0, nu=0.3)
    model.fix("left", value=lambda p: np.c_[0.02 * p[:, 1], 0.0 * p[:, 1]])
    model.point_load("right", (0.0, -0.05), name="tip")
    model.body_force((0.0, -0.2), name="weight")
    return model


def objective(solution):
    """A compliance and a cubic of the state (ū without special structure)."""
    return compliance(solution) + 3.0 * np.sum(solution.u ** 3)


def parameter_cases(model):
    rng = np.random.default_rng(5)
    n = model.mesh.n_cells
    x = 0.7 + 0.3 * rng.random(n)
    return {
        "E": (lambda E: objective(model.solve(E=E)), 100.0 * (1 + 0.3 * rng.random(n))),
        "nu": (lambda nu: objective(model.solve(nu=nu)), 0.3 + 0.1 * rng.random(n)),
        "scale": (lambda x: objective(model.solve(scale=0.01 + 0.99 * x ** 3)), x),
        "load": (lambda m: objective(model.solve(loads={"tip": m})), 1.3),
        "dirichlet": (lambda g: objective(model.solve(dirichlet=g)),
                      model.prescribed_values() + 0.01 * rng.random(
                          model.constrained_dofs.size)),
        "points": (lambda X: objective(model.solve(points=X)),
                   model.mesh.points + 0.005 * rng.standard_normal(model.mesh.points.shape)),
    }


NAMES = ["E", "nu", "scale", "load", "dirichlet", "points"]


@pytest.mark.parametrize("name", NAMES)
def test_taylor_through_the_newton_solve(beam, name):
    """Taylor remainders of the gradient through the Newton solve (adjoint with the
    converged tangent) fall at rate 2 (Farrell et al., SIAM J. Sci. Comput. 35, 2013)."""
    fun, x = parameter_cases(beam)[name]
    result = taylor_test(fun, x, verbose=False)
    assert result.rate > 1.9, result.table()


@pytest.mark.parametrize("name", ["E", "scale", "dirichlet", "points"])
def test_taylor_from_several_load_steps(beam, name):
    """A state reached through 4 load steps (no warm start) has the same gradient rule."""
    fun, x = parameter_cases(beam)[name]
    key = {"E": "E", "scale": "scale", "dirichlet": "dirichlet", "points": "points"}[name]

    def stepped(value):
        if name == "scale":
            value = 0.01 + 0.99 * value ** 3
        solution = beam.solve(steps=4, warm_start=False, newton={"adaptive": False},
                              **{key: value})
        assert len(solution.report.load_factors) >= 5
        return objective(solution)

    result = taylor_test(stepped, x, verbose=False)
    assert result.rate > 1.9, result.table()
    assert fun(x) == pytest.approx(stepped(x), rel=1e-9)


@pytest.mark.parametrize("name", ["nu", "load", "points"])
def test_central_differences_agree(beam, name):
    fun, x = parameter_cases(beam)[name]
    assert check_grad(fun, x, rtol=1e-5) < 1e-5


def test_taylor_of_a_stress_objective(beam):
    """The cell Cauchy and Piola stresses of a traced solution are traced: a quadratic of
    them has a rate-2 Taylor remainder in E and in the node coordinates."""
    def stresses(solution):
        return (np.sum(solution.cauchy()[:, 0, 0] ** 2)
                + np.sum(solution.first_piola()[:, 1, 0] ** 2))

    rng = np.random.default_rng(6)
    n = beam.mesh.n_cells
    for fun, x in ((lambda E: stresses(beam.solve(E=E)), 100.0 * (1 + 0.3 * rng.random(n))),
                   (lambda X: stresses(beam.solve(points=X)), beam.mesh.points.copy())):
        result = taylor_test(fun, x, verbose=False)
        assert result.rate > 1.9, result.table()

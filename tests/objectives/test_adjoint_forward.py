"""The traced forward solve is the untraced one, and the adjoint gradient of compliance is
the textbook SIMP sensitivity ``∂C/∂x_e = −p x_e^(p−1) u_eᵀ K0_e u_e``."""

import numpy as np
import pytest
from adjoint_helpers import (
    CELL_TYPES_2D,
    CELL_TYPES_3D,
    beam,
    cantilever,
    densities,
    plate,
    relative_difference,
)

from fesens.ad import grad
from fesens.fem.integrals.geometry import cell_geometry
from fesens.fem.integrals.kernels import gradient_matrices
from fesens.objectives import Differentiable, compliance, thermal_compliance, von_mises_squared
from fesens.physics.elasticity import elasticity_matrices, lame_parameters

SIMP_PENALTY = 3.0


# ------------------------------------------------------------------ forward
@pytest.mark.parametrize("prescribed", [False, True], ids=["g=0", "g!=0"])
@pytest.mark.parametrize("plane", ["stress", "strain"])
def test_traced_elasticity_solve_is_model_solve(plane, prescribed):
    model = cantilever(plane=plane, prescribed=prescribed, thickness=0.4)
    rng = np.random.default_rng(51)
    n = model.mesh.n_cells
    parameters = {"scale": densities(n, seed=51) ** 3, "E": rng.uniform(0.5, 1.5, n),
                  "nu": rng.uniform(0.2, 0.35, n)}
    loads = {"tip": 1.2, "traction": -0.4, "gravity": 2.0}
    state = Differentiable(model, solver="superlu").solve(loads=loads, **parameters)
    expected = model.solve(solver="superlu", loads=loads, **parameters)
    assert np.array_equal(state.u, expected.u)


@pytest.mark.parametrize("loads", [None, {"source": 0.5}], ids=["default", "magnitudes"])
def test_traced_heat_solve_is_model_solve(loads):
    model = plate(thickness=0.4)
    kappa = np.random.default_rng(52).uniform(0.5, 2.0, model.mesh.n_cells)
    state = Differentiable(model, solver="superlu").solve(conductivity=kappa, loads=loads)
    expected = model.solve(solver="superlu", conductivity=kappa, loads=loads)
    assert np.array_equal(state.u, expected.u)


@pytest.mark.parametrize("cell_type", ["tri6", "tet10"])
def test_traced_default_solve_is_model_solve(cell_type):
    """Model defaults (no parameters, unit load magnitudes), quadratic cells, cholmod."""
    model = beam(cell_type, "strain" if cell_type == "tri6" else None)
    state = Differentiable(model, solver="cholmod").solve()
    assert np.array_equal(state.u, model.solve(solver="cholmod").u)


def test_dirichlet_argument_equal_to_the_model_values_changes_nothing():
    model = cantilever()
    problem = Differentiable(model, solver="superlu")
    assert np.array_equal(problem.solve(dirichlet=model.prescribed_values()).u,
                          problem.solve().u)


STRESS_CASES = [(c, p) for c in CELL_TYPES_2D for p in ("stress", "strain")]
STRESS_CASES += [(c, None) for c in CELL_TYPES_3D]


@pytest.mark.parametrize(("cell_type", "plane"), STRESS_CASES,
                         ids=[f"{c}-{p or '3d'}" for c, p in STRESS_CASES])
def test_traced_von_mises_is_the_solution_von_mises(cell_type, plane):
    """The stress objectives see the stress that ``Solution.von_mises`` reports."""
    model = beam(cell_type, plane)
    rng = np.random.default_rng(55)
    n = model.mesh.n_cells
    parameters = {"scale": densities(n, seed=55) ** 3, "E": rng.uniform(0.5, 1.5, n),
                  "nu": rng.uniform(0.2, 0.35, n)}
    state = Differentiable(model).solve(**parameters)
    expected = model.solve(**parameters).von_mises() ** 2
    assert np.allclose(von_mises_squared(state), expected, rtol=1e-10, atol=0)


# ------------------------------------------------------------------ textbook sensitivity
def element_energies(model, u: np.ndarray, matrices) -> np.ndarray:
    """``u_eᵀ K_e u_e`` per cell for cell matrices ``(1 or n_cells, nd, nd)``."""
    u_cells = u[model.dofmap.cell_dofs]
    return np.einsum("ei,eij,ej->e", u_cells, np.broadcast_to(
        matrices, (model.mesh.n_cells, *matrices.shape[1:])), u_cells)


@pytest.mark.parametrize(("cell_type", "plane"),
                         [("quad4", "stress"), ("tri6", "strain"), ("hex8", None)])
def test_compliance_gradient_is_the_textbook_simp_sensitivity(cell_type, plane):
    thickness = 1.0 if plane is None else 0.4
    model = (beam(cell_type) if plane is None
             else cantilever(cell_type, plane, prescribed=False, thickness=thickness))
    E = np.random.default_rng(53).uniform(0.5, 1.5, model.mesh.n_cells)
    x = densities(model.mesh.n_cells, seed=53)
    p = SIMP_PENALTY
    u = model.solve(solver="cholmod", scale=x**p, E=E).u
    K_lambda, K_mu = elasticity_matrices(cell_geometry(model.mesh))
    lam, mu = lame_parameters(E, 0.3, plane)
    # K0_e = t (λ_e Kλ_e + μ_e Kμ_e): the stiffness of a solid cell.
    energy = lam * element_energies(model, u, K_lambda) + mu * element_energies(model, u, K_mu)
    expected = -p * x ** (p - 1) * thickness * energy
    problem = Differentiable(model, solver="cholmod")
    gradient = grad(lambda x: compliance(problem.solve(scale=x**p, E=E)))(x)
    assert relative_difference(gradient, expected) < 1e-10


def test_thermal_compliance_gradient_is_the_textbook_simp_sensitivity():
    model = plate(thickness=0.4)
    model.fix("left", value=0.0)  # the textbook formula needs homogeneous conditions
    kappa = np.random.default_rng(54).uniform(0.5, 2.0, model.mesh.n_cells)
    x = densities(model.mesh.n_cells, seed=54)
    p = SIMP_PENALTY
    T = model.solve(solver="cholmod", scale=x**p, conductivity=kappa).u
    K_kappa = gradient_matrices(cell_geometry(model.mesh))
    expected = -p * x ** (p - 1) * 0.4 * kappa * element_energies(model, T, K_kappa)
    problem = Differentiable(model, solver="cholmod")
    gradient = grad(lambda x: thermal_compliance(
        problem.solve(scale=x**p, conductivity=kappa)))(x)
    assert relative_difference(gradient, expected) < 1e-10

"""The output displacement of a compliant mechanism through spring supports: Taylor rate 2
and central differences, for SIMP densities and for the node coordinates.

The inverter of Bendsøe & Sigmund, *Topology Optimization* (2003), §2.6, in small: the
input force ``f_in`` at the left end of the symmetry line with the actuator's spring
``k_in``, the workpiece's spring ``k_out`` at the output port (the right end of the line),
clamped at the top-left corner, symmetric about the bottom edge. The objective
``u_out = lᵀ u`` (``l``: unit vector on the output's x component) is not self-adjoint: its
adjoint load is ``l``, and its adjoint solve factorizes ``K`` with the springs in it.
"""

import numpy as np
import pytest
from adjoint_helpers import assert_gradient, densities, distort

from fesens.ad import grad, hvp
from fesens.mesh import rectangle
from fesens.objectives import Differentiable, displacement_at, mean_displacement
from fesens.physics import Elasticity

NX, NY, K_IN, K_OUT = 8, 4, 1.0, 0.1
INPUT, OUTPUT = (0.0, 0.0), (2.0, 0.0)


def inverter() -> Elasticity:
    model = Elasticity(rectangle(NX, NY, 2.0, 1.0), E=1.0, nu=0.3)
    model.fix("bottom", components="y").fix((0.0, 1.0))
    model.spring(INPUT, K_IN, components="x").spring(OUTPUT, K_OUT, components="x")
    model.point_load(INPUT, (1.0, 0.0), name="input")
    return model


MODEL = inverter()
N_CELLS = MODEL.mesh.n_cells


def output(state):
    return displacement_at(state, OUTPUT, component=0)


@pytest.mark.parametrize("solver", ["superlu", "cholmod"])
def test_output_displacement_gradient_with_simp_densities(solver):
    problem = Differentiable(MODEL, solver=solver)
    assert_gradient(lambda x: output(problem.solve(scale=1e-3 + x**3)), densities(N_CELLS))


def test_mean_output_displacement_gradient_in_the_node_coordinates():
    problem = Differentiable(MODEL, solver="superlu")
    x = densities(N_CELLS, seed=3)
    moved = distort(MODEL.mesh, 0.1).points

    def mean_output(points):
        state = problem.solve(scale=x**3, points=points)
        return mean_displacement(state, lambda p: p[:, 0] > 1.99, component=0)

    assert_gradient(mean_output, moved)


def test_the_gradient_is_the_adjoint_formula_with_the_springs_in_k():
    # dJ/dx_e = −λ_eᵀ (∂K_e/∂x_e) u_e with K λ = l, K = K(x) + springs; the springs
    # themselves have no design derivative. Checked against the dense matrices.
    x = densities(N_CELLS, seed=2)
    problem = Differentiable(MODEL, solver="superlu")
    dJ = grad(lambda x: output(problem.solve(scale=x**3)))(x)
    free = MODEL.free_dofs
    K = MODEL.stiffness(scale=x**3).tocsr().toarray()
    u = np.linalg.solve(K, MODEL.load_vector()[free])
    out = 2 * MODEL.mesh.nearest_node(OUTPUT)
    lam = np.linalg.solve(K, (free == out).astype(float))
    expected = np.empty(N_CELLS)
    for e in range(N_CELLS):
        dx = np.zeros(N_CELLS)
        dx[e] = 3 * x[e] ** 2
        dK = (MODEL.stiffness(scale=dx).tocsr().toarray()
              - MODEL.stiffness(scale=np.zeros(N_CELLS)).tocsr().toarray())
        expected[e] = -lam @ dK @ u
    assert np.allclose(dJ, expected, rtol=1e-10, atol=1e-14)


def test_hessian_vector_product_through_the_springs():
    # forward-over-reverse through the springs' primitive against central differences of
    # the gradient
    problem = Differentiable(MODEL, solver="superlu")

    def output_of(x):
        return output(problem.solve(scale=x**3))

    x, v = densities(N_CELLS, seed=4), np.random.default_rng(5).standard_normal(N_CELLS)
    step = 1e-5
    gradient = grad(output_of)
    expected = (gradient(x + step * v) - gradient(x - step * v)) / (2 * step)
    assert np.allclose(hvp(output_of)(x, v), expected, rtol=1e-6, atol=1e-9)

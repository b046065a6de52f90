"""Matrix-free multigrid solves of a model (``gmg`` with ``matrix_free=True``):
solutions and gradients agree with CHOLMOD's on the assembled matrix, pass Taylor tests
(compliance, which is self-adjoint, and a displacement, which needs the adjoint solve),
no sparsity pattern is built, and what cannot be matrix-free is refused with the reason."""

import numpy as np
import pytest

from fesens.ad import grad, taylor_test
from fesens.ad.lattice import LatticeSystem, _apply, cell_bilinear
from fesens.errors import MeshError, SolverError
from fesens.fem.model.matrix_free import lattice_system
from fesens.mesh import box, quarter_annulus, rectangle
from fesens.objectives import Differentiable, compliance
from fesens.physics import Elasticity, HeatConduction
from fesens.solvers import solver_class

REFERENCE = solver_class("auto").name  # CHOLMOD, else SuperLU
MATRIX_FREE = ("gmg", {"rtol": 1e-11, "matrix_free": True, "coarse_size": 50})


def cantilever(mesh) -> Elasticity:
    plane = {"plane": "stress"} if mesh.dim == 2 else {}
    model = Elasticity(mesh, E=1.0, nu=0.3, **plane).fix("left")
    model.traction("right", (0.0,) * (mesh.dim - 1) + (-1.0,))
    return model


MODELS = {
    "hex8 16x8x8": lambda: cantilever(box(16, 8, 8, 2.0, 1.0, 1.0)),
    "hex8 odd 9x5x3": lambda: cantilever(box(9, 5, 3, 3.0, 1.0, 1.0)),
    "quad4 odd 21x11": lambda: cantilever(rectangle(21, 11, 2.0, 1.0)),
}


def densities(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.1, 1.0, n)


@pytest.mark.parametrize("make", list(MODELS.values()), ids=list(MODELS))
def test_compliance_and_gradient_agree_with_cholmod_and_pass_taylor(make):
    model = make()
    x = densities(model.mesh.n_cells)
    results = {}
    for name, solver in (("direct", REFERENCE), ("matrix-free", MATRIX_FREE)):
        problem = Differentiable(model, solver=solver)

        def J(x, problem=problem):
            return compliance(problem.solve(scale=x**3))

        results[name] = (J(x), grad(J)(x), J)
    (c0, g0, _), (c1, g1, J) = results["direct"], results["matrix-free"]
    assert abs(c1 - c0) < 1e-9 * abs(c0)
    assert np.abs(g1 - g0).max() < 1e-8 * np.abs(g0).max()
    assert model._assembler is not None  # the direct solve built it, not the other
    assert taylor_test(J, x, verbose=False).rate > 1.9


def test_no_sparsity_pattern_is_built():
    model = cantilever(box(8, 4, 4, 2.0, 1.0, 1.0))
    problem = Differentiable(model, solver=MATRIX_FREE)
    x = densities(model.mesh.n_cells)
    grad(lambda x: compliance(problem.solve(scale=x**3)))(x)
    assert model._assembler is None and model._operators == {}
    assert problem.solver.stats["n_solves"] >= 1


def test_displacement_gradient_uses_the_adjoint_solve_and_passes_taylor():
    model = cantilever(box(8, 4, 4, 2.0, 1.0, 1.0))
    tip = model.dofmap.node_dofs(model.mesh.nodes("right"), [2]).ravel()
    x = densities(model.mesh.n_cells, seed=1)
    gradients = []
    for solver in (REFERENCE, MATRIX_FREE):
        problem = Differentiable(model, solver=solver)

        def J(x, problem=problem):
            return np.sum(problem.solve(scale=x**3).u[tip] ** 2)

        gradients.append(grad(J)(x))
    assert np.abs(gradients[1] - gradients[0]).max() < 1e-7 * np.abs(gradients[0]).max()
    assert problem.solver.stats["n_solves"] >= 2  # forward and adjoint
    assert taylor_test(J, x, verbose=False).rate > 1.9


def test_two_load_cases_agree_with_cholmod():
    model = cantilever(box(8, 4, 4, 2.0, 1.0, 1.0))
    model.traction("top", (0.0, 0.0, -0.5), name="top")
    cases = [{"traction_right": 1.0, "top": 0.0}, {"traction_right": 0.3, "top": 1.0}]
    cases = [{name: value for name, value in zip(model.loads, case.values(), strict=True)}
             for case in cases]
    scale = densities(model.mesh.n_cells) ** 3
    u0 = model.solve(solver=REFERENCE, load_cases=cases, scale=scale).u
    u1 = model.solve(solver=MATRIX_FREE, load_cases=cases, scale=scale).u
    assert u1.shape == u0.shape == (model.dofmap.n_dofs, 2)
    assert np.abs(u1 - u0).max() < 1e-8 * np.abs(u0).max()


def test_heat_conduction_scalar_field():
    model = HeatConduction(box(8, 4, 4), conductivity=1.0).fix("left", value=0.0)
    model.heat_source(1.0)
    kappa = densities(model.mesh.n_cells)
    T0 = model.solve(solver=REFERENCE, conductivity=kappa).u
    T1 = model.solve(solver=MATRIX_FREE, conductivity=kappa).u
    assert np.abs(T1 - T0).max() < 1e-8 * np.abs(T0).max()


def test_bilinear_and_product_rules_pass_taylor():
    """The rules that keep second derivatives traced: ``a_eᵀ K c_e`` in ``a`` and
    ``A(s) x`` in ``s`` and ``x``."""
    model = cantilever(box(4, 2, 2, 2.0, 1.0, 1.0))
    system = lattice_system(model, model.stiffness_fields()[0])
    assert isinstance(system, LatticeSystem)
    rng = np.random.default_rng(5)
    n, cells = model.free_dofs.size, model.mesh.n_cells
    c, w, x, v = rng.standard_normal(n), rng.uniform(size=cells), rng.standard_normal(n), \
        rng.standard_normal(n)
    s = densities(cells)
    assert taylor_test(lambda a: np.sum(w * cell_bilinear(system, a, c) ** 2),
                       rng.standard_normal(n), verbose=False).rate > 1.9
    assert taylor_test(lambda s: np.sum(v * _apply(system, s, x) ** 2), s,
                       verbose=False).rate > 1.9
    assert taylor_test(lambda x: np.sum(v * _apply(system, s, x) ** 2), x,
                       verbose=False).rate > 1.9


@pytest.mark.parametrize("mesh, message", [
    (lambda: box(4, 2, 2, cell_type="hex27"), "first-order cells"),
    (lambda: rectangle(8, 4, cell_type="quad8"), "first-order cells"),
])
def test_higher_order_cells_are_refused_with_the_assembled_path_suggested(mesh, message):
    model = cantilever(mesh())
    with pytest.raises(SolverError, match=f"{message}.*matrix_free = false"):
        model.solve(solver=MATRIX_FREE)


def test_unstructured_mesh_is_refused_with_amg_suggested():
    model = Elasticity(quarter_annulus(4, 6, 1.0, 2.0), plane="stress").fix("x_axis")
    model.traction("y_axis", (1.0, 0.0))
    with pytest.raises(MeshError, match="amg"):
        model.solve(solver=MATRIX_FREE)


def test_shape_sensitivities_and_prescribed_values_are_refused():
    model = cantilever(box(4, 2, 2))
    with pytest.raises(SolverError, match="points=.*matrix_free = false"):
        model.solve(solver=MATRIX_FREE, points=model.mesh.points.copy())
    with pytest.raises(SolverError, match="zero prescribed values only"):
        model.solve(solver=MATRIX_FREE, dirichlet=np.full(model.constrained_dofs.size, 0.1))


def test_differentiated_poisson_ratio_is_refused():
    model = cantilever(box(4, 2, 2))
    with pytest.raises(SolverError, match="one per-cell field"):
        model.solve(solver=MATRIX_FREE, nu=0.25)

"""Geometric multigrid-CG (``"gmg"``): agreement with CHOLMOD, gradients, mesh-independent
iteration counts, odd cell counts, reuse in an optimization loop, and bad input."""

import numpy as np
import pytest
import scipy.sparse as sp

from fesens.ad import grad, taylor_test
from fesens.errors import ConvergenceError, MeshError, SolverError
from fesens.fem.model.structured_grid import structured_grid
from fesens.mesh import box, quarter_annulus, rectangle
from fesens.objectives import Differentiable, compliance
from fesens.physics import Elasticity, HeatConduction
from fesens.solvers import make_solver, solver_class
from fesens.solvers.grid_hierarchy import StructuredGrid

REFERENCE = solver_class("auto").name  # the direct backend: CHOLMOD, else SuperLU
#: Small coarse levels, so that even these meshes get several levels.
SMALL = {"coarse_size": 50}


def cantilever(mesh, fixed="left", loaded="right") -> Elasticity:
    plane = {"plane": "stress"} if mesh.dim == 2 else {}
    model = Elasticity(mesh, E=1.0, nu=0.3, **plane).fix(fixed)
    model.traction(loaded, (0.0,) * (mesh.dim - 1) + (-1.0,))
    return model


def cantilever_2d(nx=16, ny=8, cell_type="quad4") -> Elasticity:
    return cantilever(rectangle(nx, ny, 2.0, 1.0, cell_type=cell_type))


def cantilever_3d(nx=8, ny=4, nz=4, cell_type="hex8") -> Elasticity:
    return cantilever(box(nx, ny, nz, 2.0, 1.0, 1.0, cell_type=cell_type))


def densities(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.2, 1.0, n)


def relative_error(u, reference) -> float:
    return float(np.linalg.norm(u - reference) / np.linalg.norm(reference))


@pytest.mark.parametrize("make", [
    lambda: cantilever_2d(), lambda: cantilever_3d(), lambda: cantilever_2d(cell_type="quad9"),
    lambda: cantilever_2d(15, 7), lambda: cantilever_3d(7, 5, 3, "tet4"),
    lambda: cantilever_3d(4, 2, 2, "hex27"),
], ids=["quad4 16x8", "hex8 8x4x4", "quad9", "quad4 odd 15x7", "tet4 odd", "hex27"])
@pytest.mark.parametrize("smoother", ["chebyshev", "jacobi"])
def test_solution_agrees_with_cholmod_to_the_tolerance(make, smoother):
    model = make()
    scale = densities(model.mesh.n_cells) ** 3
    reference = model.solve(solver=REFERENCE, scale=scale).u
    options = {"rtol": 1e-10, "smoother": smoother, **SMALL}
    u = model.solve(solver="gmg", solver_options=options, scale=scale).u
    stats = model.solver("gmg", **options).stats
    assert len(stats["levels"]) >= 2
    assert stats["last_residual"] <= 1e-10
    assert relative_error(u, reference) < 1e-7


def test_odd_cell_counts_coarsen_unevenly_instead_of_stopping():
    model = cantilever_2d(15, 7)
    model.solve(solver="gmg", solver_options={"coarse_size": 1})
    levels = model.solver("gmg", coarse_size=1).stats["levels"]
    # 15 x 7 cells -> 8 x 4 -> 4 x 2 -> 2 x 1 -> 1 x 1 (points one more)
    assert levels == [(16, 8), (9, 5), (5, 3), (3, 2), (2, 2)]


def test_heat_conduction_scalar_field():
    model = HeatConduction(rectangle(16, 8, cell_type="quad4"), conductivity=2.0)
    model.fix("left").heat_source(1.0)
    u = model.solve(solver="gmg", solver_options={"rtol": 1e-10, **SMALL}).u
    assert relative_error(u, model.solve(solver=REFERENCE).u) < 1e-8


@pytest.mark.parametrize("make", [cantilever_2d, cantilever_3d], ids=["2d", "3d"])
def test_compliance_gradient_passes_taylor_test_and_agrees_with_cholmod(make):
    model = make()
    x = densities(model.mesh.n_cells, seed=3)
    problem = Differentiable(model, solver=("gmg", {"rtol": 1e-11, **SMALL}))

    def fun(rho):
        return compliance(problem.solve(scale=rho**3))

    assert taylor_test(fun, x, verbose=False).rate > 1.9
    reference = Differentiable(make(), solver=REFERENCE)
    expected = grad(lambda rho: compliance(reference.solve(scale=rho**3)))(x)
    assert relative_error(grad(fun)(x), expected) < 1e-8


def test_cg_iterations_do_not_grow_with_the_mesh():
    iterations = []
    for n in (8, 16):
        model = cantilever_3d(2 * n, n, n)
        model.solve(solver="gmg", solver_options={"rtol": 1e-8, "coarse_size": 500},
                    scale=densities(model.mesh.n_cells) ** 3)
        iterations.append(model.solver("gmg", rtol=1e-8, coarse_size=500).stats["last_iterations"])
    assert iterations[1] <= 1.5 * iterations[0], iterations


def test_warm_start_and_hierarchy_reuse_in_a_design_loop():
    model = cantilever_3d()
    problem = Differentiable(model, solver=("gmg", {"rtol": 1e-10, "reuse": True, **SMALL}))
    x = densities(model.mesh.n_cells)
    problem.solve(scale=x**3)
    first = problem.solver.stats["last_iterations"]
    # a small design change: the hierarchy is refreshed on the fine level only, and the
    # previous solution is a good start
    u = problem.solve(scale=(1.01 * x) ** 3).u
    stats = problem.solver.stats
    assert (stats["n_rebuilds"], stats["n_reuses"]) == (1, 1)
    assert stats["last_iterations"] < first
    fresh = cantilever_3d().solve(solver=REFERENCE, scale=(1.01 * x) ** 3).u
    assert relative_error(u, fresh) < 1e-7


def test_by_default_every_new_matrix_gets_a_full_build():
    # reuse is off by default (measured: on SIMP designs the reused coarse levels cost
    # more CG iterations than a build costs); warm starts stay on
    model = cantilever_3d()
    problem = Differentiable(model, solver=("gmg", {"rtol": 1e-10, **SMALL}))
    x = densities(model.mesh.n_cells)
    problem.solve(scale=x**3)
    first = problem.solver.stats["last_iterations"]
    problem.solve(scale=(1.01 * x) ** 3)
    stats = problem.solver.stats
    assert (stats["n_rebuilds"], stats["n_reuses"]) == (2, 0)
    assert stats["last_iterations"] < first


def test_a_slower_solve_triggers_a_rebuild_and_a_back_off():
    model = cantilever_3d()
    # 18 CG iterations on the first design; the second, with near-void cells, needs more
    # than 1.1 x 18 with the reused coarse levels: rebuilt within that solve
    options = {"rtol": 1e-10, "warm_start": False, "reuse": True, "rebuild_growth": 0.1,
               **SMALL}
    problem = Differentiable(model, solver=("gmg", options))
    problem.solve(scale=np.ones(model.mesh.n_cells))
    first = problem.solver.stats["last_iterations"]
    x = np.where(np.arange(model.mesh.n_cells) % 3 == 0, 1e-3, 1.0)
    u = problem.solve(scale=x**3).u
    stats = problem.solver.stats
    assert (stats["n_rebuilds"], stats["n_reuses"]) == (2, 1)
    assert stats["last_iterations"] > int(np.ceil(1.1 * first))
    assert relative_error(u, cantilever_3d().solve(solver=REFERENCE, scale=x**3).u) < 1e-7
    # the failed reuse backs off: one full build before the next reuse
    problem.solve(scale=x**3 * 1.001)
    assert problem.solver.stats["n_rebuilds"] == 3
    problem.solve(scale=x**3 * 1.002)
    stats = problem.solver.stats
    assert (stats["n_rebuilds"], stats["n_reuses"]) == (3, 2)


def test_adjoint_solve_reuses_the_hierarchy():
    solver = make_solver("gmg", grid=StructuredGrid((5,), np.arange(5)[:, None]))
    A = sp.diags([-np.ones(4), np.full(5, 2.0), -np.ones(4)], [-1, 0, 1], format="csr")
    solver.factorize(A)
    b = np.arange(1.0, 6.0)
    np.testing.assert_allclose(A @ solver.solve_transpose(b), b, rtol=1e-7)
    assert solver.stats["n_numeric"] == 1


# ------------------------------------------------------------------ bad input
def test_unstructured_mesh_is_refused_with_amg_suggested():
    model = cantilever(quarter_annulus(4, 6, 1.0, 2.0), "x_axis", "y_axis")
    with pytest.raises(MeshError, match=r"structured mesh.*quad4 mesh of 35 points.*'amg'"):
        Differentiable(model, solver="gmg")


def test_distorted_lattice_is_not_structured():
    mesh = rectangle(4, 2)
    mesh.points[7] += 0.05
    with pytest.raises(MeshError, match="not one"):
        structured_grid(mesh, 2, np.arange(mesh.n_points * 2))


def test_a_bare_matrix_needs_a_grid():
    solver = make_solver("gmg")
    with pytest.raises(SolverError, match=r"structured grid.*'cg' with preconditioner 'amg'"):
        solver.factorize(sp.identity(4, format="csr"))


def test_a_grid_of_another_matrix_is_refused():
    solver = make_solver("gmg", grid=StructuredGrid((5,), np.arange(5)[:, None]))
    with pytest.raises(SolverError, match="places 5 dofs but the matrix has 4 rows"):
        solver.factorize(sp.identity(4, format="csr"))


@pytest.mark.parametrize(("option", "value"), [
    ("rtol", 0.0), ("rtol", 1.0), ("rtol", -1e-8), ("rtol", float("nan")), ("degree", 0),
    ("degree", 11), ("maxiter", 0), ("coarse_size", 0), ("rebuild_growth", 0.0),
])
def test_options_out_of_range_are_refused(option, value):
    with pytest.raises(ValueError, match=rf"gmg: {option} = .* is out of range; give"):
        make_solver("gmg", **{option: value})


def test_unknown_smoother_is_refused():
    with pytest.raises(ValueError, match="smoother 'gauss' is unknown.*chebyshev"):
        make_solver("gmg", smoother="gauss")


def test_non_convergence_raises_with_iterations_and_residual():
    model = cantilever_2d()
    with pytest.raises(ConvergenceError, match=r"gmg did not converge.*after 2 iterations") as info:
        model.solve(solver="gmg", solver_options={"rtol": 1e-12, "maxiter": 2, **SMALL})
    assert info.value.iterations == 2 and info.value.residual > 1e-12

"""Every installed solver backend solves the FEM systems; direct backends reuse their
symbolic analysis across solves of one model.

The reference is SuperLU (always installed), itself checked against CHOLMOD when present.
An iterative backend meets ``||f − K u|| <= rtol ||f||``; with ``K u_ref = f`` that bounds
``||K (u − u_ref)||`` by ``rtol ||f||``, and ``||u − u_ref||`` by ``cond(K) rtol ||u_ref||``.
"""

import numpy as np
import pytest

from fesens.errors import ConvergenceError
from fesens.mesh import box, rectangle
from fesens.physics import Elasticity, HeatConduction
from fesens.solvers import IterativeSolver, LinearSolver, available_solvers, make_solver
from fesens.solvers.preconditioners import amg_available, default_preconditioner

RTOL = 1e-12
BACKENDS = available_solvers()
ITERATIVE = [name for name in BACKENDS if not make_solver(name).is_direct]
#: Krylov backends with a ``preconditioner`` option (geometric multigrid has its own).
KRYLOV = [name for name in ITERATIVE if isinstance(make_solver(name), IterativeSolver)]
# Symbolic analyses after two factorizations of one pattern (SuperLU orders every time).
SYMBOLIC_AFTER_TWO_SOLVES = {"cholmod": 1, "umfpack": 1, "superlu": 2}


def cantilever_2d() -> Elasticity:
    mesh = rectangle(16, 4, 4.0, 1.0, cell_type="quad4")
    model = Elasticity(mesh, E=210.0, nu=0.3, plane="stress", thickness=0.5).fix("left")
    model.traction("right", (0.3, -1.0))
    return model


def cantilever_3d() -> Elasticity:
    mesh = box(6, 2, 2, 3.0, 1.0, 1.0, cell_type="hex8")
    model = Elasticity(mesh, E=210.0, nu=0.3).fix("left")
    model.traction("right", (0.0, 0.5, -1.0))
    return model


def heat_plate() -> HeatConduction:
    mesh = rectangle(12, 12, cell_type="tri6")
    model = HeatConduction(mesh, conductivity=3.0).fix("left").fix("bottom", value=1.0)
    model.heat_source(lambda x: 1.0 + x[:, 0] * x[:, 1])
    return model


PROBLEMS = {"2d": cantilever_2d, "3d": cantilever_3d, "heat": heat_plate}


def solver_options(name: str, preconditioner: str | None = None) -> dict:
    if name not in ITERATIVE:
        return {}
    if name not in KRYLOV:
        return {"rtol": RTOL}
    return {"rtol": RTOL, "preconditioner": preconditioner or default_preconditioner()}


def relative_error(u: np.ndarray, reference: np.ndarray) -> float:
    return float(np.linalg.norm(u - reference) / np.linalg.norm(reference))


@pytest.fixture(scope="module")
def references():
    """SuperLU solutions of every problem."""
    return {key: make().solve(solver="superlu").u for key, make in PROBLEMS.items()}


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
@pytest.mark.parametrize("name", BACKENDS)
def test_every_backend_gives_the_reference_solution(name, problem, references):
    model = PROBLEMS[problem]()
    u = model.solve(solver=name, solver_options=solver_options(name)).u
    reference = references[problem]
    assembler, coefficients = model.assembler, model.coefficients()
    free = assembler.free
    K = assembler.stiffness(coefficients)
    rhs = model.load_vector()[free]
    if assembler.fc is not None:  # the Dirichlet lift K_fc g
        rhs = rhs - assembler.coupling(coefficients) @ model.prescribed_values()
    if name in ITERATIVE:
        assert np.linalg.norm(K @ (u - reference)[free]) <= 2 * RTOL * np.linalg.norm(rhs)
        assert relative_error(u, reference) < 1e-7
    else:
        assert relative_error(u, reference) < 1e-12
    np.testing.assert_array_equal(u[model.assembler.constrained],
                                  references[problem][model.assembler.constrained])


@pytest.mark.parametrize("name", KRYLOV)
def test_iterative_backends_with_jacobi_preconditioning(name, references):
    model = cantilever_2d()
    options = solver_options(name, "jacobi")
    if name == "gmres":
        options["restart"] = 100  # GMRES(30) with Jacobi stagnates on elasticity
    u = model.solve(solver=name, solver_options=options).u
    assert relative_error(u, references["2d"]) < 1e-7
    assert model.solver(name, **options).stats["last_residual"] <= RTOL


@pytest.mark.parametrize("name", [n for n in SYMBOLIC_AFTER_TWO_SOLVES if n in BACKENDS])
def test_resolve_with_a_new_scale_reuses_the_symbolic_factorization(name):
    model = cantilever_2d()
    first = model.solve(solver=name)
    scale = np.linspace(0.2, 1.0, model.mesh.n_cells)
    second = model.solve(solver=name, scale=scale)
    stats = model.solver(name).stats
    assert stats["n_symbolic"] == SYMBOLIC_AFTER_TWO_SOLVES[name]
    assert (stats["n_numeric"], stats["n_solves"]) == (2, 2)
    fresh = cantilever_2d().solve(solver="superlu", scale=scale)
    assert relative_error(second.u, fresh.u) < 1e-12
    assert relative_error(second.u, first.u) > 0.1


def test_new_dirichlet_dofs_after_a_solve_give_the_fresh_model_solution():
    model = cantilever_2d()
    model.solve(solver="superlu")
    model.fix("right", components=1, value=-0.01)
    resolved = model.solve(solver=BACKENDS[0]).u
    fresh = cantilever_2d().fix("right", components=1, value=-0.01)
    assert relative_error(resolved, fresh.solve(solver="superlu").u) < 1e-12


@pytest.mark.parametrize("name", ITERATIVE)
def test_a_non_converged_solve_raises_convergence_error_naming_the_model(name):
    model = cantilever_2d()
    # gmg: coarse levels small enough not to be exact on this mesh
    extra = {"preconditioner": "jacobi"} if name in KRYLOV else {"coarse_size": 10}
    options = {"rtol": RTOL, "maxiter": 2, **extra}
    with pytest.raises(ConvergenceError,
                       match=r"did not converge.*\(model: Elasticity on 64 quad4 cells") as info:
        model.solve(solver=name, solver_options=options)
    assert info.value.tolerance == RTOL
    assert info.value.residual > RTOL


# ------------------------------------------------------------------ AMG near-null space
needs_pyamg = pytest.mark.skipif(not amg_available(), reason="pyamg not installed")
AMG_CG = {"preconditioner": "amg", "rtol": RTOL}


def cantilever_3d_fine() -> Elasticity:
    mesh = box(12, 4, 4, 3.0, 1.0, 1.0, cell_type="hex8")
    model = Elasticity(mesh, E=210.0, nu=0.3).fix("left")
    model.traction("right", (0.0, 0.5, -1.0))
    return model


@needs_pyamg
def test_amg_of_an_elasticity_model_uses_the_rigid_body_modes():
    reference = cantilever_3d_fine().solve(solver="auto").u  # CHOLMOD when installed
    iterations = {}
    without = {**AMG_CG, "near_nullspace": None}
    for label, options in [("rigid modes", AMG_CG), ("constants", without)]:
        model = cantilever_3d_fine()
        u = model.solve(solver="cg", solver_options=options).u
        assert relative_error(u, reference) < 1e-9
        iterations[label] = model.solver("cg", **options).stats["last_iterations"]
    # measured: 15 and 38 iterations
    assert 2 * iterations["rigid modes"] <= iterations["constants"], iterations


@needs_pyamg
def test_the_rigid_body_modes_follow_a_new_dirichlet_set():
    model = cantilever_2d()
    model.solve(solver="minres", solver_options=AMG_CG)
    np.testing.assert_array_equal(model.solver("minres", **AMG_CG).near_nullspace,
                                  model.near_nullspace())
    model.fix("right", components=1, value=-0.01)
    u = model.solve(solver="minres", solver_options=AMG_CG).u
    fresh = cantilever_2d().fix("right", components=1, value=-0.01)
    assert relative_error(u, fresh.solve(solver="superlu").u) < 1e-9
    assert model.near_nullspace().shape == (model.assembler.free.size, 3)


@needs_pyamg
def test_with_near_nullspace_gives_krylov_amg_solvers_the_rigid_body_modes():
    model = cantilever_3d()
    backend = model.with_near_nullspace(("gmres", AMG_CG))
    assert isinstance(backend, IterativeSolver) and backend.rtol == RTOL
    np.testing.assert_array_equal(backend.near_nullspace, model.near_nullspace())
    assert backend.near_nullspace.shape == (model.assembler.free.size, 6)
    given = make_solver("cg")
    unchanged = ["superlu", ("cg", {"preconditioner": "jacobi"}),
                 ("cg", {"near_nullspace": None}), given]
    for solver in unchanged:
        assert model.with_near_nullspace(solver) is solver
    heat = heat_plate()
    assert heat.with_near_nullspace("cg") == "cg" and heat.near_nullspace() is None
    assert heat.solver("cg").near_nullspace is None
    assert isinstance(model.with_near_nullspace("cg"), LinearSolver)

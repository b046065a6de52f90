"""PETSc backends (petsc4py): agreement with CHOLMOD on elasticity, gradients through the
solve, PETSc's option strings, and the error paths.

The backend tests every backend passes (tests/fem/test_backends.py,
tests/objectives/test_adjoint_solvers.py) run ``petsc`` and ``petsc_direct`` too when petsc4py
is installed (``make petsc``); they read :func:`fesens.solvers.available_solvers`.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from mpi_launch import launch_environment, mpirun
from solver_helpers import (
    clamped_cantilever,
    convection_diffusion_2d,
    elasticity_stiffness,
    laplacian_1d,
    laplacian_2d,
    random_rhs,
    relative_error,
)

from fesens.ad import grad, taylor_test
from fesens.config import ConfigError, parse_config, preset_text
from fesens.errors import ConvergenceError, SingularMatrixError, SolverError
from fesens.mesh import box
from fesens.objectives import Differentiable, displacement_norm
from fesens.physics import Elasticity
from fesens.solvers import available_solvers, make_solver
from fesens.solvers.petsc import import_petsc, parse_options, petsc4py_available

needs_petsc = pytest.mark.skipif(not petsc4py_available(),
                                 reason="petsc4py not installed (make petsc)")
REFERENCE = "cholmod" if "cholmod" in available_solvers() else "superlu"
RTOL = 1e-10
#: The PETSc solvers compared with CHOLMOD: GAMG with the rigid-body modes, BoomerAMG,
#: MUMPS (or PETSc's) Cholesky.
PETSC_SPECS = {
    "gamg": ("petsc", {"rtol": RTOL}),
    "hypre": ("petsc", {"rtol": RTOL, "preconditioner": "hypre"}),
    "direct": ("petsc_direct", {}),
}


@needs_petsc
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("spec", sorted(PETSC_SPECS))
def test_elasticity_solutions_agree_with_cholmod(spec, dim):
    K, modes = elasticity_stiffness(dim)
    b = random_rhs(K.shape[0], 2, seed=dim)
    reference = make_solver(REFERENCE)
    reference.factorize(K)
    name, options = PETSC_SPECS[spec]
    solver = make_solver(name, **options)
    if name == "petsc":
        solver.near_nullspace = modes
    solver.factorize(K)
    x = solver.solve(b)
    assert relative_error(x, reference.solve(b)) < 1e-8
    assert relative_error(solver.solve_transpose(b), x) < 1e-9  # symmetric: same solve


@needs_petsc
def test_gamg_needs_fewer_iterations_with_the_rigid_body_modes():
    K, modes = elasticity_stiffness(3)
    b = random_rhs(K.shape[0], seed=5)
    iterations = {}
    for label, vectors in [("rigid modes", modes), ("none", None)]:
        solver = make_solver("petsc", rtol=1e-8, near_nullspace=vectors)
        solver.factorize(K)
        solver.solve(b)
        iterations[label] = solver.stats["last_iterations"]
    assert iterations["rigid modes"] < iterations["none"], iterations


@needs_petsc
def test_gamg_converges_on_a_simp_design_with_void_regions():
    """GAMG's default smoother (Chebyshev on Jacobi; petsc="-mg_levels_pc_type jacobi")
    stops CG here with KSP_DIVERGED_INDEFINITE_PC (PETSc 3.18); fesens' (Chebyshev on SOR)
    converges."""
    model = Elasticity(box(20, 10, 10, 2.0, 1.0, 1.0), E=1.0, nu=0.3).fix("left")
    model.traction("right", (0.0, 0.0, -1.0))
    centres = model.mesh.points[model.mesh.cells].mean(axis=1)
    x = np.clip(0.15 + 0.35 * np.sin(np.pi * centres[:, 0]) * np.cos(np.pi * centres[:, 2]),
                0.0, 1.0)  # 22 % void cells
    scale = 1e-9 + x**3 * (1.0 - 1e-9)
    reference = model.solve(solver=REFERENCE, scale=scale).u
    u = model.solve(solver="petsc", solver_options={"rtol": 1e-10}, scale=scale).u
    assert relative_error(u, reference) < 1e-6


def density_objective(dim: int, solver):
    problem = Differentiable(clamped_cantilever(dim), solver=solver)
    problem.model.traction("right", (0.0, -1.0) if dim == 2 else (0.0, 0.0, -1.0))
    return lambda x: displacement_norm(problem.solve(scale=x**3))


@needs_petsc
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("spec", ["gamg", "direct"])
def test_gradients_agree_with_cholmod(spec, dim):
    n_cells = clamped_cantilever(dim).mesh.n_cells
    x = np.random.default_rng(dim).uniform(0.3, 1.0, n_cells)
    reference = grad(density_objective(dim, REFERENCE))(x)
    gradient = grad(density_objective(dim, PETSC_SPECS[spec]))(x)
    assert relative_error(gradient, reference) < 1e-8


@needs_petsc
@pytest.mark.parametrize("spec", ["gamg", "direct"])
def test_taylor_test_through_the_petsc_solve(spec):
    fun = density_objective(2, PETSC_SPECS[spec])
    x = np.random.default_rng(7).uniform(0.3, 1.0, clamped_cantilever(2).mesh.n_cells)
    result = taylor_test(fun, x, verbose=False)
    assert abs(result.rate - 2.0) < 0.1, result.table()


@needs_petsc
def test_lu_transposed_solve_of_a_non_symmetric_matrix():
    A = convection_diffusion_2d(8)
    b = random_rhs(A.shape[0], seed=3)
    solver = make_solver("petsc_direct", factorization="lu")
    assert not solver.symmetric
    solver.factorize(A)
    assert relative_error(solver.solve(b), spla.spsolve(A.tocsc(), b)) < 1e-12
    assert relative_error(solver.solve_transpose(b), spla.spsolve(A.T.tocsc(), b)) < 1e-12


@needs_petsc
@pytest.mark.parametrize("name", ["petsc", "petsc_direct"])
def test_a_new_pattern_is_set_up_anew_and_the_same_pattern_is_reused(name):
    A = laplacian_2d(10)
    scaled = A.copy()
    scaled.data *= 2.0
    solver = make_solver(name)
    solver.factorize(A)
    solver.factorize(scaled)
    assert (solver.stats["n_symbolic"], solver.stats["n_numeric"]) == (1, 2)
    b = random_rhs(A.shape[0], seed=4)
    assert relative_error(solver.solve(b), spla.spsolve(scaled.tocsc(), b)) < 1e-9
    solver.factorize(laplacian_2d(9))
    assert solver.stats["n_symbolic"] == 2
    assert solver.solve(random_rhs(81)).shape == (81,)


@needs_petsc
@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun missing (make petsc)")
def test_a_solve_distributed_over_two_mpi_ranks_gives_the_serial_solution():
    """The MPI stack works: petsc_mpi_solve.py splits a matrix's rows over 2 ranks."""
    script = Path(__file__).with_name("petsc_mpi_solve.py")
    result = mpirun(2, sys.executable, str(script))
    assert result.returncode == 0, result.stdout + result.stderr
    found = re.search(r"ranks (\d+) error (\S+) reason (-?\d+)", result.stdout)
    assert found, result.stdout + result.stderr
    ranks, error, reason = int(found[1]), float(found[2]), int(found[3])
    assert ranks == 2 and reason > 0
    assert error < 1e-9



@needs_petsc
def test_petsc_leaves_the_signals_to_python():
    """PETSc's own signal handlers would turn a SIGPIPE, which Python ignores (the pipe of a
    study's worker process that died), into an abort of the whole process."""
    code = ("import os, signal; from fesens.solvers.petsc import import_petsc; "
            "import_petsc().COMM_WORLD.getSize(); os.kill(os.getpid(), signal.SIGPIPE); "
            "print('alive')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=600, env=launch_environment(), check=False)
    assert result.returncode == 0 and result.stdout == "alive\n", result.stderr

# ------------------------------------------------------------------ PETSc option strings
def test_option_strings_and_dicts_are_parsed():
    assert parse_options("-ksp_type minres -pc_type jacobi -ksp_monitor -ksp_dtol -1") == {
        "ksp_type": "minres", "pc_type": "jacobi", "ksp_monitor": "", "ksp_dtol": "-1"}
    assert parse_options({"-pc_gamg_threshold": 0.02, "ksp_norm_type": None,
                          "pc_gamg_sym_graph": True}) == {
        "pc_gamg_threshold": "0.02", "ksp_norm_type": "", "pc_gamg_sym_graph": "true"}
    assert parse_options(None) == {}
    with pytest.raises(ValueError, match="value 'ksp_type' follows no option name"):
        parse_options("ksp_type cg")
    with pytest.raises(ValueError, match="value 'x' follows no option name"):
        parse_options("-ksp_type cg x")
    with pytest.raises(TypeError, match="a string or a dict"):
        parse_options(["-ksp_type", "cg"])


@needs_petsc
def test_petsc_options_reach_the_ksp_and_leave_the_options_database():
    A = laplacian_2d(12)
    solver = make_solver("petsc", petsc="-ksp_type minres -pc_type jacobi")
    solver.factorize(A)
    assert solver._ksp.describe() == "KSP minres, PC jacobi"
    b = random_rhs(A.shape[0], seed=6)
    assert relative_error(solver.solve(b), spla.spsolve(A.tocsc(), b)) < 1e-9
    assert not [key for key in import_petsc().Options().getAll() if "fesens" in key]


@needs_petsc
def test_petsc_options_reach_the_parts_made_at_set_up():
    """GAMG makes its levels' smoothers in KSPSetUp, and reads their options then."""
    solver = make_solver("petsc", petsc="-mg_levels_ksp_type richardson -mg_levels_pc_type sor")
    solver.factorize(laplacian_2d(40))
    smoother = solver._ksp.ksp.getPC().getMGSmoother(1)
    assert (smoother.getType(), smoother.getPC().getType()) == ("richardson", "sor")
    assert not [key for key in import_petsc().Options().getAll() if "fesens" in key]


# ------------------------------------------------------------------ errors
@needs_petsc
def test_an_exhausted_ksp_raises_convergence_error_with_petsc_reason():
    A = laplacian_2d(20)
    solver = make_solver("petsc", preconditioner="jacobi", maxiter=3, rtol=1e-10)
    solver.factorize(A)
    with pytest.raises(ConvergenceError, match=r"did not converge.*KSP_DIVERGED_MAX_IT") as info:
        solver.solve(random_rhs(A.shape[0]))
    assert info.value.iterations == 3 and info.value.residual > 1e-10


@needs_petsc
def test_cg_on_an_indefinite_matrix_raises_convergence_error_with_petsc_reason():
    A = (laplacian_2d(10) - 2.0 * sp.eye(100)).tocsr()  # symmetric, indefinite
    solver = make_solver("petsc", preconditioner="none")
    solver.factorize(A)
    with pytest.raises(ConvergenceError, match=r"KSP_DIVERGED_INDEFINITE_(MAT|PC)"):
        solver.solve(random_rhs(100))


@needs_petsc
def test_a_singular_matrix_raises_singular_matrix_error():
    A = laplacian_1d(6, dirichlet=False)  # pure Neumann: constants in the null space
    for factor_solver in ("mumps", "petsc"):  # MUMPS' INFOG(1) = -10; PETSc's zero pivot
        solver = make_solver("petsc_direct")
        solver.factor_solver = factor_solver
        with pytest.raises(SingularMatrixError, match="singular.*Dirichlet conditions"):
            solver.factorize(A)
        with pytest.raises(SolverError, match="call factorize"):
            solver.solve(random_rhs(6))


@needs_petsc
def test_a_bad_petsc_option_raises_solver_error_with_petsc_message():
    solver = make_solver("petsc", petsc="-ksp_type no_such_method")
    with pytest.raises(SolverError, match="PETSc could not set up.*no_such_method"):
        solver.factorize(laplacian_2d(4))


@needs_petsc
def test_unknown_preconditioner_and_factorization_are_refused():
    with pytest.raises(ValueError, match="unknown preconditioner 'ilu' for 'petsc'"):
        make_solver("petsc", preconditioner="ilu")
    with pytest.raises(ValueError, match="unknown factorization 'qr' for 'petsc_direct'"):
        make_solver("petsc_direct", factorization="qr")


def test_without_petsc4py_the_backend_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "petsc4py", None)  # import petsc4py -> ImportError
    monkeypatch.setitem(sys.modules, "petsc4py.PETSc", None)
    assert not petsc4py_available()
    assert "petsc" not in available_solvers()
    for name in ("petsc", "petsc_direct"):
        with pytest.raises(SolverError, match=r"petsc4py is not installed: run `make petsc`"):
            make_solver(name)
    with pytest.raises(SolverError, match="make petsc"):
        import_petsc()
    config = preset_text("mbb") + '\n[solver]\nbackend = "petsc"\n'
    with pytest.raises(ConfigError, match=r'solver.backend = "petsc": petsc4py .*`make petsc`'):
        parse_config(config, source="petsc.toml", base_dir=Path.cwd())

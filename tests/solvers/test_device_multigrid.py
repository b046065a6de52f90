"""The device multigrid-CG (fesens.solvers.device_multigrid) on numpy and on a strict
array-API library: its solves equal a direct solve of the assembled matrix, its levels are
what the module says (rediscretized coarse cells, transposed transfers), its compliance
gradient passes a Taylor test and equals the CPU ``gmg`` gradient, and its results stay in
the inputs' library.

References: scipy's sparse direct solve of ``LatticeStructure.matrix`` (the assembled
``K_ff``, tested against the assembler in ``test_solvers_lattice_operator.py``) and the
``lattice_solve`` primitive with the CPU ``gmg`` backend (its adjoint rule has its own
Taylor tests). CG iteration counts: the naive CuPy script of the same method (matrix-free
rediscretized hex8 levels, damped Jacobi, dense coarsest level) took 11-14 iterations at
rtol 1e-8 on a uniform cantilever."""

import importlib

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from fesens.ad import taylor_test
from fesens.ad.lattice import LatticeSystem, lattice_solve
from fesens.ad.registry import defvjp
from fesens.ad.tracer import primitive
from fesens.errors import NonFiniteError, SolverError
from fesens.fem.model.matrix_free import lattice_system
from fesens.mesh import box, rectangle
from fesens.physics import Elasticity
from fesens.solvers.device_lattice import LatticeTransfer, LevelKernels
from fesens.solvers.device_multigrid import (
    DeviceLatticeSolver,
    LatticeMultigrid,
    array_library,
)


def strict_library():
    try:
        return importlib.import_module("array_api_strict")
    except ImportError:
        return None


STRICT = strict_library()
NO_STRICT = pytest.mark.skipif(STRICT is None, reason="array-api-strict is not installed "
                               "(pip install array-api-strict, part of fesens[test])")
LIBRARIES = [pytest.param(np, id="numpy"),
             pytest.param(STRICT, id="array_api_strict", marks=NO_STRICT)]

MESHES = {
    "quad4 odd 9x5": lambda: rectangle(9, 5, 1.8, 1.0),
    "quad4 even 8x4": lambda: rectangle(8, 4, 2.0, 1.0),
    "hex8 odd 7x3x5": lambda: box(7, 3, 5, 7.0, 3.0, 5.0),
    "hex8 even 6x4x4": lambda: box(6, 4, 4, 1.5, 1.0, 1.0),
}


def cantilever(mesh) -> Elasticity:
    plane = {"plane": "stress"} if mesh.dim == 2 else {}
    return Elasticity(mesh, E=1.0, nu=0.3, **plane).fix("left")


def structure_of(mesh):
    model = cantilever(mesh)
    return lattice_system(model, model.stiffness_fields()[0]).structure


def simp(n_cells: int, seed: int = 0) -> np.ndarray:
    """A SIMP-like field: ``E_min + ρ³`` of random densities."""
    rho = np.random.default_rng(seed).uniform(0.05, 1.0, n_cells)
    return 1e-6 + rho**3


def binary(n_cells: int, seed: int = 0) -> np.ndarray:
    """A 0/1-ish field: solid (1) and void (1e-6) cells."""
    return np.where(np.random.default_rng(seed).uniform(size=n_cells) < 0.6, 1.0, 1e-6)


def to_numpy(x) -> np.ndarray:
    return np.from_dlpack(x) if not isinstance(x, np.ndarray) else x


#: The strict library checks every operation (about 20x numpy's time here): it runs
#: an odd 2D and an even 3D lattice, numpy all of them.
STRICT_MESHES = ("quad4 odd 9x5", "hex8 even 6x4x4")
CASES = [pytest.param(mesh, np, id=f"{mesh}-numpy") for mesh in MESHES] + [
    pytest.param(mesh, STRICT, id=f"{mesh}-array_api_strict", marks=NO_STRICT)
    for mesh in STRICT_MESHES]


@pytest.fixture(scope="module")
def structures():
    return {}


def structure_for(structures: dict, mesh: str):
    if mesh not in structures:
        structures[mesh] = structure_of(MESHES[mesh]())
    return structures[mesh]


@pytest.mark.parametrize(("mesh", "library"), CASES)
@pytest.mark.parametrize("field", [simp, binary], ids=["simp", "binary"])
def test_solve_equals_the_direct_solve_of_the_assembled_matrix(structures, mesh, library,
                                                                field):
    """At the default rtol 1e-8 (measured: errors 2e-11 to 9e-10 of max |u|; a 2D 0/1
    field with 1e-6 voids takes 57-74 CG iterations)."""
    structure = structure_for(structures, mesh)
    s = field(structure.n_cells)
    f = np.random.default_rng(1).standard_normal(structure.n)
    reference = spla.spsolve(structure.matrix(s).tocsc(), f)
    solver = LatticeMultigrid(structure, rtol=1e-8, maxiter=500, coarse_size=40)
    assert len(solver.stats["levels"]) >= 2
    u = solver.solve(library.asarray(s), library.asarray(f))
    assert type(u) is type(library.asarray(f))  # never brought back to numpy
    error = np.abs(to_numpy(u) - reference).max() / np.abs(reference).max()
    assert error < 1e-8


@pytest.mark.parametrize(("mesh", "library"), CASES)
def test_results_stay_in_the_input_library(structures, mesh, library):
    structure = structure_for(structures, mesh)
    s = simp(structure.n_cells)
    f = np.random.default_rng(2).standard_normal(structure.n)
    solver = LatticeMultigrid(structure, rtol=1e-10, coarse_size=40)
    u = solver.solve(library.asarray(s), library.asarray(f))
    energies = solver.cell_energies(u)
    product = solver.apply(library.asarray(s), u)
    for result in (u, energies, product):
        assert type(result) is type(library.asarray(f))
    assert np.abs(to_numpy(energies) - structure.cell_bilinear(to_numpy(u), to_numpy(u))
                  ).max() < 1e-12 * np.abs(to_numpy(energies)).max()
    assert np.abs(to_numpy(product) - structure.apply(s, to_numpy(u))).max() < 1e-12 * (
        np.abs(f).max())


def test_cg_iterations_on_a_uniform_3d_field():
    """Measured: 24x12x12 cells, 11 iterations with 5 levels (coarsest 3x2x2 points), 8
    with 2 (the default coarse_size keeps 13x7x7 points dense)."""
    structure = structure_of(box(24, 12, 12, 2.0, 1.0, 1.0))
    f = np.random.default_rng(3).standard_normal(structure.n)
    solver = LatticeMultigrid(structure, rtol=1e-8, coarse_size=50)
    solver.solve(np.ones(structure.n_cells), f)
    assert len(solver.stats["levels"]) == 5
    assert solver.stats["iterations"] <= 15, solver.stats


@pytest.mark.parametrize(("mesh", "library"), CASES)
@pytest.mark.parametrize("field", [simp, binary], ids=["simp", "binary"])
def test_mixed_precision_reaches_rtol_in_float64(structures, mesh, library, field):
    """The float32 hierarchy inside float64 CG: the true float64 residual meets rtol."""
    structure = structure_for(structures, mesh)
    s = field(structure.n_cells)
    f = np.random.default_rng(4).standard_normal(structure.n)
    double = LatticeMultigrid(structure, rtol=1e-8, maxiter=500, coarse_size=40)
    mixed = LatticeMultigrid(structure, rtol=1e-8, maxiter=500, coarse_size=40,
                             precision="mixed")
    u = to_numpy(mixed.solve(library.asarray(s), library.asarray(f)))
    double.solve(s, f)
    residual = np.linalg.norm(f - structure.matrix(s) @ u) / np.linalg.norm(f)
    assert residual <= 1e-8
    assert u.dtype == np.float64
    # measured: the same counts on SIMP fields; on 2D 0/1 fields the float32 V-cycle
    # costs CG more iterations (57 -> 77, 73 -> 87)
    assert mixed.stats["iterations"] <= 1.5 * double.stats["iterations"] + 3


@primitive
def _compliance(solver: LatticeMultigrid, s, f):
    """``fᵀ A(s)⁻¹ f`` through the device solver (a test primitive: the gradient rule is
    the one the module documents)."""
    return float(f @ solver.solve(s, f))


defvjp(_compliance, None,
       lambda J, solver, s, f: lambda g: -g * solver.cell_energies(solver.solve(s, f)))


@pytest.mark.parametrize("mesh", ["quad4 odd 9x5", "hex8 even 6x4x4"])
def test_compliance_gradient_passes_a_taylor_test(mesh):
    structure = structure_of(MESHES[mesh]())
    solver = LatticeMultigrid(structure, rtol=1e-12, maxiter=1000, coarse_size=40)
    f = np.random.default_rng(5).standard_normal(structure.n)
    s = simp(structure.n_cells)
    # a relative perturbation of at most 1 % keeps every coefficient positive
    direction = np.random.default_rng(9).uniform(-1.0, 1.0, s.size) * s
    result = taylor_test(lambda c: _compliance(solver, c, f), s, direction,
                         step=1e-2, verbose=False)
    assert result.rate > 1.9, result


@pytest.mark.parametrize(("mesh", "library"), [
    pytest.param("hex8 odd 7x3x5", np, id="numpy"),
    pytest.param("quad4 odd 9x5", STRICT, id="array_api_strict", marks=NO_STRICT)])
def test_compliance_gradient_matches_central_differences(structures, mesh, library):
    structure = structure_for(structures, mesh)
    solver = LatticeMultigrid(structure, rtol=1e-12, maxiter=1000, coarse_size=40)
    rng = np.random.default_rng(6)
    s, f = simp(structure.n_cells), rng.standard_normal(structure.n)
    direction = rng.uniform(-1.0, 1.0, structure.n_cells) * s
    xs, xf = library.asarray(s), library.asarray(f)

    def compliance(t: float) -> float:
        coefficients = library.asarray(s + t * direction)
        return float(library.sum(xf * solver.solve(coefficients, xf)))

    gradient = -solver.cell_energies(solver.solve(xs, xf))
    slope = float(library.sum(gradient * library.asarray(direction)))
    step = 1e-4
    central = (compliance(step) - compliance(-step)) / (2 * step)
    assert abs(central - slope) < 1e-6 * abs(slope)


def test_compliance_gradient_equals_the_cpu_gmg_gradient():
    """The CPU ``gmg`` (Galerkin levels, CHOLMOD coarsest) through ``lattice_solve``."""
    from fesens.ad import grad

    structure = structure_of(MESHES["hex8 odd 7x3x5"]())
    system = LatticeSystem(structure, np.arange(structure.n_cells))
    s = simp(structure.n_cells, seed=7)
    f = np.random.default_rng(7).standard_normal(structure.n)
    spec = ("gmg", {"rtol": 1e-12, "coarse_size": 40})
    cpu = grad(lambda c: f @ lattice_solve(system, c, f, spec))(s)
    solver = LatticeMultigrid(structure, rtol=1e-12, maxiter=1000, coarse_size=40)
    ours = -solver.cell_energies(solver.solve(s, f))
    assert np.linalg.norm(ours - cpu) < 1e-8 * np.linalg.norm(cpu)


def test_lattice_solve_primitive_runs_the_device_solver():
    """``lattice_solve`` with a :class:`DeviceLatticeSolver` instance: the compliance
    gradient through the primitive's adjoint rule passes a Taylor test and equals the
    CPU ``gmg``'s through the same primitive."""
    from fesens.ad import grad

    structure = structure_of(MESHES["hex8 even 6x4x4"]())
    system = LatticeSystem(structure, np.arange(structure.n_cells))
    s = simp(structure.n_cells, seed=10)
    f = np.random.default_rng(10).standard_normal(structure.n)
    device = DeviceLatticeSolver(rtol=1e-12, maxiter=1000, coarse_size=40)

    def compliance(c, solver):
        return f @ lattice_solve(system, c, f, solver)

    direction = np.random.default_rng(11).uniform(-1.0, 1.0, s.size) * s
    result = taylor_test(lambda c: compliance(c, device), s, direction, step=1e-2,
                         verbose=False)
    assert result.rate > 1.9, result
    ours = grad(lambda c: compliance(c, device))(s)
    cpu = grad(lambda c: compliance(c, ("gmg", {"rtol": 1e-12, "coarse_size": 40})))(s)
    assert np.linalg.norm(ours - cpu) < 1e-8 * np.linalg.norm(cpu)
    assert device.stats["last_iterations"] > 0
    with pytest.raises(SolverError, match="lattice operators only"):
        device.factorize(structure.matrix(s))


@pytest.mark.parametrize("dim", [2, 3])
def test_coarse_cells_are_the_rediscretized_cells(dim):
    """On a uniform lattice the coarse reference matrix is the stiffness of a cell twice
    the size: ``2**(dim - 2) K_ref`` (hex8: twice; quad4: the same)."""
    mesh = rectangle(8, 4, 2.0, 1.0) if dim == 2 else box(4, 4, 4)
    solver = LatticeMultigrid(structure_of(mesh), coarse_size=1)
    fine, coarse = solver.geometries[:2]
    K = fine.boxes[0].element
    assert np.abs(coarse.boxes[0].element - 2.0 ** (dim - 2) * K).max() < 1e-13 * np.abs(K).max()


@pytest.mark.parametrize(("mesh", "library"), CASES)
def test_restriction_is_the_transpose_of_prolongation(structures, mesh, library):
    structure = structure_for(structures, mesh)
    solver = LatticeMultigrid(structure, coarse_size=1)
    rng = np.random.default_rng(8)
    for fine, coarse in zip(solver.geometries, solver.geometries[1:], strict=False):
        kf, kc = (LevelKernels(g, library, library.float64) for g in (fine, coarse))
        transfer = LatticeTransfer(kf, kc)
        x = library.asarray(rng.standard_normal(coarse.free.shape) * coarse.free)
        y = library.asarray(rng.standard_normal(fine.free.shape) * fine.free)
        left = float(library.sum(transfer.prolong(x) * y))
        right = float(library.sum(x * transfer.restrict(y)))
        assert abs(left - right) < 1e-12 * max(abs(left), 1.0)


def test_prolongation_interpolates_linear_fields_on_odd_lattices():
    """Positions of the points on every level: a field linear in the coordinates is
    reproduced exactly (the last interval of an odd axis is shorter)."""
    structure = structure_of(box(7, 5, 3, 7.0, 5.0, 3.0))
    solver = LatticeMultigrid(structure, coarse_size=1)
    for fine, coarse in zip(solver.geometries, solver.geometries[1:], strict=False):
        everywhere = [g.__class__(g.shape, np.ones_like(g.free), g.coordinates, g.boxes)
                      for g in (fine, coarse)]
        transfer = LatticeTransfer(*(LevelKernels(g, np, np.float64) for g in everywhere))

        def linear(geometry):
            x, y, z = np.meshgrid(*geometry.coordinates, indexing="ij")
            field = (1.0 + 2.0 * x - 0.5 * y + 0.25 * z).transpose()  # (z, y, x)
            return np.broadcast_to(field, geometry.free.shape)

        assert np.abs(transfer.prolong(linear(coarse)) - linear(fine)).max() < 1e-12


def test_bad_input_is_refused():
    structure = structure_of(MESHES["quad4 even 8x4"]())
    solver = LatticeMultigrid(structure)
    f = np.ones(structure.n)
    with pytest.raises(NonFiniteError, match="coefficients"):
        solver.solve(np.full(structure.n_cells, np.nan), f)
    with pytest.raises(SolverError, match="positive"):
        solver.solve(np.zeros(structure.n_cells), f)
    with pytest.raises(ValueError, match="shape"):
        solver.solve(np.ones(3), f)
    with pytest.raises(NonFiniteError, match="right-hand side"):
        solver.solve(np.ones(structure.n_cells), np.full(structure.n, np.inf))
    with pytest.raises(ValueError, match="precision"):
        LatticeMultigrid(structure, precision="half")


def test_gpu_device_without_cupy_names_the_install():
    try:
        importlib.import_module("cupy")
    except ImportError:
        with pytest.raises(SolverError, match=r"pip install fesens\[gpu\]"):
            array_library("gpu")
    else:
        pytest.skip("CuPy is installed here: tests/solvers/test_device_gpu.py covers it")
    assert array_library("cpu") is np
    with pytest.raises(SolverError, match="unknown"):
        array_library("tpu")

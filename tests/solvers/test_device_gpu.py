"""The device multigrid on a GPU (CuPy): its solves and compliance gradients equal numpy's
to 1e-8, the gradient passes a Taylor test evaluated on the device, mixed precision meets
rtol in float64, and results stay CuPy arrays; the grid's cone filter on CuPy equals
scipy's, and fesens's optimization loop keeps a compliance design on the GPU (the
resident path) with the general path's designs.

Skipped, with the reason, where CuPy is not importable or finds no CUDA device. The
numpy path these tests compare with is itself checked against a direct solve and the CPU
``gmg`` gradient (``test_device_multigrid.py``). Runnable without pytest too
(``python tests/solvers/test_device_gpu.py``: each test prints PASS, FAIL or SKIP), for a
GPU machine whose image lacks it.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np

try:
    import pytest
except ImportError:  # a bare GPU image: the __main__ runner below
    pytest = None

from fesens.fem.model.matrix_free import lattice_system
from fesens.mesh import box, rectangle
from fesens.physics import Elasticity
from fesens.solvers.device_multigrid import LatticeMultigrid, array_library


def gpu_library():
    """CuPy and an empty reason, or None and why not."""
    try:
        importlib.import_module("cupy")
    except ImportError as error:
        return None, f"CuPy is not importable ({error}): pip install fesens[gpu]"
    try:
        return array_library("gpu"), ""
    except Exception as error:  # no device, or a driver CuPy cannot use
        return None, str(error)


CUPY, WHY_NOT = gpu_library()
if pytest is not None:
    pytestmark = pytest.mark.skipif(CUPY is None, reason=f"no GPU: {WHY_NOT}")


def structure_of(mesh):
    plane = {"plane": "stress"} if mesh.dim == 2 else {}
    model = Elasticity(mesh, E=1.0, nu=0.3, **plane).fix("left")
    return lattice_system(model, model.stiffness_fields()[0]).structure


def simp(n_cells: int, seed: int = 0) -> np.ndarray:
    rho = np.random.default_rng(seed).uniform(0.05, 1.0, n_cells)
    return 1e-6 + rho**3


def meshes():
    return {"quad4 odd 21x11": rectangle(21, 11, 2.1, 1.1),
            "hex8 odd 15x7x9": box(15, 7, 9, 15.0, 7.0, 9.0),
            "hex8 even 16x8x8": box(16, 8, 8, 2.0, 1.0, 1.0)}


def test_cupy_arrays_have_the_cupy_namespace():
    from fesens.arrays import namespace

    assert namespace(CUPY.zeros(3)) is CUPY


def test_solve_and_gradient_equal_numpy():
    for name, mesh in meshes().items():
        structure = structure_of(mesh)
        s = simp(structure.n_cells)
        f = np.random.default_rng(1).standard_normal(structure.n)
        host = LatticeMultigrid(structure, rtol=1e-12, maxiter=1000)
        device = LatticeMultigrid(structure, rtol=1e-12, maxiter=1000)
        u_host = host.solve(s, f)
        u_device = device.solve(CUPY.asarray(s), CUPY.asarray(f))
        assert isinstance(u_device, CUPY.ndarray), name
        error = np.linalg.norm(CUPY.asnumpy(u_device) - u_host) / np.linalg.norm(u_host)
        assert error < 1e-8, (name, error)
        g_host = -host.cell_energies(u_host)
        g_device = -device.cell_energies(u_device)
        assert isinstance(g_device, CUPY.ndarray), name
        error = np.linalg.norm(CUPY.asnumpy(g_device) - g_host) / np.linalg.norm(g_host)
        assert error < 1e-8, (name, error)
        print(f"{name}: CG {host.stats['iterations']} (numpy) / "
              f"{device.stats['iterations']} (cupy), gradient difference {error:.1e}")


def test_compliance_gradient_taylor_test_on_the_device():
    """``|J(s + εh) − J(s) − ε ∇J·h|`` falls as ε² (rate > 1.9), all on the GPU."""
    structure = structure_of(meshes()["hex8 odd 15x7x9"])
    solver = LatticeMultigrid(structure, rtol=1e-12, maxiter=1000)
    rng = np.random.default_rng(2)
    s = CUPY.asarray(simp(structure.n_cells))
    f = CUPY.asarray(rng.standard_normal(structure.n))
    h = CUPY.asarray(rng.uniform(-1.0, 1.0, structure.n_cells)) * s

    def compliance(c) -> float:
        return float(CUPY.sum(f * solver.solve(c, f)))

    J0 = compliance(s)
    slope = float(CUPY.sum(-solver.cell_energies(solver.solve(s, f)) * h))
    steps = 1e-2 * 0.5 ** np.arange(4)
    remainders = np.array([abs(compliance(s + e * h) - J0 - e * slope) for e in steps])
    rates = np.log2(remainders[:-1] / remainders[1:])
    print(f"Taylor remainders {remainders}, rates {rates}")
    assert rates.min() > 1.9, (remainders, rates)


def test_lattice_solve_primitive_with_the_gpu_solver_passes_a_taylor_test():
    """fesens.ad.taylor_test through ``lattice_solve`` whose solver runs on the GPU; its
    gradient equals the CPU ``gmg``'s through the same primitive to 1e-8."""
    from fesens.ad import grad, taylor_test
    from fesens.ad.lattice import LatticeSystem, lattice_solve
    from fesens.solvers.device_multigrid import DeviceLatticeSolver

    structure = structure_of(meshes()["hex8 odd 15x7x9"])
    system = LatticeSystem(structure, np.arange(structure.n_cells))
    s = simp(structure.n_cells, seed=4)
    f = np.random.default_rng(4).standard_normal(structure.n)
    device = DeviceLatticeSolver(device="gpu", rtol=1e-12, maxiter=1000)

    def compliance(c, solver):
        return f @ lattice_solve(system, c, f, solver)

    direction = np.random.default_rng(5).uniform(-1.0, 1.0, s.size) * s
    result = taylor_test(lambda c: compliance(c, device), s, direction, step=1e-2,
                         verbose=False)
    assert result.rate > 1.9, result
    ours = grad(lambda c: compliance(c, device))(s)
    cpu = grad(lambda c: compliance(c, ("gmg", {"rtol": 1e-12})))(s)
    error = np.linalg.norm(ours - cpu) / np.linalg.norm(cpu)
    print(f"primitive on the GPU: Taylor rate {result.rate:.3f}, against CPU gmg {error:.1e}")
    assert error < 1e-8


def test_mixed_precision_reaches_rtol_in_float64_on_the_device():
    structure = structure_of(meshes()["hex8 even 16x8x8"])
    s = simp(structure.n_cells, seed=3)
    f = np.random.default_rng(3).standard_normal(structure.n)
    solver = LatticeMultigrid(structure, rtol=1e-8, precision="mixed")
    u = solver.solve(CUPY.asarray(s), CUPY.asarray(f))
    assert u.dtype == CUPY.float64
    u = CUPY.asnumpy(u)
    residual = np.linalg.norm(f - structure.matrix(s) @ u) / np.linalg.norm(f)
    print(f"mixed precision: CG {solver.stats['iterations']}, residual {residual:.1e}")
    assert residual <= 1e-8


def test_a_model_solve_through_gmg_device_gpu_equals_the_cpu_gmg():
    """What ``[solver] backend = "gmg"``, ``options = { matrix_free = true, device = "gpu" }``
    makes of a model's solve: the device multigrid on the GPU, the CPU gmg's compliance."""
    model = Elasticity(box(16, 8, 8, 2.0, 1.0, 1.0), E=1.0, nu=0.3).fix("left")
    model.point_load([2.0, 0.5, 0.5], [0.0, -1.0, 0.0])
    options = {"matrix_free": True, "rtol": 1e-10}
    gpu = model.solve(solver=("gmg", {**options, "device": "gpu"}))
    cpu = model.solve(solver=("gmg", options))
    error = abs(gpu.compliance() - cpu.compliance()) / abs(cpu.compliance())
    print(f"gmg device = 'gpu' through the model: compliance {gpu.compliance():.10g}, "
          f"against CPU gmg {error:.1e}")
    assert error < 1e-8


def test_cone_filter_on_the_device_equals_scipy():
    """The grid's cone filter and its transpose on CuPy arrays (shifted slices) equal
    scipy.ndimage's on numpy to 1e-12, and stay CuPy arrays."""
    from fesens.opt.grid_filter import CentroidLattice, ConeStencil

    mesh = box(15, 7, 9, 1.5, 0.7, 0.9)
    stencil = ConeStencil(CentroidLattice.of(mesh.cell_centroids()), 0.25,
                          np.full(mesh.n_cells, 1e-3))
    x = np.random.default_rng(6).uniform(size=mesh.n_cells)
    for method in (stencil.apply, stencil.transpose):
        on_device = method(CUPY.asarray(x))
        assert isinstance(on_device, CUPY.ndarray)
        error = np.max(np.abs(CUPY.asnumpy(on_device) - method(x)) / np.abs(method(x)))
        assert error < 1e-12, error


def test_resident_optimization_on_the_gpu_equals_the_general_path():
    """fesens's optimize with gmg on the GPU: the design stays a CuPy array between
    iterations (the resident path), and five OC iterations give the designs of the
    general, traced path with the same solver to 1e-8."""
    from fesens.opt import OC, DesignProblem
    from fesens.opt.filters import DensityFilter
    from fesens.opt.loop import optimize
    from fesens.opt.resident import compliance_objective, resident_refusal

    runs = []
    for resident in (True, False):
        mesh = box(16, 8, 8, 2.0, 1.0, 1.0)
        model = Elasticity(mesh, E=1.0, nu=0.3).fix("left")
        model.traction("right", [0.0, 0.0, -1.0])
        problem = DesignProblem(model, compliance_objective, volume_fraction=0.3,
                                filter=DensityFilter(mesh, 0.19),
                                solver=("gmg", {"matrix_free": True, "device": "gpu",
                                                "rtol": 1e-10}))
        assert resident_refusal(problem, OC()) is None
        designs = []

        def keep(record, evaluation, x, designs=designs, resident=resident):
            assert isinstance(x, CUPY.ndarray) is resident
            designs.append(CUPY.asnumpy(x) if resident else np.array(x))

        result = optimize(problem, OC(), max_iter=5, tol_change=0.0, resident=resident,
                          callback=keep)
        runs.append((result, designs))
    (ours, designs), (general, expected) = runs
    error = max(np.max(np.abs(a - b)) for a, b in zip(designs, expected, strict=True))
    print(f"resident on the GPU: compliances {[r['objective'] for r in ours.history]}, "
          f"largest design difference {error:.1e}")
    assert error < 1e-8
    assert isinstance(ours.x, np.ndarray)
    assert abs(ours.evaluation.objective - general.evaluation.objective) <= \
        1e-10 * general.evaluation.objective


def _main() -> int:
    """Run every test of this module without pytest: PASS, FAIL or SKIP each."""
    tests = [(name, value) for name, value in globals().items()
             if name.startswith("test_") and callable(value)]
    if CUPY is None:
        print(f"SKIP all {len(tests)}: no GPU: {WHY_NOT}")
        return 0
    failed = 0
    for name, test in tests:
        try:
            test()
        except Exception as error:  # report every failure, then the count
            failed += 1
            print(f"FAIL {name}: {type(error).__name__}: {error}")
        else:
            print(f"PASS {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(_main())

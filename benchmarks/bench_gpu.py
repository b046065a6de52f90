"""The device multigrid on a GPU (CuPy) or the CPU (numpy): time per solve and per
optimization iteration, CG iterations, memory.

The problem is the cantilever of compliance topology optimization on a lattice of unit
cells, hex8 in 3D (sizes ``NXxNYxNZ``) or quad4 in plane stress in 2D (``NXxNY``)
(E = 1, ν = 0.3, SIMP with p = 3 and E_min = 1e-9, volume fraction 0.3): the side x = 0
clamped, a unit downward load along the bottom edge of the side x = L (in 2D its bottom
corner). The lattice is built directly (:class:`~fesens.solvers.grid_hierarchy.StructuredGrid`
and the reference matrix of one cell, taken from a one-cell model), so no mesh of the full
size exists on the host.

An "optimization iteration" (the ``bench`` rows) is, all in the chosen library (on the
device for CuPy): the density filter, the SIMP coefficients, the solve (warm-started from
the previous displacement), the compliance and its sensitivities (``−u_eᵀ K_ref u_e``,
filtered back), and an optimality-criteria update (bisection on the volume's multiplier).
The filter is a separable tensor-product hat of radius ``--radius`` cells, applied by
shifted slices, normalised by its row sums (top88's ``Hs``).

The ``fesens`` rows run fesens's own loop (:func:`fesens.opt.loop.optimize` with OC) on a
mesh of the same size: ``gmg`` matrix-free on the device (``device = "gpu"``, or
``"numpy"`` for ``--library numpy``), fesens's cone density filter of radius ``--radius``
cells, the uniform downward traction (total 1) on the side x = L; the design and state stay
in the library (:mod:`fesens.opt.resident`, which the row reports as ``resident``). Their
``host_seconds`` build the mesh, model and filter; ``outside_iterations_seconds`` are the
loop's time outside its iterations (the resident set-up, the final evaluation on the
general path for the outputs).

Memory: for CuPy the memory pool's bytes held after the run (the pool keeps freed blocks,
so this is about the peak) and in use; for numpy the process's peak resident set. Bytes
per cell divide the former by the number of cells.

Run ``python benchmarks/bench_gpu.py --library cupy --sizes 160x80x80 1200x600``
(default: numpy at 24x12x12 and 48x24x24, both loops); ``--loops bench`` or ``fesens``
runs one; ``--json FILE`` writes the results.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from types import ModuleType

import numpy as np

from fesens.solvers.device_multigrid import LatticeMultigrid
from fesens.solvers.grid_hierarchy import StructuredGrid
from fesens.solvers.lattice_operator import LatticeStructure

E_MIN, PENALTY = 1e-9, 3.0


def parse_size(text: str) -> tuple[int, ...]:
    cells = tuple(int(n) for n in text.lower().split("x"))
    if len(cells) not in (2, 3) or min(cells) < 1:
        raise argparse.ArgumentTypeError(f"size must look like 48x24x24 or 1200x600: {text!r}")
    return cells


def unit_model(cells: tuple[int, ...], sizes: tuple[float, ...] | None = None):
    """The elasticity model (E = 1, ν = 0.3, plane stress in 2D) of unit cells, clamped
    at x = 0: one cell for the reference matrix, or the whole lattice for a fesens row."""
    from fesens.mesh import box, rectangle
    from fesens.physics import Elasticity

    sizes = tuple(float(n) for n in cells) if sizes is None else sizes
    if len(cells) == 2:
        return Elasticity(rectangle(*cells, *sizes), E=1.0, nu=0.3, plane="stress").fix("left")
    return Elasticity(box(*cells, *sizes), E=1.0, nu=0.3).fix("left")


def unit_cell_matrix(dim: int = 3) -> np.ndarray:
    """The elasticity matrix of a unit cell (hex8 in 3D, quad4 in plane stress in 2D), in
    the lattice's local numbering, from a one-cell model."""
    from fesens.fem.model.matrix_free import lattice_system

    model = unit_model((1,) * dim)
    return lattice_system(model, model.stiffness_fields()[0]).structure.element


def cantilever(cells: tuple[int, ...], element: np.ndarray
               ) -> tuple[LatticeStructure, np.ndarray]:
    """The clamped lattice and its load ``(n,)`` (free dofs, point-major rows)."""
    shape = tuple(n + 1 for n in cells)
    dim = len(shape)
    free = np.ones((*shape[::-1], dim), dtype=bool)
    free[..., 0, :] = False  # x = 0 clamped
    rows = np.full(free.shape, -1, dtype=np.int64)
    rows[free] = np.arange(int(free.sum()))
    load = np.zeros(free.shape)
    if dim == 3:
        load[0, :, -1, 2] = -1.0 / shape[1]  # bottom edge of x = L, downwards, total 1
    else:
        load[0, -1, 1] = -1.0  # bottom corner of x = L, downwards
    rows = rows.reshape(-1, dim)
    structure = LatticeStructure(StructuredGrid(shape, rows), element, threads=1)
    return structure, load[free]


class HatFilter:
    """``x̃ = H x / Hs`` with ``H`` the tensor product of 1D hats ``max(0, r − |k|)`` on
    cell lattices ``(nz, ny, nx)``, by shifted slices in the library ``xp``."""

    def __init__(self, xp: ModuleType, shape: tuple[int, ...], radius: float) -> None:
        self.xp = xp
        reach = int(np.ceil(radius)) - 1
        self.weights = [(k, radius - abs(k)) for k in range(-reach, reach + 1)]
        self.row_sums = self._correlate(xp.ones(shape, dtype=xp.float64))

    def _correlate(self, x):
        xp = self.xp
        for axis in range(x.ndim):
            n = x.shape[axis]
            out = xp.zeros(x.shape, dtype=x.dtype)
            for k, w in self.weights:
                if abs(k) >= n:
                    continue
                target = [slice(None)] * x.ndim
                source = [slice(None)] * x.ndim
                target[axis] = slice(max(0, -k), n - max(0, k))
                source[axis] = slice(max(0, k), n - max(0, -k))
                out[tuple(target)] += w * x[tuple(source)]
            x = out
        return x

    def __call__(self, x):
        return self._correlate(x) / self.row_sums

    def transpose(self, g):
        """``Hᵀ (g / Hs)`` (``H`` is symmetric)."""
        return self._correlate(g / self.row_sums)


def oc_update(xp: ModuleType, x, dc, dv, volume: float, move: float = 0.2):
    """Optimality criteria with bisection on the multiplier (top88), in ``xp``."""
    low, high = 0.0, 1e9
    ratio = xp.sqrt(xp.maximum(-dc, 0.0) / dv)
    while (high - low) / (high + low) > 1e-3:
        middle = 0.5 * (low + high)
        new = xp.clip(x * ratio / middle ** 0.5, xp.maximum(x - move, 0.0),
                      xp.minimum(x + move, 1.0))
        if float(xp.mean(new)) > volume:
            low = middle
        else:
            high = middle
    return new


def library_of(name: str) -> ModuleType:
    if name == "numpy":
        return np
    from fesens.solvers.device_multigrid import array_library

    return array_library("gpu")


def synchronize(xp: ModuleType) -> None:
    if xp is not np:
        xp.cuda.Device().synchronize()


def memory(xp: ModuleType, n_cells: int) -> dict:
    if xp is np:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
        return {"host_peak_rss_bytes": peak, "bytes_per_cell": peak / n_cells}
    pool = xp.get_default_memory_pool()
    return {"pool_held_bytes": pool.total_bytes(), "pool_used_bytes": pool.used_bytes(),
            "bytes_per_cell": pool.total_bytes() / n_cells}


def run(xp: ModuleType, cells, element, precision: str, iterations: int, volume: float,
        radius: float, rtol: float) -> dict:
    start = time.perf_counter()
    structure, load = cantilever(cells, element)
    host_seconds = time.perf_counter() - start
    if xp is not np:
        xp.get_default_memory_pool().free_all_blocks()
    solver = LatticeMultigrid(structure, rtol=rtol, precision=precision)
    f = xp.asarray(load)
    shape = cells[::-1]
    density = xp.full(shape, volume, dtype=xp.float64)
    density_filter = HatFilter(xp, shape, radius)
    dv = density_filter.transpose(xp.ones(shape, dtype=xp.float64))

    def coefficients(physical):
        return xp.reshape(E_MIN + physical**PENALTY * (1.0 - E_MIN), (-1,))

    # one plain solve: setup and CG of the uniform start
    synchronize(xp)
    start = time.perf_counter()
    solver.setup(coefficients(density))
    synchronize(xp)
    setup_seconds = time.perf_counter() - start
    start = time.perf_counter()
    solver.solve(coefficients(density), f)
    synchronize(xp)
    result = {"cells": list(cells), "n_cells": structure.n_cells, "dofs": structure.n,
              "precision": precision, "levels": solver.stats["levels"],
              "host_lattice_seconds": host_seconds, "setup_seconds": setup_seconds,
              "solve_seconds": time.perf_counter() - start,
              "solve_cg_iterations": solver.stats["iterations"], "iterations": []}
    u = None  # the first iteration starts cold, later ones from the previous displacement
    for _ in range(iterations):
        synchronize(xp)
        start = time.perf_counter()
        physical = density_filter(density)
        s = coefficients(physical)
        u = solver.solve(s, f, x0=u)
        compliance = float(xp.sum(f * u))
        energies = xp.reshape(solver.cell_energies(u), shape)
        dc = density_filter.transpose(
            -PENALTY * (1.0 - E_MIN) * physical ** (PENALTY - 1.0) * energies)
        density = oc_update(xp, density, dc, dv, volume)
        synchronize(xp)
        result["iterations"].append({
            "seconds": time.perf_counter() - start, "compliance": compliance,
            "cg_iterations": solver.stats["iterations"],
            "setup_seconds": solver.stats["setup_seconds"],
            "solve_seconds": solver.stats["solve_seconds"]})
    result.update(memory(xp, structure.n_cells))
    return result


def run_fesens(library: str, cells, iterations: int, volume: float, radius: float,
               rtol: float) -> dict:
    """A fesens row: :func:`fesens.opt.loop.optimize` with OC on the mesh of ``cells``."""
    from fesens.opt import OC, DesignProblem
    from fesens.opt.filters import DensityFilter
    from fesens.opt.interpolation import SIMP
    from fesens.opt.loop import optimize
    from fesens.opt.resident import compliance_objective, resident_refusal

    xp = library_of(library)
    start = time.perf_counter()
    model = unit_model(cells)
    area = float(np.prod(cells[1:]))  # of the side x = L (2D: its length)
    model.traction("right", [0.0] * (len(cells) - 1) + [-1.0 / area])
    problem = DesignProblem(
        model, compliance_objective, volume_fraction=volume,
        interpolation=SIMP(PENALTY, E_MIN), filter=DensityFilter(model.mesh, radius),
        solver=("gmg", {"matrix_free": True, "rtol": rtol,
                        "device": "numpy" if xp is np else "gpu"}))
    refusal = resident_refusal(problem, OC())
    host_seconds = time.perf_counter() - start
    if xp is not np:
        xp.get_default_memory_pool().free_all_blocks()
    synchronize(xp)
    start = time.perf_counter()
    result = optimize(problem, OC(), max_iter=iterations, tol_change=0.0)
    synchronize(xp)
    total = time.perf_counter() - start
    seconds = [record["seconds"] for record in result.history]
    row = {"loop": "fesens", "cells": list(cells), "n_cells": model.mesh.n_cells,
           "dofs": int(model.free_dofs.size), "precision": "double",
           "resident": refusal is None, "not_resident_because": refusal,
           "host_seconds": host_seconds, "outside_iterations_seconds": total - sum(seconds),
           "iterations": [{"seconds": t, "compliance": record["objective"]}
                          for t, record in zip(seconds, result.history, strict=True)],
           "final_compliance": result.evaluation.objective}
    row.update(memory(xp, model.mesh.n_cells))
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", choices=("numpy", "cupy"), default="numpy")
    parser.add_argument("--sizes", type=parse_size, nargs="+",
                        default=[(24, 12, 12), (48, 24, 24)])
    parser.add_argument("--precision", choices=("double", "mixed", "both"), default="both")
    parser.add_argument("--loops", choices=("bench", "fesens"), nargs="+",
                        default=["bench", "fesens"],
                        help="the benchmark's own loop, fesens's optimize, or both (default)")
    parser.add_argument("--iterations", type=int, default=3,
                        help="optimization iterations per size (default 3)")
    parser.add_argument("--volume", type=float, default=0.3)
    parser.add_argument("--radius", type=float, default=1.5, help="filter radius in cells")
    parser.add_argument("--rtol", type=float, default=1e-8)
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)
    xp = library_of(args.library)
    elements = {}
    precisions = ("double", "mixed") if args.precision == "both" else (args.precision,)
    header = {"library": args.library, "python": platform.python_version(),
              "numpy": np.__version__}
    if xp is not np:
        props = xp.cuda.runtime.getDeviceProperties(xp.cuda.Device().id)
        name = props["name"]
        header.update(cupy=xp.__version__,
                      device=name.decode() if isinstance(name, bytes) else str(name),
                      device_memory_bytes=int(props["totalGlobalMem"]))
    print(json.dumps(header), flush=True)
    results = []
    for cells in args.sizes:
        size = "x".join(map(str, cells))
        if "bench" in args.loops:
            element = elements.setdefault(len(cells), unit_cell_matrix(len(cells)))
            for precision in precisions:
                result = run(xp, cells, element, precision, args.iterations, args.volume,
                             args.radius, args.rtol)
                result["loop"] = "bench"
                results.append(result)
                per_iteration = [it["seconds"] for it in result["iterations"]]
                print(f"{size} bench {precision}: setup "
                      f"{result['setup_seconds']:.3f} s, solve {result['solve_seconds']:.3f} s "
                      f"({result['solve_cg_iterations']} CG), iteration "
                      f"{np.median(per_iteration) if per_iteration else float('nan'):.3f} s "
                      f"(CG {[it['cg_iterations'] for it in result['iterations']]}), "
                      f"{result['bytes_per_cell']:.0f} B/cell", flush=True)
                print(json.dumps(result), flush=True)
        if "fesens" in args.loops:
            result = run_fesens(args.library, cells, args.iterations, args.volume,
                                args.radius, args.rtol)
            results.append(result)
            per_iteration = [it["seconds"] for it in result["iterations"]]
            print(f"{size} fesens optimize ({'resident' if result['resident'] else 'general'}"
                  f"): host build {result['host_seconds']:.2f} s, iteration "
                  f"{np.median(per_iteration) if per_iteration else float('nan'):.3f} s, "
                  f"outside the iterations {result['outside_iterations_seconds']:.2f} s, "
                  f"{result['bytes_per_cell']:.0f} B/cell", flush=True)
            print(json.dumps(result), flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"header": header, "results": results}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The device multigrid on a GPU (CuPy) or the CPU (numpy): time per solve and per
optimization iteration, CG iterations, memory.

The problem is the 3D cantilever of compliance topology optimization on a lattice of unit
hex8 cells (E = 1, ν = 0.3, SIMP with p = 3 and E_min = 1e-9, volume fraction 0.3): the
side x = 0 clamped, a unit downward line load along the bottom edge of the side x = L.
The lattice is built directly (:class:`~fesens.solvers.grid_hierarchy.StructuredGrid` and
the reference matrix of one cell, taken from a one-cell model), so no mesh of the full
size exists on the host.

An "optimization iteration" is, all in the chosen library (on the device for CuPy):
the density filter, the SIMP coefficients, the solve (warm-started from the previous
displacement), the compliance and its sensitivities (``−u_eᵀ K_ref u_e``, filtered back),
and an optimality-criteria update (bisection on the volume's multiplier). The filter is a
separable tensor-product hat of radius ``--radius`` cells, applied by shifted slices,
normalised by its row sums (top88's ``Hs``); fesens's cone filter on grids
(:mod:`fesens.opt.grid_filter`) runs scipy.ndimage on numpy arrays only, so it has no
device form yet.

Memory: for CuPy the memory pool's bytes held after the run (the pool keeps freed blocks,
so this is about the peak) and in use; for numpy the process's peak resident set. Bytes
per cell divide the former by the number of cells.

Run ``python benchmarks/bench_gpu.py --library cupy --sizes 160x80x80 320x160x160``
(default: numpy at 24x12x12 and 48x24x24); ``--json FILE`` writes the results.
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


def parse_size(text: str) -> tuple[int, int, int]:
    cells = tuple(int(n) for n in text.lower().split("x"))
    if len(cells) != 3 or min(cells) < 1:
        raise argparse.ArgumentTypeError(f"size must look like 48x24x24: {text!r}")
    return cells


def unit_cell_matrix() -> np.ndarray:
    """The hex8 elasticity matrix of a unit cube (E = 1, ν = 0.3), in the lattice's local
    numbering, from a one-cell model."""
    from fesens.fem.model.matrix_free import lattice_system
    from fesens.mesh import box
    from fesens.physics import Elasticity

    model = Elasticity(box(1, 1, 1), E=1.0, nu=0.3).fix("left")
    return lattice_system(model, model.stiffness_fields()[0]).structure.element


def cantilever(cells: tuple[int, int, int], element: np.ndarray
               ) -> tuple[LatticeStructure, np.ndarray]:
    """The clamped lattice and its line load ``(n,)`` (free dofs, point-major rows)."""
    shape = tuple(n + 1 for n in cells)
    nx, ny, nz = shape
    free = np.ones((nz, ny, nx, 3), dtype=bool)
    free[:, :, 0, :] = False  # x = 0 clamped
    rows = np.full(free.shape, -1, dtype=np.int64)
    rows[free] = np.arange(int(free.sum()))
    load = np.zeros(free.shape)
    load[0, :, nx - 1, 2] = -1.0 / ny  # bottom edge of x = L, downwards, total 1
    rows = rows.reshape(-1, 3)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", choices=("numpy", "cupy"), default="numpy")
    parser.add_argument("--sizes", type=parse_size, nargs="+",
                        default=[(24, 12, 12), (48, 24, 24)])
    parser.add_argument("--precision", choices=("double", "mixed", "both"), default="both")
    parser.add_argument("--iterations", type=int, default=3,
                        help="optimization iterations per size (default 3)")
    parser.add_argument("--volume", type=float, default=0.3)
    parser.add_argument("--radius", type=float, default=1.5, help="filter radius in cells")
    parser.add_argument("--rtol", type=float, default=1e-8)
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)
    xp = library_of(args.library)
    element = unit_cell_matrix()
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
        for precision in precisions:
            result = run(xp, cells, element, precision, args.iterations, args.volume,
                         args.radius, args.rtol)
            results.append(result)
            per_iteration = [it["seconds"] for it in result["iterations"]]
            print(f"{'x'.join(map(str, cells))} {precision}: setup "
                  f"{result['setup_seconds']:.3f} s, solve {result['solve_seconds']:.3f} s "
                  f"({result['solve_cg_iterations']} CG), iteration "
                  f"{np.median(per_iteration) if per_iteration else float('nan'):.3f} s "
                  f"(CG {[it['cg_iterations'] for it in result['iterations']]}), "
                  f"{result['bytes_per_cell']:.0f} B/cell", flush=True)
            print(json.dumps(result), flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"header": header, "results": results}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

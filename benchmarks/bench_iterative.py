"""Krylov-solver benchmark: what the rigid-body modes buy AMG on elasticity matrices.

The cantilever of ``bench_fem.py`` (linear elasticity, clamped ``left`` side, unit traction
on ``right``, E = 1, ν = 0.3) on a 2D quad4 grid (plane stress) and a 3D hex8 grid. For each
grid, ``K_ff`` and ``f_f`` are assembled once; then CG and MINRES (fesens defaults: rtol
1e-10, true relative residual) run with

* ``jacobi``: the inverse diagonal;
* ``amg``: smoothed aggregation built on pyamg's default near-null space, the constants;
* ``amg + rigid modes``: the same with ``near_nullspace=model.near_nullspace`` (the
  rigid-body modes on the free dofs, 3 in 2D and 6 in 3D; what a model solve with an AMG
  solver now uses by default), their computation included in the setup;

and CHOLMOD (symbolic + numeric factorization, one solve) gives the reference time. Each
run uses a new solver; times are medians of ``--repeats`` runs, with BLAS on ``--threads``
threads (default 1: steady on a shared machine). The relative residual
``||f - K u|| / ||f||`` is recomputed here, not taken from the solver.

Run ``python benchmarks/bench_iterative.py [--quick]``; ``--help`` for the options.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from _common import (
    GridSize,
    cantilever_model,
    load_average,
    load_line,
    machine_lines,
    ratio,
    table,
    timed,
)
from _common import seconds as format_seconds

from fesens.study.worker import limit_threads

SIZES = ("200x100", "30x10x10")
QUICK_SIZES = ("100x50", "15x5x5")
METHODS = ("cg", "minres")
#: label -> (preconditioner, whether to give the rigid-body modes)
PRECONDITIONERS = {
    "jacobi": ("jacobi", False),
    "amg": ("amg", False),
    "amg + rigid modes": ("amg", True),
}
HEADERS = ["size", "dofs", "solver", "setup", "solve", "total", "total / cholmod",
           "iterations", "||f - K u|| / ||f||"]


def measure(size: GridSize, repeats: int) -> list[list[str]]:
    """The table rows of one grid: CHOLMOD, then every method and preconditioner."""
    from fesens.solvers import make_solver

    model = cantilever_model(size)
    assembler = model.assembler
    K = assembler.stiffness(model.coefficients())
    f = model.load_vector()[assembler.free]
    dofs = str(K.shape[0])
    runs: dict[str, dict[str, Any]] = {}
    runs["cholmod"] = median_run(lambda: make_solver("cholmod"), K, f, repeats)
    for method in METHODS:
        for label, (preconditioner, rigid) in PRECONDITIONERS.items():
            options = {"preconditioner": preconditioner,
                       "near_nullspace": model.near_nullspace if rigid else None}
            name = f"{method} + {label}"
            runs[name] = median_run(lambda m=method, o=options: make_solver(m, **o), K, f, repeats)
            print(f"  {size.label:>9} {name}: {runs[name]['total']:.2f} s", file=sys.stderr,
                  flush=True)
    reference = runs["cholmod"]["total"]
    return [
        [size.label, dofs, name, format_seconds(run["setup"]), format_seconds(run["solve"]),
         format_seconds(run["total"]), ratio(run["total"], reference), run["iterations"],
         f"{run['residual']:.1e}"]
        for name, run in runs.items()
    ]


def median_run(make: Callable[[], Any], K, f: np.ndarray, repeats: int) -> dict[str, Any]:
    """Setup (factorize) and one solve with a new solver, ``repeats`` times: medians."""
    setups, solves = [], []
    for _ in range(repeats):
        solver = make()
        setup, _ = timed(lambda solver=solver: solver.factorize(K))
        solve, u = timed(lambda solver=solver: solver.solve(f))
        setups.append(setup)
        solves.append(solve)
    iterations = solver.stats.get("last_iterations")
    return {
        "setup": statistics.median(setups),
        "solve": statistics.median(solves),
        "total": statistics.median(a + b for a, b in zip(setups, solves, strict=True)),
        "iterations": "-" if iterations is None else str(iterations),
        "residual": float(np.linalg.norm(f - K @ u) / np.linalg.norm(f)),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: sizes {' '.join(QUICK_SIZES)}")
    parser.add_argument("--sizes", nargs="+", type=GridSize.parse, metavar="NXxNY[xNZ]",
                        help=f"grid sizes (default: {' '.join(SIZES)})")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per solver, medians reported (default: 3)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS/OpenMP threads (threadpoolctl; 0: library defaults). The "
                             "default 1 is far less noisy on a shared machine")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.repeats < 1:
        raise SystemExit("--repeats must be at least 1")
    sizes = args.sizes or [GridSize.parse(s) for s in (QUICK_SIZES if args.quick else SIZES)]
    threads = "library defaults"
    if args.threads and limit_threads(args.threads):
        threads = f"{args.threads} (threadpoolctl)"
    start = time.perf_counter()
    loads = [load_average()]
    rows = [row for size in sizes for row in measure(size, args.repeats)]
    loads.append(load_average())
    print("\n".join([
        "# fesens Krylov-solver benchmark: AMG with and without the rigid-body modes", "",
        *machine_lines(("numpy", "scipy", "scikit-sparse", "pyamg")),
        f"BLAS/OpenMP threads: {threads}",
        load_line(loads), "",
        f"cantilever, unit traction; CG and MINRES at rtol 1e-10; medians of {args.repeats} "
        "runs of setup (factorize) + one solve, each with a new solver.", "",
        table(HEADERS, rows), "",
        f"total benchmark wall time: {time.perf_counter() - start:.0f} s",
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""3D scale benchmark: one optimization iteration of a hex8 cantilever, per linear solver.

Minimum compliance of the cantilever of ``_common.cantilever_model`` (clamped ``left``
face, unit downward traction on ``right``, cubic cells), volume fraction 0.2, SIMP p = 3,
a density filter of radius 1.5 cells and the OC update, on each grid of ``--sizes``
(default 48x24x24 96x48x48 160x80x80) with each solver of ``--solvers``:

* ``cholmod``: sparse Cholesky (the default path);
* ``amg-cg``: the ``cg`` backend with pyamg smoothed aggregation (rigid-body modes);
* ``gmg-cg``: the ``gmg`` backend, geometric multigrid-CG with warm start and hierarchy
  reuse (``fesens/solvers/multigrid.py``), on the assembled matrix;
* ``gmg-mf``: the same with ``matrix_free = True``: no fine-level matrix, the stiffness
  applied cell by cell (``fesens/solvers/lattice_operator.py``).

The time of an iteration is split, from the outside by wrapping fesens functions with the
timers of ``bench_opt.Buckets``, into *solve* (the solver's ``factorize``, ``solve`` and
``solve_transpose``: factorization or preconditioner setup and the Krylov iterations),
*filter* (the forward density filter), *update* (``OC.step``) and *sensitivities* (the
rest of the iteration: assembly, the backward sweep with the filter's transpose, volume,
bookkeeping). ``CG it`` is the iteration count of the last solve of the iteration (compliance
needs no adjoint solve). Peak memory is the case process's high-water mark.

Every (size, solver) runs in its own child process. The first iteration's gradient is saved
and compared with CHOLMOD's of the same size (``|Δg|/|g|``), next to the solver's ``rtol``.
Run ``python benchmarks/bench_scale.py --help`` for the options; never part of the tests.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    GridSize,
    cantilever_model,
    load_average,
    load_line,
    machine_lines,
    megabytes,
    peak_rss_mb,
    run_case,
    seconds,
    serve_case,
    set_child_threads,
    table,
    timed,
)
from bench_opt import Buckets

VOLUME_FRACTION, PENALTY, E_MIN, RADIUS_CELLS, MOVE = 0.2, 3.0, 1e-9, 1.5, 0.2
RTOL = 1e-8
SOLVERS: dict[str, Any] = {
    "cholmod": "cholmod",
    "amg-cg": ("cg", {"preconditioner": "amg", "rtol": RTOL}),
    "gmg-cg": ("gmg", {"rtol": RTOL}),
    "gmg-mf": ("gmg", {"rtol": RTOL, "matrix_free": True}),
}
BUCKETS = ("solve", "sensitivities", "filter", "update")
CASE_TIMEOUT = 4 * 3600.0


def solver_spec(solver: str, options: dict[str, Any]) -> Any:
    """The spec of ``solver`` with ``options`` added to a gmg solver's options."""
    spec = SOLVERS[solver]
    if options and isinstance(spec, tuple) and spec[0] == "gmg":
        return (spec[0], {**spec[1], **options})
    return spec


def case_iterations(size: str, solver: str, iterations: int, gradient_file: str,
                    options: dict[str, Any] | None = None) -> dict[str, Any]:
    """``iterations`` OC iterations of the cantilever; per-iteration buckets."""
    from fesens.objectives import compliance
    from fesens.opt import OC, SIMP, DensityFilter, DesignProblem, optimize

    grid = GridSize.parse(size)
    model = cantilever_model(grid)
    setup, problem = timed(lambda: DesignProblem(
        model, lambda state, rho: compliance(state), volume_fraction=VOLUME_FRACTION,
        interpolation=SIMP(PENALTY, E_MIN), solver=solver_spec(solver, options or {}),
        filter=DensityFilter(model.mesh, RADIUS_CELLS / grid.cells[1])))
    backend = problem.differentiable.solver
    buckets = Buckets()
    for method in ("factorize", "solve", "solve_transpose"):
        buckets.wrap(type(backend), method, "solve")
    buckets.wrap(type(problem.filter), "__call__", "filter")
    buckets.wrap(OC, "step", "update", inclusive=True)
    snapshots, cg_iterations = [buckets.snapshot()], []

    def record(entry, evaluation, x):
        snapshots.append(buckets.snapshot())
        cg_iterations.append(backend.stats.get("last_iterations"))
        if len(snapshots) == 2:
            np.save(gradient_file, evaluation.gradient)

    try:
        result = optimize(problem, OC(move=MOVE), max_iter=iterations, tol_change=0.0,
                          callback=record)
    finally:
        buckets.restore()
    per_iteration = []
    for k, entry in enumerate(result.history):
        delta = {b: snapshots[k + 1].get(b, 0.0) - snapshots[k].get(b, 0.0) for b in BUCKETS}
        delta["sensitivities"] = entry["seconds"] - sum(
            delta[b] for b in BUCKETS if b != "sensitivities")
        delta["iteration"] = entry["seconds"]
        per_iteration.append(delta)
    return {
        "cells": model.mesh.n_cells, "dofs": model.dofmap.n_dofs, "setup_s": setup,
        "iterations": per_iteration, "cg_iterations": cg_iterations,
        "compliance": result.history[0]["objective"],
        "final_compliance": result.history[-1]["objective"],
        "levels": backend.stats.get("levels"), "peak_mb": peak_rss_mb(),
    }


CASES = {"iterations": case_iterations}


def summary(result: dict[str, Any], warmup: int) -> dict[str, float]:
    """Medians of the buckets over the iterations after ``warmup``."""
    kept = result["iterations"][warmup:] or result["iterations"]
    return {key: statistics.median(r[key] for r in kept) for key in kept[0]}


def report(sizes: Sequence[str], solvers: Sequence[str], results: dict, warmup: int,
           gradients: dict, loads: list) -> str:
    headers = ["grid", "cells", "dofs", "solver", "iteration", *BUCKETS, "CG it",
               "vs CHOLMOD", "|Δg|/|g|", "peak MB"]
    rows = []
    for size in sizes:
        reference = results.get((size, "cholmod"), {})
        for solver in solvers:
            result = results[(size, solver)]
            if "error" in result:
                rows.append([size, "", "", solver, result["error"],
                             *[""] * (len(headers) - 5)])
                continue
            medians = summary(result, warmup)
            speedup = (summary(reference, warmup)["iteration"] / medians["iteration"]
                       if "iterations" in reference else None)
            iterations = "/".join(str(n) for n in result["cg_iterations"] if n is not None)
            rows.append([size, f"{result['cells']:,}", f"{result['dofs']:,}", solver,
                         seconds(medians["iteration"]),
                         *[seconds(medians[b]) for b in BUCKETS], iterations or "-",
                         f"{speedup:.2f}x" if speedup else "-",
                         f"{gradients[(size, solver)]:.1e}"
                         if (size, solver) in gradients else "-",
                         megabytes(result["peak_mb"])])
    totals = []
    for (size, solver), result in results.items():
        if "iterations" in result:
            runs = result["iterations"]
            counts = [n for n in result["cg_iterations"] if n is not None]
            spent = {key: seconds(sum(r[key] for r in runs)) for key in ("iteration", "solve")}
            totals.append(f"{size} {solver}: {len(runs)} iterations {spent['iteration']}, "
                          f"solve {spent['solve']}, "
                          + (f"CG iterations {sum(counts)}, " if counts else "")
                          + f"last compliance {result['final_compliance']:.6g}")
    return "\n".join([
        "# 3D cantilever, one optimization iteration per solver", "",
        *machine_lines(["numpy", "scipy", "scikit-sparse", "pyamg"]), load_line(loads), "",
        table(headers, rows), "", "Totals over all iterations:", *totals, "",
        f"Medians over the iterations after the first {warmup}; CG it = iterations of each "
        f"iteration's solve (rtol {RTOL:g}); vs CHOLMOD = CHOLMOD's iteration time over this "
        "one; |Δg|/|g| = first-iteration gradient against CHOLMOD's.",
    ])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["48x24x24", "96x48x48", "160x80x80"],
                        help="3D grids, e.g. 48x24x24 (default: 48x24x24 96x48x48 160x80x80)")
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=list(SOLVERS))
    parser.add_argument("--iterations", type=int, default=4,
                        help="OC iterations per case (default 4)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="first iterations left out of the medians (default 1)")
    parser.add_argument("--threads", default="1",
                        help="BLAS/OpenMP threads of the case processes (default 1; "
                             "'default' keeps the libraries' defaults)")
    parser.add_argument("--gmg-option", action="append", default=[], metavar="KEY=VALUE",
                        help="an option of the gmg solvers, a JSON value (e.g. reuse=false; "
                             "repeatable)")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for size in args.sizes:
        if GridSize.parse(size).dim != 3:
            parser.error(f"--sizes: {size!r} is not a 3D grid like 48x24x24")
    try:
        args.gmg_options = {key: json.loads(value) for key, value in
                            (item.split("=", 1) for item in args.gmg_option)}
    except ValueError:
        parser.error("--gmg-option: give KEY=VALUE with a JSON value, e.g. reuse=false")
    if args.iterations < 1 or not 0 <= args.warmup < args.iterations:
        parser.error("--iterations must be >= 1 and --warmup in [0, iterations)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.case:
        serve_case(CASES, json.loads(args.case))
        return 0
    if args.threads != "default":
        set_child_threads(int(args.threads))
    loads, results, gradients = [load_average()], {}, {}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            saved = {}
            for solver in args.solvers:
                saved[solver] = str(Path(folder) / f"{size}-{solver}.npy")
                print(f"  {size:>10} {solver:>8}", end=" ", file=sys.stderr, flush=True)
                elapsed, result = timed(lambda s=size, v=solver, path=saved[solver]: run_case(
                    Path(__file__), "iterations", s, v, args.iterations, path,
                    args.gmg_options, timeout=CASE_TIMEOUT))
                print(f"{elapsed:7.1f} s  {result.get('error', 'ok')}", file=sys.stderr,
                      flush=True)
                results[(size, solver)] = result
            if "cholmod" in saved and Path(saved["cholmod"]).exists():
                reference = np.load(saved["cholmod"])
                for solver, path in saved.items():
                    if Path(path).exists():
                        gradients[(size, solver)] = float(
                            np.linalg.norm(np.load(path) - reference) / np.linalg.norm(reference))
    loads.append(load_average())
    print(report(args.sizes, args.solvers, results, args.warmup, gradients, loads))
    print(f"\ntotal benchmark wall time: {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One 3D design problem on 1 and 2 MPI ranks (``mpirun``), PETSc's CG + GAMG solving.

The problem is the ``cantilever3d`` preset (hex8, clamped left face, line load on the
right bottom edge, 15 % material, SIMP 3, density filter, OC) on a larger grid, solved by
the ``petsc`` backend (CG + GAMG with the rigid-body modes, rtol 1e-8). Each rank count
runs the same number of optimization iterations in a fresh ``mpirun -n N`` of this script
(``--worker``); every rank reports its time per iteration (median over the iterations after
the first, which includes PETSc's set-up), the time in the linear solves, and its peak
resident memory. The table gives the per-rank figures and the speed-up of the iteration
and of the solves from 1 to 2 ranks, and checks that both runs give the same compliances
(to the solver tolerance).

How the work splits (:mod:`fesens.mpi`): the distributed model, each rank holding its
cells (DMDA blocks): their model, matrices, sensitivities and design variables; PETSc adds
the ranks' matrices and splits GAMG's hierarchy and the Krylov iterations; the mesh and the
whole model's loads are replicated; rank 0 alone post-processes the whole mesh's outputs.
With three or more rank counts (``--ranks 1,2,3,4``) the table ends with the least-squares
fits of the peak memory of rank 0 and of the other ranks to ``R + D / N``: ``R`` what a
rank holds whatever N, ``D`` what the ranks share. On a 2-core machine two
ranks use both cores; more ranks share them (their times say nothing then, their memory
does).

    python benchmarks/bench_mpi.py [--size 60x20x20] [--iterations 6] [--ranks 1,2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _common import (
    RESULT_PREFIX,
    GridSize,
    load_average,
    load_line,
    machine_lines,
    megabytes,
    peak_rss_mb,
    ratio,
    seconds,
    table,
)

RANK_COUNTS = "1,2"
RTOL = 1e-8


def worker(size: GridSize, iterations: int) -> None:
    """One rank of an ``mpirun``: the preset on ``size``, ``iterations`` OC steps; prints one
    result line per rank."""
    from fesens.config import parse_config, preset_text
    from fesens.mpi import world
    from fesens.workflow import run_optimization

    rank = world()
    nx, ny, nz = size.cells
    text = preset_text("cantilever3d")
    for old, new in (("size = [30.0, 10.0, 10.0]", f"size = [{nx}.0, {ny}.0, {nz}.0]"),
                     ("cells = [30, 10, 10]", f"cells = [{nx}, {ny}, {nz}]"),
                     ("min = [30.0, 0.0, 0.0], max = [30.0, 0.0, 10.0]",
                      f"min = [{nx}.0, 0.0, 0.0], max = [{nx}.0, 0.0, {nz}.0]"),
                     ("max_iter = 250", f"max_iter = {iterations}")):
        if old not in text:
            raise SystemExit(f"bench_mpi: the cantilever3d preset no longer has {old!r}")
        text = text.replace(old, new)
    text += f'\n[solver]\nbackend = "petsc"\noptions = {{ rtol = {RTOL} }}\n'
    config = parse_config(text, source="bench_mpi", base_dir=Path.cwd(),
                          default_name="cantilever3d")
    start = time.perf_counter()
    run = run_optimization(config, echo=None)
    wall = time.perf_counter() - start
    per_iteration = [record["seconds"] for record in run.history[1:]] or \
        [run.history[0]["seconds"]]
    result = {"rank": rank.rank, "size": rank.size, "wall": wall,
              "iteration_median": statistics.median(per_iteration),
              "first_iteration": run.history[0]["seconds"],
              "compliances": [record["objective"] for record in run.history],
              "peak_rss_mb": peak_rss_mb(), "cells": nx * ny * nz}
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def launch(ranks: int, size: GridSize, iterations: int, timeout: float) -> list[dict]:
    """``mpirun -n ranks`` this script as a worker; the result line of every rank."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise SystemExit("bench_mpi: mpirun is not installed (make petsc installs Open MPI)")
    command = [mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
               "-x", "OPENBLAS_NUM_THREADS=1", "-x", "OMP_NUM_THREADS=1",
               "-n", str(ranks), sys.executable, __file__, "--worker",
               "--size", "x".join(map(str, size.cells)), "--iterations", str(iterations)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    # split on the prefix, not on lines: mpirun may join the ranks' lines
    results = [json.loads(part.split("\n", 1)[0]) for part in
               done.stdout.split(RESULT_PREFIX)[1:]]
    if done.returncode != 0 or len(results) != ranks:
        raise SystemExit(f"bench_mpi: mpirun -n {ranks} failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return sorted(results, key=lambda r: r["rank"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=GridSize.parse, default=GridSize((60, 20, 20)))
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--ranks", default=RANK_COUNTS,
                        help="rank counts to run, comma-separated (default 1,2)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.size, args.iterations)
        return
    print("# fesens MPI benchmark\n")
    print("\n".join(machine_lines(["numpy", "scipy", "petsc4py"])))
    loads = [load_average()]
    counts = sorted({int(n) for n in args.ranks.split(",")} | {1, 2})
    runs = {ranks: launch(ranks, args.size, args.iterations, args.timeout)
            for ranks in counts}
    loads.append(load_average())
    print(load_line(loads))
    cells = runs[1][0]["cells"]
    print(f"\ncantilever3d on {'x'.join(map(str, args.size.cells))} hex8 ({cells} cells), "
          f"petsc CG + GAMG (rtol {RTOL:g}), OC, {args.iterations} iterations; one BLAS "
          "thread per rank\n")
    rows = []
    for ranks, results in runs.items():
        for r in results:
            rows.append([str(ranks), str(r["rank"]), seconds(r["first_iteration"]),
                         seconds(r["iteration_median"]), seconds(r["wall"]),
                         megabytes(r["peak_rss_mb"])])
    print(table(["ranks", "rank", "first iteration", "iteration (median)", "run",
                 "peak RSS (MB)"], rows))
    one, two = runs[1][0], runs[2][0]
    speedup = ratio(one["iteration_median"], two["iteration_median"])
    print(f"\nspeed-up 1 -> 2 ranks: iteration {speedup}, "
          f"run {ratio(one['wall'], two['wall'])}; memory per rank "
          f"{ratio(two['peak_rss_mb'], one['peak_rss_mb'])} of the serial run's")
    worst = max(abs(a - b) / abs(a) for a, b in zip(one["compliances"], two["compliances"],
                                                     strict=True))
    same = all(r["compliances"] == two["compliances"] for r in runs[2])
    print(f"compliance histories: largest relative difference 1 vs 2 ranks {worst:.1e}; "
          f"the 2 ranks {'agree bit for bit' if same else 'DIFFER'}")
    several = [n for n in counts if n > 1]
    if len(several) >= 2:  # peak memory = R + D / N over the distributed runs
        design = np.array([[1.0, 1.0 / n] for n in several])
        for who, pick in (("rank 0 (which also post-processes the whole mesh's outputs)",
                           lambda results: results[0]["peak_rss_mb"]),
                          ("the other ranks (largest)",
                           lambda results: max(r["peak_rss_mb"] for r in results[1:]))):
            peaks = np.array([pick(runs[n]) for n in several])
            (replicated, shared), *_ = np.linalg.lstsq(design, peaks, rcond=None)
            print(f"memory of {who} ≈ {replicated:.0f} MB + {shared:.0f} MB / N (fit over "
                  f"N = {', '.join(map(str, several))}): {replicated * 1024 / cells:.2f} kB "
                  f"per cell whatever N, {shared * 1024 / cells:.1f} kB per cell shared")


if __name__ == "__main__":
    main()

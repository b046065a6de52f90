"""Threads benchmark: the matrix-free multigrid path on 1 and N threads.

The 3D cantilever of ``bench_scale`` (``_common.cantilever_model``: clamped ``left`` face,
unit downward traction on ``right``, cubic hex8 cells; volume fraction 0.2, SIMP p = 3,
E_min = 1e-9, a density filter of radius 1.5 cells, OC with move 0.2) solved by ``gmg``
with ``matrix_free = True`` (``rtol`` 1e-8). For each thread count of ``--threads``
(``FESENS_THREADS``, which the slab kernels of ``fesens/solvers/parallel.py`` read at
every call; 0 leaves it unset: the default count, ``auto``, which backs off while other
work runs) it times, in one process and interleaved (1, N, 1, N, ...) so that other work
on the machine slows both alike, the minimum (``--median``: the median) over
``--repeats`` of:

* ``apply``: one fine-level operator product ``K u`` (``LatticeStructure.apply``);
* ``V-cycle``: one application of the multigrid preconditioner;
* ``solve``: one CG solve of the current design from zero (no warm start);
* ``iteration``: one optimization iteration (evaluation with its gradient, then the OC
  step); one design problem per thread count, stepped alternately: the kernels are
  bit-identical for every thread count, so both follow the same designs (checked).

``speedup`` is the one-thread time over the N-thread time. The load average at start and
end is printed: on a shared machine the speedups are a lower bound of an idle machine's.
With ``--compete`` the same measurements run twice in one process: first as they are,
then with one CPU-bound process (``while True: pass``) started for the second run and
killed after it, and both tables are printed. Run ``python benchmarks/bench_threads.py
--help`` for the options; never part of the tests.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np
from _common import GridSize, cantilever_model, load_average, load_line, seconds, table

VOLUME_FRACTION, PENALTY, E_MIN, RADIUS_CELLS, MOVE = 0.2, 3.0, 1e-9, 1.5, 0.2
RTOL = 1e-8
SOLVER = ("gmg", {"rtol": RTOL, "matrix_free": True})


def with_threads(threads: int, function: Callable[[], object]) -> float:
    """Seconds of ``function()`` with ``FESENS_THREADS=threads`` (0: unset, the default
    count of :func:`fesens.openmp.kernel_threads`, which backs off under load)."""
    if threads:
        os.environ["FESENS_THREADS"] = str(threads)
    else:
        os.environ.pop("FESENS_THREADS", None)
    tic = time.perf_counter()
    function()
    return time.perf_counter() - tic


def problem_of(size: GridSize):
    from fesens.objectives import compliance
    from fesens.opt import OC, SIMP, DensityFilter, DesignProblem

    model = cantilever_model(size)
    problem = DesignProblem(
        model, lambda state, rho: compliance(state), volume_fraction=VOLUME_FRACTION,
        interpolation=SIMP(PENALTY, E_MIN), solver=SOLVER,
        filter=DensityFilter(model.mesh, RADIUS_CELLS / size.cells[1]))
    return problem, OC(move=MOVE)


def run(size: GridSize, counts: Sequence[int], repeats: int, iterations: int,
        statistic: Callable = min) -> list[list]:
    """Rows of the table: one per quantity, ``statistic`` of its times."""
    from fesens.fem.model.matrix_free import lattice_system

    problems = {n: problem_of(size) for n in counts}
    designs = {n: problems[n][0].initial_design() for n in counts}
    timings: dict[str, dict[int, list[float]]] = {}
    cg: dict[int, list[int]] = {n: [] for n in counts}

    def record(name: str, n: int, value: float) -> None:
        timings.setdefault(name, {m: [] for m in counts})[n].append(value)

    for iteration in range(1, iterations + 1):  # optimization iterations, alternating
        for n in counts:
            problem, oc = problems[n]
            x = designs[n]

            def step(problem=problem, oc=oc, x=x, n=n, iteration=iteration):
                evaluation = problem.evaluate(x)
                designs[n] = oc.step(x, evaluation, problem.volume_excess(x, evaluation),
                                     iteration)

            record("iteration", n, with_threads(n, step))
            cg[n].append(problems[n][0].differentiable.solver.stats["last_iterations"])
        first = designs[counts[0]]
        if not all(np.array_equal(designs[n], first) for n in counts):
            raise AssertionError("the designs differ between thread counts")
    # kernels on the last design, with the first problem's solver and hierarchy
    problem = problems[counts[0]][0]
    backend = problem.differentiable.solver
    model = problem.differentiable.model
    structure = lattice_system(model, model.stiffness_fields()[0]).structure
    coefficients = backend._matrix.coefficients
    rng = np.random.default_rng(0)
    u = rng.standard_normal(structure.n)
    b = backend._matrix @ np.ones(structure.n)
    for _ in range(repeats):
        for n in counts:
            record("apply", n, with_threads(n, lambda: structure.apply(coefficients, u)))
            record("V-cycle", n, with_threads(n, lambda: backend._hierarchy.vcycle(u)))
        for n in counts:
            record("solve", n, with_threads(n, lambda: backend.solve(b, x0=np.zeros_like(b))))
    solve_iterations = backend.stats["last_iterations"]
    rows = []
    for name in ("apply", "V-cycle", "solve", "iteration"):
        best = {n: float(statistic(timings[name][n])) for n in counts}
        rows.append([name, *(seconds(best[n]) for n in counts),
                     *(f"{best[counts[0]] / best[n]:.2f}x" for n in counts[1:])])
    rows.append(["CG iterations", *(",".join(map(str, cg[n])) for n in counts),
                 *([f"solve from zero: {solve_iterations}"] + [""] * (len(counts) - 2))])
    return rows


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="96x48x48", help="cells per axis (default 96x48x48)")
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2, 0],
                        help="thread counts, the first the reference; 0 for the default "
                             "count, FESENS_THREADS unset (default 1 2 0)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="repeats of the kernel timings (minimum reported; default 5)")
    parser.add_argument("--median", action="store_true",
                        help="report the median of the repeats instead of the minimum "
                             "(under a competing process the minimum is the luckiest run)")
    parser.add_argument("--iterations", type=int, default=3,
                        help="optimization iterations per thread count (default 3)")
    parser.add_argument("--compete", action="store_true",
                        help="run again with one competing CPU-bound process, both tables")
    return parser.parse_args(argv)


def label_of(threads: int) -> str:
    """A column's name: the thread count, or ``auto`` for the default count."""
    return f"{threads} thread{'s' * (threads > 1)}" if threads else "auto"


def measured(args: argparse.Namespace, label: str) -> None:
    """Run the measurements once and print their table under ``label``."""
    size = GridSize.parse(args.size)
    loads = [load_average()]
    statistic = np.median if args.median else min
    rows = run(size, args.threads, args.repeats, args.iterations, statistic)
    loads.append(load_average())
    counts = args.threads
    headers = ["quantity", *(label_of(n) for n in counts),
               *(f"speedup {label_of(n)}" for n in counts[1:])]
    print(f"# {label}: {args.size} hex8 gmg-mf (rtol {RTOL:g}), "
          f"{'median' if args.median else 'minimum'} of {args.repeats} "
          f"repeats; {os.cpu_count()} cores")
    print(table(headers, rows))
    print(load_line(loads), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    measured(args, "as found")
    if args.compete:
        # one CPU-bound process for the second run only, killed whatever happens
        rival = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            measured(args, "one competing CPU-bound process")
        finally:
            rival.kill()
            rival.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

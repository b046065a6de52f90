"""The gradient of a nonlinear solve against the solve: Newton on the cached pattern, and
its adjoint (the transposed solve with the converged tangent, refined from Newton's last
factorization with products of the tangent's action, and one traced residual evaluation).

Problems (each its own process), with a per-cell density scale ``x`` as the input
(``1 + 0.2 sin(...)``, shifted for every call, as in an optimization loop):

* **hyperelastic**: ``FiniteStrainElasticity`` (compressible neo-Hookean, ``E = 1``,
  ``ν = 0.3``; plane strain on quad4 in 2D, hex8 in 3D) on a ``2 x 1 (x 1)`` cantilever,
  clamped ``left``, a dead downward traction ``0.006`` on ``right`` (tip deflection about
  10 % of the length), ``scale = x``, 2 load steps, the energy line search; CHOLMOD by
  default (the tangent stays positive definite at this load; the model's ``auto`` is
  CHOLMOD with an LU fallback);
* **nonlinear heat**: ``NonlinearHeatConduction`` with ``k(T) = k₀ (1 + 0.5 T)`` on the
  ``2 x 1`` quad4 grid, ``T = 0`` on ``left``, a unit heat source (``T`` up to about 1.3,
  ``k`` up to 1.6), ``scale = x``, 1 load step; LU (UMFPACK: the tangent is not
  symmetric).

The objective is the end compliance ``J = f·u`` (``f`` the load vector). Per problem, two
modes: **cold**, ``warm_start=False`` (every solve follows the load path from the reference
state), and **loop**, the default ``warm_start=True``, where a solve starts from the last
converged state of the previous (nearby) input, one load step. Columns:

* **solve**: ``model.solve(scale=x)`` untraced; **gradient**: ``value_and_grad(J)(x)``,
  the same solve plus its adjoint; minima over ``--repeats`` alternating calls after a
  warm-up, new inputs every call; their ratio (target 1.15) and the adjoint part
  (gradient − solve) / solve;
* **CPU** solve and gradient: the process's CPU time over the same timed calls (minima)
  and their ratio, which other jobs on a shared machine do not inflate (one thread);
* **peak memory** of one solve and of one gradient call: the growth of the resident set
  (``ru_maxrss`` after ``malloc_trim`` and a reset of the high-water mark; factorizations
  included) and the tracemalloc peak (numpy arrays only); target gradient / solve 1.2;
* **where the time goes**, from one more instrumented solve and gradient: the tangent
  assemblies (``model.tangent``: the hand-derived ``∂P/∂F`` contracted per cell and
  scattered onto the pattern), numeric factorizations, substitutions, residual
  evaluations (``internal_forces``), the stored energy of the line search, the
  admissibility check (``det F > 0``), and the rest (Newton's vector work, load vectors);
  in the adjoint: its transposed substitutions with Newton's last factorization, the
  converged tangent's transposed action (**action**: ``∂P/∂F`` at the quadrature points,
  once; **product**: each ``K*ᵀ λ`` of the refinement), a tangent assembly and
  factorization only where the refinement gives way, the traced residual evaluation
  (``internal_forces`` on traced inputs: the forward trace) and the rest (mostly that
  trace's reverse sweep).

Usage::

    .venv/bin/python benchmarks/bench_nonlinear.py                # ~1 h on a loaded 2-core machine
    .venv/bin/python benchmarks/bench_nonlinear.py --quick               # 100x50 and 12x6x6
    .venv/bin/python benchmarks/bench_nonlinear.py --problems hyper:48x24x24 --repeats 0
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from _common import (
    GridSize,
    load_average,
    load_line,
    machine_lines,
    peak_rss_mb,
    ratio,
    run_case,
    seconds,
    serve_case,
    set_child_threads,
    table,
)
from bench_transient import design, measure

DEFAULT_PROBLEMS = ("hyper:400x200", "heat:400x200", "hyper:48x24x24")
QUICK_PROBLEMS = ("hyper:100x50", "heat:100x50", "hyper:12x6x6")
TRACTION = 0.006
BETA = 0.5
#: The buckets of the breakdown, in print order.
BUCKETS = ("tangent", "factorize", "solve", "solve_transpose", "action", "product",
           "residual", "energy", "admissibility")


def build(kind: str, size: GridSize, solver: str | None):
    """The model, its ``solve`` keyword arguments and the backend name of ``kind``."""
    from fesens.mesh import box, rectangle

    nx, ny = size.cells[:2]
    lengths = (nx / ny, 1.0, *(n / ny for n in size.cells[2:]))
    mesh = (rectangle(nx, ny, *lengths, cell_type="quad4") if size.dim == 2
            else box(*size.cells, *lengths, cell_type="hex8"))
    if kind == "hyper":
        from fesens.physics.hyperelasticity import FiniteStrainElasticity

        model = FiniteStrainElasticity(mesh, E=1.0, nu=0.3)
        model.fix("left")
        model.traction("right", (0.0, -TRACTION, 0.0)[: size.dim])
        return model, {"steps": 2}, solver or "cholmod"
    if kind == "heat":
        if size.dim != 2:
            raise ValueError("the nonlinear heat problem is 2D here")
        from fesens.physics.nonlinear_conduction import NonlinearHeatConduction

        model = NonlinearHeatConduction(mesh, conductivity=1.0, beta=BETA)
        model.fix("left")
        model.heat_source(1.0)
        return model, {"steps": 1}, solver or "lu"
    raise ValueError(f"unknown problem kind {kind!r}: 'hyper' or 'heat'")


class Recorder:
    """Wall time and calls per ``(phase, bucket)``; the phase turns to ``"adjoint"`` when
    the solve's adjoint starts."""

    def __init__(self):
        self.phase = "solve"
        self.times: dict[tuple[str, str], float] = defaultdict(float)
        self.counts: dict[tuple[str, str], int] = defaultdict(int)

    def wrap(self, bucket: str, fn: Callable) -> Callable:
        def timed_call(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                key = (self.phase, bucket)
                self.times[key] += time.perf_counter() - start
                self.counts[key] += 1
        return timed_call

    def wrap_action(self, fn: Callable) -> Callable:
        """``fn`` returns a function (the tangent's transposed action): time its making
        under "action" and each of its calls under "product"."""
        made = self.wrap("action", fn)

        def action(*args, **kwargs):
            return self.wrap("product", made(*args, **kwargs))
        return action

    def entering_adjoint(self, fn: Callable) -> Callable:
        def adjoint(*args, **kwargs):
            self.phase = "adjoint"
            self.adjoint_start = time.perf_counter()
            return fn(*args, **kwargs)
        return adjoint

    def table(self, phase: str) -> dict[str, tuple[float, int]]:
        return {b: (self.times[(phase, b)], self.counts[(phase, b)]) for b in BUCKETS
                if self.counts[(phase, b)]}


@contextmanager
def instrumented(model, backend_class: type, recorder: Recorder) -> Iterator[None]:
    """Time the model's tangent, residual, energy and admissibility calls, the backend's
    factorizations and substitutions, and mark the start of the adjoint (patched for the
    ``with`` block only)."""
    from fesens.fem.nonlinear.implicit_solve import ResidualSolve

    methods = {"tangent": "tangent", "residual": "internal_forces",
               "energy": "stored_energy", "admissibility": "inadmissibility"}
    for bucket, name in methods.items():
        setattr(model, name, recorder.wrap(bucket, getattr(model, name)))
    model.transposed_tangent = recorder.wrap_action(model.transposed_tangent)
    patched = {"factorize": "factorize", "solve": "solve",
               "solve_transpose": "solve_transpose"}
    saved = {name: backend_class.__dict__.get(name) for name in patched.values()}
    for bucket, name in patched.items():
        setattr(backend_class, name, recorder.wrap(bucket, getattr(backend_class, name)))
    adjoint = ResidualSolve.__dict__["adjoint"]
    ResidualSolve.adjoint = recorder.entering_adjoint(adjoint)
    try:
        yield
    finally:
        ResidualSolve.adjoint = adjoint
        for name, original in saved.items():
            if original is None:
                delattr(backend_class, name)
            else:
                setattr(backend_class, name, original)
        for name in (*methods.values(), "transposed_tangent"):
            delattr(model, name)


def cpu_timed(fn: Callable, times: list[float]) -> Callable:
    """``fn`` appending the CPU time of this process over each call to ``times``: on a
    machine other jobs share, the wall time includes their turns, the CPU time does not
    (every solve runs on one thread here)."""
    def call(x):
        start = time.process_time()
        try:
            return fn(x)
        finally:
            times.append(time.process_time() - start)
    return call


def case_nonlinear(spec: str, repeats: int, solver: str | None) -> dict[str, Any]:
    """Both modes of one problem ``kind:size`` (runs in a child process)."""
    from fesens.ad import value_and_grad

    kind, label = spec.split(":")
    model, options, solver_name = build(kind, GridSize.parse(label), solver)
    f = np.asarray(model.load_vector())
    n_cells = model.mesh.n_cells
    result: dict[str, Any] = {"cells": n_cells, "unknowns": int(model.free_dofs.size),
                              "solver": solver_name}
    for mode, warm in (("cold", False), ("loop", True)):
        def solve(x, warm=warm):
            return model.solve(scale=x, solver=solver_name, warm_start=warm, **options)

        def J(x, solve=solve):
            return np.sum(f * solve(x).u)

        gradient = value_and_grad(J)
        offset = 0 if mode == "cold" else 1000
        # repeats = 0: only the instrumented calls below (a size too slow for repeats)
        cpu: dict[str, list[float]] = {"forward": [], "gradient": []}
        timing = (measure(cpu_timed(solve, cpu["forward"]), cpu_timed(gradient, cpu["gradient"]),
                          lambda i, offset=offset: design(n_cells, offset + i), repeats)
                  if repeats else {})
        if repeats:  # the timed calls: after the warm-up, before the memory measurements
            timing.update({f"cpu_{k}": min(v[1:1 + repeats]) for k, v in cpu.items()})
        recorder = Recorder()
        backend_class = type(model.tangent_solver(solver_name))
        x = design(n_cells, offset + 101)
        with instrumented(model, backend_class, recorder):
            start, cpu_start = time.perf_counter(), time.process_time()
            solution = solve(x)
            solve_time = time.perf_counter() - start
            solve_cpu = time.process_time() - cpu_start
            iterations = solution.report.iterations
            recorder.times.clear()
            recorder.counts.clear()
            recorder.phase = "solve"
            start, cpu_start = time.perf_counter(), time.process_time()
            value, g = gradient(design(n_cells, offset + 102))
            end = time.perf_counter()
            gradient_time, gradient_cpu = end - start, time.process_time() - cpu_start
        result[mode] = {
            **timing, "iterations": iterations, "instrumented_solve": solve_time,
            "instrumented_gradient": gradient_time, "J": float(value),
            "solve_buckets": recorder.table("solve"),
            "adjoint_buckets": recorder.table("adjoint"),
            "adjoint_total": end - recorder.adjoint_start}
        if not repeats:
            result[mode].update(forward=solve_time, gradient=gradient_time, forward_all=[],
                                gradient_all=[], cpu_forward=solve_cpu,
                                cpu_gradient=gradient_cpu)
    result["process_peak_mb"] = peak_rss_mb()
    return result


CASES = {"nonlinear": case_nonlinear}


# --------------------------------------------------------------------------- report
def results_table(results: dict[str, dict[str, Any]]) -> str:
    headers = ["problem", "unknowns", "solver", "mode", "Newton its", "solve", "gradient",
               "gradient / solve", "adjoint / solve", "CPU solve / grad", "CPU grad / solve",
               "RSS MB solve / grad",
               "RSS grad / solve", "tracemalloc MB solve / grad", "tracemalloc grad / solve"]
    rows = []
    for spec, r in results.items():
        if "error" in r:
            rows.append([spec, r["error"], *["-"] * (len(headers) - 2)])
            continue
        for mode in ("cold", "loop"):
            m = r[mode]
            rows.append([
                spec, str(r["unknowns"]), r["solver"], mode, str(m["iterations"]),
                seconds(m["forward"]), seconds(m["gradient"]),
                ratio(m["gradient"], m["forward"]),
                ratio(m["gradient"] - m["forward"], m["forward"]),
                *cpu_cells(m), *memory_cells(m, r)])
    return table(headers, rows)


def cpu_cells(m: dict[str, Any]) -> list[str]:
    """The CPU times of the timed solve and gradient (minima) and their ratio."""
    if "cpu_forward" not in m:
        return ["-", "-"]
    return [f"{seconds(m['cpu_forward'])} / {seconds(m['cpu_gradient'])}",
            ratio(m["cpu_gradient"], m["cpu_forward"])]


def memory_cells(m: dict[str, Any], r: dict[str, Any]) -> list[str]:
    """The four memory columns (without repeats: the process peak only)."""
    if "rss_forward" not in m:
        return [f"process peak {r['process_peak_mb']:.0f}", "-", "-", "-"]
    return [f"{m['rss_forward']:.0f} / {m['rss_gradient']:.0f}",
            ratio(m["rss_gradient"], m["rss_forward"]),
            f"{m['py_forward']:.0f} / {m['py_gradient']:.0f}",
            ratio(m["py_gradient"], m["py_forward"])]


def breakdown_table(results: dict[str, dict[str, Any]]) -> str:
    headers = ["problem", "mode", "phase", "total", *BUCKETS, "rest"]
    rows = []
    for spec, r in results.items():
        if "error" in r:
            continue
        for mode in ("cold", "loop"):
            m = r[mode]
            solve_total = m["instrumented_gradient"] - m["adjoint_total"]
            for phase, total, buckets in (("solve", solve_total, m["solve_buckets"]),
                                          ("adjoint", m["adjoint_total"],
                                           m["adjoint_buckets"])):
                cells = [f"{seconds(buckets[b][0])} ({buckets[b][1]})" if b in buckets
                         else "-" for b in BUCKETS]
                rest = total - sum(t for t, _ in buckets.values())
                rows.append([spec, mode, phase, seconds(total), *cells, seconds(rest)])
    return table(headers, rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", nargs="+", default=list(DEFAULT_PROBLEMS),
                        help="kind:size, kind 'hyper' or 'heat'")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed calls per quantity; 0: one instrumented solve and "
                             "gradient per mode only (no memory figures)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--hyper-solver", default=None,
                        help="backend of the hyperelastic tangent (default cholmod)")
    parser.add_argument("--quick", action="store_true", help=", ".join(QUICK_PROBLEMS))
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        serve_case(CASES, json.loads(args.case))
        return 0
    if args.quick:
        args.problems, args.repeats = list(QUICK_PROBLEMS), 2
    set_child_threads(args.threads)
    start, loads = time.perf_counter(), [load_average()]
    print("# fesens nonlinear-solve gradient benchmark\n")
    print("\n".join(machine_lines(("numpy", "scipy", "scikit-sparse", "scikit-umfpack"))))
    results = {}
    for spec in args.problems:
        solver = args.hyper_solver if spec.startswith("hyper") else None
        results[spec] = run_case(__file__, "nonlinear", spec, args.repeats, solver,
                                 timeout=3600)
        print(f"  {spec}: done", file=sys.stderr, flush=True)
    loads.append(load_average())
    print(load_line(loads) + "\n")
    print(f"J = f·u, d/dx of the density scale per cell; minima of {args.repeats} calls with "
          "new inputs each. cold: warm_start=False (full load path); loop: warm start "
          "from the previous input's converged state. gradient = value_and_grad (solve + "
          "adjoint). CPU = this process's CPU time over the same calls (other jobs' turns "
          "excluded; minima). RSS = growth of the peak resident set during one call; tracemalloc = "
          "peak of its numpy allocations.\n")
    print(results_table(results))
    print("\n## Where the time goes\n\nOne instrumented value_and_grad call per mode: "
          "its solve phase and its adjoint; time (calls) per bucket. adjoint 'residual' = "
          "the traced residual evaluation's forward trace; its reverse sweep is in "
          "'rest'.\n")
    print(breakdown_table(results))
    for spec, r in results.items():
        if "error" not in r:
            print(f"\n{spec}: J = {r['cold']['J']:.10g} (cold) / {r['loop']['J']:.10g} "
                  "(loop, other inputs); all timed calls (s): "
                  + "; ".join(f"{mode} solve " + ", ".join(f"{t:.3g}" for t in
                                                          r[mode]["forward_all"])
                              + " gradient " + ", ".join(f"{t:.3g}" for t in
                                                         r[mode]["gradient_all"])
                              for mode in ("cold", "loop")))
    print(f"\ntotal benchmark wall time: {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

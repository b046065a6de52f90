"""Design-optimization benchmark: where the time of one optimization iteration goes.

Minimum compliance with a volume fraction of 0.5, SIMP p = 3, a density filter and the
OC update (move 0.2), on

* the half MBB beam (top88's load case) on 180x60 and 600x200 quad4 grids of unit cells,
* a hex8 cantilever 60x20x20 (clamped ``left`` face, unit downward traction on ``right``).

For each problem the script runs a few fesens iterations (``fesens.opt.optimize``) with the
time split into buckets, measured from the outside by wrapping fesens functions with timers
(nothing in fesens is timed itself):

======================  ====================================================================
assembly                ``BlockOperator.matrix``: ``data(K) = Σ_k G_k c_k`` (forward)
factorization           the solver's ``factorize`` (CHOLMOD numeric; input checks included)
solves                  the solver's ``solve``/``solve_transpose`` (incl. the residual check)
sensitivities           the backward sweep (``fesens.ad.api.backward``) without solves and
                        filter products; "assembler VJP" is its per-cell contraction part
                        (the sweep's nodes are classified in ``fesens.ad.tracer
                        .node_cotangents``)
filter                  the density filter: forward products in the evaluation and the
                        transposed products of the backward sweep
optimizer update        ``OC.step`` with all it calls (its bisection evaluates the volume
                        through ``problem.volume_excess``: a dot product per step)
other                   the rest: tracing, interpolation, load vector, volume, bookkeeping
======================  ====================================================================

Timings are exclusive (a bucket called inside another is subtracted from the outer one),
except that ``optimizer update`` includes what it calls. Two ratios put the iteration in
context:

* iteration / forward solve: the iteration against ``problem.solve(ρ)`` untraced, i.e.
  assembly + CHOLMOD factorization + one solve (the floor for any FE-based iteration);
* top88-style / fesens: an iteration written here the way the classic Python ports of top88
  do it: ``coo_matrix((sK, (iK, jK))).tocsr()``, ``K[free][:, free]``, a fresh
  ``sksparse.cholmod.cholesky`` factorization every iteration, element-wise sensitivities,
  ``H``/``Hs`` density filter and the OC bisection (same problem, same filter matrix; its
  first compliance is checked against fesens').

Each problem runs in its own child process (this script re-invoked with ``--case``). In it,
every fesens iteration is followed, in the loop's callback (outside the iteration's time),
by one top88-style iteration and one forward solve, so the three numbers of an iteration
see the same machine load; medians over the iterations after the warm-up are reported.
BLAS runs single-threaded by default (``--blas-threads``).
Run ``python benchmarks/bench_opt.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from _common import (
    GridSize,
    cantilever_model,
    load_average,
    load_line,
    machine_lines,
    megabytes,
    peak_rss_mb,
    ratio,
    run_case,
    seconds,
    serve_case,
    set_child_threads,
    table,
    timed,
    unit_element_matrix,
)

VOLUME_FRACTION = 0.5
PENALTY = 3.0
E_MIN = 1e-9
MOVE = 0.2
CASE_TIMEOUT = 900.0
ITERATION_TARGET = 1.3  # fesens iteration / forward solve must stay below this
TOP88_TARGET = 1.3  # top88-style iteration / fesens iteration must reach this
BUCKETS = ("assembly", "factorization", "solves", "sensitivities", "assembler VJP", "filter",
           "optimizer update")


@dataclass(frozen=True)
class Problem:
    """A benchmark problem: ``kind`` ``mbb`` (2D, unit cells) or ``cantilever`` (3D)."""

    kind: str
    size: str
    radius_cells: float
    warmup: int
    iterations: int

    @property
    def label(self) -> str:
        return f"{self.kind} {self.size}"


PROBLEMS = (
    Problem("mbb", "180x60", 3.0, warmup=2, iterations=10),
    Problem("mbb", "600x200", 3.0, warmup=2, iterations=5),
    Problem("cantilever", "60x20x20", 1.5, warmup=2, iterations=4),
)
QUICK_PROBLEMS = (
    Problem("mbb", "90x30", 3.0, warmup=1, iterations=3),
    Problem("mbb", "200x100", 3.0, warmup=1, iterations=3),
    Problem("cantilever", "24x8x8", 1.5, warmup=1, iterations=2),
)


def build_model(problem: Problem):
    """The fesens model and the filter radius in mesh units."""
    size = GridSize.parse(problem.size)
    if problem.kind == "cantilever":
        return cantilever_model(size), problem.radius_cells / size.cells[1]
    from fesens.mesh import rectangle
    from fesens.physics import Elasticity

    nelx, nely = size.cells
    model = Elasticity(rectangle(nelx, nely, float(nelx), float(nely)), E=1.0, nu=0.3,
                       plane="stress")
    model.fix("left", components=0)
    model.fix(lambda p: np.isclose(p[:, 0], nelx) & np.isclose(p[:, 1], 0.0), components=1)
    model.point_load((0.0, float(nely)), (0.0, -1.0), name="F")
    return model, problem.radius_cells


def design_problem(model, radius: float):
    from fesens.objectives import compliance
    from fesens.opt import SIMP, DensityFilter, DesignProblem

    return DesignProblem(model, lambda state, rho: compliance(state),
                         volume_fraction=VOLUME_FRACTION, interpolation=SIMP(PENALTY, E_MIN),
                         filter=DensityFilter(model.mesh, radius))


# --------------------------------------------------------------------------- instrumentation
class Buckets:
    """Exclusive wall time per bucket, collected by wrapping functions with timers.

    A timed call inside another timed call pauses the outer bucket, unless the outer one
    is *inclusive* (then the inner call is not timed separately). :meth:`restore` puts the
    original functions back.
    """

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.paused = False  # while True, wrapped functions run untimed
        self._stack: list[list] = []  # [bucket, inclusive, start]
        self._patches: list[tuple[Any, str, Any]] = []

    def timed(self, bucket: str, function: Callable, *, inclusive: bool = False) -> Callable:
        """``function`` with its time added to ``bucket``."""
        def wrapper(*args, **kwargs):
            if self.paused or (self._stack and self._stack[-1][1]):
                return function(*args, **kwargs)
            now = time.perf_counter()
            if self._stack:
                outer = self._stack[-1]
                self.seconds[outer[0]] += now - outer[2]
            self._stack.append([bucket, inclusive, now])
            try:
                return function(*args, **kwargs)
            finally:
                name, _, start = self._stack.pop()
                end = time.perf_counter()
                self.seconds[name] += end - start
                if self._stack:
                    self._stack[-1][2] = end

        return wrapper

    def patch(self, owner: Any, name: str, replacement: Callable) -> None:
        self._patches.append((owner, name, owner.__dict__.get(name)))
        setattr(owner, name, replacement)

    def wrap(self, owner: Any, name: str, bucket: str, *, inclusive: bool = False) -> None:
        """Time every call of ``owner.name`` (a class's method or a module's function)."""
        self.patch(owner, name, self.timed(bucket, getattr(owner, name), inclusive=inclusive))

    def restore(self) -> None:
        for owner, name, original in reversed(self._patches):
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        self._patches.clear()

    def snapshot(self) -> dict[str, float]:
        return dict(self.seconds)


def instrument(problem, solver_class) -> Buckets:
    """Wrap the functions of one fesens iteration with bucket timers (see module doc)."""
    import fesens.ad.api
    import fesens.ad.tracer
    from fesens.ad.numpy_wrapper import matmul
    from fesens.fem.assembly.primitives import BlockOperator, assemble
    from fesens.opt import OC, DensityFilter

    buckets = Buckets()
    buckets.wrap(BlockOperator, "matrix", "assembly")
    buckets.wrap(solver_class, "factorize", "factorization")
    buckets.wrap(solver_class, "solve", "solves")
    buckets.wrap(solver_class, "solve_transpose", "solves")
    buckets.wrap(DensityFilter, "__call__", "filter")
    buckets.wrap(OC, "step", "optimizer update", inclusive=True)
    buckets.wrap(fesens.ad.api, "backward", "sensitivities")
    node_cotangents = fesens.ad.tracer.node_cotangents
    per_bucket = {name: buckets.timed(name, node_cotangents)
                  for name in ("assembler VJP", "filter", "sensitivities")}
    from fesens.opt.grid_filter import apply_cone_stencil

    # the filter's VJP: a stencil on structured grids, else a product with its matrix
    stencil = getattr(problem.filter, "stencil", None)
    filter_matrix = problem.filter.matrix if stencil is None else None

    def classified(node, g):
        if node.fun is assemble:
            return per_bucket["assembler VJP"](node, g)
        if ((node.fun is matmul and node.args[0] is filter_matrix)
                or node.fun is apply_cone_stencil):
            return per_bucket["filter"](node, g)
        return per_bucket["sensitivities"](node, g)

    buckets.patch(fesens.ad.tracer, "node_cotangents", classified)
    return buckets


# --------------------------------------------------------------------------- cases
def case_problem(kind: str, size: str, radius_cells: float, warmup: int,
                 iterations: int) -> dict[str, Any]:
    """fesens iterations (instrumented), each followed by one top88-style iteration and one
    forward solve, so that the three see the same machine load; then MMA updates."""
    from fesens.opt import MMA, OC, optimize

    model, radius = build_model(Problem(kind, size, radius_cells, warmup, iterations))
    problem = design_problem(model, radius)
    top88 = Top88Iteration(model, radius)
    buckets = instrument(problem, type(problem.differentiable.solver))
    snapshots, top88_runs, forward = [], [], []
    designs = [problem.initial_design()]  # designs[k] is the design evaluated at iteration k+1

    def interleaved(record, evaluation, x):
        snapshots.append(buckets.snapshot())
        designs.append(x)
        buckets.paused = True
        top88.seconds.clear()
        elapsed, compliance = timed(top88)
        top88_runs.append({**top88.seconds, "iteration": elapsed, "compliance": compliance})
        # perturbed values: a solver still holding the factor of rho would not refactorize
        rho = evaluation.density * (1.0 - 1e-3 * record["iteration"])
        forward.append(timed(lambda: problem.solve(rho))[0])
        buckets.paused = False

    try:
        result = optimize(problem, OC(move=MOVE), max_iter=warmup + iterations,
                          tol_change=0.0, callback=interleaved)
    finally:
        buckets.restore()
    deltas = []
    for k in range(warmup, warmup + iterations):
        delta = {b: snapshots[k].get(b, 0.0) - snapshots[k - 1].get(b, 0.0) for b in BUCKETS}
        delta["sensitivities"] += delta["assembler VJP"]  # reported as the sum
        delta["other"] = result.history[k]["seconds"] - sum(
            delta[b] for b in BUCKETS if b != "assembler VJP")
        deltas.append(delta)
    mma = MMA()
    mma_steps = [timed(lambda k=k: mma.step(designs[-2], result.evaluation, None, k))[0]
                 for k in (1, 2, 3)]
    top88_timed = top88_runs[warmup:]
    return {
        "cells": model.mesh.n_cells,
        "dofs": model.dofmap.n_dofs,
        "filter_nnz": int(problem.filter.matrix.nnz),
        "first_iteration_s": result.history[0]["seconds"],
        "iteration_s": statistics.median(r["seconds"] for r in result.history[warmup:]),
        "buckets": medians(deltas),
        "forward_solve_s": statistics.median(forward[warmup:]),
        "mma_step_s": statistics.median(mma_steps),
        "compliance": result.history[0]["objective"],
        "top88_iteration_s": statistics.median(r["iteration"] for r in top88_timed),
        "top88_buckets": medians(top88_timed),
        "top88_compliance": top88_runs[0]["compliance"],
        "peak_mb": peak_rss_mb(),
    }


def medians(records: list[dict[str, float]]) -> dict[str, float]:
    """Per-key medians of per-iteration records (robust to a busy machine's outliers)."""
    return {key: statistics.median(r.get(key, 0.0) for r in records) for key in records[0]}


class Top88Iteration:
    """One iteration of a top88-style code (Andreassen et al. 2011, as ported to Python).

    Index arrays ``iK``, ``jK`` over all dofs are built once (``np.kron``); each iteration
    assembles with ``coo_matrix(...).tocsr()``, slices ``K[free][:, free]``, factorizes it
    afresh with ``sksparse.cholmod.cholesky``, solves, computes the element sensitivities
    ``−p ρ^(p−1) (1 − E_min) uₑᵀ KE uₑ``, filters them with ``H``/``Hs`` (density filter) and
    updates with the OC bisection, re-filtering the candidate at every bisection step.
    """

    def __init__(self, model, radius: float):
        from fesens.opt.filters import cone_weights

        self.KE = unit_element_matrix(model)
        self.edof = model.dofmap.cell_dofs
        self.n_dofs = model.dofmap.n_dofs
        self.free = np.setdiff1d(np.arange(self.n_dofs), model.constrained_dofs)
        self.f = model.load_vector()
        nd = self.edof.shape[1]
        self.iK = np.kron(self.edof, np.ones((nd, 1), dtype=self.edof.dtype)).flatten()
        self.jK = np.kron(self.edof, np.ones((1, nd), dtype=self.edof.dtype)).flatten()
        self.H = cone_weights(model.mesh.cell_centroids(), radius)
        self.Hs = np.asarray(self.H.sum(axis=1)).ravel()
        self.n = self.edof.shape[0]
        self.x = np.full(self.n, VOLUME_FRACTION)
        self.x_phys = self.x.copy()
        self.seconds: dict[str, float] = defaultdict(float)

    def _clock(self, name: str, start: float) -> float:
        now = time.perf_counter()
        self.seconds[name] += now - start
        return now

    def __call__(self) -> float:
        """One iteration; returns the compliance at the current design."""
        from sksparse.cholmod import cholesky

        t = time.perf_counter()
        E = E_MIN + self.x_phys**PENALTY * (1.0 - E_MIN)
        sK = ((self.KE.flatten()[np.newaxis]).T * E).flatten(order="F")
        K = sp.coo_matrix((sK, (self.iK, self.jK)), shape=(self.n_dofs, self.n_dofs)).tocsr()
        K = K[self.free][:, self.free]
        t = self._clock("assembly", t)
        factor = cholesky(K.tocsc())
        t = self._clock("factorization", t)
        u = np.zeros(self.n_dofs)
        u[self.free] = factor(self.f[self.free])
        t = self._clock("solves", t)
        ue = u[self.edof]
        ce = np.einsum("ei,ij,ej->e", ue, self.KE, ue)
        compliance = float(E @ ce)
        dc = -PENALTY * self.x_phys ** (PENALTY - 1) * (1.0 - E_MIN) * ce
        t = self._clock("sensitivities", t)
        dc = self.H @ (dc / self.Hs)
        dv = self.H @ (np.ones(self.n) / self.Hs)
        t = self._clock("filter", t)
        low, high = 0.0, 1e9
        while (high - low) / (high + low) > 1e-3:
            mid = 0.5 * (low + high)
            x_new = np.maximum(0.0, np.maximum(self.x - MOVE, np.minimum(
                1.0, np.minimum(self.x + MOVE, self.x * np.sqrt(-dc / dv / mid)))))
            self.x_phys = (self.H @ x_new) / self.Hs
            if self.x_phys.sum() > VOLUME_FRACTION * self.n:
                low = mid
            else:
                high = mid
        self.x = x_new
        self._clock("optimizer update", t)
        return compliance


CASES: dict[str, Callable[..., dict[str, Any]]] = {"problem": case_problem}


# --------------------------------------------------------------------------- reporting
def breakdown_table(problems: Sequence[Problem], results: dict) -> str:
    headers = ["problem", "cells", "dofs", "code", "iteration", *BUCKETS, "other"]
    rows = []
    for problem in problems:
        result = results[problem.label]
        if "error" in result:
            rows.append([problem.label, "", "", "", f"failed: {result['error']}"[:60],
                         *[""] * (len(headers) - 5)])
            continue
        for code, iteration, buckets in (
                ("fesens", result["iteration_s"], result["buckets"]),
                ("top88-style", result["top88_iteration_s"], result["top88_buckets"])):
            rows.append([problem.label, str(result["cells"]), str(result["dofs"]), code,
                         seconds(iteration),
                         *(seconds(buckets.get(b)) for b in (*BUCKETS, "other"))])
    return table(headers, rows)


def ratio_table(problems: Sequence[Problem], results: dict) -> str:
    headers = ["problem", "filter r (cells)", "fesens iteration", "forward solve",
               "iteration / forward", "top88-style iteration", "top88-style / fesens",
               "1st iteration", "MMA update", "|Δc|/c top88 vs fesens", "peak MB"]
    rows = []
    for problem in problems:
        result = results[problem.label]
        if "error" in result:
            continue
        rows.append([
            problem.label, f"{problem.radius_cells:g}", seconds(result["iteration_s"]),
            seconds(result["forward_solve_s"]),
            ratio(result["iteration_s"], result["forward_solve_s"]),
            seconds(result["top88_iteration_s"]),
            ratio(result["top88_iteration_s"], result["iteration_s"]),
            seconds(result["first_iteration_s"]), seconds(result["mma_step_s"]),
            f"{compliance_mismatch(result):.1e}", megabytes(result["peak_mb"]),
        ])
    return table(headers, rows)


def compliance_mismatch(result: dict) -> float:
    return abs(result["top88_compliance"] - result["compliance"]) / result["compliance"]


def checks(problems: Sequence[Problem], results: dict) -> list[tuple[str, bool]]:
    found = []
    for problem in problems:
        result = results[problem.label]
        if "error" in result:
            found.append((f"{problem.label}: case ran ({result['error']})", False))
            continue
        mismatch = compliance_mismatch(result)
        found.append((f"{problem.label}: top88-style and fesens compliance agree "
                      f"({mismatch:.1e})", mismatch < 1e-8))
        if problem.size in ("600x200", "60x20x20"):
            value = result["iteration_s"] / result["forward_solve_s"]
            found.append((f"{problem.label}: iteration / forward solve = {value:.2f} <= "
                          f"{ITERATION_TARGET:g}", value <= ITERATION_TARGET))
        value = result["top88_iteration_s"] / result["iteration_s"]
        found.append((f"{problem.label}: top88-style / fesens iteration = {value:.2f} >= "
                      f"{TOP88_TARGET:g}", value >= TOP88_TARGET))
    return found


def report(problems: Sequence[Problem], results: dict, loads: list) -> str:
    passed = checks(problems, results)
    return "\n".join([
        "# fesens design-optimization benchmark", "",
        *machine_lines(("numpy", "scipy", "scikit-sparse")), load_line(loads), "",
        f"Minimum compliance, volume fraction {VOLUME_FRACTION}, SIMP p = {PENALTY:g}, "
        f"density filter (radius in cell widths below), OC move {MOVE}; times per iteration "
        "and per bucket are medians over the timed iterations after the warm-up ones (the "
        "first includes CHOLMOD's symbolic analysis), so a row need not add up exactly.", "",
        "## Iteration breakdown", "",
        "Buckets as in the module docstring of bench_opt.py; 'sensitivities' includes the "
        "'assembler VJP' column. top88-style buckets: COO->CSR + slicing, cholesky(), "
        "substitution, element sensitivities, filter of dc and dv, OC bisection.", "",
        breakdown_table(problems, results), "",
        "## Ratios", "",
        "forward solve = problem.solve(rho) untraced for a new rho (assembly + CHOLMOD "
        "factorization + solve); MMA update = MMA.step on the last evaluation (median of "
        "3; not part of the OC iteration); peak MB = the case process (both codes).", "",
        ratio_table(problems, results), "",
        "## Checks", "",
        *(f"- [{'PASS' if ok else 'FAIL'}] {text}" for text, ok in passed),
    ])


# --------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: "
                             + ", ".join(p.label for p in QUICK_PROBLEMS) + ", < 1 min")
    parser.add_argument("--blas-threads", default="1", metavar="N",
                        help="OPENBLAS/OMP/MKL_NUM_THREADS and OMP_THREAD_LIMIT of the case "
                             "processes (default 1: on a shared machine idle-spinning BLAS "
                             "threads slow everything "
                             "else down; 'default' keeps the libraries' defaults)")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.case:
        import json

        serve_case(CASES, json.loads(args.case))
        return 0
    problems = QUICK_PROBLEMS if args.quick else PROBLEMS
    if args.blas_threads != "default":
        set_child_threads(int(args.blas_threads))
    loads = [load_average()]
    results: dict[str, dict[str, Any]] = {}
    start = time.perf_counter()
    for problem in problems:
        spec = (problem.kind, problem.size, problem.radius_cells, problem.warmup,
                problem.iterations)
        print(f"  {problem.label:>22}", end=" ", file=sys.stderr, flush=True)
        elapsed, result = timed(lambda spec=spec: run_case(
            Path(__file__), "problem", *spec, timeout=CASE_TIMEOUT))
        print(f"{elapsed:6.1f} s  {result.get('error', 'ok')}", file=sys.stderr, flush=True)
        results[problem.label] = result
    loads.append(load_average())
    print(report(problems, results, loads))
    print(f"\ntotal benchmark wall time: {time.perf_counter() - start:.0f} s")
    return 0 if all(ok for _, ok in checks(problems, results)) else 1


if __name__ == "__main__":
    sys.exit(main())

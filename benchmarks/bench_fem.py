"""FEM-core benchmark: cached-pattern assembly, CHOLMOD symbolic reuse, solver backends.

Cantilever problems (linear elasticity, clamped ``left`` side, unit traction on ``right``):
2D quad4 grids in plane stress and 3D hex8 grids. For every grid size the script measures

1. the pattern build (:class:`fesens.fem.Assembler` construction, gather matrices
   included), the re-assembly of ``K_ff`` for new per-cell density scales, and the
   COO->CSR assembly of top88-style codes for comparison (fesens never re-runs it);
2. CHOLMOD's symbolic analysis, first numeric factorization, re-factorizations on the
   same pattern (the symbolic analysis must be reused) and solve time;
3. time to solution of each solver backend;
4. the peak resident memory (``ru_maxrss``) of each measurement.

Every measurement runs in a fresh child process (this script re-invoked with ``--case``),
so the peak memory of one case does not contaminate the next. A backend whose run is
predicted (from the smaller sizes) to exceed ``--time-limit`` is reported as skipped, and
a child that overruns is killed and reported as timed out.

Run ``python benchmarks/bench_fem.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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
    seconds,
    serve_case,
    set_child_threads,
    table,
    timed,
    unit_element_matrix,
)
from _common import run_case as run_script_case

SIZES = ("100x50", "200x100", "400x200", "800x400", "24x12x12", "48x24x24")
QUICK_SIZES = ("100x50", "200x100", "24x12x12")
BACKENDS = ("cholmod", "superlu", "cg+amg", "cg+jacobi")
RATIO_CHECK_SIZE = "400x200"  # the top88/fesens re-assembly ratio must be >= 5 here
MIN_RATIO = 5.0
SEED = 0

# Wall-clock allowance for one child process on top of the measured work (imports, mesh,
# pattern build), and the factor by which a child may overrun its predicted time.
CHILD_OVERHEAD_SECONDS = 60.0
OVERRUN_FACTOR = 2.0
FEM_CASE_TIMEOUT = 900.0
# Backend runs shorter than this are repeated (median of QUICK_SOLVE_REPEATS): noise.
QUICK_SOLVE_SECONDS = 2.0
QUICK_SOLVE_REPEATS = 3


# --------------------------------------------------------------------------- problems
def random_scales(n_cells: int, count: int, seed: int = SEED) -> list[np.ndarray]:
    """``count`` per-cell density scales, uniform in [0.001, 1] (SIMP-like contrast)."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(1e-3, 1.0, n_cells) for _ in range(count)]


class Top88Assembly:
    """The per-iteration stiffness assembly of top88-style codes, for comparison.

    Mirrors the Python port of top88 (Andreassen et al. 2011): index arrays ``iK``, ``jK``
    over *all* dofs built once with ``np.kron``; every iteration scales the element matrix
    per element into ``sK``, converts ``coo_matrix((sK, (iK, jK)))`` to CSR (summing
    duplicates) and slices out the free rows and columns.

    Parameters
    ----------
    edof_mat : numpy.ndarray
        ``(n_cells, nd)`` global dofs of each cell.
    n_dofs : int
    free : numpy.ndarray
        Global ids of the free dofs.
    KE : numpy.ndarray
        ``(nd, nd)`` element matrix at unit scale (all cells share it).

    Notes
    -----
    The ``ones`` of the ``kron`` are integers here (top88 uses floats), so scipy gets
    integer indices and the timed part does no float-to-int conversion.
    """

    def __init__(self, edof_mat: np.ndarray, n_dofs: int, free: np.ndarray, KE: np.ndarray):
        nd = edof_mat.shape[1]
        self.iK = np.kron(edof_mat, np.ones((nd, 1), dtype=edof_mat.dtype)).flatten()
        self.jK = np.kron(edof_mat, np.ones((1, nd), dtype=edof_mat.dtype)).flatten()
        self.KE = KE
        self.n_dofs = n_dofs
        self.free = free

    def __call__(self, scale: np.ndarray) -> sp.csr_matrix:
        """``K[free][:, free]`` for the per-element scale ``(n_cells,)``."""
        sK = ((self.KE.flatten()[np.newaxis]).T * scale).flatten(order="F")
        K = sp.coo_matrix((sK, (self.iK, self.jK)), shape=(self.n_dofs, self.n_dofs)).tocsr()
        return K[self.free][:, self.free]


def backend_solver(spec: str, model=None):
    """A fesens solver for ``"name"`` or ``"name+preconditioner"`` (e.g. ``"cg+amg"``).

    With ``model``, as the model would give it to a user: AMG gets the rigid-body modes.
    """
    from fesens.solvers import LinearSolver, make_solver

    name, _, preconditioner = spec.partition("+")
    options = {"preconditioner": preconditioner} if preconditioner else {}
    solver = (name, options) if model is None else model.with_near_nullspace((name, options))
    return solver if isinstance(solver, LinearSolver) else make_solver(name, **options)


# --------------------------------------------------------------------------- measuring
def median_time(fn: Callable[[Any], Any], inputs: Sequence[Any]) -> tuple[float, Any]:
    """Median wall time of ``fn(x)`` over ``inputs`` and the last return value."""
    seconds, value = [], None
    for x in inputs:
        value = None  # release the previous result first: it would inflate the peak RSS
        elapsed, value = timed(lambda x=x: fn(x))
        seconds.append(elapsed)
    return statistics.median(seconds), value


# --------------------------------------------------------------------------- cases
def case_baseline() -> dict[str, Any]:
    """Peak memory of a process that only imports what the other cases use."""
    import fesens.fem  # noqa: F401
    import fesens.solvers  # noqa: F401

    backend_solver("cg+amg")  # imports pyamg
    return {"peak_mb": peak_rss_mb()}


def case_fesens(label: str, repeats: int) -> dict[str, Any]:
    """Pattern build, re-assembly and CHOLMOD factorizations with fesens."""
    from fesens.fem import Assembler

    model = cantilever_model(GridSize.parse(label))
    dofmap, matrices = model.dofmap, model.cell_matrices()
    constrained = model.constrained_dofs
    pattern_s, assembler = median_time(
        lambda _: Assembler(dofmap.cell_dofs, dofmap.n_dofs, constrained, matrices),
        range(max(1, repeats // 2)),
    )
    coefficients = [model.coefficients(scale=s) for s in random_scales(model.mesh.n_cells, repeats)]
    reassembly_s, _ = median_time(assembler.stiffness, coefficients)
    result = {
        "dofs": dofmap.n_dofs,
        "free": int(assembler.free.size),
        "nnz": int(assembler.ff.nnz),
        "pattern_s": pattern_s,
        "reassembly_s": reassembly_s,
        "assembly_peak_mb": peak_rss_mb(),
    }
    load = model.load_vector()[assembler.free]
    result.update(cholmod_factorizations(assembler, model, load, coefficients))
    result["peak_mb"] = peak_rss_mb()
    return result


def cholmod_factorizations(assembler, model, load, coefficients) -> dict[str, Any]:
    """First factorization (homogeneous material), solves, then re-factorizations.

    The re-factorizations use the random coefficient fields ``coefficients`` (same
    pattern, new values): only the numeric phase should run again.
    """
    from fesens.solvers import make_solver

    solver = make_solver("cholmod")
    solver.factorize(assembler.stiffness(model.coefficients()))
    first = solver.stats
    solve_s, _ = median_time(solver.solve, [load] * 3)
    refactor_wall, refactor_numeric = [], []
    for c in coefficients[: max(1, len(coefficients) // 2)]:
        K = assembler.stiffness(c)
        before = solver.stats["numeric_seconds"]
        elapsed, _ = timed(lambda K=K: solver.factorize(K))
        refactor_wall.append(elapsed)
        refactor_numeric.append(solver.stats["numeric_seconds"] - before)
    last = solver.stats
    return {
        "symbolic_s": first["symbolic_seconds"],
        "numeric_s": first["numeric_seconds"],
        "refactor_s": statistics.median(refactor_wall),
        "refactor_numeric_s": statistics.median(refactor_numeric),
        "n_factorizations": last["n_numeric"],
        "n_symbolic": last["n_symbolic"],
        "solve_s": solve_s,
    }


def case_top88(label: str, repeats: int) -> dict[str, Any]:
    """The top88-style per-iteration COO->CSR assembly, checked against fesens."""
    model = cantilever_model(GridSize.parse(label))
    dofmap = model.dofmap
    constrained = model.constrained_dofs
    free = np.setdiff1d(np.arange(dofmap.n_dofs), constrained)
    top88 = Top88Assembly(dofmap.cell_dofs, dofmap.n_dofs, free, unit_element_matrix(model))
    scales = random_scales(model.mesh.n_cells, repeats)
    seconds, K = median_time(top88, scales)
    peak = peak_rss_mb()
    reference = model.assembler.stiffness(model.coefficients(scale=scales[-1]))
    mismatch = abs(K - reference).max() / abs(reference).max()
    return {"top88_s": seconds, "peak_mb": peak, "top88_mismatch": float(mismatch)}


def case_solve(label: str, backend: str) -> dict[str, Any]:
    """Time to solution of one backend on the homogeneous cantilever.

    Each run uses a new solver (nothing reused). A run shorter than
    ``QUICK_SOLVE_SECONDS`` is repeated and the medians are reported.
    """
    from fesens.errors import SolverError

    model = cantilever_model(GridSize.parse(label))
    assembler = model.assembler
    K = assembler.stiffness(model.coefficients())
    load = model.load_vector()[assembler.free]
    base_mb = peak_rss_mb()
    runs = []
    try:
        while len(runs) < QUICK_SOLVE_REPEATS:
            runs.append(solve_once(backend_solver(backend, model), K, load))
            if runs[0]["total_s"] > QUICK_SOLVE_SECONDS:
                break
    except SolverError as error:
        return {"error": f"{type(error).__name__}: {error}"}
    peak = peak_rss_mb()
    result = {key: statistics.median(run[key] for run in runs)
              for key in ("setup_s", "solve_s", "total_s")}
    return {
        **runs[-1],
        **result,
        "dofs": model.dofmap.n_dofs,
        "runs": len(runs),
        "peak_mb": peak,
        "solver_peak_mb": peak - base_mb,
    }


def solve_once(solver, K: sp.csr_matrix, load: np.ndarray) -> dict[str, Any]:
    """Factorize/set up ``solver`` (a new instance) and solve once; times and outcome."""
    setup_s, _ = timed(lambda: solver.factorize(K))
    solve_s, u = timed(lambda: solver.solve(load))
    return {
        "setup_s": setup_s,
        "solve_s": solve_s,
        "total_s": setup_s + solve_s,
        "iterations": solver.stats.get("last_iterations"),
        "compliance": float(load @ u),
    }


CASES: dict[str, Callable[..., dict[str, Any]]] = {
    "baseline": case_baseline,
    "fesens": case_fesens,
    "top88": case_top88,
    "solve": case_solve,
}


def run_case(case: str, *args: Any, timeout: float = FEM_CASE_TIMEOUT) -> dict[str, Any]:
    """Run one case of this script in a fresh Python process; its result or an error entry."""
    return run_script_case(__file__, case, *args, timeout=timeout)


# --------------------------------------------------------------------------- planning
def predicted_seconds(
    history: Sequence[tuple[int, float]], dofs: int, dim: int
) -> float | None:
    """Extrapolate a run time to ``dofs`` from smaller sizes; ``None`` without history.

    Uses the power law through the last two ``(dofs, seconds)`` points (exponent clamped
    to [1, 3]); from a single point, the exponent of nested-dissection Cholesky (1.5 in
    2D, 2 in 3D; also that of Jacobi-CG in 2D). ``seconds = inf`` marks a smaller size
    that was already too slow, and makes the prediction infinite.
    """
    if not history:
        return None
    n1, t1 = history[-1]
    exponent = 1.5 if dim == 2 else 2.0
    if len(history) >= 2 and math.isfinite(t1):
        n0, t0 = history[-2]
        if n1 > n0 and 0 < t0 < math.inf:
            exponent = min(max(math.log(t1 / t0) / math.log(n1 / n0), 1.0), 3.0)
    return t1 * (dofs / n1) ** exponent


@dataclass
class Run:
    """Settings and results of one benchmark run; results are keyed by size label."""

    sizes: list[GridSize]
    backends: list[str]
    repeats: int
    time_limit: float
    baseline: dict[str, Any] = field(default_factory=dict)
    load: list[tuple[float, ...]] = field(default_factory=list)
    fem: dict[str, dict[str, Any]] = field(default_factory=dict)
    top88: dict[str, dict[str, Any]] = field(default_factory=dict)
    solves: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def history(self, size: GridSize, backend: str) -> list[tuple[int, float]]:
        """``(dofs, total seconds)`` of ``backend`` on the sizes of this dimension measured
        before ``size``; a skipped or timed-out size counts as ``inf``, a failed one not."""
        points = []
        for (label, name), result in self.solves.items():
            if name != backend or GridSize.parse(label).dim != size.dim:
                continue
            if "total_s" in result:
                points.append((result["dofs"], result["total_s"]))
            elif "skipped" in result and points:
                points.append((points[-1][0], math.inf))
        return points


def measure(run: Run) -> None:
    """Run every case of every size, in order, logging progress to stderr."""
    run.load.append(load_average())
    run.baseline = run_case("baseline")
    for size in run.sizes:
        label = size.label
        run.fem[label] = logged(label, "fesens", run_case, "fesens", label, run.repeats)
        run.top88[label] = logged(label, "top88", run_case, "top88", label, run.repeats)
        for backend in run.backends:
            run.solves[(label, backend)] = logged(label, backend, solve_or_skip, run, size,
                                                  backend)
    run.load.append(load_average())


def solve_or_skip(run: Run, size: GridSize, backend: str) -> dict[str, Any]:
    """Run a backend unless the smaller sizes predict more than the time limit."""
    dofs = run.fem[size.label].get("dofs")
    history = run.history(size, backend)
    estimate = predicted_seconds(history, dofs, size.dim) if dofs else None
    if estimate is not None and estimate > run.time_limit:
        shown = "a smaller size was" if math.isinf(estimate) else f"~{estimate:.0f} s"
        return {"skipped": f"skipped (too slow: {shown} predicted > {run.time_limit:.0f} s)"}
    budget = OVERRUN_FACTOR * (run.time_limit if estimate is None else max(estimate, 1.0))
    result = run_case("solve", size.label, backend, timeout=budget + CHILD_OVERHEAD_SECONDS)
    if result.get("timed_out"):
        result["skipped"] = f"skipped (too slow: {result['error']})"
    return result


def logged(label: str, what: str, fn: Callable[..., dict[str, Any]], *args: Any
           ) -> dict[str, Any]:
    """``fn(*args)``, logging its wall time and outcome to stderr."""
    print(f"  {label:>9} {what:<10}", end=" ", file=sys.stderr, flush=True)
    elapsed, result = timed(lambda: fn(*args))
    outcome = result.get("skipped") or result.get("error") or "ok"
    print(f"{elapsed:6.1f} s  {outcome}", file=sys.stderr, flush=True)
    return result


# --------------------------------------------------------------------------- reporting
def assembly_table(run: Run) -> str:
    headers = ["size", "dofs", "free", "nnz(K_ff)", "pattern build", "re-assembly",
               "top88 COO->CSR", "top88 / re-asm", "pattern / re-asm", "peak MB fesens",
               "peak MB top88"]
    rows = []
    for size in run.sizes:
        fem, top = run.fem[size.label], run.top88[size.label]
        if "error" in fem:
            rows.append([size.label, f"failed: {fem['error']}", *[""] * (len(headers) - 2)])
            continue
        rows.append([
            size.label, str(fem["dofs"]), str(fem["free"]), str(fem["nnz"]),
            seconds(fem["pattern_s"]), seconds(fem["reassembly_s"]),
            seconds(top.get("top88_s")), ratio(top.get("top88_s"), fem["reassembly_s"]),
            ratio(fem["pattern_s"], fem["reassembly_s"]),
            megabytes(fem["assembly_peak_mb"]), megabytes(top.get("peak_mb")),
        ])
    return table(headers, rows)


def cholmod_table(run: Run) -> str:
    headers = ["size", "symbolic", "numeric (1st)", "re-factorize", "of which numeric",
               "re-fact / numeric", "(sym+num) / re-fact", "n_symbolic / n_factor.",
               "solve", "peak MB"]
    rows = []
    for size in run.sizes:
        fem = run.fem[size.label]
        if "error" in fem:
            continue
        rows.append([
            size.label, seconds(fem["symbolic_s"]), seconds(fem["numeric_s"]),
            seconds(fem["refactor_s"]), seconds(fem["refactor_numeric_s"]),
            ratio(fem["refactor_s"], fem["numeric_s"]),
            ratio(fem["symbolic_s"] + fem["numeric_s"], fem["refactor_s"]),
            f"{fem['n_symbolic']} / {fem['n_factorizations']}", seconds(fem["solve_s"]),
            megabytes(fem["peak_mb"]),
        ])
    return table(headers, rows)


def backend_table(run: Run) -> str:
    headers = ["size", "backend", "setup", "solve", "total", "total / cholmod", "iterations",
               "|dc|/c vs cholmod", "peak MB", "solver +MB"]
    rows = []
    for size in run.sizes:
        reference = run.solves.get((size.label, "cholmod"), {})
        for backend in run.backends:
            result = run.solves[(size.label, backend)]
            if "total_s" not in result:
                note = result.get("skipped") or f"failed: {result.get('error', '?')}"
                rows.append([size.label, backend, note[:60], *[""] * (len(headers) - 3)])
                continue
            c_ref = reference.get("compliance")
            rows.append([
                size.label, backend, seconds(result["setup_s"]), seconds(result["solve_s"]),
                seconds(result["total_s"]), ratio(result["total_s"], reference.get("total_s")),
                "-" if result["iterations"] is None else str(result["iterations"]),
                "-" if c_ref is None else f"{abs(result['compliance'] - c_ref) / c_ref:.1e}",
                megabytes(result["peak_mb"]), megabytes(result["solver_peak_mb"]),
            ])
    return table(headers, rows)


def checks(run: Run) -> list[tuple[str, bool]]:
    """The benchmark's hard requirements, as (description, passed)."""
    found = []
    for size in run.sizes:
        fem, top = run.fem[size.label], run.top88[size.label]
        if "error" in fem:
            found.append((f"{size.label}: fesens case ran ({fem['error']})", False))
            continue
        found.append((f"{size.label}: CHOLMOD symbolic analysis reused "
                      f"(n_symbolic = {fem['n_symbolic']} after {fem['n_factorizations']} "
                      "factorizations)", fem["n_symbolic"] == 1))
        if "top88_s" not in top:
            found.append((f"{size.label}: top88 case ran ({top.get('error')})", False))
            continue
        found.append((f"{size.label}: top88 K_ff equals fesens K_ff (relative max difference "
                      f"{top['top88_mismatch']:.1e})", top["top88_mismatch"] < 1e-12))
        if size.label == RATIO_CHECK_SIZE:
            value = top["top88_s"] / fem["reassembly_s"]
            found.append((f"{size.label}: top88 / fesens re-assembly = {value:.1f} "
                          f">= {MIN_RATIO:g}", value >= MIN_RATIO))
    return found


def header(run: Run) -> str:
    return "\n".join([
        *machine_lines(("numpy", "scipy", "scikit-sparse", "pyamg")),
        load_line(run.load),
        f"baseline peak RSS of a case process (imports only): "
        f"{megabytes(run.baseline.get('peak_mb'))} MB",
        f"backend time limit: {run.time_limit:.0f} s (predicted from smaller sizes); "
        f"iterative backends use fesens defaults (rtol 1e-10)",
    ])


def report(run: Run) -> str:
    passed = checks(run)
    sections = [
        "# fesens FEM-core benchmark", "", header(run), "",
        "## 1. Assembly: cached pattern (fesens) vs top88-style COO->CSR", "",
        "pattern build = Assembler construction (CSR patterns of K_ff and K_fc + gather "
        "matrices); re-assembly = assembler.stiffness(coefficients) for a new random density "
        "field (median); top88 = sK -> coo_matrix -> tocsr -> K[free][:, free] (median); "
        "peak MB = ru_maxrss of the case's process.", "",
        assembly_table(run), "",
        "## 2. CHOLMOD: symbolic analysis reused across re-factorizations", "",
        "1st factorization: homogeneous material; re-factorize: wall time of factorize() "
        "with a new random density field on the same pattern (median), 'of which numeric' "
        "from solver.stats; solve: one right-hand side incl. fesens' residual check.", "",
        cholmod_table(run), "",
        "## 3. Solver backends: factorize/setup + one solve, homogeneous material", "",
        f"A new solver per run; runs under {QUICK_SOLVE_SECONDS:g} s are repeated "
        f"{QUICK_SOLVE_REPEATS} times (median). solver +MB = rise of the peak RSS during "
        "setup + solve over the peak of building the model (pattern build temporaries).",
        "",
        backend_table(run), "",
        "## Checks", "",
        *(f"- [{'PASS' if ok else 'FAIL'}] {text}" for text, ok in passed),
    ]
    return "\n".join(sections)


# --------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: sizes {' '.join(QUICK_SIZES)}, 3 repeats")
    parser.add_argument("--sizes", nargs="+", type=GridSize.parse, metavar="NXxNY[xNZ]",
                        help=f"grid sizes (default: {' '.join(SIZES)})")
    parser.add_argument("--backends", type=lambda s: s.split(","), default=list(BACKENDS),
                        help="comma-separated backends, 'name' or 'name+preconditioner' "
                             f"(default: {','.join(BACKENDS)})")
    parser.add_argument("--time-limit", type=float, default=60.0, metavar="SECONDS",
                        help="skip a backend predicted to need longer (default: 60)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="re-assembly repeats (default 7, --quick 3); pattern builds "
                             "and re-factorizations use half as many")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS/OpenMP threads of the measured processes (default: library "
                             "defaults); 1 is far less noisy on a loaded machine")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.case:
        serve_case(CASES, json.loads(args.case))
        return 0
    sizes = args.sizes or [GridSize.parse(s) for s in (QUICK_SIZES if args.quick else SIZES)]
    sizes.sort(key=lambda size: (size.dim, math.prod(size.cells)))  # predictions need this
    repeats = args.repeats or (3 if args.quick else 7)
    if args.threads:
        set_child_threads(args.threads)
    run = Run(sizes=sizes, backends=args.backends, repeats=repeats, time_limit=args.time_limit)
    start = time.perf_counter()
    measure(run)
    print(report(run))
    print(f"\ntotal benchmark wall time: {time.perf_counter() - start:.0f} s")
    return 0 if all(ok for _, ok in checks(run)) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Finite-strain hyperelasticity side by side: fesens, torch-fem and jax-fem on one problem.

Every code solves the cantilever of ``benchmarks/peers/cantilever.py`` (hex8 box
``nx/ny x 1 x nz/ny``, compressible neo-Hookean ``W = θ_e (μ/2 (I_C − 3) − μ ln J +
λ/2 (ln J)²)`` with ``E = 1, ν = 0.3``, clamped at ``x = 0``, a dead traction on ``x = L`` in
4 load steps, Newton to ``‖R‖ < 1e-10 ‖R₀‖`` per step, direct linear solves) and
differentiates the end compliance ``C = f·u`` with respect to the per-cell scale ``θ`` at
``θ = 1``. Each (code, size) case is a fresh process: the peers run in their own environment
(``make peers``; interpreter ``$FESENS_PEERS_PYTHON``, else ``.peers/bin/python``), fesens in
this one. A case measures its set-up, a cold forward and gradient evaluation (JAX compiles
then), then ``--repeats`` warm ones (medians): the forward (the load-stepped solve) and the
value and gradient (the solve as the code runs it for a gradient, plus its adjoint), the peak
resident memory of each above what was resident before it and the process's whole peak
(``ru_maxrss``), and, with ``--check``, a central-difference check of the gradient along a
random direction. The tables give the times, their ratio, the memory, the compliance and how
far each code's compliance and gradient are from the first code that ran at that size.

    python benchmarks/bench_nonlinear_peers.py [--sizes 16x8x8 32x16x16] [--codes ...]

fesens runs three times: ``fesens`` with its default tangent backend (``auto``: CHOLMOD,
and LU for each factorization that finds the tangent not positive definite, as this
physics does not declare its tangent definite), ``fesens-cholmod`` and ``fesens-lu``
(every tangent by LU, SuperLU here: ``auto`` before it tried Cholesky first); the case
checks that fesens's ``box`` numbers nodes and cells like ``cantilever.py`` and that its
traction integral is the consistent nodal load. Extra tables: each peer's times over each
fesens row's, and where one instrumented fesens gradient spends its time (Newton iterations,
tangent assemblies, factorizations, the adjoint). A code that fails prints its error in its
row. A case of :data:`SKIPPED` is not run unless ``--run-all`` is given: its row says why.
``--json PATH`` also writes every case's result.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    case_progress,
    comparison_tables,
    load_line,
    machine_lines,
    measure_fesens,
    megabytes,
    peer_arguments,
    peers_python,
    ratio,
    relative_difference,
    run_peer_cases,
    seconds,
    serve_case,
    set_peer_threads,
    table,
    write_results,
)

SIZES = ("16x8x8", "32x16x16")
PEERS = Path(__file__).resolve().parent / "peers"
#: The peer codes: their case script (run by the peers' interpreter).
PEER_SCRIPTS = {"torch-fem": PEERS / "torchfem_case.py", "jax-fem": PEERS / "jaxfem_case.py"}
#: Cases left out unless ``--run-all``, with the reason their row prints.
SKIPPED = {("jax-fem", "32x16x16"): "skipped (--run-all runs it): one cold forward alone "
                                    "took 693 s on the 2-core machine of these tables"}


class FesensCantilever:
    """fesens's model of the cantilever: ``FiniteStrainElasticity`` on ``box`` (checked to
    have the problem's nodes, cells, clamped dofs and load vector), solved as the peers
    solve it.

    Parameters
    ----------
    problem : cantilever.Cantilever
    solver : str
        Backend of the tangent: ``"auto"`` (fesens's default: CHOLMOD with an LU fallback
        for this physics, whose tangent is not declared definite), ``"cholmod"`` or
        ``"lu"``.
    """

    def __init__(self, problem, solver: str):
        from cantilever import ATOL, RTOL, STEPS, TRACTION

        from fesens.mesh import box
        from fesens.physics.hyperelasticity import FiniteStrainElasticity

        mesh = box(problem.nx, problem.ny, problem.nz, *problem.lengths, cell_type="hex8")
        points = problem.points()
        # the gradient is compared per cell and the compliance to round-off: the codes
        # must number cells and nodes alike, not merely mesh the same box
        if not (np.array_equal(mesh.cells, problem.cells())
                and np.allclose(mesh.points, points, rtol=0.0, atol=1e-14)):
            raise ValueError("fesens's box numbers its nodes or cells unlike cantilever.py")
        self.model = FiniteStrainElasticity(mesh, E=1.0, nu=0.3, law="neo-hookean")
        self.model.fix("left")
        self.model.traction("right", (0.0, -TRACTION, 0.0))
        self.load = np.asarray(self.model.load_vector())
        expected = problem.nodal_load(points).ravel()
        if np.linalg.norm(self.load - expected) > 1e-14 * np.linalg.norm(expected):
            raise ValueError("fesens's traction integral differs from the consistent nodal "
                             "load of cantilever.py")
        clamped = np.flatnonzero(np.repeat(problem.clamped(points), 3))
        if not np.array_equal(np.sort(self.model.constrained_dofs), clamped):
            raise ValueError("fesens clamps other dofs than cantilever.py")
        self.solver = solver
        # The peers stop a step at ‖R‖ < RTOL ‖R₀‖ or ‖R‖ < ATOL, R₀ the residual at the
        # step's start: from the previous step's equilibrium that is the load increment,
        # ‖f‖ / STEPS, so the either/or test is one absolute tolerance (fesens's rtol is
        # relative to the size of the forces, not to R₀). stol = 0: no step-size test, which
        # the peers lack; no line search and no adaptive increments: full Newton steps in
        # STEPS equal load steps, as the peers take them.
        self.newton = {"rtol": 0.0, "atol": max(ATOL, RTOL * np.linalg.norm(self.load) / STEPS),
                       "stol": 0.0, "line_search": None, "adaptive": False, "steps": STEPS}

    def solve(self, theta):
        """The load-stepped solve from the reference state (no warm start: every call
        follows the whole load path, as the peers' calls do)."""
        return self.model.solve(scale=theta, solver=self.solver, newton=self.newton,
                                warm_start=False)

    def compliance(self, theta, reports: list | None = None):
        solution = self.solve(theta)
        if reports is not None:
            reports.append(solution.report)
        return np.sum(self.load * solution.u)

    def forward(self, theta: np.ndarray) -> float:
        return float(self.compliance(theta))

    def value_and_grad(self, theta: np.ndarray, reports: list | None = None
                       ) -> tuple[float, np.ndarray]:
        from fesens.ad import value_and_grad

        value, gradient = value_and_grad(self.compliance)(theta, reports)
        return float(value), np.asarray(gradient)

    def profile(self, theta: np.ndarray) -> dict[str, Any]:
        """One instrumented value+gradient (``bench_nonlinear``'s buckets): its solve's
        Newton iterations per load step and cut-backs, time and calls per bucket of the
        solve and of the adjoint."""
        from bench_nonlinear import Recorder, instrumented

        recorder, reports = Recorder(), []
        backend_class = type(self.model.tangent_solver(self.solver))
        with instrumented(self.model, backend_class, recorder):
            start = time.perf_counter()
            self.value_and_grad(theta, reports)
            end = time.perf_counter()
        report = reports[-1]
        return {"backend": backend_class.__name__, "iterations": report.iterations,
                "factorizations": report.factorizations, "fallbacks": report.fallbacks,
                "steps": [len(a.residuals) - 1 for a in report.attempts],
                "cutbacks": len(report.cutbacks), "gradient_s": end - start,
                "adjoint_s": end - recorder.adjoint_start,
                "solve_s": recorder.adjoint_start - start,
                "solve_buckets": recorder.table("solve"),
                "adjoint_buckets": recorder.table("adjoint")}


def fesens_case(size: str, repeats: int, check: bool, solver: str = "auto") -> dict[str, Any]:
    """fesens's case, run in its own process like the peers' (see the module docstring),
    measured by ``peers/harness.py``'s :func:`measure`.

    Returns the harness's result entries (``forward_s``, ``gradient_s``, ``compliance``,
    ``gradient``, ...) and ``profile``: where one forward and one gradient spend their time
    (:meth:`FesensCantilever.profile`).
    """
    sys.path.insert(0, str(PEERS))
    from harness import measure

    result, model = measure_fesens(measure, FesensCantilever, solver, size, repeats, check)
    result["profile"] = model.profile(np.ones(model.model.mesh.n_cells))
    return result


CASES = {"fesens": fesens_case,
         "fesens-cholmod": functools.partial(fesens_case, solver="cholmod"),
         "fesens-lu": functools.partial(fesens_case, solver="lu")}
CODES = (*CASES, *PEER_SCRIPTS)


def progress(result: dict[str, Any]) -> str:
    """One line on a finished case."""
    return case_progress(result, "compliance", "C")


def report(results: dict[tuple[str, str], dict[str, Any]], sizes: Sequence[str],
           codes: Sequence[str]) -> str:
    """The times-and-memory table, the agreement table, the peers' times over fesens's and
    where fesens's time goes."""

    def timing(code: str, r: dict[str, Any]) -> list[str]:
        return [seconds(r["forward_s"]), seconds(r["gradient_s"]),
                ratio(r["gradient_s"], r["forward_s"]), megabytes(r["process_peak_mb"]),
                megabytes(r["resident_mb"]), megabytes(r["forward_peak_mb"]),
                megabytes(r["gradient_peak_mb"])]

    def agreement(code: str, r: dict[str, Any], reference: dict[str, Any]) -> list[str]:
        differences = ["ref.", "ref."] if reference is r else [
            f"{relative_difference(r[key], reference[key]):.1e}"
            for key in ("compliance", "gradient")]
        return [f"{r['compliance']:.12e}", *differences]

    timing_table, agreement_table = comparison_tables(
        results, sizes, codes, "compliance",
        (["forward", "value+grad", "value+grad / forward", "peak MB", "resident MB",
          "forward +MB", "value+grad +MB"], timing),
        (["compliance C", "C rel. diff", "dC/dθ rel. diff"], agreement))
    return (f"## Times and memory\n\n{timing_table}\n\n## Agreement\n\n{agreement_table}\n\n"
            f"## fesens against the peers\n\n{speedup_table(results, sizes, codes)}\n\n"
            f"## Where fesens's time goes\n\n{profile_table(results, sizes, codes)}\n")


def speedup_table(results: dict[tuple[str, str], dict[str, Any]], sizes: Sequence[str],
                  codes: Sequence[str]) -> str:
    """Each peer's warm times over each fesens row's at the same size (> 1: fesens is
    faster)."""
    rows = []
    for size in sizes:
        for ours in (c for c in codes if c in CASES and "compliance" in results[c, size]):
            for peer in (c for c in codes if c in PEER_SCRIPTS):
                theirs = results[peer, size]
                if "compliance" not in theirs:
                    continue
                rows.append([size, f"{peer} / {ours}",
                             ratio(theirs["forward_s"], results[ours, size]["forward_s"]),
                             ratio(theirs["gradient_s"], results[ours, size]["gradient_s"])])
    return table(["size", "time ratio", "forward", "value+grad"], rows)


def profile_table(results: dict[tuple[str, str], dict[str, Any]], sizes: Sequence[str],
                  codes: Sequence[str]) -> str:
    """One instrumented value+gradient per fesens row: its solve's Newton iterations per
    load step, cut-backs and tangent factorizations that fell back to LU, and time (calls)
    per bucket of the solve and of the adjoint."""
    from bench_nonlinear import BUCKETS

    rows = []
    for size in sizes:
        for code in (c for c in codes if c in CASES and "profile" in results[c, size]):
            p = results[code, size]["profile"]
            its = (f"{p['iterations']} ({'+'.join(map(str, p['steps']))}), {p['cutbacks']} cut, "
                   f"{p.get('fallbacks', 0)}/{p.get('factorizations', 0)} fell back")
            for phase, total, buckets in (("solve", p["solve_s"], p["solve_buckets"]),
                                          ("adjoint", p["adjoint_s"], p["adjoint_buckets"])):
                cells = [f"{seconds(buckets[b][0])} ({buckets[b][1]})" if b in buckets
                         else "-" for b in BUCKETS]
                rest = total - sum(t for t, _ in buckets.values())
                rows.append([code, size, its if phase == "solve" else "", phase,
                             seconds(total), *cells, seconds(rest)])
    return table(["code", "size", "Newton its (per step), cut-backs, fallbacks", "phase",
                  "total",
                  *BUCKETS, "rest"], rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = peer_arguments(__doc__, SIZES, CODES, "jax-fem at 32x16x16")
    args = parser.parse_args(argv)
    if args.case:
        serve_case(CASES, json.loads(args.case))
        return 0

    set_peer_threads(args.threads)
    print("# Finite-strain hyperelasticity: fesens, torch-fem, jax-fem\n")
    print("\n".join(machine_lines(["numpy", "scipy", "scikit-sparse"])))
    print(f"peers' interpreter: {peers_python()}")
    results, loads = run_peer_cases(__file__, args, PEER_SCRIPTS, SKIPPED, progress)
    print(load_line(loads) + "\n")
    print(report(results, args.sizes, args.codes))
    write_results(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Memory benchmark: fesens's whole-process peak against an expert's hand-written adjoint.

For 2D quad4 cantilevers (plane stress, point load at the bottom-right corner, SIMP
``x**3`` at ``x = 0.5``, CHOLMOD) each case runs in a fresh process: build the problem and
evaluate ``value_and_grad`` of the compliance once. The process's peak resident memory
(``ru_maxrss``, pattern build and factorization included) of fesens is compared with that
of :class:`bench_ad.HandAdjoint` (numpy, a gather matrix and CHOLMOD: what an expert
writes). Target: fesens's peak at most 1.2x the expert's at 400x200.

``--stages`` also prints, for fesens, the tracemalloc peak of each stage (model, pattern
build and assembly, factorization and solve, gradient) — where the peak comes from.

Run ``python benchmarks/bench_memory.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from collections.abc import Sequence
from typing import Any

import numpy as np
from _common import (
    GridSize,
    cantilever_model,
    machine_lines,
    megabytes,
    peak_rss_mb,
    ratio,
    run_case,
    serve_case,
    set_child_threads,
    table,
    unit_element_matrix,
)

SIZES = ("200x100", "400x200")
TARGET_RATIO = 1.2  # fesens peak / expert peak
TARGET_FROM_CELLS = 400 * 200
DENSITY, PENALTY = 0.5, 3.0
CHILD_TIMEOUT = 900.0


def expert_problem(nx: int, ny: int) -> tuple[np.ndarray, ...]:
    """``(cell_dofs, fixed, KE, load)`` of the cantilever built with numpy as an expert does
    (top88 style, no fesens model); ``KE`` from a one-cell fesens model (in 2D it does not
    depend on the cell size), the cells' corners in that model's local order."""
    one = cantilever_model(GridSize.parse("1x1"), "corner")
    corners = one.mesh.points[one.mesh.cells[0]]  # (4, 2) in {0, 1}: local corner offsets
    offsets = np.rint(corners).astype(np.int64)
    ix, iy = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
    nodes = ((iy.ravel()[:, None] + offsets[:, 1]) * (nx + 1)
             + ix.ravel()[:, None] + offsets[:, 0])
    cell_dofs = (nodes[:, :, None] * 2 + np.arange(2)).reshape(nodes.shape[0], -1)
    left = np.arange(ny + 1) * (nx + 1)
    fixed = np.sort(np.concatenate([2 * left, 2 * left + 1]))
    load = np.zeros(2 * (nx + 1) * (ny + 1))
    load[2 * nx + 1] = -1.0  # node (nx, 0), y component
    return cell_dofs, fixed, unit_element_matrix(one), load


def case_hand(label: str) -> dict[str, Any]:
    """Process peak of the hand-written adjoint: set-up and one value_and_grad."""
    from bench_ad import HandAdjoint

    nx, ny = GridSize.parse(label).cells
    hand = HandAdjoint(*expert_problem(nx, ny), PENALTY)
    start = time.perf_counter()
    hand.value_and_grad(np.full(nx * ny, DENSITY), "compliance")
    return {"peak_mb": peak_rss_mb(), "seconds": time.perf_counter() - start}


def case_fesens(label: str) -> dict[str, Any]:
    """Process peak of fesens: set-up and one value_and_grad through the public API."""
    from fesens.ad import value_and_grad
    from fesens.objectives import Differentiable, compliance

    model = cantilever_model(GridSize.parse(label), "corner")
    problem = Differentiable(model, solver="cholmod")
    start = time.perf_counter()
    value_and_grad(lambda x: compliance(problem.solve(scale=x**PENALTY)))(
        np.full(model.mesh.n_cells, DENSITY))
    return {"peak_mb": peak_rss_mb(), "seconds": time.perf_counter() - start}


def case_stages(label: str) -> dict[str, Any]:
    """tracemalloc peak (MiB, Python-visible allocations only) of each fesens stage."""
    from fesens.ad import value_and_grad
    from fesens.objectives import Differentiable, compliance

    x = None
    peaks = {}

    def stage(name, fn):
        tracemalloc.start()
        out = fn()
        peaks[name] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        return out

    model = stage("model", lambda: cantilever_model(GridSize.parse(label), "corner"))
    problem = stage("assembler (pattern, gather)",
                    lambda: Differentiable(model, solver="cholmod"))
    x = np.full(model.mesh.n_cells, DENSITY)
    stage("forward (assembly, factorization, solve)",
          lambda: compliance(problem.solve(scale=x**PENALTY)))
    stage("value_and_grad", lambda: value_and_grad(
        lambda y: compliance(problem.solve(scale=y**PENALTY)))(x * 1.000001))
    return {"peaks": peaks}


CASES = {"hand": case_hand, "fesens": case_fesens, "stages": case_stages}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), metavar="NXxNY")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS/OpenMP threads of the measured processes")
    parser.add_argument("--stages", action="store_true",
                        help="also print fesens's tracemalloc peak per stage")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        serve_case(CASES, json.loads(args.case))
        return 0
    if args.threads:
        set_child_threads(args.threads)
    print("\n".join(machine_lines(["numpy", "scipy", "scikit-sparse"])), "\n")
    rows, passed = [], True
    for label in args.sizes:
        fes = run_case(__file__, "fesens", label, timeout=CHILD_TIMEOUT)
        hand = run_case(__file__, "hand", label, timeout=CHILD_TIMEOUT)
        value = (fes.get("peak_mb", 0) / hand["peak_mb"]) if "peak_mb" in hand else None
        applies = GridSize.parse(label).n_cells >= TARGET_FROM_CELLS
        if applies and (value is None or value > TARGET_RATIO):
            passed = False
        rows.append([label, megabytes(fes.get("peak_mb")), megabytes(hand.get("peak_mb")),
                     ratio(fes.get("peak_mb"), hand.get("peak_mb")),
                     f"<= {TARGET_RATIO}" if applies else "-"])
        if args.stages:
            stages = run_case(__file__, "stages", label, timeout=CHILD_TIMEOUT)
            for name, mb in stages.get("peaks", {}).items():
                print(f"{label} stage {name}: tracemalloc peak {mb:.0f} MiB")
    print(table(["size", "fesens peak MiB", "expert peak MiB", "fesens / expert", "target"],
                rows))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

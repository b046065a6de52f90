"""Memory benchmark: fesens's whole-process peak against an expert's hand-written adjoint.

For 2D quad4 and 3D hex8 cantilevers (plane stress in 2D, a point load at the bottom-right
corner, SIMP ``x**3`` at ``x = 0.5``, CHOLMOD) each case runs in a fresh process: build the
problem and evaluate ``value_and_grad`` of the compliance ``--calls`` times (default 1),
each call at a new design (``x`` drifts by 10⁻⁹, so each re-factorizes, as in an
optimization). The process's peak resident memory (``ru_maxrss``, pattern build and
factorization included) of fesens is compared with that of :class:`bench_ad.HandAdjoint`
(numpy, a gather matrix and CHOLMOD: what an expert writes, built here without any fesens
model). Target: fesens's peak at most 1.2x the expert's from 400x200 in 2D and from
24x12x12 in 3D (below, the interpreter and the libraries dominate both).

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

SIZES = ("200x100", "400x200", "24x12x12", "32x16x16")
TARGET_RATIO = 1.2  # fesens peak / expert peak
TARGET_FROM_CELLS = {2: 400 * 200, 3: 24 * 12 * 12}  # by dimension
DENSITY, PENALTY = 0.5, 3.0
CHILD_TIMEOUT = 900.0


def expert_problem(cells: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """``(cell_dofs, fixed, KE, load)`` of the cantilever built with numpy as an expert does
    (top88 style, no fesens model), in 2D (quad4) or 3D (hex8): nodes numbered ``x``
    fastest, the ``x = 0`` side clamped, a unit downward load at the node ``(nx, 0[, 0])``.
    ``KE`` comes from a one-cell fesens model (the cells' corners in that model's local
    order), scaled to the cell size ``1 / ny`` (a hex8 matrix scales with it, a quad4 one
    does not)."""
    dim = len(cells)
    one = cantilever_model(GridSize((1,) * dim), "corner")
    offsets = np.rint(one.mesh.points[one.mesh.cells[0]]).astype(np.int64)  # (corners, dim)
    strides = np.cumprod([1, *(n + 1 for n in cells[:-1])])
    first = np.stack(np.meshgrid(*(np.arange(n) for n in cells), indexing="ij"), axis=-1)
    nodes = (first.reshape(-1, 1, dim) + offsets) @ strides  # (n_cells, corners)
    cell_dofs = (nodes[:, :, None] * dim + np.arange(dim)).reshape(nodes.shape[0], -1)
    n_nodes = int(np.prod([n + 1 for n in cells]))
    left = np.flatnonzero(np.arange(n_nodes) % (cells[0] + 1) == 0)
    fixed = (left[:, None] * dim + np.arange(dim)).ravel()
    load = np.zeros(dim * n_nodes)
    load[dim * cells[0] + 1] = -1.0  # node (nx, 0[, 0]), y component
    KE = unit_element_matrix(one) * (1.0 / cells[1]) ** (dim - 2)
    return cell_dofs, fixed, KE, load


def _peak(gradient, n_cells: int, calls: int) -> dict[str, Any]:
    """Process peak after ``calls`` evaluations of ``gradient`` at drifting designs."""
    start = time.perf_counter()
    for k in range(calls):
        gradient(np.full(n_cells, DENSITY) * (1.0 + k * 1e-9))
    return {"peak_mb": peak_rss_mb(), "seconds": (time.perf_counter() - start) / calls}


def case_hand(label: str, calls: int = 1) -> dict[str, Any]:
    """Process peak of the hand-written adjoint: set-up and value_and_grad."""
    from bench_ad import HandAdjoint

    size = GridSize.parse(label)
    hand = HandAdjoint(*expert_problem(size.cells), PENALTY)
    return _peak(lambda x: hand.value_and_grad(x, "compliance"), size.n_cells, calls)


def case_fesens(label: str, calls: int = 1) -> dict[str, Any]:
    """Process peak of fesens: set-up and value_and_grad through the public API."""
    from fesens.ad import value_and_grad
    from fesens.objectives import Differentiable, compliance

    model = cantilever_model(GridSize.parse(label), "corner")
    problem = Differentiable(model, solver="cholmod")
    gradient = value_and_grad(lambda x: compliance(problem.solve(scale=x**PENALTY)))
    return _peak(gradient, model.mesh.n_cells, calls)


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
    parser.add_argument("--calls", type=int, default=1,
                        help="value_and_grad calls per process, each at a new design")
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
        fes = run_case(__file__, "fesens", label, args.calls, timeout=CHILD_TIMEOUT)
        hand = run_case(__file__, "hand", label, args.calls, timeout=CHILD_TIMEOUT)
        value = (fes.get("peak_mb", 0) / hand["peak_mb"]) if "peak_mb" in hand else None
        size = GridSize.parse(label)
        applies = size.n_cells >= TARGET_FROM_CELLS[size.dim]
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

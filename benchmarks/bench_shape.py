"""Shape sensitivities: the cost of ``dJ/dX`` (every node coordinate) against a forward solve.

The cantilever of ``_common.cantilever_model`` (quad4, plane stress; hex8 in 3D) with a
unit traction. For each size, in one process per size (peak memory per case):

* **forward**: ``model.solve(scale=s)`` for a new density scale ``s`` (the fast path:
  precomputed element matrices, one folded gather);
* **forward at X**: ``model.solve(points=X)`` for new coordinates ``X`` (element kernels,
  load vectors and volumes recomputed from ``X``);
* **shape gradient**: ``value_and_grad`` of ``J(X) = compliance(model.solve(points=X))``,
  and of the p-norm von Mises stress, for new ``X``;
* **density gradient**: ``value_and_grad`` of compliance w.r.t. the density ``x`` (``s = x³``)
  for reference.

Inputs change between timed calls (new random ``s``, ``x``, and ``X`` = the mesh's points
plus a new smooth perturbation), as in an optimization loop. Times are medians of several
calls after a warm-up (the first call does CHOLMOD's symbolic analysis).

Target: shape gradient / forward ≤ 2 at 400x200 and above.

Usage::

    .venv/bin/python benchmarks/bench_shape.py                 # 100x50 ... 400x200, 24x12x12
    .venv/bin/python benchmarks/bench_shape.py --sizes 800x400 --repeats 3
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from _common import (
    GridSize,
    cantilever_model,
    median_time,
    peak_rss_mb,
    ratio,
    run_sizes,
    seconds,
    serve_case,
    size_arguments,
    table,
)

DEFAULT_SIZES = ("100x50", "200x100", "400x200", "24x12x12")
TARGET = 2.0
TARGET_CELLS = 400 * 200


def case_shape(label: str, repeats: int) -> dict[str, Any]:
    """Times of one size (runs in a child process)."""
    from fesens.ad import value_and_grad
    from fesens.objectives import compliance, stress_pnorm

    size = GridSize.parse(label)
    model = cantilever_model(size)
    mesh = model.mesh
    rng = np.random.default_rng(1)
    h = 1.0 / size.cells[1]
    extent = np.ptp(mesh.points, axis=0)

    def points(i: int) -> np.ndarray:
        # a smooth perturbation of amplitude h/20: no cell inverts
        phase = rng.uniform(0, 2 * np.pi, mesh.dim)
        wave = np.sin(2 * np.pi * mesh.points / extent + phase)
        return mesh.points + 0.05 * h * wave[:, ::-1]

    def densities(i: int) -> np.ndarray:
        return rng.uniform(0.3, 1.0, mesh.n_cells)

    compliance_of_points = value_and_grad(lambda X: compliance(model.solve(points=X)))
    stress_of_points = value_and_grad(lambda X: stress_pnorm(model.solve(points=X)))
    compliance_of_density = value_and_grad(lambda x: compliance(model.solve(scale=x**3)))
    result = {
        "cells": mesh.n_cells,
        "dofs": model.dofmap.n_dofs,
        "forward": median_time(lambda i: model.solve(scale=densities(i) ** 3), repeats),
        "forward_points": median_time(lambda i: model.solve(points=points(i)), repeats),
        "shape_compliance": median_time(lambda i: compliance_of_points(points(i)), repeats),
        "shape_stress": median_time(lambda i: stress_of_points(points(i)), repeats),
        "density_compliance": median_time(lambda i: compliance_of_density(densities(i)),
                                          repeats),
    }
    result["peak_mb"] = peak_rss_mb()
    return result


CASES = {"shape": case_shape}


def report(results: dict[str, dict[str, Any]]) -> tuple[str, bool]:
    """The Markdown table and the target checks; True when every applicable target is met."""
    rows, checks, ok = [], [], True
    for label, r in results.items():
        if "error" in r:
            rows.append([label, "-", "-", r["error"], *["-"] * 8])
            ok = False
            continue
        rows.append([
            label, str(r["cells"]), str(r["dofs"]), seconds(r["forward"]),
            seconds(r["forward_points"]), seconds(r["shape_compliance"]),
            seconds(r["shape_stress"]), seconds(r["density_compliance"]),
            ratio(r["shape_compliance"], r["forward"]), ratio(r["shape_stress"], r["forward"]),
            ratio(r["shape_compliance"], r["forward_points"]), f"{r['peak_mb']:.0f}",
        ])
        if r["cells"] >= TARGET_CELLS and len(GridSize.parse(label).cells) == 2:
            for key, name in (("shape_compliance", "compliance"), ("shape_stress", "p-norm")):
                value = r[key] / r["forward"]
                passed = value <= TARGET
                ok &= passed
                checks.append(f"- [{'PASS' if passed else 'FAIL'}] {label}: shape gradient "
                              f"({name}) / forward = {value:.2f} <= {TARGET:g}")
    headers = ["size", "cells", "dofs", "forward", "forward at X", "dC/dX", "dσ_PN/dX",
               "dC/dx", "dC/dX / forward", "dσ_PN/dX / forward", "dC/dX / forward at X",
               "peak MB"]
    return table(headers, rows) + "\n\n## Checks\n\n" + "\n".join(checks), ok


def main(argv: Sequence[str] | None = None) -> int:
    args = size_arguments(__doc__, DEFAULT_SIZES, repeats=5).parse_args(argv)
    if args.case:
        serve_case(CASES, json.loads(args.case))
        return 0
    results, start = run_sizes(__file__, "shape", "fesens shape-sensitivity benchmark", args)
    print("Cantilever (E = 1, nu = 0.3, unit traction), CHOLMOD; medians of "
          f"{args.repeats} calls with new inputs each; forward = model.solve(scale=s) "
          "(fast path), forward at X = model.solve(points=X).\n")
    text, ok = report(results)
    print(text)
    print(f"\ntotal benchmark wall time: {time.perf_counter() - start:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

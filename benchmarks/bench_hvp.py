"""Hessian-vector products against gradients: time ratio and factorization count.

The cantilever of ``_common.cantilever_model`` (quad4 plane stress; hex8 in 3D), SIMP
stiffness ``scale = x³``, CHOLMOD. For each size and objective (compliance ``fᵀu``, which is
self-adjoint, and the displacement norm ``‖u‖``, which is not), in one process per size,
with new random densities ``x`` in [0.3, 1] for every timed call (as in an optimization
loop, so every call factorizes):

* **value + gradient**: ``fesens.ad.value_and_grad(J)(x)``;
* **hvp**: ``fesens.ad.hvp(J)(x, v)`` from scratch: the forward and adjoint solves, then
  the second-order sweep (tangent solve and second adjoint) — the number with a target
  (≤ 2.5x the gradient);
* **value + gradient + hvp**: ``value_grad_hvp(J)(x)`` and one product ``hessp(v)``;
  the number of numeric factorizations of that (``solver.stats["n_numeric"]``) must be 1,
  and the solves are counted;
* **one more product**: ``hessp(w)`` at the same point with the kept trace (a
  Newton–Krylov inner iteration).

Times are medians of ``--repeats`` calls after a warm-up.

Usage::

    .venv/bin/python benchmarks/bench_hvp.py --threads 1          # 400x200
    .venv/bin/python benchmarks/bench_hvp.py --sizes 100x50 --repeats 2
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

DEFAULT_SIZES = ("400x200",)
OBJECTIVES = ("compliance", "displacement_norm")
TARGET = 2.5  # hvp / (value + gradient)


def case_hvp(label: str, repeats: int) -> dict[str, Any]:
    """Times and counts of one size, per objective (runs in a child process)."""
    model = cantilever_model(GridSize.parse(label))
    result: dict[str, Any] = {"cells": model.mesh.n_cells, "dofs": model.dofmap.n_dofs}
    for k, name in enumerate(OBJECTIVES):
        result[name] = objective_row(model, name, k, repeats)
    result["peak_mb"] = peak_rss_mb()
    return result


def objective_row(model, name: str, seed: int, repeats: int) -> dict[str, Any]:
    """The times and counts of one objective (``fesens.objectives.<name>``)."""
    from fesens import adjoint
    from fesens.ad import hvp, value_and_grad, value_grad_hvp

    response = getattr(adjoint, name)
    n_cells = model.mesh.n_cells
    solver = model.solver("cholmod")

    def J(x):
        return response(model.solve(scale=x**3, solver="cholmod"))

    def point(i: int) -> tuple[np.ndarray, np.ndarray]:
        """New densities (never factorized before) and a direction."""
        rng = np.random.default_rng(1000 * seed + i)
        return rng.uniform(0.3, 1.0, n_cells), rng.standard_normal(n_cells)

    gradient, product, at_point = value_and_grad(J), hvp(J), value_grad_hvp(J)
    row = {
        "gradient": median_time(lambda i: gradient(point(i)[0]), repeats),
        "hvp": median_time(lambda i: product(*point(100 + i)), repeats),
    }

    def all_three(i: int) -> None:
        x, v = point(200 + i)
        at_point(x)[2](v)

    row["all"] = median_time(all_three, repeats)
    x, v = point(300)
    before = solver.stats
    _, _, hessp = at_point(x)
    hessp(v)
    after = solver.stats
    row["factorizations"] = after["n_numeric"] - before["n_numeric"]
    row["solves"] = after["n_solves"] - before["n_solves"]
    row["more"] = median_time(lambda i: hessp(np.cos(i + np.arange(n_cells))), repeats)
    row["more_factorizations"] = solver.stats["n_numeric"] - after["n_numeric"]
    return row


CASES = {"hvp": case_hvp}


def report(results: dict[str, dict[str, Any]]) -> str:
    """The Markdown table: one row per size and objective."""
    rows = []
    for label, r in results.items():
        if "error" in r:
            rows.append([label, r["error"], *["-"] * 9])
            continue
        for name in OBJECTIVES:
            o = r[name]
            rows.append([
                label, name, seconds(o["gradient"]), seconds(o["hvp"]),
                ratio(o["hvp"], o["gradient"]), seconds(o["all"]),
                str(o["factorizations"]), str(o["solves"]), seconds(o["more"]),
                str(o["more_factorizations"]), f"{r['peak_mb']:.0f}",
            ])
    headers = ["size", "objective", "value + grad", "hvp", f"hvp / grad (≤ {TARGET})",
               "value + grad + hvp", "factorizations", "solves", "one more H v",
               "its factorizations", "peak MB"]
    return table(headers, rows)


def main(argv: Sequence[str] | None = None) -> int:
    args = size_arguments(__doc__, DEFAULT_SIZES, repeats=3).parse_args(argv)
    if args.case:
        serve_case(CASES, json.loads(args.case))
        return 0
    results, start = run_sizes(__file__, "hvp", "fesens Hessian-vector product benchmark", args)
    print(f"Cantilever (E = 1, nu = 0.3, clamped left), J(model.solve(scale=x³)), CHOLMOD; "
          f"medians of {args.repeats} calls, new random densities x in [0.3, 1] each. "
          "factorizations and solves: numeric factorizations and solves of value + gradient "
          "+ one H v at a new point (value_grad_hvp); one more H v: a further product with "
          "the kept trace.\n")
    print(report(results))
    print(f"\ntotal benchmark wall time: {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

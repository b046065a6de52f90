"""Eigen solves and eigenvalue sensitivities: the lowest 6 modes against a static solve.

The cantilever of ``_common.cantilever_model`` (quad4 plane stress; hex8 in 3D), CHOLMOD.
For each size, in one process per size (peak memory per case), with new random densities
``x`` in [0.3, 1] for every timed call (as in an optimization loop):

* **forward**: one static solve ``model.solve(scale=x³)`` (numeric factorization and
  substitution; the symbolic analysis is done in the warm-up);
* **modes(6)**: ``ModalAnalysis(model, 6).run(density=x, scale=x³)``, shift-invert Lanczos
  with CHOLMOD
  factorizing ``K + τ M`` (several substitutions per mode);
* **modes(6) + gradient**: ``value_and_grad`` of ``Σ_(i<6) λ_i`` w.r.t. ``x``, through
  both the mass (``ρ = x``) and the stiffness (``x³``): the eigen solve plus the per-cell
  contraction ``φᵀ (∂K − λ ∂M) φ`` (no extra solve). Random densities give simple
  eigenvalues; the sum of all six computed is symmetric in them anyway.

Times are medians of ``--repeats`` calls after a warm-up. The ratios to **forward** are the
numbers that matter: the cost of the eigenvalues and their gradient per static solve.

Usage::

    .venv/bin/python benchmarks/bench_modal.py --threads 1          # 400x200 and 48x24x24
    .venv/bin/python benchmarks/bench_modal.py --sizes 100x50 --repeats 2
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

DEFAULT_SIZES = ("400x200", "48x24x24")
N_MODES = 6


def case_modal(label: str, repeats: int) -> dict[str, Any]:
    """Times of one size (runs in a child process)."""
    from fesens.ad import value_and_grad
    from fesens.fem.analysis import ModalAnalysis

    model = cantilever_model(GridSize.parse(label))
    n_cells = model.mesh.n_cells

    def densities(i: int) -> np.ndarray:
        return np.random.default_rng(i).uniform(0.3, 1.0, n_cells)

    def modes(x):
        return ModalAnalysis(model, N_MODES, solver="cholmod").run(density=x, scale=x**3)

    eigenvalue_sum = value_and_grad(lambda x: np.sum(modes(x).values))
    result = {
        "cells": n_cells,
        "dofs": model.dofmap.n_dofs,
        "forward": median_time(
            lambda i: model.solve(scale=densities(i) ** 3, solver="cholmod"), repeats),
        "modes": median_time(lambda i: modes(densities(i)), repeats),
        "modes_gradient": median_time(lambda i: eigenvalue_sum(densities(i)), repeats),
    }
    result["lowest"] = [float(v) for v in modes(densities(0)).values]
    result["peak_mb"] = peak_rss_mb()
    return result


CASES = {"modal": case_modal}


def report(results: dict[str, dict[str, Any]]) -> str:
    """The Markdown table."""
    rows = []
    for label, r in results.items():
        if "error" in r:
            rows.append([label, "-", "-", r["error"], *["-"] * 6])
            continue
        rows.append([
            label, str(r["cells"]), str(r["dofs"]), seconds(r["forward"]), seconds(r["modes"]),
            seconds(r["modes_gradient"]), ratio(r["modes"], r["forward"]),
            ratio(r["modes_gradient"], r["forward"]), ratio(r["modes_gradient"], r["modes"]),
            f"{r['peak_mb']:.0f}",
        ])
    headers = ["size", "cells", "dofs", "forward", f"modes({N_MODES})",
               f"modes({N_MODES}) + dΣλ/dx", "modes / forward", "modes + grad / forward",
               "modes + grad / modes", "peak MB"]
    return table(headers, rows)


def main(argv: Sequence[str] | None = None) -> int:
    args = size_arguments(__doc__, DEFAULT_SIZES, repeats=3).parse_args(argv)
    if args.case:
        serve_case(CASES, json.loads(args.case))
        return 0
    results, start = run_sizes(__file__, "modal", "fesens modal benchmark", args)
    print(f"Cantilever (E = 1, nu = 0.3, clamped left), CHOLMOD; medians of {args.repeats} "
          "calls with new random densities x in [0.3, 1] each; forward = "
          f"model.solve(scale=x³); modes({N_MODES}) = ModalAnalysis(model, {N_MODES})"
          f".run(density=x, "
          f"scale=x³) (shift-invert Lanczos); + dΣλ/dx = value_and_grad of the sum of the "
          f"lowest {N_MODES} eigenvalues w.r.t. x.\n")
    print(report(results))
    for label, r in results.items():
        if "lowest" in r:
            print(f"\n{label}: lowest eigenvalues at the warm-up densities "
                  + ", ".join(f"{v:.6g}" for v in r["lowest"]))
    print(f"\ntotal benchmark wall time: {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

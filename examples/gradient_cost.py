"""What a gradient costs: forward evaluation vs ``value_and_grad`` as the mesh grows.

The objective is the von Mises p-norm (``p = 8``) of a SIMP cantilever (``2 x 1``, quad4,
clamped on the left, traction down on the right) as a function of the densities of all
cells, ``J(x) = stress_pnorm(solve(scale = 10⁻³ + x³))``. Unlike compliance it is not
self-adjoint, so its gradient needs a real adjoint solve; that solve reuses the forward
factorization, and the per-cell contraction is one batched einsum. The gradient with
respect to *all* ``n_cells`` densities should therefore cost a small constant times the
forward evaluation at every size, where finite differences would cost ``n_cells`` forward
evaluations.

Every timed call gets a slightly different design, so each one assembles and factorizes
afresh (fesens keeps a factorization while the matrix values do not change). The symbolic
analysis is done once per mesh, before timing. Forward and gradient calls alternate (3 to
30 pairs, by size), and the table shows the pair of adjacent calls with the least total
time: other work on the machine only ever adds time, and both times of a pair come from
the same moment. BLAS and OpenMP run on one thread (``threadpoolctl``, from the ``study``
extra): on a shared machine a second thread often waits for a busy core, which makes
multi-threaded times erratic.

Run: ``python examples/gradient_cost.py [--fast] [--out DIR]`` (normal: grids from about
1 000 to 160 000 dofs; ``--fast`` or ``FESENS_EXAMPLES_FAST=1``: up to about 10 000).
Writes ``gradient_cost.png`` (times and ratio) to ``results/examples/gradient_cost``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from fesens.ad import taylor_test, value_and_grad
from fesens.mesh import rectangle
from fesens.objectives import Differentiable, stress_pnorm
from fesens.physics import Elasticity
from fesens.plotting import new_figure, save_figure

GRIDS = {"normal": (32, 64, 128, 256, 400), "fast": (16, 32, 64, 96)}  # nx; ny = nx / 2


def objective(nx: int):
    """``(J, n_dofs, n_cells)`` for the cantilever on an ``nx`` x ``nx/2`` grid."""
    mesh = rectangle(nx, nx // 2, 2.0, 1.0, cell_type="quad4")
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress").fix("left")
    model.traction("right", (0.0, -1.0))
    problem = Differentiable(model)

    def J(x):
        return stress_pnorm(problem.solve(scale=1e-3 + x**3), p=8.0)

    return J, model.dofmap.n_dofs, mesh.n_cells


def measure(nx: int, rng: np.random.Generator, budget: float) -> dict:
    """Times of ``J(x)`` and ``value_and_grad(J)(x)``: the quietest of N adjacent pairs."""
    J, n_dofs, n_cells = objective(nx)
    x = rng.uniform(0.3, 1.0, n_cells)
    gradient = value_and_grad(J)
    tic = time.perf_counter()
    gradient(x)  # symbolic analysis, caches
    repeats = int(np.clip(budget / (time.perf_counter() - tic), 3, 30))
    calls = {"forward": J, "gradient": gradient}
    times = {name: [] for name in calls}
    designs = iter(x * (1 + 1e-6 * k) for k in range(1, 2 * repeats + 1))
    for _ in range(repeats):
        for name, fn in calls.items():  # a new design every call: assemble, factorize
            design = next(designs)
            tic = time.perf_counter()
            fn(design)
            times[name].append(time.perf_counter() - tic)
    # The quietest pair of adjacent calls: both times come from the same moment.
    forward, backward = min(zip(times["forward"], times["gradient"], strict=True), key=sum)
    return {"nx": nx, "dofs": n_dofs, "cells": n_cells, "repeats": repeats,
            "forward": forward, "gradient": backward, "ratio": backward / forward}


def run(fast: bool = False, out: Path = Path("results/examples/gradient_cost")) -> dict:
    """Measure every grid, print the table, plot; returns the rows and the Taylor rate."""
    start = time.perf_counter()
    rng = np.random.default_rng(0)
    grids = GRIDS["fast" if fast else "normal"]
    J, _, n_cells = objective(grids[0])
    print(f"gradient check on the smallest grid ({n_cells} densities): Taylor rate ", end="")
    rate = taylor_test(J, rng.uniform(0.3, 1.0, n_cells), verbose=False).rate
    print(f"{rate:.3f}")
    print(f"\n{'grid':>9s} {'dofs':>8s} {'forward s':>10s} {'gradient s':>11s} {'ratio':>6s} "
          f"{'FD gradient s (n_cells x forward)':>34s}")
    rows = []
    for nx in grids:
        with threadpool_limits(limits=1):
            row = measure(nx, rng, budget=2.0 if fast else 4.0)
        rows.append(row)
        print(f"{nx:>4d}x{nx // 2:<4d} {row['dofs']:8d} {row['forward']:10.4f} "
              f"{row['gradient']:11.4f} {row['ratio']:6.2f} "
              f"{row['cells'] * row['forward']:34.1f}")
    png = plot_costs(rows, Path(out) / "gradient_cost.png")
    seconds = time.perf_counter() - start
    print(f"wrote {png}; {seconds:.1f} s")
    return {"rows": rows, "taylor_rate": rate, "png": png, "seconds": seconds}


def plot_costs(rows: list[dict], path: Path) -> Path:
    dofs = np.array([r["dofs"] for r in rows])
    fig = new_figure(figsize=(11, 4.2))
    times, ratio = fig.subplots(1, 2)
    times.loglog(dofs, [r["forward"] for r in rows], "o-", label="forward J(x)")
    times.loglog(dofs, [r["gradient"] for r in rows], "s-", label="value_and_grad(J)(x)")
    times.set_xlabel("dofs")
    times.set_ylabel("wall time (s)")
    times.set_title("stress p-norm of a SIMP cantilever")
    times.legend()
    ratio.semilogx(dofs, [r["ratio"] for r in rows], "o-", color="tab:red")
    ratio.axhline(1.0, color="gray", linestyle="--", linewidth=1)
    ratio.set_ylim(0, max(3.0, 1.2 * max(r["ratio"] for r in rows)))
    ratio.set_xlabel("dofs")
    ratio.set_ylabel("gradient time / forward time")
    ratio.set_title("gradient w.r.t. every cell density")
    for ax in (times, ratio):
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="smaller grids (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--out", type=Path, default=Path("results/examples/gradient_cost"))
    args = parser.parse_args(argv)
    return run(args.fast, args.out)


if __name__ == "__main__":
    main()

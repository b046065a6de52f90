"""What the JAX and PyTorch adapters add to a fesens gradient (``fesens.interop``).

One evaluation is the value and gradient of the compliance of the half MBB beam (top88's load
case, unit quad4 cells, SIMP p = 3, a density filter of radius 3 cells, CHOLMOD) in the
design variables, written as a ``DesignProblem`` function ``x ↦ C(ρ(x))``. It runs

* directly: ``fesens.ad.value_and_grad``;
* through ``as_jax``: ``jax.value_and_grad``, eagerly and under ``jax.jit``;
* through ``as_torch``: the forward, then ``.backward()``.

The paths run in turn within each round (so they see the same machine load; the order
rotates from round to round), after one warm-up round; the table gives the median over the
rounds and its ratio to the direct call (target: at most 1.05) and the time an
adapter adds, as the median over the rounds of its time minus the direct call's in the
same round (less sensitive to a load that drifts between rounds). Every path's gradient is
checked against the direct one. BLAS runs single-threaded unless ``--blas-threads`` says
otherwise.

    python benchmarks/bench_interop.py [--size 400x200] [--rounds 24]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
from _common import GridSize, load_average, load_line, machine_lines, ratio, seconds, table

TARGET = 1.05
VOLUME_FRACTION = 0.5


def mbb_function(size: GridSize, solver: str) -> tuple[Callable, np.ndarray]:
    """``x ↦ C(ρ(x))`` of the MBB ``DesignProblem`` and its uniform starting design."""
    from fesens.mesh import rectangle
    from fesens.objectives import compliance
    from fesens.opt import SIMP, DensityFilter, DesignProblem
    from fesens.physics import Elasticity

    nelx, nely = size.cells
    model = Elasticity(rectangle(nelx, nely, float(nelx), float(nely)), E=1.0, nu=0.3,
                       plane="stress")
    model.fix("left", components=0)
    model.fix(lambda p: np.isclose(p[:, 0], nelx) & np.isclose(p[:, 1], 0.0), components=1)
    model.point_load((0.0, float(nely)), (0.0, -1.0), name="F")
    problem = DesignProblem(model, lambda state, rho: compliance(state),
                            volume_fraction=VOLUME_FRACTION, interpolation=SIMP(3.0, 1e-9),
                            filter=DensityFilter(model.mesh, 3.0), solver=solver)
    return (lambda x: compliance(problem.solve(problem.density(x)))), problem.initial_design()


def paths(fun: Callable) -> dict[str, Callable[[np.ndarray], tuple[float, np.ndarray]]]:
    """Each way of computing ``(C, dC/dx)``; the adapters' only when their library imports."""
    from fesens.ad import value_and_grad

    found = {"fesens value_and_grad": lambda x: value_and_grad(fun)(x)}
    try:
        import jax
    except ImportError:
        print("JAX is not installed: its rows are left out (pip install fesens[jax])")
    else:
        from fesens.interop.jax import as_jax

        jax.config.update("jax_enable_x64", True)
        eager = jax.value_and_grad(as_jax(fun))
        jitted = jax.jit(jax.value_and_grad(as_jax(fun)))
        found["as_jax, jax.value_and_grad"] = lambda x: _numpy(eager(x))
        found["as_jax, jax.jit(jax.value_and_grad)"] = lambda x: _numpy(jitted(x))
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: its row is left out (pip install fesens[torch])")
    else:
        from fesens.interop.torch import as_torch

        adapted = as_torch(fun)

        def through_torch(x):
            xt = torch.tensor(x, requires_grad=True)
            value = adapted(xt)
            value.backward()
            return float(value.detach()), xt.grad.numpy()

        found["as_torch, .backward()"] = through_torch
    return found


def _numpy(value_and_gradient) -> tuple[float, np.ndarray]:
    value, gradient = value_and_gradient
    return float(value), np.asarray(gradient)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=GridSize.parse, default=GridSize.parse("400x200"))
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--solver", default="cholmod")
    parser.add_argument("--blas-threads", type=int, default=1)
    args = parser.parse_args()
    from threadpoolctl import threadpool_limits

    loads = [load_average()]
    with threadpool_limits(args.blas_threads):
        fun, x = mbb_function(args.size, args.solver)
        ways = paths(fun)
        reference = None
        times: dict[str, list[float]] = {name: [] for name in ways}
        for round_ in range(args.rounds + 1):  # round 0: warm-up (jit compile, analysis)
            order = list(ways.items())
            for name, way in order[round_ % len(order):] + order[:round_ % len(order)]:
                start = time.perf_counter()
                value, gradient = way(x)
                elapsed = time.perf_counter() - start
                if reference is None:
                    reference = (value, gradient)
                error = np.max(np.abs(gradient - reference[1])) / np.max(np.abs(reference[1]))
                if error > 1e-10 or abs(value - reference[0]) > 1e-10 * abs(reference[0]):
                    raise SystemExit(f"{name}: gradient differs from the direct one ({error:.1e})")
                if round_:
                    times[name].append(elapsed)
    loads.append(load_average())
    direct = statistics.median(times["fesens value_and_grad"])
    rows = []
    for name, samples in times.items():
        median = statistics.median(samples)
        added = statistics.median(t - d for t, d in zip(
            samples, times["fesens value_and_grad"], strict=True))
        verdict = "" if name.startswith("fesens") else (
            "ok" if median / direct <= TARGET else f"above {TARGET}")
        rows.append([name, seconds(median), seconds(min(samples)), ratio(median, direct),
                     f"{added * 1e3:+.1f} ms", verdict])
    print("\n".join(machine_lines(["numpy", "scipy", "scikit-sparse", "jax", "torch"])))
    print(load_line(loads))
    print(f"MBB {args.size.label} quad4 ({args.size.n_cells} cells), solver {args.solver}, "
          f"value and gradient of the compliance; median of {args.rounds} rounds after a "
          "warm-up")
    print(table(["path", "median", "min", "ratio", "added per round", f"target <= {TARGET}"],
                rows))


if __name__ == "__main__":
    main()

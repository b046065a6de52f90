"""A heat sink for a pulsed chip: the peak temperature over time, minimized.

The ``heatsink_pulse`` preset: a unit square plate (30 x 30 cells) whose chip, at the middle
of its right edge, dissipates a heat pulse (source 10, ramped up in 0.02, held to 0.2, off at
0.22), cooled only by a heat sink (T = 0) on the middle tenth of its left edge. 40 % of a
good conductor (conductivity 1, heat capacity 1; void conductivity 1e-3, heat capacity
linear in the density) is placed to minimize a KS maximum over the time levels of the
chip's temperature (25 BDF2 steps to t = 0.5; the gradient is the discrete adjoint of the
whole run, :class:`fesens.opt.time_design.TransientDesignProblem`). The run goes through the config
layer, as ``fesens optimize --preset heatsink_pulse``; the example then runs the initial
(uniform) and the optimized designs again and prints the chip's peak temperature and when
it occurs.

Run: ``python examples/pulsed_heatsink.py [--fast] [--out DIR]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: at most 15 iterations). Writes ``design.png`` and
``chip_temperature.png`` (the chip's temperature against time, both designs) to
``results/examples/pulsed_heatsink``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from fesens.config import build_problem, load_preset
from fesens.plotting import plot_density
from fesens.plotting.histories import plot_histories
from fesens.workflow.optimize import run_optimization

FAST_ITER = 15


def run(fast: bool = False, out: Path = Path("results/examples/pulsed_heatsink")) -> dict:
    """Optimize, run both designs again, draw them; returns the key numbers."""
    start = time.perf_counter()
    config = load_preset("heatsink_pulse")
    if fast:
        config.data["stop"]["max_iter"] = FAST_ITER
    result = run_optimization(config, echo=None)
    problem = build_problem(config)
    times = np.asarray(problem.run.times)
    initial = problem.density(problem.initial_design())
    histories = {name: np.asarray(problem.solve(rho).values)
                 for name, rho in (("initial", initial), ("optimized", result.density))}
    numbers = {"times": times, "histories": histories, "density": result.density,
               "initial_density": np.asarray(initial),
               "objective": float(result.summary["objective"]["value"]),
               "volume": float(result.evaluation.volume_fraction),
               "iterations": len(result.history), "converged": result.converged}
    for name, values in histories.items():
        peak = int(np.argmax(values))
        numbers[f"peak_{name}"], numbers[f"peak_time_{name}"] = float(values[peak]), times[peak]
        print(f"{name} design: chip temperature peaks at {values[peak]:.4f} at t = "
              f"{times[peak]:.2f}; at the end (t = {times[-1]:g}) {values[-1]:.4f}")
    print(f"{numbers['iterations']} iterations "
          f"({'converged' if numbers['converged'] else 'stopped'}): KS peak "
          f"{numbers['objective']:.5f}, volume {numbers['volume']:.4f}; the peak drops "
          f"{numbers['peak_initial'] / numbers['peak_optimized']:.2f}x")
    out = Path(out)
    numbers["pictures"] = [
        plot_density(problem.mesh, result.density, out / "design.png",
                     title=f"pulsed heat sink: chip peak {numbers['peak_optimized']:.3f} "
                           f"(uniform {numbers['peak_initial']:.3f})"),
        plot_histories(times, {f"{name} design": values for name, values in histories.items()},
                       out / "chip_temperature.png", xlabel="time", ylabel="chip temperature",
                       title="heat pulse from t = 0 to 0.22"),
    ]
    numbers["seconds"] = time.perf_counter() - start
    print(f"{numbers['seconds']:.1f} s; wrote", ", ".join(map(str, numbers["pictures"])))
    return numbers


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="fewer iterations (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--out", type=Path, default=Path("results/examples/pulsed_heatsink"))
    args = parser.parse_args(argv)
    return run(args.fast, args.out)


if __name__ == "__main__":
    main()

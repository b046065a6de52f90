"""Dynamic compliance: a cantilever designed for a harmonic load, and its frequency response.

The ``dynamic_compliance`` preset (Olhoff & Du, Struct. Multidisc. Optim. 54, 2016,
1113-1141): a 2 x 1 cantilever (40 x 20 cells, E = 1, ν = 0.3, density 1) clamped on its
left edge and driven by a harmonic force at the middle of its right edge. MMA minimizes the
dynamic compliance ``|f · u|`` at the driving frequency 0.01 with half the material (SIMP 3
stiffness, Du & Olhoff's mass interpolation; no damping), below the first eigenfrequency of
the uniform start; the gradient is the adjoint of the complex frequency response
(:class:`fesens.opt.time_design.HarmonicDesignProblem`). The run goes through the config
layer, as ``fesens optimize --preset dynamic_compliance``. The example then sweeps the
driving frequency over the initial (uniform) and the optimized designs and prints each
design's dynamic compliance at 0.01 and its first eigenfrequency, where ``|f · u|`` has its
first resonance.

Run: ``python examples/dynamic_compliance.py [--fast] [--out DIR]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: at most 15 iterations, a coarser sweep). Writes ``design.png``
and ``response.png`` (``|f · u|`` against the driving frequency, both designs) to
``results/examples/dynamic_compliance``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from fesens.config import build_problem, load_preset
from fesens.fem.analysis import ModalAnalysis
from fesens.plotting import plot_density
from fesens.plotting.histories import plot_histories
from fesens.workflow.optimize import run_optimization

#: The driving frequencies of the sweep (Hz): up to past the solid beam's first resonance.
SWEEP = (0.0005, 0.05)
FAST_ITER = 15


def response(problem, rho: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """``|f · u|`` of the design ``ρ`` at each driving frequency ``(n,)`` (Hz)."""
    problem.omegas = 2 * np.pi * np.asarray(frequencies, dtype=float)
    return np.asarray(problem.solve(rho).values)


def first_frequency(problem, rho: np.ndarray) -> float:
    """The design's lowest eigenfrequency (Hz), with the problem's stiffness and mass."""
    interpolation = problem.interpolation
    density = problem.material_density * interpolation.mass(rho)
    modes = ModalAnalysis(problem.model, 1).run(density=density, scale=interpolation(rho))
    return float(modes.frequencies[0])


def run(fast: bool = False, out: Path = Path("results/examples/dynamic_compliance")) -> dict:
    """Optimize, sweep both designs, draw them; returns the key numbers."""
    start = time.perf_counter()
    config = load_preset("dynamic_compliance")
    if fast:
        config.data["stop"]["max_iter"] = FAST_ITER
    result = run_optimization(config, echo=None)
    driving = float(config.data["harmonic"]["frequencies"][0])
    problem = build_problem(config)  # the design problem, its driving frequencies swept
    frequencies = np.linspace(*SWEEP, 60 if fast else 400)
    designs = {"initial": problem.density(problem.initial_design()), "optimized": result.density}
    numbers = {"frequencies": frequencies, "driving": driving,
               "objective": float(result.summary["objective"]["value"]),
               "volume": float(result.evaluation.volume_fraction),
               "iterations": len(result.history), "converged": result.converged,
               "densities": designs, "curves": {}}
    for name, rho in designs.items():
        numbers["curves"][name] = response(problem, rho, frequencies)
        numbers[f"at_driving_{name}"] = float(response(problem, rho, [driving])[0])
        numbers[f"f1_{name}"] = first_frequency(problem, rho)
        print(f"{name} design: |f · u| {numbers[f'at_driving_{name}']:.4f} at {driving:g} Hz; "
              f"first eigenfrequency {numbers[f'f1_{name}']:.5f} Hz")
    print(f"{numbers['iterations']} iterations "
          f"({'converged' if numbers['converged'] else 'stopped'}): dynamic compliance "
          f"{numbers['objective']:.3f}, volume {numbers['volume']:.4f}; "
          f"{numbers['at_driving_initial'] / numbers['at_driving_optimized']:.2f}x lower")
    out = Path(out)
    numbers["pictures"] = [
        plot_density(problem.mesh, result.density, out / "design.png",
                     title=f"dynamic compliance {numbers['at_driving_optimized']:.2f} at "
                           f"{driving:g} Hz (uniform {numbers['at_driving_initial']:.1f})"),
        plot_histories(frequencies, {f"{name} design": curve
                                     for name, curve in numbers["curves"].items()},
                       out / "response.png", xlabel="driving frequency (Hz)",
                       ylabel="|f · u|", log_y=True,
                       title=f"frequency response (designed for {driving:g} Hz)"),
    ]
    numbers["seconds"] = time.perf_counter() - start
    print(f"{numbers['seconds']:.1f} s; wrote", ", ".join(map(str, numbers["pictures"])))
    return numbers


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="fewer iterations, coarser sweep (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--out", type=Path, default=Path("results/examples/dynamic_compliance"))
    args = parser.parse_args(argv)
    return run(args.fast, args.out)


if __name__ == "__main__":
    main()

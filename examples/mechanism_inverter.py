"""Compliant mechanisms: the force inverter and the gripper, designed for their output port.

The ``inverter`` and ``gripper`` presets (Sigmund 1997; Bendsøe & Sigmund 2003, §2.6) on the
half domain about their symmetry line (40 x 20 unit quads, 30 % material, SIMP 3 with void
stiffness 1e-3, density filter of radius 1.5, MMA): a unit force pushes the left end of the
symmetry line to the right against the actuator's spring ``k_in = 0.1``; the workpiece's
spring ``k_out = 0.1`` holds the output port. The objective is the output displacement,
minimized: the inverter's output (the right end of the symmetry line) moves left, against
the input force, and the gripper's jaw tip moves down, towards the symmetry line. The run
goes through the config layer (:func:`fesens.config.load_preset`,
:func:`fesens.workflow.optimize.run_optimization`), as ``fesens optimize --preset inverter``.

The gray hinges of an optimized mechanism carry part of its motion, so the design is then
thresholded at its volume fraction (the densest 30 % of the cells solid, the others void
1e-3) and solved again: the output displacement of that black-and-white mechanism is
printed next to the optimizer's.

Run: ``python examples/mechanism_inverter.py [--fast] [--out DIR]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: at most 40 iterations). Prints the input
and output displacements of each mechanism; writes ``inverter.png`` and ``gripper.png``
(each design on its deformed shape) to ``results/examples/mechanism_inverter``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from fesens.config import load_preset
from fesens.plotting import plot_cell_field
from fesens.workflow.optimize import run_optimization

MECHANISMS = ("inverter", "gripper")
#: The input port, where the actuator's force acts (both presets).
INPUT = (0.0, 0.0)
#: Stiffness left in a void cell of the thresholded design (the presets' ``minimum``).
VOID = 1e-3
FAST_ITER = 40


def nearest_node(points: np.ndarray, at) -> int:
    """The node closest to the coordinates ``at`` (``(2,)``)."""
    return int(np.argmin(np.linalg.norm(points - np.asarray(at, dtype=float), axis=1)))


def thresholded(density: np.ndarray, volume_fraction: float) -> np.ndarray:
    """``(n_cells,)`` 1 on the densest ``volume_fraction`` of the cells, 0 elsewhere."""
    solid = np.zeros_like(density)
    solid[np.argsort(density)[::-1][: int(round(volume_fraction * density.size))]] = 1.0
    return solid


def design(name: str, fast: bool) -> dict:
    """Optimize one preset; its output and input displacements, and the thresholded
    design's."""
    config = load_preset(name)
    if fast:
        config.data["stop"]["max_iter"] = FAST_ITER
    run = run_optimization(config, echo=None)
    state = run.evaluation.state
    model, points = state.model, state.model.mesh.points
    target = config.data["objective"]
    axis = int(target["component"])  # resolved to an index by the config
    output, source = nearest_node(points, target["point"]), nearest_node(points, INPUT)
    fraction = config.data["constraints"]["volume_fraction"]
    black_white = thresholded(run.density, fraction)
    u_thresholded = model.solve(scale=VOID + (1.0 - VOID) * black_white).displacement
    u = np.asarray(state.displacement)
    return {"name": name, "model": model, "density": run.density, "displacement": u,
            "iterations": len(run.history), "converged": run.converged,
            "volume": float(run.evaluation.volume_fraction),
            "output_node": output, "axis": axis,
            "u_out": float(u[output, axis]), "u_in": float(u[source, 0]),
            "u_out_thresholded": float(u_thresholded[output, axis]),
            "thresholded": black_white}


def run(fast: bool = False, out: Path = Path("results/examples/mechanism_inverter")) -> dict:
    """Design both mechanisms, write their pictures; returns the key numbers by name."""
    start = time.perf_counter()
    out, numbers = Path(out), {}
    for name in MECHANISMS:
        result = design(name, fast)
        mesh = result["model"].mesh
        port = "output port u_x" if result["axis"] == 0 else "jaw tip u_y"
        print(f"{name}: {mesh.n_cells} quad4 cells, {result['iterations']} iterations "
              f"({'converged' if result['converged'] else 'stopped'}), volume "
              f"{result['volume']:.4f}; input u_x {result['u_in']:.5f}, {port} "
              f"{result['u_out']:.5f}; thresholded design {result['u_out_thresholded']:.4f}")
        result["picture"] = plot_cell_field(
            mesh, result["density"], out / f"{name}.png", displacement=result["displacement"],
            cmap="gray_r", label="density",
            title=f"{name}: {port} {result['u_out']:.3f} for input u_x {result['u_in']:.3f}")
        numbers[name] = result
    numbers["pictures"] = [numbers[name]["picture"] for name in MECHANISMS]
    numbers["seconds"] = time.perf_counter() - start
    print(f"{numbers['seconds']:.1f} s; wrote", ", ".join(map(str, numbers["pictures"])))
    return numbers


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="fewer iterations (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--out", type=Path, default=Path("results/examples/mechanism_inverter"))
    args = parser.parse_args(argv)
    return run(args.fast, args.out)


if __name__ == "__main__":
    main()

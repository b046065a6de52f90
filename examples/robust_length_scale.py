"""Robust against plain: the MBB beam's minimum feature sizes, measured and prescribed.

The ``robust`` preset (top88's MBB half-beam, 60 x 20 quads, volume 0.5, SIMP 3, density
filter of radius 3, Heaviside sharpness doubled every 40 iterations from 1 to 64, MMA) is run
twice: with the robust formulation (Sigmund 2009; Wang, Lazarov & Sigmund 2011;
:class:`fesens.opt.RobustProblem`: the worst compliance of the eroded, blueprint and dilated
designs, thresholds 0.65, 0.5 and 0.35), and plain, with the one Heaviside projection of
threshold 0.5 (the preset without its ``robust``, ``delta_eta`` and ``volume_update_every``
keys). The radius and thresholds prescribe a minimum size of both phases by Qian & Sigmund's
(2013) analysis (:func:`fesens.opt.length_scale.prescribed_sizes`); the example measures the
smallest solid and void features of each final blueprint by disk openings
(:func:`fesens.opt.length_scale.minimum_sizes`) and prints them against it, with the
compliance of each design (and, for the robust one, of its eroded and dilated designs).

Run: ``python examples/robust_length_scale.py [--fast] [--out DIR]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: the sharpness doubled every 10 iterations, at most 70 of them).
Writes ``robust.png`` (both blueprints) to ``results/examples/robust_length_scale``.
"""

from __future__ import annotations

import argparse
import os
import time
import tomllib
from pathlib import Path

from matplotlib.collections import PolyCollection

from fesens.config import preset_text, resolve
from fesens.opt.length_scale import minimum_sizes, prescribed_sizes
from fesens.plotting import new_figure, save_figure
from fesens.workflow.optimize import run_optimization

#: The keys that make the preset's projection robust.
ROBUST_KEYS = ("robust", "delta_eta", "volume_update_every")
#: ``--fast``: β doubled every 10 iterations (final 64 at iteration 61), held 9 more.
FAST_EVERY, FAST_FINAL_ITERATIONS, FAST_ITER = 10, 9, 70


def design(robust: bool, fast: bool):
    """The ``robust`` preset, with or without the robust formulation, optimized; and its
    config's data."""
    raw = tomllib.loads(preset_text("robust"))
    if not robust:
        for key in ROBUST_KEYS:
            del raw["projection"][key]
    if fast:
        raw["projection"]["beta"]["every"] = FAST_EVERY
        raw["projection"]["beta"]["final_iterations"] = FAST_FINAL_ITERATIONS
        raw["stop"]["max_iter"] = FAST_ITER
    config = resolve(raw, base_dir=Path("."), source="preset 'robust'", default_name="robust")
    return run_optimization(config, echo=None), config.data


def run(fast: bool = False, out: Path = Path("results/examples/robust_length_scale")) -> dict:
    """Design the beam both ways, measure both blueprints; returns the key numbers."""
    start = time.perf_counter()
    numbers, panels = {}, []
    for key, robust in (("plain", False), ("robust", True)):
        result, data = design(robust, fast)
        mesh = result.evaluation.state.model.mesh
        sizes = minimum_sizes(mesh, result.density)
        extras = result.evaluation.extras
        entry = {"density": result.density, "solid": sizes.solid, "void": sizes.void,
                 "compliance": float(result.evaluation.state.compliance()),
                 "volume": float(result.evaluation.volume_fraction),
                 "iterations": len(result.history), "converged": result.converged}
        words = ""
        if robust:
            entry.update(eroded=extras["objective_eroded"],
                         dilated=extras["objective_dilated"])
            projection = data["projection"]
            eta, delta = projection["eta"], projection["delta_eta"]
            prescribed = prescribed_sizes(data["filter"]["radius"],
                                          (eta + delta, eta, eta - delta))
            numbers["prescribed"] = {"solid": prescribed.solid, "void": prescribed.void}
            words = f" (eroded {entry['eroded']:.2f}, dilated {entry['dilated']:.2f})"
        print(f"{key}: blueprint compliance {entry['compliance']:.2f}{words}, volume "
              f"{entry['volume']:.4f}, {entry['iterations']} iterations "
              f"({'converged' if entry['converged'] else 'stopped'}); smallest solid "
              f"{entry['solid']:g}, void {entry['void']:g}")
        numbers[key] = entry
        panels.append((key, mesh, entry))
    prescribed = numbers["prescribed"]
    print(f"prescribed by the radius and thresholds: solid {prescribed['solid']:.2f}, void "
          f"{prescribed['void']:.2f}")
    numbers["picture"] = draw(panels, Path(out) / "robust.png")
    numbers["seconds"] = time.perf_counter() - start
    print(f"{numbers['seconds']:.1f} s; wrote {numbers['picture']}")
    return numbers


def draw(panels: list, path: Path) -> Path:
    """Both blueprints one above the other, with their measured sizes."""
    fig = new_figure(figsize=(7.0, 5.4), layout="constrained")
    for ax, (key, mesh, entry) in zip(fig.subplots(2, 1), panels, strict=True):
        corners = mesh.points[mesh.cells[:, :4]]
        ax.add_collection(PolyCollection(corners, array=entry["density"], cmap="gray_r",
                                         clim=(0.0, 1.0), edgecolors="face"))
        ax.autoscale_view()
        ax.set_aspect("equal")
        ax.set_axis_off()
        ax.set_title(f"{key}: C = {entry['compliance']:.1f}, smallest solid "
                     f"{entry['solid']:g}, void {entry['void']:g}", fontsize="medium")
    return save_figure(fig, path)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="faster continuation, fewer iterations (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--out", type=Path, default=Path("results/examples/robust_length_scale"))
    args = parser.parse_args(argv)
    return run(args.fast, args.out)


if __name__ == "__main__":
    main()

"""The MBB beam designed for printing upwards: with and without Langelaar's overhang filter.

The ``overhang`` preset (top88's MBB half-beam, 60 x 20 quads, volume 0.5, SIMP 3, density
filter of radius 2.4, Heaviside projection sharpened to 16, MMA) printed along ``+y`` from a
build plate at ``y = 0``: Langelaar's filter (Struct. Multidisc. Optim. 55, 2017, 871-883;
:class:`fesens.opt.OverhangFilter`) lets a cell be only as dense as the cells below it that
support it, so no overhang is flatter than 45 degrees from the build plate. The same problem
is run without the ``[manufacturing]`` section for comparison. A solid cell (density above
0.5) above the base layer is *unsupported* when none of the three cells under it (below,
below-left, below-right) is solid: the example prints the fraction of the solid cells that
are, for both designs, with their compliances.

Run: ``python examples/overhang_printing.py [--fast] [--out DIR]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: at most 40 iterations each). Writes ``overhang.png`` (both
designs, unsupported cells in red) to ``results/examples/overhang_printing``.
"""

from __future__ import annotations

import argparse
import os
import time
import tomllib
from pathlib import Path

import numpy as np
from matplotlib.colors import ListedColormap

from fesens.config import preset_text, resolve
from fesens.opt import OverhangFilter
from fesens.opt.cell_lattice import cell_lattice
from fesens.plotting import new_figure, save_figure
from fesens.workflow.optimize import run_optimization

BUILD_DIRECTION = "+y"
FAST_ITER = 40


def design(with_filter: bool, fast: bool):
    """The ``overhang`` preset, with or without its overhang filter, optimized."""
    raw = tomllib.loads(preset_text("overhang"))
    if not with_filter:
        del raw["manufacturing"]
    if fast:
        raw["stop"]["max_iter"] = FAST_ITER
    config = resolve(raw, base_dir=Path("."), source="preset 'overhang'", default_name="overhang")
    return run_optimization(config, echo=None)


def run(fast: bool = False, out: Path = Path("results/examples/overhang_printing")) -> dict:
    """Design the beam twice, count the unsupported cells, draw both; returns the numbers."""
    start = time.perf_counter()
    numbers, panels = {}, []
    for key, with_filter in (("plain", False), ("overhang", True)):
        result = design(with_filter, fast)
        mesh = result.evaluation.state.model.mesh
        rule = OverhangFilter(mesh, BUILD_DIRECTION)
        unsupported = rule.unsupported(result.density)
        solid = int(np.count_nonzero(result.density > 0.5))
        numbers[key] = {"density": result.density, "unsupported": unsupported,
                        "fraction": float(unsupported.sum() / solid),
                        "compliance": float(result.summary["objective"]["value"]),
                        "volume": float(result.evaluation.volume_fraction),
                        "iterations": len(result.history), "converged": result.converged}
        entry = numbers[key]
        print(f"{'with' if with_filter else 'without'} the overhang filter: compliance "
              f"{entry['compliance']:.2f}, volume {entry['volume']:.4f}, "
              f"{entry['iterations']} iterations "
              f"({'converged' if entry['converged'] else 'stopped'}); "
              f"{int(unsupported.sum())} of {solid} solid cells unsupported "
              f"({100 * entry['fraction']:.1f} %)")
        panels.append((key, mesh, entry))
    numbers["picture"] = draw(panels, Path(out) / "overhang.png")
    numbers["seconds"] = time.perf_counter() - start
    print(f"{numbers['seconds']:.1f} s; wrote {numbers['picture']}")
    return numbers


def draw(panels: list, path: Path) -> Path:
    """Both designs one above the other, build plate at the bottom, unsupported cells red."""
    fig = new_figure(figsize=(7.0, 5.6), layout="constrained")
    for ax, (key, mesh, entry) in zip(fig.subplots(2, 1), panels, strict=True):
        lattice = cell_lattice(mesh, "the picture")
        low, high = mesh.points.min(axis=0), mesh.points.max(axis=0)
        extent = (low[0], high[0], low[1], high[1])
        ax.imshow(lattice.to_grid(entry["density"]).T, origin="lower", cmap="gray_r",
                  vmin=0.0, vmax=1.0, extent=extent)
        red = np.ma.masked_equal(lattice.to_grid(entry["unsupported"].astype(float)).T, 0.0)
        ax.imshow(red, origin="lower", cmap=ListedColormap(["tab:red"]), extent=extent)
        ax.axhline(low[1], color="tab:blue", linewidth=3)
        ax.set_title(f"{'overhang filter, printed +y' if key == 'overhang' else 'no filter'}: "
                     f"C = {entry['compliance']:.1f}, {100 * entry['fraction']:.1f} % of solid "
                     "unsupported", fontsize="medium")
        ax.set_xticks([])
        ax.set_yticks([])
    return save_figure(fig, path)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="fewer iterations (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--out", type=Path, default=Path("results/examples/overhang_printing"))
    args = parser.parse_args(argv)
    return run(args.fast, args.out)


if __name__ == "__main__":
    main()

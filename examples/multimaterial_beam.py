"""The MBB beam made of two solid phases and void, against single-material beams of its mass.

The ``multimaterial`` preset: top88's MBB half-beam (60 x 20 unit quads, nu = 0.3, density
filter of radius 2.4, MMA) with the ordered SIMP interpolation of Zuo & Saitou (Struct.
Multidisc. Optim. 55, 2017, 477-491): one variable per cell, the density relative to the
heavy phase's; a light phase of density 0.5 and modulus 0.6 (stiffer for its mass, 1.2
against 1.0) and a heavy phase of density 1 and modulus 1; mass fraction 0.4. The same
mass is then spent on one material: the heavy phase alone (SIMP p = 3 at volume fraction
0.4) and the light phase alone (E = 0.6 at volume fraction 0.8), same mesh, filter and
optimizer. The script prints the three compliances, the two-phase design's share of
each phase and each design's grayness (the distance of its cells to void or to a phase's
density: a cell of the light phase is crisp).

Run: ``python examples/multimaterial_beam.py [--fast] [--out DIR]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: at most 60 iterations each). Writes ``phases.png`` (the three
designs in phase colours) to ``results/examples/multimaterial_beam``.
"""

from __future__ import annotations

import argparse
import os
import time
import tomllib
from pathlib import Path

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from fesens.config import preset_text, resolve
from fesens.opt import OrderedSIMP
from fesens.opt.cell_lattice import cell_lattice
from fesens.plotting import new_figure, save_figure
from fesens.workflow.optimize import run_optimization

PRESET = "multimaterial"
FAST_ITER = 60
#: void, light, heavy
COLOURS = ("white", "tab:orange", "tab:blue")


def single_material(raw: dict, phase: int) -> dict:
    """The preset with the mass spent on phase ``phase`` alone: SIMP at that phase's
    modulus, volume fraction (mass fraction) / (its density relative to the heavy one)."""
    pen = raw["penalization"]
    heavy = max(pen["densities"])
    raw["material"]["E"] = raw["material"]["E"] * pen["moduli"][phase] / max(pen["moduli"])
    raw["constraints"]["volume_fraction"] *= heavy / pen["densities"][phase]
    raw["penalization"] = {"type": "simp", "penalty": pen["penalty"],
                           "minimum": pen["minimum"]}
    return raw


def design(phase: int | None, fast: bool):
    """The preset optimized: two phases (``phase`` None) or the one phase ``phase``."""
    raw = tomllib.loads(preset_text(PRESET))
    if phase is not None:
        raw = single_material(raw, phase)
    if fast:
        raw["stop"]["max_iter"] = FAST_ITER
    config = resolve(raw, base_dir=Path("."), source=f"preset {PRESET!r}", default_name=PRESET)
    return run_optimization(config, echo=None), raw


def run(fast: bool = False, out: Path = Path("results/examples/multimaterial_beam")) -> dict:
    """Design the beam three times, print and draw them; returns the numbers."""
    start = time.perf_counter()
    numbers, panels = {}, []
    for key, phase in (("two phases", None), ("heavy alone", 1), ("light alone", 0)):
        result, raw = design(phase, fast)
        entry = numbers[key] = {
            "density": result.density, "raw": raw, "iterations": len(result.history),
            "compliance": float(result.summary["objective"]["value"]),
            "volume": float(result.evaluation.volume_fraction), "converged": result.converged,
            "grayness": float(result.summary["grayness"])}
        state = (f"{entry['iterations']} iterations "
                 f"({'converged' if result.converged else 'stopped'})")
        if phase is None:
            phases = phase_of(raw, result.density)
            entry["phases"] = phases
            shares = [float(np.mean(phases == i)) for i in (1, 2)]
            print(f"two phases: compliance {entry['compliance']:.2f}, mass fraction "
                  f"{entry['volume']:.4f}, light {100 * shares[0]:.1f} % and heavy "
                  f"{100 * shares[1]:.1f} % of the cells, grayness "
                  f"{entry['grayness']:.1f} %; {state}")
        else:
            entry["phases"] = np.where(result.density > 0.5, phase + 1, 0)
            print(f"{key}: compliance {entry['compliance']:.2f}, volume fraction "
                  f"{entry['volume']:.4f} (E = {raw['material']['E']:g}), grayness "
                  f"{entry['grayness']:.1f} %; {state}")
        panels.append((key, result.evaluation.state.model.mesh, entry))
    numbers["picture"] = draw(panels, Path(out) / "phases.png")
    numbers["seconds"] = time.perf_counter() - start
    print(f"{numbers['seconds']:.1f} s; wrote {numbers['picture']}")
    return numbers


def phase_of(raw: dict, x: np.ndarray) -> np.ndarray:
    """Each cell's phase (0 void, 1 light, 2 heavy) by the preset's interpolation."""
    pen = raw["penalization"]
    return OrderedSIMP(pen["penalty"], pen["minimum"], moduli=pen["moduli"],
                       densities=pen["densities"]).phases(x)


def draw(panels: list, path: Path) -> Path:
    """The three designs one above the other, each cell in its phase's colour."""
    fig = new_figure(figsize=(7.0, 7.0), layout="constrained")
    cmap = ListedColormap(COLOURS)
    for ax, (key, mesh, entry) in zip(fig.subplots(3, 1), panels, strict=True):
        lattice = cell_lattice(mesh, "the picture")
        low, high = mesh.points.min(axis=0), mesh.points.max(axis=0)
        ax.imshow(lattice.to_grid(entry["phases"].astype(float)).T, origin="lower",
                  cmap=cmap, vmin=-0.5, vmax=2.5, extent=(low[0], high[0], low[1], high[1]))
        ax.set_title(f"{key}: compliance {entry['compliance']:.1f}", fontsize="medium")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.legend(handles=[Patch(facecolor=c, edgecolor="black", label=name) for c, name in
                        zip(COLOURS[1:], ("light: E 0.6, density 0.5",
                                          "heavy: E 1, density 1"), strict=True)],
               loc="outside lower center", ncols=2, fontsize="small")
    return save_figure(fig, path)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="fewer iterations (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--out", type=Path, default=Path("results/examples/multimaterial_beam"))
    args = parser.parse_args(argv)
    return run(args.fast, args.out)


if __name__ == "__main__":
    main()

"""A small 3D cantilever optimized and exported for printing: its STL surface and picture.

The ``cantilever3d`` preset (top3d's cantilever: a hex8 box clamped on its left face, a line
load pointing down along the bottom edge of its right face; SIMP 3, density filter of
radius 1.5, OC), on a smaller box of 24 x 8 x 8 unit cells with 20 % material, run by
:func:`fesens.workflow.optimize.run_optimization` into a results folder as ``fesens
optimize`` does. Besides its usual files the run writes the final design's shape: the
closed surface where the physical density is 0.5 as ``design.stl`` (scikit-image's marching
cubes, written by trimesh: ``pip install 'fesens[export]'``) and its picture
``design_stl.png``. The example reads the STL back and prints its triangles, whether it is
closed and the volume it encloses, against the volume of the solid cells (density above
0.5) and the design's volume.

Run: ``python examples/design_stl.py [--fast] [--out DIR]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: a 16 x 6 x 6 box, at most 40 iterations). The results folder
is ``results/examples/design_stl``.
"""

from __future__ import annotations

import argparse
import os
import time
import tomllib
from pathlib import Path

import numpy as np
import trimesh

from fesens.config import preset_text, resolve
from fesens.workflow.optimize import run_optimization

#: The box (cells per axis, unit cells), its volume fraction and the iterations allowed.
FULL, FAST = ([24, 8, 8], 150), ([16, 6, 6], 40)
VOLUME_FRACTION = 0.2


def config(fast: bool):
    """The ``cantilever3d`` preset on the smaller box."""
    cells, max_iter = FAST if fast else FULL
    raw = tomllib.loads(preset_text("cantilever3d"))
    lx, ly, lz = (float(n) for n in cells)
    raw["mesh"].update(size=[lx, ly, lz], cells=cells)
    raw["loads"][0]["region"] = {"min": [lx, 0.0, 0.0], "max": [lx, 0.0, lz]}
    raw["loads"][0]["value"] = [0.0, -1.0 / (cells[2] + 1), 0.0]   # 1 in all
    raw["constraints"]["volume_fraction"] = VOLUME_FRACTION
    raw["stop"]["max_iter"] = max_iter
    raw["name"] = "design_stl"
    return resolve(raw, base_dir=Path("."), source="design_stl", default_name="design_stl")


def run(fast: bool = False, out: Path = Path("results/examples/design_stl")) -> dict:
    """Optimize into ``out``, read its STL back; returns the key numbers."""
    start = time.perf_counter()
    result = run_optimization(config(fast), out, force=True, echo=None)
    mesh = result.evaluation.state.model.mesh
    cell_volume = float(np.prod(np.ptp(mesh.points, axis=0)) / mesh.n_cells)
    surface = trimesh.load_mesh(Path(out) / "design.stl")
    numbers = {"density": result.density, "folder": Path(out),
               "compliance": float(result.summary["objective"]["value"]),
               "iterations": len(result.history), "converged": result.converged,
               "volume_fraction": float(result.evaluation.volume_fraction),
               "design_volume": float(result.evaluation.volume_fraction * mesh.n_cells
                                      * cell_volume),
               "solid_volume": float(np.count_nonzero(result.density > 0.5) * cell_volume),
               "stl_volume": float(surface.volume), "triangles": len(surface.faces),
               "watertight": bool(surface.is_watertight)}
    print(f"3D cantilever, {mesh.n_cells} hex8 cells: compliance {numbers['compliance']:.3f} "
          f"after {numbers['iterations']} iterations "
          f"({'converged' if numbers['converged'] else 'stopped'}), volume fraction "
          f"{numbers['volume_fraction']:.4f}")
    print(f"design.stl: {numbers['triangles']} triangles, "
          f"{'closed' if numbers['watertight'] else 'NOT closed'}, enclosing "
          f"{numbers['stl_volume']:.2f}; solid cells (density > 0.5) "
          f"{numbers['solid_volume']:.2f}, "
          f"design volume {numbers['design_volume']:.2f}")
    numbers["pictures"] = [Path(out) / "design_stl.png"]
    numbers["seconds"] = time.perf_counter() - start
    print(f"{numbers['seconds']:.1f} s; wrote {Path(out) / 'design.stl'}, {numbers['pictures'][0]}")
    return numbers


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="smaller box, fewer iterations (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--out", type=Path, default=Path("results/examples/design_stl"))
    args = parser.parse_args(argv)
    return run(args.fast, args.out)


if __name__ == "__main__":
    main()

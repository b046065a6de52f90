"""The linear and the nonlinear design of the ``nonlinear_cantilever`` preset, side by side.

The preset (``fesens presets``) designs a cantilever 2 x 1 (40 x 20 quads), clamped on the
left and pulled down at its lower right corner, for the least end compliance ``f·u`` with
40 % of the material, through the finite-strain (neo-Hookean, plane strain) Newton solve.
At its load the tip of the uniform start design moves by about 1.6: the design is not the
linear one. The linear design is the same config at a load 50 times smaller, where the
finite-strain solution is that of linear elasticity (``f·u`` scales with the load squared
and the design does not change with it).

The script optimizes both, evaluates the linear design at the large load (its ``f·u``
through the same Newton solve) and counts the cells that are solid (density > 0.5) in one
design and void in the other. It prints both compliances at the large load and that share,
and draws the two designs side by side (``nonlinear_cantilever.png``).

Run: ``python examples/nonlinear_cantilever.py [--fast] [--out DIR]`` (``--fast``: a 20 x
10 mesh, the filter radius still two cells, and at most 40 iterations per design). Writes
``nonlinear_cantilever.png`` to ``--out`` (default ``results/examples/nonlinear_cantilever``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from fesens.config import build_model, build_problem, preset_text, resolve
from fesens.config.loading import read_toml
from fesens.plotting import boundary_markers, plot_density_panels
from fesens.workflow.optimize import run_optimization

PRESET = "nonlinear_cantilever"
#: The linear design's load: the preset's divided by this.
SMALL_LOAD = 50.0
FAST_CELLS, FAST_ITERATIONS = (20, 10), 40


def config(load_factor: float = 1.0, fast: bool = False):
    """The preset's resolved config with its load multiplied by ``load_factor``
    (``fast``: the coarse mesh and the iteration limit of ``--fast``)."""
    raw = read_toml(preset_text(PRESET), source=f"preset {PRESET!r}")
    for load in raw["loads"]:
        load["value"] = [load_factor * v for v in load["value"]]
    if fast:  # the filter keeps its radius of two cells
        scale = raw["mesh"]["cells"][0] / FAST_CELLS[0]
        raw["mesh"]["cells"] = list(FAST_CELLS)
        raw["filter"]["radius"] *= scale
        raw["stop"]["max_iter"] = FAST_ITERATIONS
    return resolve(raw, base_dir=Path.cwd(), source=f"preset {PRESET!r}",
                   default_name=PRESET)


def run(out: str | Path | None = None, *, fast: bool = False) -> dict:
    """Both designs and their compliances at the preset's load; the picture to ``out``.

    Returns
    -------
    dict
        ``nonlinear`` and ``linear``: each the run's ``density`` ``(n_cells,)``,
        ``iterations`` and ``converged``; ``compliance`` of each design at the large load
        (``{"nonlinear": ..., "linear": ...}``), ``differing`` (the share of cells solid
        in one design and void in the other), ``picture`` (its path, or None).
    """
    large = config(1.0, fast)
    runs = {"nonlinear": run_optimization(large, echo=None),
            "linear": run_optimization(config(1.0 / SMALL_LOAD, fast), echo=None)}
    # the linear design through the same Newton solve at the large load
    problem = build_problem(large)
    at_large = {"nonlinear": runs["nonlinear"].evaluation.objective,
                "linear": problem.evaluate(runs["linear"].x).objective}
    solid = {name: r.density > 0.5 for name, r in runs.items()}
    result = {name: {"density": r.density, "iterations": len(r.history),
                     "converged": r.converged} for name, r in runs.items()}
    result.update(compliance=at_large,
                  differing=float(np.mean(solid["nonlinear"] != solid["linear"])),
                  picture=None)
    if out is not None:
        model = build_model(large)
        result["picture"] = plot_density_panels(
            model.mesh, {f"linear (load / {SMALL_LOAD:g})": runs["linear"].density,
                         "finite strain (neo-Hookean)": runs["nonlinear"].density},
            Path(out) / "nonlinear_cantilever.png", **boundary_markers(model))
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="coarse mesh, few iterations")
    parser.add_argument("--out", default="results/examples/nonlinear_cantilever")
    args = parser.parse_args(argv)
    result = run(args.out, fast=args.fast)
    for name in ("nonlinear", "linear"):
        r = result[name]
        print(f"{name:9s} design: {r['iterations']} iterations "
              f"({'converged' if r['converged'] else 'not converged'})")
    c = result["compliance"]
    print(f"f·u at the preset's load: nonlinear design {c['nonlinear']:.5g}, linear design "
          f"{c['linear']:.5g} ({100 * (c['linear'] / c['nonlinear'] - 1):+.1f} %)")
    print(f"cells solid in one design and void in the other: {100 * result['differing']:.0f} %")
    print(f"wrote {result['picture']}")
    return result


if __name__ == "__main__":
    main()

"""The 3D presets at their default size and at 10⁵ cells and more, and top3d's cantilever.

Each preset ``fesens/config/presets/*3d*.toml`` runs through ``fesens optimize`` (the
workflow's ``run_optimization`` into a results folder, so that the STL of the final design
and the ParaView series ``design.pvd`` of the designs written every ``[output] every``
iterations are part of the timed run) in its own process, whose peak resident memory
(``resource.getrusage``) is the table's:

* at the preset's own size, to the preset's own stop;
* at 10⁵ cells or more: every cell count of the preset's mesh multiplied by the smallest
  factor of :data:`SCALES` that reaches 10⁵ cells (the geometry, the filter radius in
  length units and the loads per node are the preset's, so a point or line load acts on
  more nodes and the compliances are not the default size's), with the matrix-free
  multigrid (``[solver] backend = "gmg"``, ``matrix_free = true``) where the config check
  accepts it (otherwise ``gmg`` with its assembled fine level, with the refusal's reason
  below the table), stopped after
  ``--large-iterations`` iterations (default 10: a whole run at this size takes hours on the
  shared 2-core machine);
* top3d's paper case, the preset ``cantilever3d_top3d`` (60x20x4), also by
  ``tests/reference/top3d.py`` (Liu & Tovar's code in numpy/scipy): both final
  compliances, the iteration counts and the largest difference of a design variable;
* with ``--huge N``: the preset ``--huge-preset`` at 10⁶ cells or more for ``N``
  iterations, to measure the time per iteration of an overnight run.

Run: ``python benchmarks/bench_3d_presets.py [--quick] [--large-iterations N] [--huge N]``;
``--quick`` is a smoke run (default sizes of 2 iterations, no reference, large runs of 2
iterations at 2·10⁴ cells); ``--keep DIR`` keeps the results folders (ParaView: open
``DIR/<preset>_<cells>/design.pvd``). Never part of the tests.
"""

from __future__ import annotations

import argparse
import math
import resource
import shutil
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np
from _common import load_average, load_line, machine_lines, run_case, serve_case, table

ROOT = Path(__file__).resolve().parents[1]
#: Factors tried in turn on every cell count of a preset's mesh for the large runs; each
#: keeps the presets' load and support coordinates on nodes.
SCALES = (2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0)
LARGE_CELLS = 100_000
HUGE_CELLS = 1_000_000
TIMEOUT = 4 * 3600.0


def presets_3d() -> list[str]:
    """The 3D presets shipped now, sorted."""
    return sorted(p.stem for p in (ROOT / "fesens/config/presets").glob("*3d*.toml"))


def scaled_cells(cells: list[int], at_least: int) -> list[int]:
    """``cells`` times the smallest factor of :data:`SCALES` reaching ``at_least`` cells."""
    for factor in SCALES:
        scaled = [round(n * factor) for n in cells]
        if math.prod(scaled) >= at_least:
            return scaled
    raise ValueError(f"no factor of {SCALES} brings {cells} to {at_least} cells")


def preset_data(name: str, at_least: int | None, max_iter: int | None,
                matrix_free: bool) -> dict:
    """The preset's TOML data, its cells scaled to ``at_least`` cells (None: as shipped),
    solved by ``gmg``, matrix-free or assembled, when scaled."""
    from fesens.config import preset_text

    data = tomllib.loads(preset_text(name))
    if at_least is not None:
        data["mesh"]["cells"] = scaled_cells(data["mesh"]["cells"], at_least)
    if max_iter is not None:
        data["stop"]["max_iter"] = max_iter
    if at_least is not None:
        data["solver"] = {"backend": "gmg", "options": {"matrix_free": matrix_free}}
    return data


def run_preset(name: str, at_least: int | None, max_iter: int | None, out: str) -> dict:
    """Case: one run of a preset into ``out``; the table's entries (in a child process)."""
    from fesens.config import ConfigError, dumps, parse_config
    from fesens.workflow.optimize import run_optimization

    def parse(data: dict):
        return parse_config(dumps(data), source=f"preset {name!r}", base_dir=".",
                            default_name=name, optimize=True)

    note = None
    try:
        config = parse(preset_data(name, at_least, max_iter, matrix_free=at_least is not None))
    except ConfigError as error:
        note = (f"matrix-free refused, gmg with its assembled fine level instead: "
                f"{str(error).splitlines()[0]}")
        config = parse(preset_data(name, at_least, max_iter, matrix_free=False))
    tic = time.perf_counter()
    run = run_optimization(config, out, echo=None, force=True)
    seconds = time.perf_counter() - tic
    folder = Path(out)
    mesh = config.mesh
    index = np.floor(
        (mesh.points[mesh.cells].mean(axis=1) - mesh.points.min(axis=0))
        / (mesh.points.max(axis=0) - mesh.points.min(axis=0)) * config.data["mesh"]["cells"]
    ).astype(int)
    return {"preset": name, "cells": "x".join(map(str, config.data["mesh"]["cells"])),
            "n_cells": int(mesh.n_cells), "iterations": len(run.history),
            "status": run.summary["status"], "seconds": seconds,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            "objective": float(run.history[-1]["objective"]),
            "solver": run.summary["solver"], "note": note,
            "stl": (folder / "design.stl").is_file(), "pvd": (folder / "design.pvd").is_file(),
            # the design by position, for the comparison with top3d (default sizes only)
            **({"x": np.asarray(run.x).tolist(), "index": index.tolist(),
                "history": [record["objective"] for record in run.history]}
               if at_least is None else {})}


def run_top3d() -> dict:
    """Case: tests/reference/top3d.py's top3d(60,20,4,0.3,3,1.5)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from reference.top3d import top3d

    tic = time.perf_counter()
    result = top3d(60, 20, 4, 0.3, 3.0, 1.5)
    return {"seconds": time.perf_counter() - tic, "iterations": result.iterations,
            "compliance": result.compliance[-1], "x": result.x.tolist(),
            "history": result.compliance,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}


CASES = {"preset": run_preset, "top3d": run_top3d}


def row(result: dict, versus: str = "-") -> list[str]:
    if "error" in result:
        return [result.get("preset", "?"), "-", "-", "-", "-", "-", result["error"], "-", "-",
                versus]
    return [result["preset"], f"{result['cells']} ({result['n_cells']:,})",
            f"{result['iterations']} ({result['status']})", f"{result['seconds']:.1f} s",
            f"{result['seconds'] / result['iterations']:.2f} s",
            f"{result['peak_mb']:.0f} MB", f"{result['objective']:.6g}", result["solver"],
            f"{'stl' if result['stl'] else 'NO stl'}, {'pvd' if result['pvd'] else 'NO pvd'}",
            versus]


def versus_top3d(fesens: dict, reference: dict) -> str:
    """Compliance against top3d's, iteration counts, the last iteration up to which the two
    compliance histories agree to 1e-6 (relative) and the design differences: the mean
    and largest ``|Δx|`` and the cells that differ by more than one half."""
    if "error" in fesens or "error" in reference:
        return "-"
    x = np.full(np.asarray(reference["x"]).shape, np.nan)
    index = np.asarray(fesens["index"])
    x[index[:, 0], index[:, 1], index[:, 2]] = fesens["x"]
    gap = abs(fesens["objective"] - reference["compliance"]) / reference["compliance"]
    ours, theirs = np.asarray(fesens["history"]), np.asarray(reference["history"])
    common = min(len(ours), len(theirs))
    apart = np.abs(ours[:common] - theirs[:common]) > 1e-6 * np.abs(theirs[:common])
    agree = int(np.argmax(apart)) if apart.any() else common
    dx = np.abs(x - np.asarray(reference["x"]))
    return (f"top3d {reference['compliance']:.6g} after {reference['iterations']} "
            f"({reference['seconds']:.0f} s): rel. {gap:.1e}; histories within 1e-6 up to "
            f"iteration {agree}; |Δx| mean {dx.mean():.1e}, max {dx.max():.1e}, "
            f"{int(np.sum(dx > 0.5))} of {dx.size} cells > 0.5")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--large-iterations", type=int, default=10)
    parser.add_argument("--huge", type=int, default=0, metavar="N",
                        help="also N iterations at 10⁶ cells or more")
    parser.add_argument("--huge-preset", default="cantilever3d")
    parser.add_argument("--presets", nargs="*",
                        help="default: every *3d* preset; none given: only --huge's run")
    parser.add_argument("--keep", type=Path, help="keep the results folders here")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        import json

        serve_case(CASES, json.loads(args.case))
        return 0
    out = args.keep or Path(tempfile.mkdtemp(prefix="bench_3d_"))
    names = presets_3d() if args.presets is None else args.presets
    large, large_iter = (20_000, 2) if args.quick else (LARGE_CELLS, args.large_iterations)
    loads = [load_average()]
    print("# 3D presets: default size and large, fesens optimize\n")
    print("\n".join(machine_lines(("numpy", "scipy"))) + "\n")
    script = Path(__file__)
    reference = (run_case(script, "top3d", timeout=TIMEOUT)
                 if "cantilever3d_top3d" in names and not args.quick else {})
    rows, notes = [], []
    runs = [(name, None, 2 if args.quick else None) for name in names]
    runs += [(name, large, large_iter) for name in names]
    if args.huge:
        runs.append((args.huge_preset, HUGE_CELLS, args.huge))
    for name, at_least, max_iter in runs:
        folder = out / f"{name}_{'default' if at_least is None else at_least}"
        result = run_case(script, "preset", name, at_least, max_iter, str(folder),
                          timeout=TIMEOUT)
        result.setdefault("preset", name)
        versus = (versus_top3d(result, reference)
                  if name == "cantilever3d_top3d" and at_least is None and reference else "-")
        rows.append(row(result, versus))
        if result.get("note"):
            notes.append(f"- {name} at {result['cells']}: {result['note']}")
        print(" | ".join(rows[-1]), flush=True)
    loads.append(load_average())
    print()
    print(table(["preset", "cells", "iterations", "time", "per iteration", "peak memory",
                 "final objective", "solver", "files", "compliance vs top3d"], rows))
    if notes:
        print("\n" + "\n".join(notes))
    if names:
        print(f"\nlarge runs: {large_iter} iterations each (a limit, not convergence)")
    print(f"results folders in {out}")
    print(load_line(loads))
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

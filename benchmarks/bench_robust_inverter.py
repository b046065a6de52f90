"""Robust force inverters, 2D and 3D: hinge-free compliant mechanisms.

Each row optimizes one preset: ``inverter_robust`` (the inverter preset's 40 x 20 half
domain, the worst output displacement of the eroded, blueprint and dilated designs; Sigmund
2009, Wang, Lazarov & Sigmund 2011), ``inverter3d_robust`` (the same in a 24 x 12 x 4 hex8
plate), and, as the contrast, the same two problems with one Heaviside projection of
threshold 0.5 (the robust keys removed: ``plain``). It reports the iterations and status,
the blueprint's output displacement ``u_out`` (and the eroded design's, the worst), its
volume fraction against the limit, the one-node hinges of the blueprint thresholded at 0.5
counted by the independent ``tests/reference/hinges.py`` (numpy only), and the time.

Pictures: ``docs/examples/inverter_robust.png`` (the 2D blueprints, robust and plain, the
half domain mirrored about the symmetry line) and ``docs/examples/inverter3d_robust.png``
(the 3D blueprints, robust and plain, thresholded at 0.5: the face layer, mirrored, with its
hinge nodes in red).

Run: ``python benchmarks/bench_robust_inverter.py [--cases 2d|3d|all] [--append]``
(``--append`` adds the table to benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from _common import load_average, load_line, machine_lines, record, table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from reference.hinges import (  # noqa: E402  (the tests' folder, put on the path above)
    count_hinges,
    grid_of_cells,
    hinge_nodes,
)

#: (preset, robust): the robust preset as shipped, or with one projection only.
CASES_2D = [("inverter_robust", True), ("inverter_robust", False)]
CASES_3D = [("inverter3d_robust", True), ("inverter3d_robust", False)]
PICTURES = ROOT / "docs" / "examples"
#: The keys that make a preset's projection robust.
ROBUST_KEYS = ("robust", "delta_eta", "volume_update_every")


def raw_config(preset: str, robust: bool) -> dict:
    """The preset's config, with its projection robust or plain."""
    from fesens.config import preset_text

    raw = tomllib.loads(preset_text(preset))
    if not robust:
        for key in ROBUST_KEYS:
            raw["projection"].pop(key, None)
    return raw


def run_case(preset: str, robust: bool) -> dict:
    """One optimization: its numbers, the blueprint as a grid and the mesh."""
    from fesens.config import resolve
    from fesens.workflow.optimize import run_optimization

    config = resolve(raw_config(preset, robust), base_dir=ROOT, source=f"preset {preset!r}",
                     default_name=preset)
    start = time.perf_counter()
    result = run_optimization(config, echo=None)
    seconds = time.perf_counter() - start
    mesh = config.mesh
    grid = grid_of_cells(mesh.cell_centroids(), np.asarray(result.density, dtype=float))
    extras = result.evaluation.extras
    last = result.history[-10:]
    return {"preset": preset, "robust": robust, "grid": grid,
            "iterations": len(result.history), "status": result.summary["status"],
            "u_out": float(extras.get("objective_intermediate", result.evaluation.objective)),
            "worst": float(result.evaluation.objective),
            "drift": max(r["objective"] for r in last) - min(r["objective"] for r in last),
            "volume": float(result.evaluation.volume_fraction),
            "limit": config.data["constraints"]["volume_fraction"],
            "hinges": count_hinges(grid), "seconds": seconds}


def report(rows: Sequence[dict]) -> str:
    """The Markdown table of the runs."""
    headers = ("preset", "projection", "iterations", "status", "u_out (blueprint)",
               "worst (eroded)", "objective range, last 10", "blueprint volume (limit)",
               "hinges", "time")
    body = [(row["preset"], "robust" if row["robust"] else "plain", str(row["iterations"]),
             row["status"], f"{row['u_out']:.4f}",
             f"{row['worst']:.4f}" if row["robust"] else "-", f"{row['drift']:.1e}",
             f"{row['volume']:.4f} ({row['limit']:g})", str(row["hinges"]),
             f"{row['seconds']:.0f} s") for row in rows]
    return table(headers, body)


def mirrored(grid2d: np.ndarray) -> np.ndarray:
    """The full inverter of a half domain whose symmetry line is its bottom edge, as an
    image (rows: y from the top)."""
    return np.concatenate([grid2d.T[::-1], grid2d.T])


def draw_2d(rows: Sequence[dict], path: Path) -> Path:
    """The 2D blueprints thresholded at 0.5, mirrored, side by side."""
    from fesens.plotting import new_figure, save_figure

    fig = new_figure(figsize=(7.0, 2.2), layout="constrained")
    for ax, row in zip(fig.subplots(1, len(rows)).ravel(), rows, strict=True):
        ax.imshow(mirrored(row["grid"] > 0.5), cmap="gray_r", vmin=0.0, vmax=1.0)
        ax.set_title(f"{'robust' if row['robust'] else 'plain'}: u_out {row['u_out']:.3f}, "
                     f"{row['hinges']} hinges", fontsize="small")
        ax.set_xticks([])
        ax.set_yticks([])
    return save_figure(fig, path, dpi=90)


def draw_3d(rows: Sequence[dict], path: Path) -> Path:
    """Each 3D blueprint thresholded at 0.5: its face layer (z = 0; the design is extruded,
    every layer is the same) mirrored about the symmetry plane, its hinge nodes on that face
    as red dots."""
    from fesens.plotting import new_figure, save_figure

    fig = new_figure(figsize=(7.0, 2.2), layout="constrained")
    for ax, row in zip(fig.subplots(1, len(rows)).ravel(), rows, strict=True):
        solid = row["grid"] > 0.5
        ny = solid.shape[1]
        ax.imshow(mirrored(solid[:, :, 0]), cmap="gray_r", vmin=0.0, vmax=1.0)
        nodes = np.argwhere(hinge_nodes(solid)[:, :, 0])  # (i, j) of the face's hinge nodes
        for sign in (-1, 1):  # the node (i, j) sits between image rows ny - 1 ± j
            ax.plot(nodes[:, 0] - 0.5, ny - 0.5 + sign * nodes[:, 1], "o", color="tab:red",
                    markersize=4)
        ax.set_title(f"{'robust' if row['robust'] else 'plain'} (face z = 0): u_out "
                     f"{row['u_out']:.3f}, {row['hinges']} hinge nodes", fontsize="small")
        ax.set_xticks([])
        ax.set_yticks([])
    return save_figure(fig, path, dpi=90)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", choices=("2d", "3d", "all"), default="all")
    parser.add_argument("--append", action="store_true",
                        help="append the report to benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    loads = [load_average()]
    rows_2d = [run_case(*case) for case in CASES_2D] if args.cases != "3d" else []
    rows_3d = [run_case(*case) for case in CASES_3D] if args.cases != "2d" else []
    loads.append(load_average())
    lines = ["## `bench_robust_inverter.py`: robust force inverters without hinges", "",
             *machine_lines(("numpy", "scipy", "scikit-sparse")), "",
             "u_out: the blueprint's output displacement (negative: against the input "
             "force); worst: the robust objective, the largest of the three designs'; "
             "objective range over the last 10 iterations; hinges of the blueprint "
             "thresholded at 0.5, counted by tests/reference/hinges.py.", "",
             report(rows_2d + rows_3d), "", load_line(loads)]
    if rows_2d:
        lines.append(f"wrote {draw_2d(rows_2d, PICTURES / 'inverter_robust.png')}")
    if rows_3d:
        lines.append(f"wrote {draw_3d(rows_3d, PICTURES / 'inverter3d_robust.png')}")
    text = "\n".join(lines)
    record(text, args.append)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Overhang-controlled designs in every build direction and realizable angle, 2D and 3D.

Each row optimizes one preset (``overhang``: the MBB half-beam 60x20; ``overhang3d``: a 3D
cantilever printed along ``+z``) with its ``[manufacturing]`` build direction and critical
angle replaced, density filter → Heaviside projection (continuation) → Langelaar's layer
filter → SIMP, and reports the iterations, the compliance, the measure of non-discreteness
``M_nd = 4 Σ ρ(1 − ρ) / n`` of the printed design and its unsupported cells (solid ``ρ > 0.5``
above the first layer with no solid cell in the supporting region below), counted by the
independent check ``tests/reference/overhang_check.py`` (numpy only); the ``plain`` rows are
the same problems without the filter, where the count shows that the rule bites (one
optimization per preset, checked against each rule a ``plain`` row names). A vector oblique
to the axes takes the height-ordered filter of :mod:`fesens.opt.overhang_oblique` and is
checked by the reference's cone rule.

Pictures: ``docs/examples/overhang_directions.png`` (the 2D designs, unsupported cells red,
their count in the title) and ``docs/examples/overhang_3d.png`` (the 3D designs from the
side and their middle slices).

Run: ``python benchmarks/bench_overhang.py [--cases 2d|3d|all] [--append]`` (``--append``
adds the table to benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from _common import load_average, load_line, machine_lines, table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from reference.overhang_check import (  # noqa: E402  (the tests' folder, put on the path above)
    count_unsupported,
    grid_from_centroids,
    non_discreteness,
    unsupported_by_rule,
)

R2, R3 = 1.0 / math.sqrt(2.0), 1.0 / math.sqrt(3.0)
#: (preset, build direction, critical angle in degrees from the build plate); None: no filter,
#: then optionally the rule its design is checked against (default: the preset's +y or +z 45°).
CASES_2D = [("overhang", None, None), ("overhang", "+y", 45.0), ("overhang", "+y", 26.57),
            ("overhang", "+y", 90.0), ("overhang", "-y", 45.0), ("overhang", "+x", 45.0),
            ("overhang", "-x", 45.0), ("overhang", [0.0, 1.0], 18.43),
            ("overhang", None, None, [R2, R2], 45.0), ("overhang", [R2, R2], 45.0),
            ("overhang", [-R2, R2], 45.0)]
CASES_3D = [("overhang3d", None, None), ("overhang3d", "+z", 45.0),
            ("overhang3d", "+z", 26.57), ("overhang3d", "-x", 45.0),
            ("overhang3d", None, None, [R3, R3, R3], 35.26),
            ("overhang3d", [R3, R3, R3], 35.26)]
PICTURES = ROOT / "docs" / "examples"


def raw_config(preset: str, direction, angle) -> dict:
    """The preset's config with this build direction and angle (no filter for None)."""
    from fesens.config import preset_text

    raw = tomllib.loads(preset_text(preset))
    if direction is None:
        raw.pop("manufacturing", None)
    else:
        raw["manufacturing"] = {"overhang": direction, "overhang_angle": angle}
    return raw


def run_case(preset: str, direction, angle, *check, quick: bool = False,
             done: dict | None = None) -> dict:
    """One optimization: its numbers, the printed densities and the mesh (``quick``: three
    iterations at the projection's final sharpness); a plain design is checked against the
    rule ``check`` (build direction, angle) when given, and optimized once per preset
    (``done`` keeps it)."""
    from fesens.config import resolve
    from fesens.workflow.optimize import run_optimization

    raw = raw_config(preset, direction, angle)
    if quick:
        raw["stop"]["max_iter"] = 3
        raw["projection"]["beta"] = raw["projection"]["beta"]["final"]
    config = resolve(raw, base_dir=ROOT, source=f"preset {preset!r}", default_name=preset)
    done = {} if done is None else done
    key = (preset, str(direction), angle)
    if key not in done:
        start = time.perf_counter()
        done[key] = (run_optimization(config, echo=None), time.perf_counter() - start)
    result, seconds = done[key]
    mesh = config.mesh
    rho = np.asarray(result.density, dtype=float)
    solid, spacing = grid_from_centroids(mesh.cell_centroids(), rho > 0.5)
    # The plain design is checked against the preset's own rule, to show that it bites.
    rule = raw_config(preset, *(check or ("+z" if mesh.dim == 3 else "+y", 45.0))
                      )["manufacturing"] if direction is None else raw["manufacturing"]
    unsupported = count_unsupported(solid, rule["overhang"], rule["overhang_angle"], spacing)
    return {"preset": preset, "direction": direction, "angle": angle, "mesh": mesh,
            "rho": rho, "iterations": len(result.history), "converged": result.converged,
            "compliance": float(result.summary["objective"]["value"]),
            "mnd": non_discreteness(rho), "solid": int(solid.sum()),
            "unsupported": unsupported, "rule": (rule["overhang"], rule["overhang_angle"]),
            "checked": bool(check),
            "seconds": seconds}


def shown(direction, angle) -> str:
    """``+y 45°``, a vector as written or, its nonzero components ``±1/√k``, as ``[1, -1,
    0]/√2 45°``."""
    if isinstance(direction, str):
        return f"{direction} {angle:g}°"
    nonzero = [c for c in direction if c]
    if len(nonzero) > 1 and all(abs(abs(c) - len(nonzero) ** -0.5) < 1e-12 for c in nonzero):
        signs = ", ".join("0" if not c else "1" if c > 0 else "-1" for c in direction)
        return f"[{signs}]/√{len(nonzero)} {angle:g}°"
    name = "[" + ", ".join(f"{c:g}" for c in direction) + "]"
    return f"{name} {angle:g}°"


def label(row: dict) -> str:
    """``+y 45°``, ``plain`` or, checked against another rule than the preset's, ``plain vs
    [1/√2, 1/√2] 45°``."""
    if row["direction"] is None:
        return f"plain vs {shown(*row['rule'])}" if row["checked"] else "plain"
    return shown(row["direction"], row["angle"])


def report(rows: Sequence[dict]) -> str:
    """The Markdown table of the runs."""
    headers = ("preset", "build direction, angle", "iterations", "compliance", "M_nd %",
               "solid cells", "unsupported (checked as)", "time")
    body = [(row["preset"], label(row),
             f"{row['iterations']}{'' if row['converged'] else ' (limit)'}",
             f"{row['compliance']:.2f}", f"{row['mnd']:.2f}", str(row["solid"]),
             f"{row['unsupported']} ({shown(*row['rule'])})", f"{row['seconds']:.0f} s")
            for row in rows]
    return table(headers, body)


def draw_2d(rows: Sequence[dict], path: Path) -> Path:
    """The 2D designs in a grid of panels, unsupported cells red, build plate blue."""
    from matplotlib.colors import ListedColormap

    from fesens.plotting import new_figure, save_figure

    columns = 2
    lines = -(-len(rows) // columns)
    fig = new_figure(figsize=(7.0, 1.35 * lines + 0.3), layout="constrained")
    for ax, row in zip(fig.subplots(lines, columns).ravel(), rows, strict=False):
        grid, _ = grid_from_centroids(row["mesh"].cell_centroids(), row["rho"])
        red = unsupported_by_rule(grid > 0.5, *row["rule"])
        ax.imshow(grid.T, origin="lower", cmap="gray_r", vmin=0.0, vmax=1.0)
        ax.imshow(np.ma.masked_equal(red.T.astype(float), 0.0), origin="lower",
                  cmap=ListedColormap(["tab:red"]))
        _plate(ax, row, grid.shape)
        ax.set_title(f"{label(row)}: {row['unsupported']} unsupported, M_nd "
                     f"{row['mnd']:.1f} %", fontsize="small")
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in fig.axes[len(rows):]:
        ax.set_visible(False)
    return save_figure(fig, path, dpi=90)


def _plate(ax, row: dict, shape: tuple[int, ...]) -> None:
    """The build plate as a thick blue line on its side of a 2D panel (through the lowest
    corner across an oblique direction)."""
    direction = row["direction"]
    if direction is None:
        return
    if not isinstance(direction, str) and np.count_nonzero(direction) > 1:
        n = np.asarray(direction[:2], dtype=float)
        corner = np.where(n > 0, -0.5, np.array(shape[:2]) - 0.5)
        # A short stroke across n at the corner the plate touches, outside the panel too.
        across = np.array([-n[1], n[0]]) * 2.5
        ax.plot(*zip(corner - across, corner + across, strict=True), color="tab:blue",
                linewidth=3, clip_on=False)
        ax.set_xlim(-0.5, shape[0] - 0.5)
        ax.set_ylim(-0.5, shape[1] - 0.5)
        return
    if not isinstance(direction, str):
        axis = int(np.argmax(np.abs(direction)))
        direction = ("+" if direction[axis] > 0 else "-") + "xy"[axis]
    low = -0.5 if direction[0] == "+" else shape["xy".index(direction[1])] - 0.5
    line = ax.axhline if direction[1] == "y" else ax.axvline
    line(low, color="tab:blue", linewidth=3)


def draw_3d(rows: Sequence[dict], path: Path) -> Path:
    """Each 3D design seen from the side (the largest density along y of each cell column,
    x across, the build axis z up, the build plate blue) and its middle slice normal to y."""
    from fesens.plotting import new_figure, save_figure

    fig = new_figure(figsize=(7.0, 1.6 * len(rows) + 0.3), layout="constrained")
    axes = fig.subplots(len(rows), 2, squeeze=False)
    for (left, right), row in zip(axes, rows, strict=True):
        grid, _ = grid_from_centroids(row["mesh"].cell_centroids(), row["rho"])
        for ax, image, what in ((left, grid.max(axis=1), "side"),
                                (right, grid[:, grid.shape[1] // 2, :], "middle slice")):
            ax.imshow(image.T, origin="lower", cmap="gray_r", vmin=0.0, vmax=1.0)
            direction = row["direction"]
            _plate(ax, {**row, "direction": direction.replace("z", "y")
                        if isinstance(direction, str) else direction and
                        [direction[0], direction[2]]}, image.shape)
            title = (f"{label(row)} ({what}): {row['unsupported']} unsupported, M_nd "
                     f"{row['mnd']:.1f} %")
            ax.set_title(title, fontsize="small" if len(title) < 56 else "x-small")
            ax.set_xticks([])
            ax.set_yticks([])
    return save_figure(fig, path, dpi=90)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", choices=("2d", "3d", "all"), default="all")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 3 iterations at the final sharpness, no pictures "
                        "kept (written under /tmp)")
    parser.add_argument("--append", action="store_true",
                        help="append the report to benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    loads = [load_average()]
    done: dict = {}
    rows_2d = [run_case(*case, quick=args.quick, done=done) for case in CASES_2D] \
        if args.cases != "3d" else []
    rows_3d = [run_case(*case, quick=args.quick, done=done) for case in CASES_3D] \
        if args.cases != "2d" else []
    loads.append(load_average())
    lines = ["## `bench_overhang.py`: overhang control by build direction and angle", "",
             *machine_lines(("numpy", "scipy", "scikit-sparse")), "",
             "Angles in degrees from the build plate; M_nd of the printed design; "
             "unsupported cells counted by tests/reference/overhang_check.py.", "",
             report(rows_2d + rows_3d), "", load_line(loads)]
    print("\n".join(lines), flush=True)
    pictures = []
    folder = Path("/tmp/bench_overhang") if args.quick else PICTURES
    if rows_2d:
        pictures.append(draw_2d(rows_2d, folder / "overhang_directions.png"))
    if rows_3d:
        pictures.append(draw_3d(rows_3d, folder / "overhang_3d.png"))
    for picture in pictures:
        lines.append(f"wrote {Path(picture).relative_to(ROOT) if not args.quick else picture}")
        print(lines[-1], flush=True)
    if args.append:
        with open(ROOT / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as results:
            results.write("\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

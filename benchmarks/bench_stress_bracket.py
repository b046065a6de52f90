"""The stress-constrained L-bracket at the papers' resolution, local stress constraints.

The ``lbracket_stress_local`` preset: the L-bracket of Le, Norato, Bruns, Ha & Tortorelli
(Struct. Multidisc. Optim. 41, 2010), 100 x 100 mm with a 60 x 60 mm cut-out on 1 mm quad4
cells (6400 in the L, as theirs), clamped on top, a 10 MPa traction on the tip of the arm;
the volume minimised with ``σ_vm ≤ 100 MPa`` in every designed cell, the constraints in an
augmented Lagrangian (Giraldo-Londoño & Paulino, "PolyStress", Struct. Multidisc. Optim.
63, 2021), MMA. Each row is one run: the preset (five MMA steps per AL step, the move limit
shrinking after 250 iterations, stopped once the design change and the stress excess are
within their tolerances), the multipliers advanced every iteration at a fixed move limit for
a fixed 300 iterations, the compliance design of the same L at the preset's volume
fraction, then the preset again from starts moved by 1e-12 (how much its stop and its peaks
hang on the rounding). "near the corner" counts the solid cells of the L whose centroid
lies within 5 mm of the re-entrant corner and gives their largest centroid stress: a member
run into the corner peaks there, a fillet or a chamfer keeps it low.

Every design is measured as the papers do: thresholded at 0.5 of the physical density,
re-solved with the void stiffness (SIMP's minimum, 1e-9), the von Mises stress of the solid
cells at their centroids (the cell-mean stress of a rectangular quad4 cell), with its place;
also the largest von Mises stress at the quadrature points of the solid cells. "grey" is the
largest von Mises stress of the solid material in the cells at least half solid of the
design before thresholding (what the constraints bound). The volume fraction is of the L.

Picture: ``docs/examples/lbracket_stress_local.png``: each thresholded design over its von
Mises field, the stress designs beside the compliance design.

Run: ``python benchmarks/bench_stress_bracket.py [--append]`` (a few minutes per row;
``--append`` adds the table to benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from _common import load_average, load_line, machine_lines, record, table

ROOT = Path(__file__).resolve().parents[1]
PRESET = "lbracket_stress_local"
PICTURE = ROOT / "docs" / "examples" / "lbracket_stress_local.png"
#: The L's share of the 100 x 100 square the mesh covers.
L_SHARE = 1.0 - 0.6**2
#: (label, keys replacing the preset's): the preset, and the multipliers advanced every
#: iteration at a fixed move limit for a fixed 300 iterations (the preset before it stopped
#: on its stress: its design change stays near the move limit).
CASES = [
    ("local (preset)", {}),
    ("local, λ every iteration, fixed move", {
        "constraints.stress.iterations_per_step": 1, "optimizer": {"type": "mma", "move": 0.1},
        "projection.beta.final": 8.0, "stop.max_iter": 300}),
]
#: Seeds of the preset's reruns from the uniform start moved by 1e-12 (relative, normal): how
#: much the stop and the peaks hang on the rounding.
PERTURBED = (1, 2)
#: The re-entrant corner of the L and the radius around it within which the solid cells are
#: counted and their peak stress taken (the stress a sharp corner concentrates).
CORNER, CORNER_RADIUS = np.array([40.0, 40.0]), 5.0


def _set(raw: dict, dotted: str, value) -> None:
    *path, key = dotted.split(".")
    for name in path:
        raw = raw[name]
    raw[key] = value


def raw_config(changes: dict, compliance_fraction: float | None = None) -> dict:
    """The preset with ``changes``; with ``compliance_fraction`` its compliance design at
    that volume fraction (of the square) instead."""
    from fesens.config import preset_text

    raw = tomllib.loads(preset_text(PRESET))
    for dotted, value in changes.items():
        _set(raw, dotted, value)
    if compliance_fraction is not None:
        raw["objective"] = {"type": "compliance"}
        raw["constraints"] = {"volume_fraction": compliance_fraction}
    return raw


def run(label: str, raw: dict, seed: int | None = None) -> dict:
    """One optimization from the uniform 0.5 (moved by 1e-12 with ``seed``) and its
    measures."""
    from fesens.config import build_problem, resolve
    from fesens.config.build import build_optimizer
    from fesens.opt import optimize

    config = resolve(raw, base_dir=ROOT, source=f"preset {PRESET!r}", default_name=PRESET)
    problem = build_problem(config)
    stop = config.data["stop"]
    x0 = np.full(problem.n_design, 0.5)
    if seed is not None:
        x0 *= 1.0 + 1e-12 * np.random.default_rng(seed).standard_normal(x0.size)
    start = time.perf_counter()
    result = optimize(problem, build_optimizer(config), x0,
                      max_iter=stop["max_iter"], tol_change=stop["tol_change"],
                      constraint_tol=stop["constraint_tol"])
    seconds = time.perf_counter() - start
    rho = np.asarray(result.evaluation.density, dtype=float)
    return {"label": label, "iterations": len(result.history), "status": result.status,
            "volume": float(result.evaluation.volume_fraction) / L_SHARE, "rho": rho,
            "seconds": seconds, "mesh": config.mesh, **measure(problem, rho)}


def von_mises(stress: np.ndarray) -> np.ndarray:
    """The von Mises stress of full 3x3 stresses ``(..., 3, 3)``."""
    s = stress
    return np.sqrt(0.5 * ((s[..., 0, 0] - s[..., 1, 1])**2 + (s[..., 1, 1] - s[..., 2, 2])**2
                          + (s[..., 2, 2] - s[..., 0, 0])**2)
                   + 3.0 * (s[..., 0, 1]**2 + s[..., 1, 2]**2 + s[..., 0, 2]**2))


def measure(problem, rho: np.ndarray) -> dict:
    """The grey design's largest solid-material stress in its cells at least half solid,
    and the thresholded design's peaks, re-solved with the void stiffness."""
    mesh = problem.mesh
    grey_state = problem.solve(rho).detached()
    half = rho >= 0.5
    solid_stress = np.sqrt(np.asarray(grey_state.von_mises_squared(np.ones(rho.size))))
    solid = half.astype(float)
    state = problem.solve(solid).detached()  # SIMP: scale 1 in solid cells, 1e-9 in void
    centroid = np.sqrt(np.maximum(np.asarray(state.von_mises_squared()), 0.0))
    centroid = np.where(half, centroid, 0.0)
    worst = int(np.argmax(centroid))
    quadrature = von_mises(np.asarray(state.stress_at_quadrature(full=True)))
    near = np.linalg.norm(mesh.cell_centroids() - CORNER, axis=1) < CORNER_RADIUS
    near &= ~problem.void  # the cells of the L
    return {"grey": float(solid_stress[half].max()), "peak": float(centroid[worst]),
            "where": mesh.cell_centroids()[worst], "peak_qp": float(quadrature[half].max()),
            "corner": f"{int(np.sum(half & near))}/{int(np.sum(near))} solid, peak "
                      f"{float(np.max(centroid[near])):.1f} MPa",
            "field": centroid, "solid": solid}


def report(rows: Sequence[dict], limit: float) -> str:
    headers = ("design", "mesh", "iterations (status)", "volume fraction (L)", "peak, grey",
               "peak, thresholded (centroid; where)", "peak at quadrature points",
               f"near the corner (< {CORNER_RADIUS:g} mm)", "time")
    body = [(row["label"], "100x100 quad4, 6400 in the L",
             f"{row['iterations']} ({row['status']})",
             f"{row['volume']:.4f}", f"{row['grey']:.1f} MPa",
             f"{row['peak']:.1f} MPa = {row['peak'] / limit:.3f} σ_lim; "
             f"({row['where'][0]:g}, {row['where'][1]:g})",
             f"{row['peak_qp']:.1f} MPa", row["corner"], f"{row['seconds']:.0f} s")
            for row in rows]
    return table(headers, body)


def draw(rows: Sequence[dict], limit: float, path: Path) -> Path:
    """Each thresholded design's von Mises field on its solid cells, side by side."""
    from fesens.plotting import new_figure, save_figure

    fig = new_figure(figsize=(3.4 * len(rows) + 0.8, 3.6), layout="constrained")
    axes = fig.subplots(1, len(rows))
    for ax, row in zip(axes, rows, strict=True):
        grid = _grid(row["mesh"], np.where(row["solid"] > 0.5, row["field"], np.nan))
        image = ax.imshow(grid, origin="lower", extent=(0, 100, 0, 100), cmap="inferno",
                          vmin=0.0, vmax=1.5 * limit)
        ax.add_patch(_cut_out())
        ax.set_title(f"{row['label']}\nvolume {row['volume']:.3f}, peak "
                     f"{row['peak']:.0f} MPa", fontsize="small")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(image, ax=axes, shrink=0.8, label="von Mises stress, MPa (thresholded)")
    return save_figure(fig, path, dpi=80)


def _grid(mesh, values: np.ndarray) -> np.ndarray:
    """Cell values of the 100 x 100 lattice as an image (rows: y)."""
    centroids = mesh.cell_centroids()
    i, j = (np.floor(centroids[:, k]).astype(int) for k in (0, 1))
    grid = np.full((100, 100), np.nan)
    grid[j, i] = values
    return grid


def _cut_out():
    from matplotlib.patches import Rectangle

    return Rectangle((40.0, 40.0), 60.0, 60.0, facecolor="0.85", edgecolor="none")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--append", action="store_true",
                        help="append the report to benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    limit = tomllib.loads(__import__("fesens.config").config.preset_text(PRESET))[
        "constraints"]["stress"]["limit"]
    loads = [load_average()]
    rows = [run(label, raw_config(changes)) for label, changes in CASES]
    perturbed = [run(f"preset, start moved by 1e-12 (seed {seed})", raw_config({}), seed)
                 for seed in PERTURBED]
    first = rows[0]
    compliance = run("compliance, same volume",
                     raw_config({}, compliance_fraction=first["volume"] * L_SHARE))
    loads.append(load_average())
    rows.append(compliance)
    lines = ["## `bench_stress_bracket.py`: the stress-constrained L-bracket, local "
             "constraints", "", *machine_lines(("numpy", "scipy", "scikit-sparse")), "",
             f"σ_lim = {limit:g} MPa; peaks of the solid cells (thresholded at ρ = 0.5, "
             "re-solved with the void stiffness); the compliance design at the first row's "
             "volume.", "", report(rows + perturbed, limit), "", load_line(loads),
             f"wrote {draw(rows, limit, PICTURE)}"]
    text = "\n".join(lines)
    record(text, args.append)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Topology-optimization features: the cost of one design iteration next to plain compliance.

Part A (2D, ``--size``, default 120x40 quad4): the MBB half-beam of the ``mbb`` preset
(top88's load case, unit cells, volume fraction 0.5, SIMP p = 3, density filter of radius
2.4 cells) with MMA, and the same problem with one feature added through its config
section: the robust formulation (eroded / blueprint / dilated, three solves), the overhang
filter (``+y``), mirror symmetry (``y``), extrusion (``y``), a p-norm stress constraint with
adaptive normalisation, a buckling constraint (3 load factors, KS), two-phase ordered SIMP
(the ``multimaterial`` preset's phases), the grayness report, and the ``inverter`` preset's
mechanism (input and output springs, output displacement objective) on the same cell count.
An *iteration* is what ``fesens.opt.optimize`` does per step: update the schedules,
evaluate (forward, objective, constraints, gradients), one MMA step; the design changes
between calls as in a real run. The problems are stepped in turn, one iteration each per
round, so that the load of the shared machine falls on all alike; the table gives the
minimum over ``--rounds`` rounds (after one warm-up round, which holds CHOLMOD's symbolic
analysis) and the median, whose distance from the minimum shows the noise. The exports
(isosurface / outline polygons, what ``fesens optimize`` writes once at the end) are timed
on the final plain design against one iteration.

Part B (3D, ``--sizes3d``, default 48x24x24 and 160x80x80 hex8): the overhang filter alone,
forward (``OverhangFilter.printed``) + VJP, on a random design, against one solve of the
cantilever of ``_common.cantilever_model`` at density 0.5 (SIMP p = 3) with the ``gmg``
backend matrix-free (``rtol`` 1e-8, setup included: the fine-level operator and hierarchy
are rebuilt for every new design in an optimization loop), timed once per size; and at the
first 3D size also a whole iteration with and without the filter (MMA, CHOLMOD).

Run: ``python benchmarks/bench_topology_features.py [--quick]``; never part of the tests.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from _common import (
    GridSize,
    cantilever_model,
    load_average,
    load_line,
    machine_lines,
    seconds,
    table,
)

RTOL = 1e-8


# --------------------------------------------------------------------------- problems
def mbb_raw(nx: int, ny: int) -> dict:
    """The ``mbb`` preset on ``nx x ny`` unit cells, MMA, filter radius 2.4 cells."""
    from fesens.config import preset_text

    raw = tomllib.loads(preset_text("mbb"))
    raw["mesh"].update(size=[float(nx), float(ny)], cells=[nx, ny])
    raw["supports"][1]["point"] = [float(nx), 0.0]
    raw["loads"][0]["point"] = [0.0, float(ny)]
    raw["optimizer"] = {"type": "mma"}
    return raw


def inverter_raw(nx: int, ny: int) -> dict:
    """The ``inverter`` preset on ``nx x ny`` unit cells (ports at the symmetry line's ends,
    the top three nodes of the left edge clamped, filter radius 1.5 cells)."""
    from fesens.config import preset_text

    raw = tomllib.loads(preset_text("inverter"))
    raw["mesh"].update(size=[float(nx), float(ny)], cells=[nx, ny])
    raw["supports"][1]["region"] = {"min": [0.0, ny - 2.0], "max": [0.0, float(ny)]}
    raw["springs"][1]["point"] = [float(nx), 0.0]
    raw["objective"]["point"] = [float(nx), 0.0]
    return raw


def feature_raws(nx: int, ny: int) -> dict[str, Callable[[], dict]]:
    """Config builders by row name: the plain problem first, then one feature each."""
    from fesens.config import preset_text

    def plain() -> dict:
        return mbb_raw(nx, ny)

    def with_(**sections) -> Callable[[], dict]:
        def build() -> dict:
            raw = mbb_raw(nx, ny)
            for key, value in sections.items():
                if key == "extra":
                    raw["constraints"]["extra"] = value
                else:
                    raw[key] = value
            return raw
        return build

    multimaterial = tomllib.loads(preset_text("multimaterial"))["penalization"]
    return {
        "plain compliance": plain,
        "robust (3 solves)": with_(projection={
            "type": "heaviside", "beta": 8.0, "eta": 0.5, "robust": True, "delta_eta": 0.15,
            "volume_update_every": 5}),
        "overhang filter": with_(manufacturing={"overhang": "+y"}),
        "symmetry": with_(manufacturing={"symmetry": ["y"]}),
        "extrusion": with_(manufacturing={"extrusion": "y"}),
        "stress p-norm, adaptive": with_(extra=[{
            "type": "stress_pnorm", "name": "stress", "p": 8.0, "stress_exponent": 0.5,
            "limit": 1.0, "normalization": "adaptive", "alpha": 0.5}]),
        "buckling (3 modes, KS)": with_(extra=[{
            "type": "buckling", "limit": 1e-4, "count": 3, "rho": 50.0}]),
        "multimaterial (ordered)": with_(penalization=multimaterial),
        "grayness report": plain,  # the report is added in build()
        "mechanism (springs)": lambda: inverter_raw(nx, ny),
    }


class Stepper:
    """One design problem and its optimizer, stepped one iteration at a time as
    ``fesens.opt.optimize`` does."""

    def __init__(self, raw: dict, name: str):
        from fesens.config import build_optimizer, resolve
        from fesens.config.initial_design import initial_design
        from fesens.config.mpi_run import build_run
        from fesens.workflow.design_fields import grayness_report

        config = resolve(raw, base_dir=Path("."), source=name, default_name="bench")
        self.problem = build_run(config).problem
        if name == "grayness report":
            self.problem.reports["grayness"] = grayness_report(self.problem)
        self.optimizer = build_optimizer(config)
        start = initial_design(config.data["design"], config.mesh, self.problem)
        self.x = self.problem.initial_design() if start is None else start
        self.iteration = 0
        self.times: list[float] = []
        self.evaluation = None

    def step(self) -> float:
        problem = self.problem
        self.iteration += 1
        tic = time.perf_counter()
        problem.update_schedules(self.iteration)
        evaluation = problem.evaluate(self.x)
        self.x = self.optimizer.step(self.x, evaluation, problem.volume_excess(self.x, evaluation),
                                     self.iteration)
        elapsed = time.perf_counter() - tic
        self.evaluation = evaluation
        return elapsed


def part_a(size: GridSize, rounds: int) -> tuple[str, dict]:
    nx, ny = size.cells
    steppers = {name: Stepper(build(), name) for name, build in feature_raws(nx, ny).items()}
    for stepper in steppers.values():  # warm-up: symbolic analyses, caches
        stepper.step()
    for _ in range(rounds):
        for stepper in steppers.values():
            stepper.times.append(stepper.step())
    base = steppers["plain compliance"]
    base_min, base_median = min(base.times), statistics.median(base.times)
    rows, numbers = [], {}
    for name, stepper in steppers.items():
        low, mid = min(stepper.times), statistics.median(stepper.times)
        numbers[name] = low / base_min
        rows.append([name, seconds(low), seconds(mid), f"{low / base_min:.2f}",
                     f"{mid / base_median:.2f}"])
    export = time_exports(base)
    rows.append(["exports (once per run)", seconds(export), "-", f"{export / base_min:.2f}", "-"])
    text = (f"## A. one iteration, {size.label} quad4 ({base.problem.n_design} design "
            f"variables), MMA; min / median of {rounds} rounds\n\n"
            + table(["feature", "min", "median", "min / plain min", "median / plain median"],
                    rows))
    return text, numbers


def time_exports(stepper: Stepper) -> float:
    """The 2D exports of the final design (outline polygons, area, length, SVG)."""
    import tempfile

    from fesens.output.design_export import (
        enclosed_area,
        outline,
        outline_length,
        write_outline_svg,
    )

    mesh = stepper.problem.model.mesh
    density = np.asarray(stepper.evaluation.density)
    density = density[1] if density.ndim == 2 else density
    best = np.inf
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(3):
            tic = time.perf_counter()
            polygons = outline(mesh, density)
            enclosed_area(polygons), outline_length(polygons)
            write_outline_svg(polygons, mesh, Path(folder) / "outline.svg")
            best = min(best, time.perf_counter() - tic)
    return best


# --------------------------------------------------------------------------- 3D
def filter_time(size: GridSize, repeats: int) -> float:
    """Minimum of ``repeats`` forward + VJP evaluations of the overhang filter (+z)."""
    from fesens.mesh import box
    from fesens.opt import OverhangFilter

    mesh = box(*size.cells, *size.cells, cell_type="hex8")
    rule = OverhangFilter(mesh, "+z")
    rng = np.random.default_rng(0)
    best = np.inf
    for _ in range(repeats):
        x = rng.uniform(0.0, 1.0, mesh.n_cells)
        g = rng.standard_normal(mesh.n_cells)
        tic = time.perf_counter()
        printed = rule.printed(x)
        rule.vjp(x, printed, g)
        best = min(best, time.perf_counter() - tic)
    return best


def gmg_solve_time(size: GridSize) -> tuple[float, int]:
    """One matrix-free gmg solve (setup included) of the cantilever at density 0.5."""
    model = cantilever_model(size)
    tic = time.perf_counter()
    model.solve(scale=np.full(model.mesh.n_cells, 0.5**3), solver="gmg",
                solver_options={"rtol": RTOL, "matrix_free": True})
    return time.perf_counter() - tic, model.dofmap.n_dofs


def iteration_3d(size: GridSize, rounds: int) -> tuple[float, float]:
    """Minimum iteration time of the 3D cantilever (vol 0.3, MMA, CHOLMOD) without and with
    the overhang filter (+y), stepped alternately."""
    nx, ny, nz = size.cells
    raw = {
        "mesh": {"type": "box", "size": [float(nx), float(ny), float(nz)],
                 "cells": [nx, ny, nz], "cell_type": "hex8"},
        "physics": {"type": "elasticity"}, "material": {"E": 1.0, "nu": 0.3},
        "supports": [{"group": "left"}],
        "loads": [{"type": "traction", "name": "load", "group": "right",
                   "value": [0.0, -1.0, 0.0]}],
        "objective": {"type": "compliance"}, "constraints": {"volume_fraction": 0.3},
        "penalization": {"type": "simp", "penalty": 3.0, "minimum": 1e-9},
        "filter": {"type": "density", "radius": 1.5}, "optimizer": {"type": "mma"},
        "solver": {"backend": "cholmod"},
    }
    plain = Stepper(raw, "3d plain")
    overhang = Stepper({**raw, "manufacturing": {"overhang": "+y"}}, "3d overhang")
    for stepper in (plain, overhang):
        stepper.step()
    for _ in range(rounds):
        for stepper in (plain, overhang):
            stepper.times.append(stepper.step())
    return min(plain.times), min(overhang.times)


def part_b(sizes: Sequence[GridSize], rounds: int, repeats: int) -> str:
    rows = []
    for size in sizes:
        flt = filter_time(size, repeats)
        solve, dofs = gmg_solve_time(size)
        rows.append([size.label, f"{size.n_cells:,}", f"{dofs:,}", seconds(flt),
                     seconds(solve), f"{flt / solve:.3g}"])
        print(f"  3D {size.label}: filter {seconds(flt)}, solve {seconds(solve)}",
              flush=True)
    text = ("## B. overhang filter (forward + VJP, min of "
            f"{repeats}) against one gmg matrix-free solve (rtol {RTOL:g}, setup included, "
            "timed once)\n\n"
            + table(["size", "cells", "dofs", "filter", "gmg-mf solve", "filter / solve"], rows))
    if sizes:
        plain, overhang = iteration_3d(sizes[0], rounds)
        text += (f"\n\nWhole iteration at {sizes[0].label} (MMA, CHOLMOD, min of {rounds}): "
                 f"plain {seconds(plain)}, with the overhang filter {seconds(overhang)}, "
                 f"ratio {overhang / plain:.2f}")
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="120x40", type=GridSize.parse)
    parser.add_argument("--sizes3d", nargs="*", default=["48x24x24", "160x80x80"])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds of part A")
    parser.add_argument("--rounds3d", type=int, default=3, help="timed 3D iterations")
    parser.add_argument("--repeats", type=int, default=5, help="filter evaluations")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 60x20, 3 rounds, 3D 16x8x8 only")
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.rounds, args.rounds3d, args.sizes3d = (
            GridSize.parse("60x20"), 3, 2, ["16x8x8"])
    loads = [load_average()]
    print("# Topology-optimization features: cost per iteration\n")
    print("\n".join(machine_lines(("numpy", "scipy", "scikit-sparse"))) + "\n")
    text, _ = part_a(args.size, args.rounds)
    print(text + "\n", flush=True)
    print(part_b([GridSize.parse(s) for s in args.sizes3d], args.rounds3d, args.repeats))
    loads.append(load_average())
    print("\n" + load_line(loads))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

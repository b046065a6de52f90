"""The force inverter as Sigmund's 99-line mechanism code runs it; filters with constraints.

Part A, the mechanism table: ``top(40, 20, 0.3, 3.0, 1.2)`` of Sigmund's mechanism version
of the 99-line code (Struct. Multidisc. Optim. 21, 2001, §5.3), re-written in numpy in
``tests/reference/mechanism99.py``, against fesens on the same problem (the preset
``inverter_oc``: OC with the code's settings) and with MMA (the preset's ``[optimizer]``
replaced by ``type = "mma"``, ``move = 0.1``, ``lower = 1e-3``, ``objective_scale = 1``).
Columns: the output displacement of the last iteration (``u_out``, the code's ``c``), the
iterations to the code's stop (largest change ≤ 0.01), the volume fraction of the final
design, and the final design thresholded at its volume fraction (the densest 30 % of the
cells ``x = 1``, the others the code's lower bound 1e-3, so ``E = 1e-9``) and solved again
by the reference code's ``FE``: the output displacement of that black-and-white mechanism.

Part B, why fesens refuses Sigmund's sensitivity filter with ``[[constraints.extra]]``: the
same inverter with a stiffness constraint (compliance ``f·u ≤ 8.5``; the unconstrained
designs have about 8.8) and a minimum-volume MBB beam (60 x 20, compliance ≤ 300), MMA,
run through ``DesignProblem`` with the refusal stepped around: the sensitivity filter with
the constraint's gradient unfiltered (what fesens did before the refusal), the same
smoothed alike (the filter's quotient applied to every constraint but the exact volume),
and the density filter the refusal asks for. ``checker``: the mean over the 2 x 2 windows
of cells of ``|ρ00 − ρ10 − ρ01 + ρ11| / 2`` (1 for a checkerboard, 0.5 at a sharp corner,
0 for a design varying in one direction) and how many windows exceed 0.5.

Run: ``python benchmarks/bench_mechanism.py [--append]`` (``--append`` adds the report to
benchmarks/RESULTS.md); about a minute.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from _common import load_average, load_line, machine_lines, record, table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from reference.mechanism99 import X_MIN, top, u_out_of  # noqa: E402  (tests/ on the path)

NELX, NELY, VOLFRAC, PENAL, RMIN = 40, 20, 0.3, 3.0, 1.2
MMA = '[optimizer]\ntype = "mma"\nmove = 0.1\nlower = 1e-3\nobjective_scale = 1.0\n'
#: Part B's stiffness limit of the inverter and the MBB beam's compliance limit.
INVERTER_LIMIT, MBB_LIMIT = 8.5, 300.0


def with_optimizer(text: str, optimizer: str) -> str:
    """A preset's text with its ``[optimizer]`` table replaced by ``optimizer``."""
    start, end = text.index("\n[optimizer]\n"), text.index("\n[stop]\n")
    return text[:start + 1] + optimizer + text[end:]


def thresholded(x: np.ndarray) -> np.ndarray:
    """``(nely, nelx)``: 1 on the densest ``VOLFRAC`` of the cells, the lower bound else."""
    flat = np.full(x.size, X_MIN)
    flat[np.argsort(x.ravel())[::-1][: int(round(VOLFRAC * x.size))]] = 1.0
    return flat.reshape(x.shape)


def row(name: str, u_out: float, iterations: int, x: np.ndarray, seconds: float) -> list:
    return [name, f"{u_out:.5f}", str(iterations), f"{x.mean():.4f}",
            f"{u_out_of(NELX, NELY, thresholded(x), PENAL):.4f}", f"{seconds:.1f}"]


def part_a() -> tuple[str, list]:
    from fesens.config import parse_config, preset_text
    from fesens.workflow.optimize import run_optimization

    tic = time.perf_counter()
    reference = top(NELX, NELY, VOLFRAC, PENAL, RMIN)
    rows = [row("reference code (numpy)", reference.u_out[-1], reference.iterations,
                reference.x, time.perf_counter() - tic)]
    u_ref = reference.u_out[-1]
    text = preset_text("inverter_oc")
    for name, variant in (("fesens OC", text), ("fesens MMA", with_optimizer(text, MMA))):
        tic = time.perf_counter()
        config = parse_config(variant, source="inverter_oc", base_dir=ROOT)
        run = run_optimization(config, echo=None)
        u_out = run.history[-1]["objective"]
        # fesens's cells are the code's rows from the symmetry line, x fastest
        rows.append(row(name, u_out, len(run.history), run.x.reshape(NELY, NELX),
                        time.perf_counter() - tic))
        rows[-1][0] += f" ({100 * (u_out - u_ref) / abs(u_ref):+.2f} %)"
    headers = ["run", "u_out", "iterations", "volume", "thresholded u_out", "seconds"]
    return table(headers, rows), rows


def checker(density: np.ndarray, shape: tuple[int, int]) -> tuple[float, int]:
    r = np.asarray(density).reshape(shape[1], shape[0])
    windows = np.abs(r[:-1, :-1] - r[1:, :-1] - r[:-1, 1:] + r[1:, 1:]) / 2
    return float(windows.mean()), int((windows > 0.5).sum())


def constrained_problem(text: str, variant: str):
    """The design problem of ``text`` (a density filter) with its filter replaced per
    ``variant``: ``unfiltered`` (sensitivity filter, constraint gradients as they are),
    ``alike`` (sensitivity filter on the constraints' gradients too) or ``density``."""
    from fesens.config import build_problem, parse_config
    from fesens.opt import DesignProblem, SensitivityFilter

    config = parse_config(text, source="bench", base_dir=ROOT)
    problem = build_problem(config)
    if variant == "density":
        return config, problem
    radius = config.data["filter"]["radius"]
    problem.filter = SensitivityFilter(problem.mesh, radius)  # past DesignProblem's refusal
    if variant == "alike":
        class FilteredAlike(DesignProblem):
            def evaluate(self, x):
                evaluation = super().evaluate(x)
                rows = [evaluation.constraint_gradients[0]] + [
                    self._filtered_gradient(x, g) for g in evaluation.constraint_gradients[1:]]
                evaluation.constraint_gradients = np.vstack(rows)
                return evaluation

        problem.__class__ = FilteredAlike
    return config, problem


def part_b() -> str:
    from fesens.config import build_optimizer, preset_text
    from fesens.errors import SolverError
    from fesens.opt import optimize

    inverter = with_optimizer(preset_text("inverter_oc"), MMA).replace(
        '[filter]\ntype = "sensitivity"\nradius = 1.2', '[filter]\ntype = "density"\nradius = 1.2')
    inverter = inverter.replace("\n[stop]\n", "\n[[constraints.extra]]\ntype = \"compliance\"\n"
                                f"limit = {INVERTER_LIMIT}\n\n[stop]\n")
    mbb = preset_text("mbb")
    start = mbb.index("\n[objective]\n")
    mbb = mbb[:start] + f"""
[objective]
type = "volume"

[constraints]
volume_fraction = 1.0

[[constraints.extra]]
type = "compliance"
limit = {MBB_LIMIT}

[penalization]
type = "simp"
penalty = 3.0
minimum = 1e-9

[filter]
type = "density"
radius = 2.4

[optimizer]
type = "mma"
move = 0.2

[stop]
max_iter = 300
tol_change = 0.01
"""
    rows = []
    for problem_name, text in ((f"inverter, f·u ≤ {INVERTER_LIMIT:g}", inverter),
                               (f"MBB 60x20 min volume, f·u ≤ {MBB_LIMIT:g}", mbb)):
        for variant in ("unfiltered", "alike", "density"):
            config, problem = constrained_problem(text, variant)
            label = {"unfiltered": "sensitivity, constraint gradient exact",
                     "alike": "sensitivity, constraint gradient smoothed alike",
                     "density": "density filter"}[variant]
            try:
                result = optimize(problem, build_optimizer(config), max_iter=300,
                                  tol_change=0.01)
            except SolverError as error:
                rows.append([problem_name, label, "singular stiffness", "", "", "", "", ""])
                print(f"{problem_name}, {label}: {str(error)[:80]}", file=sys.stderr)
                continue
            last = result.history[-1]
            mean, count = checker(result.evaluation.density, config.data["mesh"]["cells"])
            rows.append([problem_name, label, f"{result.status}, {len(result.history)}",
                         f"{last['objective']:.4g}", f"{last['compliance']:.4g}",
                         f"{result.evaluation.volume_fraction:.4f}", f"{mean:.3f}",
                         str(count)])
    return table(["problem", "filter", "status, iterations", "objective", "f·u", "volume",
                  "checker", "windows > 0.5"], rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--append", action="store_true",
                        help="append the report to benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    loads = [load_average()]
    mechanism, _ = part_a()
    filters = part_b()
    loads.append(load_average())
    lines = ["## `bench_mechanism.py`: the force inverter against Sigmund's 99-line mechanism "
             "code; the sensitivity filter with constraints", "",
             *machine_lines(("numpy", "scipy", "scikit-sparse")), "",
             f"A. top({NELX}, {NELY}, {VOLFRAC}, {PENAL}, {RMIN}): u_out of the last "
             "iteration (negative: against the input force); the final design thresholded "
             "at its volume fraction (x = 1 or 1e-3) and solved again by the reference "
             "code.", "", mechanism, "",
             "B. MMA with a stiffness constraint: the sensitivity filter (radius 1.2 "
             "inverter, 2.4 MBB) both ways, and the density filter of the same radius.", "",
             filters, "", load_line(loads)]
    text = "\n".join(lines)
    record(text, args.append)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

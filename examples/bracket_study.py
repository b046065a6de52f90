"""Parameter study of the bundled 3D shelf bracket: 64 Latin-hypercube samples of Young's
modulus, Poisson's ratio, the load magnitude and the load angle, with the exact gradient of
three outputs with respect to all four parameters at every sample.

The bracket (``meshes/bracket3d.msh``, 5360 tet4, mm) is clamped at its bolt holes; a
traction of magnitude ``P`` (MPa) on the end face of the shelf points down, tilted by
``angle`` degrees towards +y: ``P (0, sin θ, −cos θ)``. Outputs: the compliance ``fᵀu``
(N·mm), the downward deflection of the shelf's tip (mm) and the von Mises p-norm (p = 8,
MPa). The setup (mesh, model, cached pattern and factorization) runs once per worker.

Linear elasticity gives closed forms the study must reproduce: compliance ∝ P²/E,
deflection ∝ P/E and the stresses do not depend on E, so the normalised sensitivities
(∂y/∂p)·(p/y) are exactly 2 and −1, 1 and −1, and 0 at every sample.

Run: ``python examples/bracket_study.py [--samples 64] [--fast] [--workers N] [--dask]
[--out DIR]`` (``--fast``: 8 samples) — with ``--dask`` the same study also runs on a local
Dask cluster and the two tables are compared. Writes the tables, ``tornado.png``,
``sweeps.png`` and ``scatter.png`` to ``--out`` (default ``results/examples/bracket_study``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from fesens.mesh import read_mesh
from fesens.objectives import Differentiable, compliance, displacement_at, stress_pnorm
from fesens.physics import Elasticity
from fesens.study import (
    Parameter,
    ParametricModel,
    StudyResults,
    latin_hypercube,
    run_study,
)
from fesens.study.report import write_report

MESH = Path(__file__).resolve().parents[1] / "meshes" / "bracket3d.msh"
TIP = (68.0, 20.0, 52.0)  # bottom edge of the shelf's end face, mid-width
PARAMETERS = [
    Parameter("E", range=(60e3, 80e3)),      # MPa (aluminium alloys)
    Parameter("nu", range=(0.28, 0.36)),
    Parameter("P", range=(0.5, 1.5)),        # MPa on the 8 x 40 mm² end face
    Parameter("angle", range=(-30.0, 30.0)),  # degrees from -z towards +y
]
FAST_SAMPLES = 8


def setup() -> Differentiable:
    """Once per worker: the mesh, the model with two unit tractions, the cached problem."""
    model = Elasticity(read_mesh(MESH), E=70e3, nu=0.33)
    model.fix("fixed")
    model.traction("load", (0.0, 0.0, -1.0), name="down")
    model.traction("load", (0.0, 1.0, 0.0), name="side")
    return Differentiable(model)


def evaluate(problem: Differentiable, p: dict) -> dict:
    """One sample (traced numpy): the solve and three outputs."""
    theta = p["angle"] * (np.pi / 180.0)
    state = problem.solve(E=p["E"], nu=p["nu"],
                          loads={"down": p["P"] * np.cos(theta), "side": p["P"] * np.sin(theta)})
    return {"compliance": compliance(state),
            "tip_deflection": -displacement_at(state, TIP, component=2),
            "stress": stress_pnorm(state, p=8.0)}


MODEL = ParametricModel(setup, evaluate, outputs=("compliance", "tip_deflection", "stress"),
                        name="bracket-study")


def run(n_samples: int = 64, *, out: str | Path | None = None, workers: int | None = None,
        scheduler=None, seed: int = 1, progress: bool = False) -> StudyResults:
    """The study on ``n_samples`` Latin-hypercube samples (locally, or on ``scheduler``)."""
    design = latin_hypercube(PARAMETERS, n_samples, seed=seed)
    return run_study(MODEL, design, out=out, workers=workers, scheduler=scheduler,
                     progress=progress)


def closed_form_errors(results: StudyResults) -> dict[str, float]:
    """Largest deviation of the normalised sensitivities from their closed forms."""
    expected = {("compliance", "P"): 2.0, ("compliance", "E"): -1.0,
                ("tip_deflection", "P"): 1.0, ("tip_deflection", "E"): -1.0,
                ("stress", "E"): 0.0}
    errors = {}
    for (output, parameter), value in expected.items():
        y, p = results.value(output), results.value(parameter)
        s = results.gradient(output, parameter) * p / y
        errors[f"S({output}, {parameter})"] = float(np.max(np.abs(s - value)))
    return errors


def on_local_cluster(n_samples: int, workers: int = 2) -> StudyResults:
    """The same study on a Dask ``LocalCluster`` (processes on 127.0.0.1)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as client:
        return run(n_samples, scheduler=client)


def main(argv: list[str] | None = None) -> StudyResults:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help=f"{FAST_SAMPLES} samples (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--out", type=Path, default=Path("results/examples/bracket_study"))
    parser.add_argument("--dask", action="store_true",
                        help="also run on a local Dask cluster and compare")
    args = parser.parse_args(argv)
    if args.fast:
        args.samples = FAST_SAMPLES
    if args.out.exists() and any(args.out.iterdir()):
        parser.error(f"{args.out} exists and is not empty; choose another --out")
    start = time.perf_counter()
    results = run(args.samples, out=args.out, workers=args.workers, progress=True)
    seconds = time.perf_counter() - start
    print(f"{len(results)} samples, {results.n_errors} errors, {seconds:.1f} s locally "
          f"({len(results) / seconds:.2g} samples/s)")
    for name, error in closed_form_errors(results).items():
        print(f"  {name}: max deviation from the closed form {error:.1e}")
    for row in results.sensitivities().rows:
        print(f"  S({row['output']}, {row['parameter']}) = {row['mean']:+.4f}")
    written = write_report(results, args.out, title="bracket3d")
    print("wrote", ", ".join(str(p) for p in written))
    if args.dask:
        start = time.perf_counter()
        remote = on_local_cluster(args.samples)
        print(f"Dask LocalCluster: {time.perf_counter() - start:.1f} s (cluster start included); "
              f"identical to the local run: {remote.same_values(results)}")
    return results


if __name__ == "__main__":
    main()

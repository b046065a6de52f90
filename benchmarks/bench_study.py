"""Parameter-study benchmark: samples per second, and what running a sample in a study
costs beyond the solve and its gradients.

The model is the bracket study of ``examples/bracket_study.py`` (``meshes/bracket3d.msh``,
5360 tet4, 4758 dofs; parameters E, ν, load magnitude and angle; outputs compliance, tip
deflection and stress p-norm, each with its gradient: one CHOLMOD factorization and three
reverse sweeps per sample) on a Latin hypercube of ``--samples`` points. It measures

* **bare**: ``model.values_and_gradients(p)`` called in a loop in this process after one
  setup: the solve with every gradient and nothing else (the floor);
* **in-process study**: ``run_study(workers=0)`` (adds the journal, fsync'ed per sample,
  the records and the table);
* **local processes**, 1 and 2 workers: ``run_study(workers=N)`` (spawn start, per-worker
  setup, pickling, the journal);
* **Dask LocalCluster**, 2 worker processes on 127.0.0.1: ``run_study(scheduler=client)``
  (the cluster's start is reported separately, not counted).

Columns: *wall* is the study from call to return (worker start and setup included);
*samples/s* is samples / wall; *first result* is the time until the first sample is back
(mostly worker start and setup); *steady samples/s* counts the samples after the first over
the time after it; *in-worker* is the median of the table's ``wall_time`` (one sample's
evaluation on its worker); *overhead / sample* is ``wall · workers / samples − bare``, the
machinery's cost per sample including the amortised start (for 2 workers on 2 cores it
also holds the cost of sharing the cores).

Run: ``python benchmarks/bench_study.py [--samples 64] [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _common import load_average, load_line, machine_lines, seconds, table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import bracket_study  # noqa: E402 - the example's model, importable by worker processes

from fesens.study import ParametricModel, run_study  # noqa: E402
from fesens.study.designs import latin_hypercube  # noqa: E402
from fesens.study.worker import limit_threads  # noqa: E402


def bare(design, repeats: int) -> dict:
    """Setup once, then ``values_and_gradients`` over the design (BLAS on one thread, as in
    the workers), after a warm-up: median time per sample."""
    model = bracket_study.MODEL
    start = time.perf_counter()
    model.context  # noqa: B018 - the setup
    setup = time.perf_counter() - start
    limit_threads(1)
    samples = [inputs for _, inputs in design.samples()][:repeats]
    for inputs in samples[:8]:  # warm-up: first calls allocate and fault in memory
        model.values_and_gradients(inputs)
    times = []
    for inputs in samples:
        start = time.perf_counter()
        model.values_and_gradients(inputs)
        times.append(time.perf_counter() - start)
    forward = []
    for inputs in samples[: max(3, repeats // 4)]:
        start = time.perf_counter()
        model.values(inputs)
        forward.append(time.perf_counter() - start)
    return {"setup": setup, "sample": statistics.median(times),
            "forward": statistics.median(forward)}


def fresh_model() -> ParametricModel:
    """The example's model, not yet set up in this process."""
    model = bracket_study.MODEL
    return ParametricModel(model.setup, model.evaluate, outputs=model.outputs, name=model.name)


def timed_study(design, **kwargs) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        results = run_study(fresh_model(), design, out=folder, progress=False, **kwargs)
        wall = time.perf_counter() - start
        journal = Path(folder) / "results.jsonl"
        assert len(journal.read_text().splitlines()) == len(design)
    if results.n_errors:
        raise RuntimeError(f"{results.n_errors} samples failed: {results.errors[0]['error']}")
    return {"wall": wall, "results": results}


def first_result_time(design, **kwargs) -> float:
    """Time until the first sample is back: a one-sample study (workers start and set up)."""
    one = latin_hypercube(bracket_study.PARAMETERS, 1, seed=0)
    start = time.perf_counter()
    run_study(fresh_model(), one, progress=False, **kwargs)
    return time.perf_counter() - start


def row(name: str, workers: int, n: int, run: dict, first: float, floor: float) -> list[str]:
    wall = run["wall"]
    in_worker = statistics.median(run["results"].columns()["wall_time"])
    steady = (n - 1) / (wall - first) if wall > first else float("nan")
    overhead = wall * max(workers, 1) / n - floor
    return [name, str(workers), str(n), seconds(wall), f"{n / wall:.2f}", seconds(first),
            f"{steady:.2f}", seconds(in_worker), seconds(overhead)]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=64, help="samples per study (64)")
    parser.add_argument("--quick", action="store_true", help="16 samples, fewer repeats")
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask LocalCluster")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    n = 16 if args.quick else args.samples
    header = machine_lines(("numpy", "scipy", "scikit-sparse", "dask", "distributed",
                            "threadpoolctl"))
    loads = [load_average()]
    design = latin_hypercube(bracket_study.PARAMETERS, n, seed=1)
    floor = bare(design, min(n, 16 if args.quick else 32))
    runs = [("in-process study", 0, timed_study(design, workers=0),
             first_result_time(design, workers=0))]
    for workers in (1, 2):
        runs.append(("local processes", workers, timed_study(design, workers=workers),
                     first_result_time(design, workers=workers)))
    cluster_start = None
    if not args.no_dask:
        from distributed import Client, LocalCluster

        start = time.perf_counter()
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          host="127.0.0.1", dashboard_address="127.0.0.1:0",
                          silence_logs=50) as cluster, Client(cluster) as client:
            cluster_start = time.perf_counter() - start
            runs.append(("Dask LocalCluster", 2, timed_study(design, scheduler=client),
                         first_result_time(design, scheduler=client)))
            same = runs[-1][2]["results"].same_values(runs[2][2]["results"])
    loads.append(load_average())
    print("# Parameter-study benchmark (bench_study.py)\n")
    print("\n".join(header))
    print(load_line(loads) + "\n")
    print(f"bracket study: {n} samples, 4 parameters, 3 outputs with gradients (4758 dofs)\n")
    print(table(["bare (in this process)", "time"], [
        ["setup (mesh, model, pattern)", seconds(floor["setup"])],
        ["forward only (3 outputs)", seconds(floor["forward"])],
        ["values + 12 gradients", seconds(floor["sample"])],
    ]))
    print()
    headers = ["where", "workers", "samples", "wall", "samples/s", "first result",
               "steady samples/s", "in-worker", "overhead / sample"]
    print(table(headers, [row(name, w, n, run, first, floor["sample"])
                          for name, w, run, first in runs]))
    if cluster_start is not None:
        print(f"\nDask LocalCluster start (2 processes, not counted above): "
              f"{seconds(cluster_start)}; table identical to 2 local processes: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

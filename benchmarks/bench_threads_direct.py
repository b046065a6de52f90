"""BLAS threads of a direct solve: fesens's rule against an expert's code on 1 and 2 threads.

For 2D quad4 and 3D hex8 cantilevers (:func:`_common.cantilever_model`: plane stress with
a corner load in 2D, a traction on the ``right`` face in 3D; SIMP ``x**3`` at ``x = 0.5``,
CHOLMOD) the script times ``value_and_grad`` of the compliance:

* fesens, with the BLAS threads its rule picks (:func:`fesens.openmp.blas_threads`, from
  the flops and the largest front of CHOLMOD's analysis; no thread variable set);
* the hand-written adjoint of :class:`bench_ad.HandAdjoint` (cached pattern, one symbolic
  analysis, a numeric factorization per call) with ``OPENBLAS_NUM_THREADS`` (and
  ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``) set to 1 and to 2;
* with ``--forced``, also fesens with ``FESENS_THREADS`` = 1 and 2.

Each case is a fresh process that builds the problem, evaluates once (the symbolic
analysis) and then times ``--calls`` evaluations, each at a new design (``x`` drifts by
10⁻⁹ per call, so every call re-factorizes). The cases of a size run in turn for
``--rounds`` rounds, in alternating order; a time is the minimum over all its calls. Every
process runs under the ``OMP_THREAD_LIMIT`` fesens sets when it loads CHOLMOD (see
:mod:`fesens.openmp`), the expert's included, so the cases differ in their BLAS threads
only. The machine may be shared: the load average is printed at the start and the end.
On a loaded machine a process with two threads takes a larger share of the cores than one
with a single thread, which is no faster factorization: run the script at raised priority
there (``nice -n -10``, as root; the case processes inherit it) so that they get the cores.

Run ``python benchmarks/bench_threads_direct.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from _common import (
    THREAD_VARIABLES,
    GridSize,
    load_average,
    load_line,
    machine_lines,
    ratio,
    run_case,
    seconds,
    serve_case,
    table,
)

SIZES = ("200x100", "400x200", "800x400", "16x8x8", "24x12x12", "32x16x16", "48x24x24")
DENSITY, PENALTY = 0.5, 3.0
CHILD_TIMEOUT = 1800.0
#: BLAS thread variables an expert sets (OMP_THREAD_LIMIT stays as fesens sets it).
BLAS_THREAD_VARIABLES = tuple(v for v in THREAD_VARIABLES if v != "OMP_THREAD_LIMIT")


def _setup(label: str):
    """The fesens model and ``FemSetup`` of ``label`` (bench_ad's problem)."""
    from bench_ad import FemSetup

    return FemSetup(GridSize.parse(label))


def _times(gradient, x: np.ndarray, calls: int) -> list[float]:
    """Seconds of ``calls`` evaluations of ``gradient`` at drifting designs, after one
    untimed evaluation (the symbolic analysis)."""
    gradient(x)
    times = []
    for k in range(1, calls + 1):
        design = x * (1.0 + k * 1e-9)
        start = time.perf_counter()
        gradient(design)
        times.append(time.perf_counter() - start)
    return times


def case_fesens(label: str, calls: int) -> dict[str, Any]:
    """fesens's ``value_and_grad`` of the compliance; the threads its rule chose."""
    setup = _setup(label)
    gradient = setup.functions("fesens", "compliance")["gradient"]
    times = _times(gradient, setup.x, calls)
    pattern = setup.model.operator("ff").pattern
    count, reason = pattern.threads(direct=True)
    work = pattern.solver("cholmod").work
    return {"times": times, "threads": count, "reason": reason, "n": pattern.shape[0],
            "flops": work.flops if work else None,
            "front": work.largest_front if work else None}


def case_hand(label: str, calls: int) -> dict[str, Any]:
    """The expert's hand-written adjoint, on the BLAS threads of its environment."""
    setup = _setup(label)
    setup.add_hand()
    gradient = setup.functions("hand", "compliance")["gradient"]
    return {"times": _times(gradient, setup.x, calls)}


CASES = {"fesens": case_fesens, "hand": case_hand}


def _environment(threads: int | None, variable_names: Sequence[str]) -> dict[str, str]:
    """This process's environment without any thread variable, then ``variable_names``
    set to ``threads`` (none when ``threads`` is None)."""
    env = {k: v for k, v in os.environ.items()
           if k not in (*BLAS_THREAD_VARIABLES, "FESENS_THREADS")}
    if threads is not None:
        env.update(dict.fromkeys(variable_names, str(threads)))
    return env


def _run(case: str, label: str, calls: int, env: dict[str, str]) -> dict[str, Any]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        return run_case(__file__, case, label, calls, timeout=CHILD_TIMEOUT)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def variants(forced: bool) -> dict[str, tuple[str, dict[str, str]]]:
    """The cases of one size: name -> (case, environment)."""
    found = {"fesens rule": ("fesens", _environment(None, ())),
             "expert 1 thread": ("hand", _environment(1, BLAS_THREAD_VARIABLES)),
             "expert 2 threads": ("hand", _environment(2, BLAS_THREAD_VARIABLES))}
    if forced:
        found["fesens 1 thread"] = ("fesens", _environment(1, ("FESENS_THREADS",)))
        found["fesens 2 threads"] = ("fesens", _environment(2, ("FESENS_THREADS",)))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), metavar="NXxNY[xNZ]")
    parser.add_argument("--calls", type=int, default=3, help="timed calls per process")
    parser.add_argument("--rounds", type=int, default=2, help="processes per case")
    parser.add_argument("--forced", action="store_true",
                        help="also time fesens with FESENS_THREADS=1 and 2")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        serve_case(CASES, json.loads(args.case))
        return 0
    print("\n".join(machine_lines(["numpy", "scipy", "scikit-sparse"])), "\n")
    loads, rows = [load_average()], []
    cases = variants(args.forced)
    for label in args.sizes:
        found: dict[str, list[float]] = {name: [] for name in cases}
        info: dict[str, Any] = {}
        for round_ in range(args.rounds):
            order = list(cases) if round_ % 2 == 0 else list(reversed(cases))
            for name in order:
                case, env = cases[name]
                result = _run(case, label, args.calls, env)
                if "error" in result:
                    print(f"{label} {name}: {result['error']}", file=sys.stderr)
                    continue
                found[name].extend(result["times"])
                if name == "fesens rule":
                    info = result
        best = {name: min(times) if times else None for name, times in found.items()}
        rule = best["fesens rule"]
        experts = [best[name] for name in ("expert 1 thread", "expert 2 threads") if best[name]]
        flops = f"{info['flops']:.2e}" if info.get("flops") else "-"
        rows.append([label, str(info.get("n", "-")), flops, str(info.get("front", "-")),
                     str(info.get("threads", "-")), seconds(rule),
                     *(seconds(best[name]) for name in cases if name != "fesens rule"),
                     ratio(rule, best["expert 1 thread"]), ratio(rule, best["expert 2 threads"]),
                     ratio(rule, min(experts, default=None))])
        print(f"  {label}: done ({info.get('reason', '')})", file=sys.stderr, flush=True)
    loads.append(load_average())
    others = [name for name in cases if name != "fesens rule"]
    print(table(["size", "unknowns", "flops", "front", "rule threads", "fesens rule",
                 *others, "rule / expert 1", "rule / expert 2", "rule / best expert"], rows))
    print(load_line(loads))
    return 0


if __name__ == "__main__":
    sys.exit(main())

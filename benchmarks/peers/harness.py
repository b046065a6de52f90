"""What every code's case process of ``bench_nonlinear_peers.py`` measures, and how.

A peer script builds its model of :mod:`cantilever` and hands two functions to
:func:`serve`:

* ``forward(theta) -> compliance``: the load-stepped Newton solve, nothing recorded for a
  gradient;
* ``value_and_grad(theta) -> (compliance, gradient)``: the same solve as the code runs it when
  a gradient is wanted, then its adjoint; ``gradient`` has shape ``(n_cells,)``.

:func:`serve` then measures, in this fresh process: the set-up, one cold call of each (JAX
compiles then), ``repeats`` warm calls of each (medians), the peak resident memory of a warm
forward and of a warm gradient evaluation above what is resident before it (the free heap
handed back and the high-water mark reset first, as ``bench_ad.py`` does), the process's
whole ``ru_maxrss``, and optionally a central-difference check of the gradient. It prints one
``BENCH-RESULT`` line of JSON.

Only the standard library, numpy and ``_common``'s measuring helpers (importable from the
peers' environment: ``_common`` imports fesens lazily, in the header helpers only).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import (  # noqa: E402  (the benchmarks folder is put on the path just above)
    RESULT_PREFIX,
    peak_rss_mb,
    release_free_memory,
    resident_mb,
    timed_warm,
)
from cantilever import FD_STEP, Cantilever, gradient_direction  # noqa: E402

Forward = Callable[[np.ndarray], float]
ValueAndGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]


def case_spec() -> dict[str, Any]:
    """The JSON given with ``--case``: ``size`` (``"16x8x8"``), ``repeats``, ``check``."""
    parser = argparse.ArgumentParser(description="one case of bench_nonlinear_peers.py")
    parser.add_argument("--case", required=True, help='e.g. {"size": "16x8x8", "repeats": 1, '
                        '"check": true}')
    return json.loads(parser.parse_args().case)


def serve(code: str, versions: dict[str, str], build: Callable[[Cantilever],
          tuple[Forward, ValueAndGrad]]) -> None:
    """Run the case given by ``--case`` with the model ``build(problem)`` makes; print the
    result line (see the module docstring for what is measured)."""
    result = measure(code, versions, build, case_spec())
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def measure(code: str, versions: dict[str, str], build: Callable[[Cantilever],
            tuple[Forward, ValueAndGrad]], spec: dict[str, Any]) -> dict[str, Any]:
    """Measure the case ``spec`` (``size``, ``repeats``, ``check``) with the model
    ``build(problem)`` makes, in this process; the result entries (see the module
    docstring). :func:`serve` prints them; fesens's case returns them to its own harness."""
    problem = Cantilever.parse(spec["size"])
    theta = np.ones(problem.n_cells)
    result: dict[str, Any] = {"code": code, "size": problem.label, "versions": versions}

    start = time.perf_counter()
    forward, value_and_grad = build(problem)
    result["setup_s"] = time.perf_counter() - start
    start = time.perf_counter()
    forward(theta)
    result["forward_cold_s"] = time.perf_counter() - start
    start = time.perf_counter()
    value_and_grad(theta)
    result["gradient_cold_s"] = time.perf_counter() - start

    # The whole-process high-water mark so far (imports, set-up, cold calls): the resets
    # below lose it, so the process peak is the largest of the marks seen.
    peaks = [peak_rss_mb()]
    repeats = int(spec.get("repeats", 1))
    release_free_memory()
    result["resident_mb"] = resident_mb()
    result["forward_s"], result["forward_peak_mb"], peak, compliance = timed_warm(
        lambda: forward(theta), repeats)
    peaks.append(peak)
    result["gradient_s"], result["gradient_peak_mb"], peak, (value, gradient) = timed_warm(
        lambda: value_and_grad(theta), repeats)
    peaks.append(peak)
    result["compliance"] = float(compliance)
    result["compliance_from_gradient_run"] = float(value)
    result["gradient"] = np.asarray(gradient, dtype=float).tolist()

    if spec.get("check"):
        direction = gradient_direction(problem.n_cells)
        plus = forward(theta + FD_STEP * direction)
        minus = forward(theta - FD_STEP * direction)
        central = (plus - minus) / (2.0 * FD_STEP)
        adjoint = float(np.dot(gradient, direction))
        result["fd_directional"] = central
        result["adjoint_directional"] = adjoint
        result["fd_rel_error"] = abs(adjoint - central) / abs(central)
    result["process_peak_mb"] = max(*peaks, peak_rss_mb())
    return result

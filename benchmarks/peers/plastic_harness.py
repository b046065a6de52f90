"""What every code's case process of ``bench_plasticity_peers.py`` measures, and how.

The same measurements as :mod:`harness` (the finite-strain peers'), for the J2-plastic block
of :mod:`plastic_block`. A code's script builds its model and hands two functions to
:func:`serve`:

* ``forward(theta) -> reactions``: the whole load history, nothing recorded for a gradient;
  ``reactions`` is the top face's reaction ``F_n`` at every load factor, shape ``(N + 1,)``;
* ``value_and_grad(theta) -> (F, gradient)``: the same history as the code runs it when a
  gradient is wanted, then its adjoint; ``F`` the last reaction, ``gradient`` ``dF/dθ`` of
  shape ``(n_cells,)``;

and, optionally, functions returning more entries of the result (e.g. what its last run
did), called at the end.

:func:`serve` then measures, in this fresh process: the set-up, one cold call of each (JAX
compiles then), ``repeats`` warm calls of each (medians), the peak resident memory of a warm
forward and of a warm gradient evaluation above what is resident before it, the process's
whole ``ru_maxrss``, and optionally a central-difference check of the gradient along a fixed
random direction. It prints one ``BENCH-RESULT`` line of JSON.

Only the standard library, numpy and ``_common``'s measuring helpers (importable from the
peers' environment).
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
from plastic_block import FD_STEP, PlasticBlock, gradient_direction  # noqa: E402

Forward = Callable[[np.ndarray], np.ndarray]
ValueAndGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]
Build = Callable[[PlasticBlock], tuple[Forward, ValueAndGrad]
                 | tuple[Forward, ValueAndGrad, Callable[[], dict[str, Any]]]]


def case_spec() -> dict[str, Any]:
    """The JSON given with ``--case``: ``size`` (``"8x8x8"``), ``repeats``, ``check``."""
    parser = argparse.ArgumentParser(description="one case of bench_plasticity_peers.py")
    parser.add_argument("--case", required=True, help='e.g. {"size": "8x8x8", "repeats": 1, '
                        '"check": true}')
    return json.loads(parser.parse_args().case)


def serve(code: str, versions: dict[str, str], build: Build) -> None:
    """Run the case given by ``--case`` with the model ``build(problem)`` makes; print the
    result line."""
    result = measure(code, versions, build, case_spec())
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def measure(code: str, versions: dict[str, str], build: Build, spec: dict[str, Any]
            ) -> dict[str, Any]:
    """Measure the case ``spec`` (``size``, ``repeats``, ``check``) with the model
    ``build(problem)`` makes, in this process (see the module docstring)."""
    problem = PlasticBlock.parse(spec["size"])
    theta = np.ones(problem.n_cells)
    result: dict[str, Any] = {"code": code, "size": problem.label, "versions": versions}

    start = time.perf_counter()
    forward, value_and_grad, *extras = build(problem)
    result["setup_s"] = time.perf_counter() - start
    start = time.perf_counter()
    forward(theta)
    result["forward_cold_s"] = time.perf_counter() - start
    start = time.perf_counter()
    value_and_grad(theta)
    result["gradient_cold_s"] = time.perf_counter() - start

    # The resets below lose the high-water mark so far, so the process peak is the largest
    # of the marks seen.
    peaks = [peak_rss_mb()]
    repeats = int(spec.get("repeats", 1))
    release_free_memory()
    result["resident_mb"] = resident_mb()
    result["forward_s"], result["forward_peak_mb"], peak, reactions = timed_warm(
        lambda: forward(theta), repeats)
    peaks.append(peak)
    result["gradient_s"], result["gradient_peak_mb"], peak, (value, gradient) = timed_warm(
        lambda: value_and_grad(theta), repeats)
    peaks.append(peak)
    result["reactions"] = np.asarray(reactions, dtype=float).tolist()
    result["reaction"] = float(np.asarray(reactions)[-1])
    result["reaction_from_gradient_run"] = float(value)
    result["gradient"] = np.asarray(gradient, dtype=float).tolist()

    if spec.get("check"):
        direction = gradient_direction(problem.n_cells)
        plus = float(np.asarray(forward(theta + FD_STEP * direction))[-1])
        minus = float(np.asarray(forward(theta - FD_STEP * direction))[-1])
        central = (plus - minus) / (2.0 * FD_STEP)
        adjoint = float(np.dot(gradient, direction))
        result["fd_directional"] = central
        result["adjoint_directional"] = adjoint
        result["fd_rel_error"] = abs(adjoint - central) / abs(central)
    result["process_peak_mb"] = max(*peaks, peak_rss_mb())
    for extra in extras:
        result.update(extra())
    return result

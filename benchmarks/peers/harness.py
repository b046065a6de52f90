"""What every code's case process of ``bench_nonlinear_peers.py`` measures, and how.

A peer script builds its model of :mod:`cantilever` and hands two functions to
:func:`serve`:

* ``forward(theta) -> compliance``: the load-stepped Newton solve, nothing recorded for a
  gradient;
* ``value_and_grad(theta) -> (compliance, gradient)``: the same solve as the code runs it when
  a gradient is wanted, then its adjoint; ``gradient`` has shape ``(n_cells,)``;

and, optionally, functions returning more entries of the result, called at the end.

:func:`serve` then measures, in this fresh process: the set-up, one cold call of each (JAX
compiles then), ``repeats`` warm calls of each (medians), the peak resident memory of a warm
forward and of a warm gradient evaluation above what is resident before it (the free heap
handed back and the high-water mark reset first, as ``bench_ad.py`` does), the process's
whole ``ru_maxrss``, and optionally a central-difference check of the gradient. It prints one
``BENCH-RESULT`` line of JSON. :func:`measure_problem` does the measuring for
:mod:`plastic_harness` too.

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

Forward = Callable[[np.ndarray], Any]
ValueAndGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]
#: ``build(problem) -> (forward, value_and_grad, *extras)``: each extra returns more result
#: entries, called at the end (e.g. what the last run did).
Build = Callable[[Any], tuple[Forward, ValueAndGrad] | tuple[Callable[..., Any], ...]]


def case_spec(script: str, example: str) -> dict[str, Any]:
    """The JSON given with ``--case`` to a case of ``script``: ``size`` (``example``),
    ``repeats``, ``check``."""
    parser = argparse.ArgumentParser(description=f"one case of {script}")
    parser.add_argument("--case", required=True, help=f'e.g. {{"size": "{example}", '
                        '"repeats": 1, "check": true}')
    return json.loads(parser.parse_args().case)


def serve(code: str, versions: dict[str, str], build: Build) -> None:
    """Run the case given by ``--case`` with the model ``build(problem)`` makes; print the
    result line (see the module docstring for what is measured)."""
    print_result(measure(code, versions, build, case_spec("bench_nonlinear_peers.py",
                                                          "16x8x8")))


def print_result(result: dict[str, Any]) -> None:
    """The case process's one result line."""
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def measure(code: str, versions: dict[str, str], build: Build, spec: dict[str, Any]
            ) -> dict[str, Any]:
    """Measure the case ``spec`` (``size``, ``repeats``, ``check``) with the model
    ``build(problem)`` makes, in this process; the result entries (see the module
    docstring). :func:`serve` prints them; fesens's case returns them to its own harness."""
    return measure_problem(
        Cantilever.parse(spec["size"]), code, versions, build, spec, fd_step=FD_STEP,
        direction=gradient_direction, scalar=float,
        entries=lambda compliance, value: {"compliance": float(compliance),
                                           "compliance_from_gradient_run": float(value)})


def measure_problem(problem: Any, code: str, versions: dict[str, str], build: Build,
                    spec: dict[str, Any], *, fd_step: float,
                    direction: Callable[[int], np.ndarray], scalar: Callable[[Any], float],
                    entries: Callable[[Any, float], dict[str, Any]]) -> dict[str, Any]:
    """Measure one case of a peer comparison's ``problem`` (it has ``n_cells`` and
    ``label``) as the module docstring says, in this process.

    ``entries(output, value)`` are the result entries of a warm forward's ``output`` and of
    the gradient run's value; ``scalar(output)`` is the objective a forward returned, which
    the central difference of step ``fd_step`` along ``direction(n_cells)`` compares.
    """
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

    # The whole-process high-water mark so far (imports, set-up, cold calls): the resets
    # below lose it, so the process peak is the largest of the marks seen.
    peaks = [peak_rss_mb()]
    repeats = int(spec.get("repeats", 1))
    release_free_memory()
    result["resident_mb"] = resident_mb()
    result["forward_s"], result["forward_peak_mb"], peak, output = timed_warm(
        lambda: forward(theta), repeats)
    peaks.append(peak)
    result["gradient_s"], result["gradient_peak_mb"], peak, (value, gradient) = timed_warm(
        lambda: value_and_grad(theta), repeats)
    peaks.append(peak)
    result.update(entries(output, value))
    result["gradient"] = np.asarray(gradient, dtype=float).tolist()

    if spec.get("check"):
        along = direction(problem.n_cells)
        plus = scalar(forward(theta + fd_step * along))
        minus = scalar(forward(theta - fd_step * along))
        central = (plus - minus) / (2.0 * fd_step)
        adjoint = float(np.dot(gradient, along))
        result["fd_directional"] = central
        result["adjoint_directional"] = adjoint
        result["fd_rel_error"] = abs(adjoint - central) / abs(central)
    result["process_peak_mb"] = max(*peaks, peak_rss_mb())
    for extra in extras:
        result.update(extra())
    return result

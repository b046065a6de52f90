"""J2 plasticity over a load history: the forward run, the gradient with every increment
stored and with √N stored (binomial checkpoints), their times and peak memory.

Two problems, 20 increments each with loading, unloading, reversal and reloading
(``t = 0, 0.1, …, 1, 0.7, …, −0.5, −0.3, 0, 0.3, 0.6, 0.8``), linear isotropic and
kinematic hardening, the driven face's prescribed displacement scaled by ``t``:

* ``plate``: a 2D plane-strain plate of 80x40 quad4 (2 x 1), clamped on the left, its right
  edge moved vertically (bending, a plastic zone that spreads and reverses);
* ``block``: a 3D block of 16x8x8 hex8 (2 x 1 x 1), clamped at x = 0, its far face moved
  along z.

The objective sums over the increments the reaction on the driven face and the plastic
work; its gradient is taken with respect to the density ``scale`` of every cell (the design
variables). The repeats alternate forward, gradient (all stored), gradient (√N stored) and
each time is the minimum over the repeats; the ratios are of the process's CPU time (the
machine is shared: its wall times vary by half from run to run, its CPU times far less;
run it on one BLAS thread, ``OPENBLAS_NUM_THREADS=1``, so that CPU time is the work).
Memory: the peak resident size above the size before (``ru_maxrss`` after a reset of the
high-water mark, Linux), and the reference of the target, the stored states (their bytes,
counted) plus the forward's own peak (one factorization of the tangent and the working set
of one increment).

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_plasticity.py [--problems plate block]
        [--repeats 3] [--record]

Targets: gradient ≤ 1.5x the forward (all stored), ≤ 2.5x (√N stored); the √N gradient's
memory within 1.2x of the reference.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from _common import (
    machine_lines,
    megabytes,
    peak_rss_mb,
    ratio,
    record,
    release_free_memory,
    reset_peak_rss,
    resident_mb,
    seconds,
    table,
)

from fesens.ad import value_and_grad
from fesens.fem.analysis.incremental import IncrementalAnalysis
from fesens.mesh import box, rectangle
from fesens.physics.elastoplasticity import Elastoplasticity

FACTORS = [0, .1, .2, .3, .4, .5, .6, .7, .8, .9, 1.0, .7, .4, .1, -.2, -.5, -.3, 0, .3, .6, .8]
MATERIAL = {"E": 200e3, "nu": 0.3, "yield_stress": 250.0, "isotropic_modulus": 2e3,
            "kinematic_modulus": 5e3}


def plate():
    mesh = rectangle(80, 40, 2.0, 1.0, "quad4")
    model = Elastoplasticity(mesh, **MATERIAL)
    model.fix("left").fix("right", components=[1], value=0.02)
    return model, 2 * np.asarray(mesh.node_sets["right"]) + 1


def block():
    mesh = box(16, 8, 8, 2.0, 1.0, 1.0, "hex8")
    model = Elastoplasticity(mesh, **MATERIAL)
    model.fix("left").fix("right", components=[2], value=0.02)
    return model, 3 * np.asarray(mesh.node_sets["right"]) + 2


PROBLEMS = {"plate": plate, "block": block}


def _term(state, t, driven):
    return 1e-3 * np.sum(state.reactions[driven]) + 1e-2 * state.dissipation


def _measure(fn):
    """``(wall seconds, CPU seconds, peak MiB above the resident size before, value)`` of
    one call."""
    release_free_memory()
    before = resident_mb()
    reset_peak_rss()
    start, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return (time.perf_counter() - start, time.process_time() - cpu, peak_rss_mb() - before,
            value)


def _state_bytes(history: IncrementalAnalysis, model) -> int:
    """Bytes of one stored increment: free values, internal variables, internal forces."""
    sizes = [model.free_dofs.size, model.dofmap.n_dofs]
    sizes += [v.size for v in model.history_start().values()]
    return 8 * sum(sizes)


def run(name: str, repeats: int) -> dict:
    model, driven = PROBLEMS[name]()
    n = len(FACTORS) - 1
    sqrt_states = math.ceil(math.sqrt(n))
    runs = {"forward": IncrementalAnalysis(model, FACTORS),
            "gradient (all stored)": IncrementalAnalysis(model, FACTORS),
            f"gradient ({sqrt_states} stored)": IncrementalAnalysis(model, FACTORS,
                                                                     max_states=sqrt_states)}
    scale = np.ones(model.mesh.n_cells)
    times = {key: math.inf for key in runs}
    cpu = dict(times)
    memory, kept, gradients = {}, {}, {}
    for _ in range(repeats):
        for key, history in runs.items():
            def J(s, history=history):
                return np.sum(history.values(_term, (driven,), scale=s))

            fn = (lambda J=J: J(scale)) if key == "forward" else (
                lambda J=J: value_and_grad(J)(scale))
            seconds_, cpu_seconds, peak, value = _measure(fn)
            times[key] = min(times[key], seconds_)
            cpu[key] = min(cpu[key], cpu_seconds)
            memory[key] = max(memory.get(key, 0.0), peak)
            kept[key] = history.stats.get("kept", 0)
            if key != "forward":
                gradients[key] = value[1]
    stored = _state_bytes(runs["forward"], model) / 2**20
    keys = list(runs)
    same = np.array_equal(gradients[keys[1]], gradients[keys[2]])
    return {"name": name, "cells": f"{model.mesh.n_cells} {model.mesh.cell_type}",
            "dofs": model.dofmap.n_dofs, "times": times, "cpu": cpu, "memory": memory, "kept": kept,
            "state_mb": stored, "same_bits": same, "keys": keys,
            "iterations": runs["forward"].stats.get("newton_iterations")}


def report(results: list[dict]) -> str:
    rows = []
    for r in results:
        forward = r["cpu"][r["keys"][0]]
        reference = r["memory"][r["keys"][0]] + r["kept"][r["keys"][2]] * r["state_mb"]
        for key in r["keys"]:
            target = {1: 1.5, 2: 2.5}.get(r["keys"].index(key))
            time_ratio = r["cpu"][key] / forward
            met = "" if target is None else ("met" if time_ratio <= target else "MISSED")
            memory_note = ""
            if key == r["keys"][2]:
                memory_ratio = r["memory"][key] / reference
                memory_note = (f"{memory_ratio:.2f} of ref. {reference:.0f} MiB "
                               f"({'met' if memory_ratio <= 1.2 else 'MISSED'})")
            rows.append([f"{r['name']} ({r['cells']}, {r['dofs']} dofs)", key,
                         seconds(r["times"][key]), seconds(r["cpu"][key]),
                         ratio(r["cpu"][key], forward),
                         f"≤ {target}x: {met}" if target else "", str(r["kept"][key]),
                         megabytes(r["memory"][key]), memory_note])
    lines = ["### J2 plasticity over 20 increments: forward and gradient (bench_plasticity.py)",
             "", *machine_lines(["numpy", "scipy", "scikit-sparse"]), "",
             table(["problem", "run", "wall (min)", "CPU (min)", "CPU / forward", "target",
                    "states kept",
                    "peak MiB", "√N memory vs stored states + forward peak"], rows), ""]
    for r in results:
        lines.append(f"- {r['name']}: {r['iterations']} Newton iterations (incl. predictors) "
                     f"over 20 increments; one stored state {r['state_mb']:.2f} MiB; "
                     f"gradients with all stored and √N stored "
                     f"{'bit-identical' if r['same_bits'] else 'DIFFERENT'}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", choices=list(PROBLEMS),
                        default=list(PROBLEMS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--record", action="store_true",
                        help="append the report to benchmarks/RESULTS.md")
    args = parser.parse_args()
    results = [run(name, args.repeats) for name in args.problems]
    record(report(results), args.record)


if __name__ == "__main__":
    main()

"""Bit-level fingerprints of results, to show that a refactoring changed no bit.

Prints one SHA-256 (first 16 hex digits) per case, of the exact float64 bytes of what the
case computes:

* **time runs** (``--part time``): the values and the gradient with respect to every kind of
  input of small linear and nonlinear transient heat runs (every first-order scheme, a
  variable step, checkpointing, a lumped mass), Newmark and generalized-α dynamic runs
  (stored states and checkpointing) and a harmonic response;
* **presets** (``--part presets``): every preset's first ``--iterations`` optimization
  iterations, run by ``fesens optimize --preset NAME --max-iter K``: the history's
  objective, constraint and change columns and the design written at the end (the
  ``.npy``/``.npz`` files of the results folder, the checkpoint's design among them),
  timings left out.

Run it before and after a change and compare the two outputs line by line (``diff``): a
behaviour-preserving change prints the same lines. The hashes depend on the machine's
floating-point kernels (BLAS, SuiteSparse), so compare outputs of one machine only.

Usage::

    .venv/bin/python benchmarks/fingerprints.py > before.txt      # ~10 min on 2 cores
    .venv/bin/python benchmarks/fingerprints.py --part time       # the time runs, ~1 min
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

TIMING_COLUMNS = ("time", "seconds", "wall", "elapsed", "cpu")


def digest(*arrays) -> str:
    """The first 16 hex digits of the SHA-256 of the arrays' float64 bytes, in order."""
    hasher = hashlib.sha256()
    for array in arrays:
        hasher.update(np.ascontiguousarray(np.asarray(array, dtype=float)).tobytes())
    return hasher.hexdigest()[:16]


# --------------------------------------------------------------------------- time runs
def _plate(nonlinear: bool = False):
    from fesens.mesh.generators import rectangle
    from fesens.physics import HeatConduction
    from fesens.physics.nonlinear_conduction import NonlinearHeatConduction

    mesh = rectangle(6, 3, 1.0, 0.5)
    if nonlinear:
        model = NonlinearHeatConduction(mesh, conductivity=2.0, beta=0.5)
        model.flux_load("right", 1.0, name="f")
    else:
        model = HeatConduction(mesh, conductivity=2.0)
        model.flux("right", 1.0, name="f")
    model.fix("left", value=0.5)
    model.heat_source(3.0, name="q")
    return model


def _heat_inputs(model) -> dict:
    rng = np.random.default_rng(5)
    n_cells, n_dofs = model.mesh.n_cells, model.dofmap.n_dofs
    inputs = {"k": 2.0 * (1.0 + 0.3 * rng.random(n_cells)), "c": 1.0 + rng.random(n_cells),
              "T0": 0.1 * rng.random(n_dofs), "m": np.array(1.3), "hq": np.array([0.0, 1.0, 0.4]),
              "w": 1.0 + rng.random(n_dofs), "X": np.array(model.mesh.points, dtype=float)}
    inputs["g"] = np.full(model.constrained_dofs.size, 0.5)
    return inputs


def _heat_case(nonlinear: bool, **options) -> Callable[[], tuple]:
    def run():
        from fesens.ad import value_and_grad
        from fesens.fem.transient import TransientProblem

        model = _plate(nonlinear)
        problem = TransientProblem(model, **options)
        table = np.array([0.0, 0.05, 0.2])
        names = sorted(_heat_inputs(model))

        def J(*values):
            p = dict(zip(names, values, strict=True))
            series = problem.values(lambda T, t, w: np.sum(w * T ** 2), term_args=(p["w"],),
                                    T0=p["T0"], loads={"f": p["m"]},
                                    histories={"q": (table, p["hq"])}, heat_capacity=p["c"],
                                    conductivity=p["k"], points=p["X"], dirichlet=p["g"])
            return np.sum(series * np.linspace(0.5, 1.5, series.size))

        inputs = _heat_inputs(model)
        value, grads = value_and_grad(J, argnums=tuple(range(len(names))))(
            *(inputs[n] for n in names))
        return (value, *grads)
    return run


def _cantilever():
    from fesens.mesh.generators import rectangle
    from fesens.physics import Elasticity

    model = Elasticity(rectangle(8, 2, 4.0, 0.5), E=100.0, nu=0.3, plane="stress")
    model.fix("left")
    model.traction("right", (0.0, -1.0), name="tip")
    return model


def _dynamic_case(**options) -> Callable[[], tuple]:
    def run():
        from fesens.ad import value_and_grad
        from fesens.fem.transient.dynamics import DynamicProblem

        model = _cantilever()
        problem = DynamicProblem(model, t_end=4.0, dt=0.05, **options)
        rng = np.random.default_rng(3)
        n_cells, n_dofs = model.mesh.n_cells, model.dofmap.n_dofs
        inputs = {"E": 100.0 * (1.0 + 0.3 * rng.random(n_cells)),
                  "rho": 1.0 + 0.2 * rng.random(n_cells), "cM": np.array(0.05),
                  "cK": np.array(0.004), "m": np.array(1.2),
                  "hq": np.array([0.0, 1.0, 0.5, 0.8]), "u0": 0.01 * rng.random(n_dofs),
                  "v0": 0.01 * rng.random(n_dofs), "w": 1.0 + rng.random(n_dofs),
                  "X": np.array(model.mesh.points, dtype=float)}
        names = sorted(inputs)
        table = np.array([0.0, 1.0, 3.0, 4.0])

        def J(*values):
            p = dict(zip(names, values, strict=True))
            series = problem.values(lambda u, t, w: np.sum(w * u ** 2), term_args=(p["w"],),
                                    u0=p["u0"], v0=p["v0"], loads={"tip": p["m"]},
                                    histories={"tip": (table, p["hq"])}, density=p["rho"],
                                    damping=(p["cM"], p["cK"]), E=p["E"], points=p["X"])
            return np.sum(series * np.linspace(0.5, 1.5, series.size))

        value, grads = value_and_grad(J, argnums=tuple(range(len(names))))(
            *(inputs[n] for n in names))
        return (value, *grads)
    return run


def _harmonic_case() -> tuple:
    from fesens.ad import value_and_grad
    from fesens.fem.transient.harmonic import HarmonicAnalysis

    model = _cantilever()
    rng = np.random.default_rng(4)
    E = 100.0 * (1.0 + 0.3 * rng.random(model.mesh.n_cells))

    def J(E, omegas, rho):
        response = HarmonicAnalysis(model).run(omegas, density=rho, damping=(0.02, 0.001), E=E)
        return np.sum(response.compliance())

    value, grads = value_and_grad(J, argnums=(0, 1, 2))(E, np.array([0.1, 0.3]),
                                                      np.ones(model.mesh.n_cells))
    return (value, *grads)


def _benchmark_heat_case(label: str, n_steps: int, checkpointed: bool
                         ) -> Callable[[], tuple]:
    """``benchmarks/bench_transient.py``'s heat gradient (its model, objective and input)."""
    def run():
        import math

        import bench_transient as bench

        from fesens.ad import value_and_grad
        from fesens.fem.transient import TransientProblem

        model = bench.heat_model(bench.GridSize.parse(label))
        budget = math.ceil(math.sqrt(n_steps)) if checkpointed else None
        problem = TransientProblem(model, t_end=n_steps * bench.DT, dt=bench.DT,
                                   scheme="backward_euler", max_states=budget,
                                   solver="cholmod")

        def J(kappa):
            return bench.trapezoid(problem.values(bench.squares, conductivity=kappa),
                                   bench.DT)

        return value_and_grad(J)(bench.design(model.mesh.n_cells, 0))
    return run


def _benchmark_dynamic_case(label: str, n_steps: int, checkpointed: bool
                            ) -> Callable[[], tuple]:
    """``benchmarks/bench_transient.py``'s Newmark gradient (its model, objective, input)."""
    def run():
        import math

        import bench_transient as bench

        from fesens.ad import value_and_grad
        from fesens.fem.transient import DynamicProblem

        size = bench.GridSize.parse(label)
        model = bench.cantilever_model(size)
        dt = bench.DYNAMIC_T_END / n_steps
        budget = math.ceil(math.sqrt(n_steps)) if checkpointed else None
        problem = DynamicProblem(model, t_end=bench.DYNAMIC_T_END, dt=dt, scheme="newmark",
                                 max_states=budget, solver="cholmod")
        nx, ny = size.cells[:2]
        tip = 2 * int(np.argmin(np.hypot(model.mesh.points[:, 0] - nx / ny,
                                         model.mesh.points[:, 1]))) + 1

        def J(E):
            return bench.trapezoid(problem.values(lambda u, t: u[tip] ** 2, E=E), dt)

        return value_and_grad(J)(bench.design(model.mesh.n_cells, 0))
    return run


def time_cases() -> Iterator[tuple[str, Callable[[], tuple]]]:
    """The named time runs, each returning its value and gradients."""
    times = np.concatenate([np.linspace(0.0, 0.1, 6), 0.1 + np.cumsum(np.full(8, 0.02) *
                                                                      np.linspace(1, 2, 8))])
    for nonlinear in (False, True):
        kind = "nonlinear heat" if nonlinear else "heat"
        for scheme in ("backward_euler", "crank_nicolson", "bdf2"):
            yield (f"{kind} {scheme}",
                   _heat_case(nonlinear, t_end=0.2, dt=0.01, scheme=scheme))
        yield (f"{kind} theta 0.7",
               _heat_case(nonlinear, t_end=0.2, dt=0.01, scheme="theta", theta=0.7))
        yield f"{kind} bdf2 variable steps", _heat_case(nonlinear, times=times, scheme="bdf2")
        yield (f"{kind} bdf2 max_states 4",
               _heat_case(nonlinear, t_end=0.2, dt=0.01, scheme="bdf2", max_states=4))
        yield (f"{kind} crank_nicolson max_states 3",
               _heat_case(nonlinear, t_end=0.2, dt=0.01, scheme="crank_nicolson",
                          max_states=3))
    yield ("heat backward_euler lumped",
           _heat_case(False, t_end=0.2, dt=0.01, scheme="backward_euler", lumped=True))
    yield "dynamic newmark", _dynamic_case(scheme="newmark")
    yield "dynamic newmark max_states 5", _dynamic_case(scheme="newmark", max_states=5)
    yield ("dynamic generalized_alpha",
           _dynamic_case(scheme="generalized_alpha", rho_inf=0.6))
    yield ("dynamic generalized_alpha max_states 4",
           _dynamic_case(scheme="generalized_alpha", rho_inf=0.6, max_states=4))
    yield "harmonic", _harmonic_case
    for checkpointed in (False, True):
        suffix = " checkpointed" if checkpointed else ""
        for label in ("40x20", "8x4x4"):
            yield (f"bench_transient heat {label} N=50{suffix}",
                   _benchmark_heat_case(label, 50, checkpointed))
        yield (f"bench_transient dynamic 20x10 N=50{suffix}",
               _benchmark_dynamic_case("20x10", 50, checkpointed))


# --------------------------------------------------------------------------- presets
def preset_names() -> list[str]:
    from fesens.config.presets import preset_names as names

    return names()


def _history_columns(path: Path) -> list[np.ndarray]:
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        return []
    keep = [name for name in rows[0] if not any(word in name.lower()
                                                 for word in TIMING_COLUMNS)]
    columns = []
    for name in keep:
        try:
            columns.append(np.array([float(row[name]) for row in rows]))
        except ValueError:
            continue
    return columns


def preset_digest(name: str, iterations: int, timeout: float) -> str:
    """The digest of a preset's first ``iterations`` iterations (history and design)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / name
        command = [sys.executable, "-c", "from fesens.cli import main; main()", "optimize",
                   "--preset", name, "--max-iter", str(iterations), "--out", str(out),
                   "--force", "-q"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        arrays: list[np.ndarray] = []
        for history in sorted(out.glob("*.csv")):
            arrays.extend(_history_columns(history))
        for stored in sorted(out.rglob("*.np[yz]")):
            if stored.suffix == ".npy":
                arrays.append(np.load(stored))
            else:
                with np.load(stored) as data:
                    arrays.extend(data[key] for key in sorted(data.files)
                                  if np.issubdtype(data[key].dtype, np.number)
                                  and key != "history")  # its rows are history.csv's
        if not arrays:
            return f"no arrays (exit {done.returncode}: {done.stderr.strip()[-120:]})"
        return f"{digest(*arrays)}  exit {done.returncode}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("all", "time", "presets"), default="all")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--presets", nargs="*", help="only these presets")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args(argv)
    if args.part in ("all", "time"):
        for label, case in time_cases():
            result = case()
            print(f"time     {label:<42} {digest(*result)}", flush=True)
    if args.part in ("all", "presets"):
        for name in args.presets or preset_names():
            print(f"preset   {name:<42} {preset_digest(name, args.iterations, args.timeout)}",
                  flush=True)


if __name__ == "__main__":
    main()

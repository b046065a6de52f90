"""Two load cases on a bridge: the weighted-sum design against the worst-case (min–max) one.

A simply supported beam (3 x 1, plane stress, ``E = 1``, ``ν = 0.3``; pinned at the lower
left corner, on a roller at the lower right) carries, one at a time, a light load (1,
downwards) at a third of its span and a heavy one (2, downwards) at two thirds, both on its
lower edge. At 40 % of the volume (SIMP ``ρ³``, density filter of two cells, MMA), two
designs are made from the same two compliances ``C_light``, ``C_heavy`` — each from one
solve with two right-hand sides (one factorization per iteration):

* **weighted sum**: ``min C_light + C_heavy`` (:class:`~fesens.opt.DesignProblem`; the
  compliance of a two-case solution is the sum over its cases);
* **worst case**: ``min max(C_light, C_heavy)`` (:class:`~fesens.opt.MinMaxProblem`), by
  the bound formulation ``min z s.t. C_c ≤ z`` that MMA solves with its extra variable.

The weighted design lets the heavy case dominate (its compliance is about three times the
light one's); the min–max design trades light-case stiffness for heavy-case stiffness until
the two are equal, and its layout differs. Each design is best by its own measure: the
min–max one has the lower worst case, the weighted one the lower sum. Before optimizing,
the per-case gradients that MMA gets are Taylor-tested.

Run: ``python examples/load_cases_minmax.py [--fast] [--out DIR]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: a 30 x 10 grid). Prints the per-case compliances of both
designs; writes ``weighted.png`` and ``minmax.png`` to ``results/examples/load_cases_minmax``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from fesens.ad import taylor_test
from fesens.mesh import rectangle
from fesens.objectives import compliance
from fesens.opt import (
    MMA,
    SIMP,
    DensityFilter,
    DesignProblem,
    MinMaxProblem,
    case_state,
    optimize,
)
from fesens.physics import Elasticity
from fesens.plotting import boundary_markers, plot_density

LENGTH, HEIGHT = 3.0, 1.0
VOLUME_FRACTION = 0.4
#: The two load cases: the magnitude of each named load.
CASES = {"light": {"light": 1.0, "heavy": 0.0}, "heavy": {"light": 0.0, "heavy": 1.0}}
DESIGNS = ("weighted", "minmax")


def build_model(nx: int) -> Elasticity:
    """The simply supported beam on an ``nx`` x ``nx/3`` quad4 grid with its two loads."""
    mesh = rectangle(nx, nx // 3, LENGTH, HEIGHT, cell_type="quad4")
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress")
    model.fix(lambda p: np.isclose(p[:, 0], 0.0) & np.isclose(p[:, 1], 0.0))
    model.fix(lambda p: np.isclose(p[:, 0], LENGTH) & np.isclose(p[:, 1], 0.0), components=1)
    model.point_load((LENGTH / 3, 0.0), (0.0, -1.0), name="light")
    model.point_load((2 * LENGTH / 3, 0.0), (0.0, -2.0), name="heavy")
    return model


def build(nx: int, design: str) -> DesignProblem:
    """The ``"weighted"`` (sum) or ``"minmax"`` (worst case) problem."""
    model = build_model(nx)
    options = {"volume_fraction": VOLUME_FRACTION, "interpolation": SIMP(3.0, 1e-9),
               "filter": DensityFilter(model.mesh, radius=2.0 * LENGTH / nx),
               "load_cases": list(CASES.values())}
    if design == "minmax":  # the compliance of each case, bounded by MMA's z
        return MinMaxProblem(model, lambda state, rho: compliance(state), **options)
    # fᵀu over a two-case solution: C_light + C_heavy
    return DesignProblem(model, lambda state, rho: compliance(state), **options)


def case_compliances(evaluation) -> dict[str, float]:
    """``{case name: C_case}`` of an evaluated design."""
    return {name: float(compliance(case_state(evaluation.state, i)))
            for i, name in enumerate(CASES)}


def check_gradients(problem: MinMaxProblem) -> list[float]:
    """Taylor rates of each case's compliance (the functions MMA bounds) at a random
    design."""
    x = np.random.default_rng(0).uniform(0.2, 0.8, problem.n_design)
    rates = []
    for i, name in enumerate(CASES):
        def case(x, i=i):
            return compliance(case_state(problem.solve(problem.density(x)), i))

        print(f"Taylor test of d C_{name} / dx (random design and direction):")
        rates.append(taylor_test(case, x).rate)
    return rates


def run(fast: bool = False, out: Path = Path("results/examples/load_cases_minmax")) -> dict:
    """Both designs, their per-case compliances and pictures; returns the key numbers."""
    start = time.perf_counter()
    nx, max_iter = (30, 150) if fast else (90, 300)
    numbers: dict = {"designs": {}}
    out = Path(out)
    for design in DESIGNS:
        problem = build(nx, design)
        if design == "minmax":
            numbers["taylor_rates"] = check_gradients(problem)
        tic = time.perf_counter()
        result = optimize(problem, MMA(move=0.2), max_iter=max_iter, tol_change=0.01)
        seconds = time.perf_counter() - tic
        values = case_compliances(result.evaluation)
        title = ("weighted sum: min C_light + C_heavy" if design == "weighted" else
                 "worst case: min max(C_light, C_heavy)")
        picture = plot_density(
            problem.mesh, result.evaluation.density, out / f"{design}.png",
            title=f"{title}; C_light {values['light']:.1f}, C_heavy {values['heavy']:.1f}",
            **boundary_markers(problem.model))
        numbers["designs"][design] = {
            "compliances": values, "sum": sum(values.values()), "worst": max(values.values()),
            "volume": result.evaluation.volume_fraction, "iterations": len(result.history),
            "converged": result.converged, "seconds": seconds, "picture": picture,
            "density": result.evaluation.density}
    numbers["seconds"] = time.perf_counter() - start
    print(f"bridge {nx} x {nx // 3} quad4, volume fraction <= {VOLUME_FRACTION}, MMA; "
          "per-case compliances of the two designs:")
    print(f"{'design':10s} {'C_light':>9s} {'C_heavy':>9s} {'sum':>9s} {'worst':>9s} "
          f"{'volume':>7s} {'iterations':>10s} {'seconds':>8s}")
    for design, row in numbers["designs"].items():
        print(f"{design:10s} {row['compliances']['light']:9.3f} "
              f"{row['compliances']['heavy']:9.3f} {row['sum']:9.3f} {row['worst']:9.3f} "
              f"{row['volume']:7.4f} {row['iterations']:10d} {row['seconds']:8.1f}"
              + ("" if row["converged"] else "  (iteration limit)"))
    weighted, minmax = numbers["designs"]["weighted"], numbers["designs"]["minmax"]
    print(f"worst case: min-max {minmax['worst']:.3f} < weighted {weighted['worst']:.3f}; "
          f"sum: weighted {weighted['sum']:.3f} < min-max {minmax['sum']:.3f}; "
          f"{numbers['seconds']:.1f} s")
    print("wrote", ", ".join(str(row["picture"]) for row in numbers["designs"].values()))
    return numbers


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="a 30 x 10 grid (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--out", type=Path, default=Path("results/examples/load_cases_minmax"))
    args = parser.parse_args(argv)
    return run(args.fast, args.out)


if __name__ == "__main__":
    main()

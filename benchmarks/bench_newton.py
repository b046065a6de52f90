"""Newton's line searches on the problems that tell them apart: iterations and time.

Cases (each solved cold, ``warm_start=False``, from the reference state):

* **elastica**: the cantilever of ``tests/physics/test_hyperelasticity_elastica.py`` at
  ``PL²/EI = 10`` (quad9 50 x 1, St Venant–Kirchhoff, 4 load steps): a slender beam whose
  first Newton iterates stretch its axis, the residual norm rising a million-fold;
* **follower strip**: a strip 1 x 0.1 (quad8 20 x 2, ``E = 10``) clamped on the left
  under a follower pressure 0.008 on its top face, 4 load steps (tip deflection 0.85);
* **nonlinear_cantilever**: the preset's solve on its uniform start design (density 0.4,
  SIMP 3: stiffness scale 0.064; its tip moves by about 1.6) with the preset's Newton
  options;
* **nonlinear heat**: ``k(T) = k₀ (1 + β T)`` on 8 x 4 quad4 (the plate of
  ``tests/fem/test_nonlinear_newton.py``), ``β = 0.8`` and ``β = 3``, one load step.

Columns: the Newton iterations (tangent solves, all attempts) and the wall time of the
solve (minimum of ``--repeats``) for every line search; ``fail`` where the solve raised
``NewtonError``, ``n/a`` where the physics has no stored energy. The last column is the
default ``"auto"``'s iterations over the best option's.

Usage::

    .venv/bin/python benchmarks/bench_newton.py              # ~1 min
    .venv/bin/python benchmarks/bench_newton.py --append     # and append to RESULTS.md
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from _common import machine_lines, record, seconds, table

from fesens.errors import NewtonError

SEARCHES = ("none", "residual", "energy", "auto")


def elastica(k: float = 10.0):
    from fesens.mesh.generators import rectangle
    from fesens.physics.hyperelasticity import FiniteStrainElasticity

    length, height, E, nu = 1.0, 0.01, 1.0e6, 0.3
    model = FiniteStrainElasticity(rectangle(50, 1, length, height, "quad9"), E=E, nu=nu,
                                   law="saint-venant-kirchhoff")
    EI = E / (1.0 - nu ** 2) * height ** 3 / 12.0
    model.fix("left")
    model.traction("right", (0.0, -EI / length ** 2 / height), name="tip")
    return lambda newton: model.solve(loads={"tip": k}, steps=4, warm_start=False,
                                      newton=newton)


def follower_strip(p: float = 0.008):
    from fesens.mesh.generators import rectangle
    from fesens.physics.hyperelasticity import FiniteStrainElasticity

    model = FiniteStrainElasticity(rectangle(20, 2, 1.0, 0.1, "quad8"), E=10.0, nu=0.3)
    model.fix("left")
    model.pressure("top", p, follower=True, name="p")
    return lambda newton: model.solve(steps=4, warm_start=False, newton=newton)


def nonlinear_cantilever():
    from fesens.config import build_model
    from fesens.config.nonlinear import newton_options
    from fesens.config.presets import load_preset

    config = load_preset("nonlinear_cantilever")
    model = build_model(config)
    options = newton_options(config.data)
    scale = np.full(model.mesh.n_cells, 0.4 ** 3)
    return lambda newton: model.solve(scale=scale, warm_start=False,
                                      newton={**options, **newton})


def nonlinear_heat(beta: float):
    from fesens.mesh.generators import rectangle
    from fesens.physics.nonlinear_conduction import NonlinearHeatConduction

    model = NonlinearHeatConduction(rectangle(8, 4, 1.0, 0.5), conductivity=1.5, beta=beta)
    model.fix("left", value=0.5)
    model.fix("right", value=4.0)
    model.heat_source(5.0, name="source")
    return lambda newton: model.solve(warm_start=False, newton=newton)


CASES: dict[str, Callable] = {
    "elastica PL²/EI = 10": elastica,
    "follower strip": follower_strip,
    "nonlinear_cantilever (start design)": nonlinear_cantilever,
    "nonlinear heat β = 0.8": lambda: nonlinear_heat(0.8),
    "nonlinear heat β = 3": lambda: nonlinear_heat(3.0),
}


def measure(solve: Callable, search: str, repeats: int) -> tuple[int | None, float | None]:
    """(iterations, best wall time) of one line search; (None, None) on NewtonError,
    raises ValueError where the search does not apply (no stored energy)."""
    newton = {"line_search": None if search == "none" else search}
    best, iterations = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        try:
            report = solve(newton).report
        except NewtonError:
            return None, time.perf_counter() - start
        best = min(best, time.perf_counter() - start)
        iterations = report.iterations
    return iterations, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--append", action="store_true", help="append to RESULTS.md")
    args = parser.parse_args()
    rows = []
    for name, make in CASES.items():
        solve, cells, counts = make(), [name], {}
        for search in SEARCHES:
            try:
                iterations, wall = measure(solve, search, args.repeats)
            except ValueError:
                cells.append("n/a")
                continue
            counts[search] = iterations
            cells.append(f"fail ({seconds(wall)})" if iterations is None
                         else f"{iterations} ({seconds(wall)})")
        done = [n for n in counts.values() if n is not None]
        auto = counts["auto"]
        cells.append("-" if auto is None or not done else f"{auto / min(done):.2f}")
        rows.append(cells)
    text = "\n".join([
        "## Newton's line searches (benchmarks/bench_newton.py)", "",
        *(f"- {line}" for line in machine_lines(("numpy", "scipy"))), "",
        "Newton iterations (wall time of the solve) per line search; auto / best: the "
        "default's iterations over the fewest of any option.", "",
        table(["case", *SEARCHES, "auto / best"], rows)])
    record(text, args.append)


if __name__ == "__main__":
    main()

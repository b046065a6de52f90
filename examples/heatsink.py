"""Heat-sink design on the bundled Gmsh mesh: minimum thermal compliance, through the API.

The volume-to-point problem on ``meshes/heatsink.msh`` (the square [0, 100]² mm, 3253 tri3
cells refined towards the sink): the plate, 1 mm thick, is heated uniformly
(10⁻⁴ W/mm³, about 1 W in all) and cooled only through the sink, the segment ``x = 0,
45 ≤ y ≤ 55`` held at T = 0; the rest of the outline is insulated. 40 % of the area may be
aluminium (κ = 0.2 W/(mm·K)), the rest is a poor conductor (10⁻³ κ). The strip ``base``
against the sink is always solid; the disk ``void`` (a hole of radius 10 mm) is never
solid and not heated.

The objective is the thermal compliance ``C = fᵀT`` (W·K: the heat-weighted mean
temperature times the heat), minimised with SIMP (p = 3), a density filter (r = 3 mm) and
OC; its gradient needs no adjoint solve (the problem is self-adjoint). The design grows
conducting branches from the sink. The script prints ``C`` and the peak temperature of the
uniform start and of the final design, and of the all-aluminium plate (a lower bound: no
design with less conductor can do better).

Run: ``python examples/heatsink.py [--fast] [--out DIR]`` (``--fast``: 50 iterations
instead of up to 200). Writes ``design.png``, ``temperature.png`` and ``design.vtu`` to
``--out`` (default ``results/examples/heatsink``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from fesens.mesh import read_mesh, write_mesh
from fesens.objectives import thermal_compliance
from fesens.opt import OC, SIMP, DensityFilter, DesignProblem, optimize
from fesens.physics import HeatConduction
from fesens.plotting import plot_density, plot_nodal_field

MESH = Path(__file__).resolve().parents[1] / "meshes" / "heatsink.msh"
CONDUCTIVITY = 0.2  # W/(mm K), aluminium
HEAT = 1e-4  # W/mm^3
VOLUME_FRACTION = 0.4
ITERATIONS, FAST_ITERATIONS = 200, 50


def plate() -> HeatConduction:
    """The plate heated outside the hole, cooled at ``sink`` (T = 0)."""
    model = HeatConduction(read_mesh(MESH), conductivity=CONDUCTIVITY, thickness=1.0)
    model.fix("sink", value=0.0)
    model.heat_source(HEAT, cells="design", name="heat")
    model.heat_source(HEAT, cells="base", name="heat (base)")
    return model


def design_problem(model: HeatConduction) -> DesignProblem:
    mesh = model.mesh
    return DesignProblem(model, lambda state, rho: thermal_compliance(state),
                         volume_fraction=VOLUME_FRACTION,
                         interpolation=SIMP(3.0, minimum=1e-3),
                         filter=DensityFilter(mesh, 3.0),
                         passive_solid=mesh.cell_ids("base"), passive_void=mesh.cell_ids("void"))


def run(out: str | Path | None = None, *, fast: bool = False) -> dict:
    """Optimize; key numbers (and the final fields); pictures and VTU to ``out``."""
    model = plate()
    problem = design_problem(model)
    start = time.perf_counter()
    initial = problem.evaluate(problem.initial_design())
    result = optimize(problem, OC(move=0.2), max_iter=FAST_ITERATIONS if fast else ITERATIONS,
                      tol_change=0.01)
    seconds = time.perf_counter() - start
    final = result.evaluation
    solid = model.solve()
    numbers = dict(
        initial_compliance=initial.objective, initial_volume=initial.volume_fraction,
        initial_max_temperature=float(initial.state.u.max()),
        compliance=final.objective, volume=final.volume_fraction,
        max_temperature=float(final.state.u.max()),
        solid_compliance=solid.compliance(), solid_max_temperature=float(solid.u.max()),
        iterations=len(result.history), converged=result.converged, seconds=seconds,
        total_heat=float(model.load_vector().sum()),
        density=final.density, temperature=np.asarray(final.state.u))
    if out is not None:
        write_outputs(model.mesh, numbers, Path(out))
    return numbers


def write_outputs(mesh, numbers: dict, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    temperature, density = numbers["temperature"], numbers["density"]
    write_mesh(out / "design.vtu", mesh, point_data={"temperature": temperature},
               cell_data={"density": density})
    return [out / "design.vtu",
            plot_density(mesh, density, out / "design.png",
                         title=f"heat sink: thermal compliance {numbers['compliance']:.4g} W·K, "
                               f"volume {numbers['volume']:.3f}"),
            plot_nodal_field(mesh, temperature, out / "temperature.png",
                             title=f"temperature (max {numbers['max_temperature']:.3g} K above "
                                   "the sink)", label="T [K]", cmap="inferno")]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/examples/heatsink"))
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help=f"{FAST_ITERATIONS} iterations (also FESENS_EXAMPLES_FAST=1)")
    args = parser.parse_args(argv)
    n = run(args.out, fast=args.fast)
    print(f"{'':26s} {'C = fᵀT [W·K]':>14s} {'volume':>7s} {'max T [K]':>10s}")
    rows = [("uniform start", "initial_compliance", "initial_volume", "initial_max_temperature"),
            ("optimized design", "compliance", "volume", "max_temperature")]
    for label, c, v, t in rows:
        print(f"{label:26s} {n[c]:14.5g} {n[v]:7.4f} {n[t]:10.4g}")
    print(f"{'all aluminium (bound)':26s} {n['solid_compliance']:14.5g} {1.0:7.4f} "
          f"{n['solid_max_temperature']:10.4g}")
    print(f"thermal compliance reduced x{n['initial_compliance'] / n['compliance']:.2f} in "
          f"{n['iterations']} OC iterations ({'converged' if n['converged'] else 'limit'}, "
          f"{n['seconds']:.1f} s); {n['compliance'] / n['solid_compliance']:.2f} x the "
          f"all-aluminium plate with {100 * n['volume']:.0f} % of its material")
    print(f"wrote design.png, temperature.png, design.vtu to {args.out}")
    return n


if __name__ == "__main__":
    main()

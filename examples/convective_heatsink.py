"""A heat spreader cooled by convection (a film coefficient), optimized, through the API.

A plate [0, 60] x [0, 30] mm, 1 mm thick, of which 35 % may be aluminium (κ = 0.2 W/(mm·K);
the rest conducts 10⁻³ κ). A chip on the bottom edge, 25 ≤ x ≤ 35, puts 1 W into it (a
flux); the top edge is cooled by a liquid: convection with the film coefficient
h = 10⁻³ W/(mm²·K) (1000 W/(m²·K)) to T∞ = 25 °C (``model.convection("top", h, ambient)``).
No temperature is prescribed anywhere: the convection alone sets the level. The two cell
rows along the top (the cold plate) stay solid.

The objective is the thermal compliance ``C = fᵀ(T − T∞)`` of the chip flux (the
optimization runs with T∞ = 0, i.e. in temperatures above the ambient; the real
temperatures are the same field plus 25 °C, since heat leaves only by convection). SIMP
(p = 3), a density filter (r = 2 mm), OC. The design grows a tree of conductors from the
chip to the cooled edge. The script also prints ``dC/dh`` of the final design (the
film coefficient is a differentiable parameter) against central differences, and the
chip temperature for the uniform start, the design and the all-aluminium plate.

Run: ``python examples/convective_heatsink.py [--fast] [--out DIR]`` (``--fast``: 30
iterations on a 48 x 24 mesh instead of up to 150 on 60 x 30). Writes ``design.png`` and
``temperature.png`` to ``--out`` (default ``results/examples/convective_heatsink``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from fesens.ad import grad
from fesens.mesh import rectangle
from fesens.objectives import thermal_compliance
from fesens.opt import OC, SIMP, DensityFilter, DesignProblem, optimize
from fesens.physics import HeatConduction
from fesens.plotting import plot_density, plot_nodal_field

SIZE = (60.0, 30.0)  # mm
CONDUCTIVITY = 0.2  # W/(mm K), aluminium
FILM = 1e-3  # W/(mm^2 K)
AMBIENT = 25.0  # °C
POWER = 1.0  # W
VOLUME_FRACTION = 0.35
SIMP_MODEL = SIMP(3.0, minimum=1e-3)


def plate(cells: tuple[int, int]) -> HeatConduction:
    """The plate: chip flux on the bottom, convection on the top (T∞ = 0: temperatures
    above the ambient)."""
    model = HeatConduction(rectangle(*cells, *SIZE), conductivity=CONDUCTIVITY)
    model.flux(lambda x: (x[:, 1] < 1e-9) & (np.abs(x[:, 0] - 30.0) <= 5.0 + 1e-9),
               POWER / 10.0, name="chip")
    model.convection("top", h=FILM, ambient=0.0, name="coolant")
    return model


def run(out: str | Path | None = None, *, fast: bool = False) -> dict:
    """Optimize; key numbers and fields; pictures to ``out``."""
    cells = (48, 24) if fast else (60, 30)
    model = plate(cells)
    mesh = model.mesh
    cold_plate = np.flatnonzero(mesh.cell_centroids()[:, 1] > SIZE[1] - 2 * SIZE[1] / cells[1])
    problem = DesignProblem(model, lambda state, rho: thermal_compliance(state),
                            volume_fraction=VOLUME_FRACTION, interpolation=SIMP_MODEL,
                            filter=DensityFilter(mesh, 2.0), passive_solid=cold_plate)
    start = time.perf_counter()
    initial = problem.evaluate(problem.initial_design())
    result = optimize(problem, OC(move=0.2), max_iter=30 if fast else 150, tol_change=0.01)
    seconds = time.perf_counter() - start
    final = result.evaluation
    scale = SIMP_MODEL(final.density)
    chip = mesh.nodes(lambda x: (x[:, 1] < 1e-9) & (np.abs(x[:, 0] - 30.0) <= 5.0 + 1e-9))

    def compliance_of_h(h):
        return thermal_compliance(model.solve(scale=scale, h=h))

    dC_dh = float(grad(compliance_of_h)(FILM))
    step = 1e-3 * FILM
    fd = (compliance_of_h(FILM + step) - compliance_of_h(FILM - step)) / (2 * step)
    real = model.solve(scale=scale, ambient=AMBIENT).temperature  # with the real T∞
    solid = model.solve().temperature
    numbers = dict(
        initial_compliance=initial.objective, compliance=final.objective,
        volume=final.volume_fraction, iterations=len(result.history),
        converged=result.converged, seconds=seconds,
        initial_chip_temperature=AMBIENT + float(np.asarray(initial.state.u)[chip].mean()),
        chip_temperature=float(real[chip].mean()),
        solid_chip_temperature=AMBIENT + float(solid[chip].mean()),
        solid_compliance=thermal_compliance(model.solve()),
        dC_dh=dC_dh, dC_dh_fd=float(fd), density=final.density, temperature=real)
    if out is not None:
        write_outputs(mesh, numbers, Path(out))
    return numbers


def write_outputs(mesh, numbers: dict, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    temperature = numbers["temperature"]
    return [plot_density(mesh, numbers["density"], out / "design.png",
                         title=f"convective heat sink: C = {numbers['compliance']:.4g} W·K, "
                               f"volume {numbers['volume']:.3f}"),
            plot_nodal_field(mesh, temperature, out / "temperature.png",
                             title=f"temperature (chip {numbers['chip_temperature']:.1f} °C, "
                                   f"coolant {AMBIENT:g} °C)", label="T [°C]", cmap="inferno")]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/examples/convective_heatsink"))
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="30 iterations on a coarser mesh (also FESENS_EXAMPLES_FAST=1)")
    args = parser.parse_args(argv)
    n = run(args.out, fast=args.fast)
    print(f"{'':24s} {'C = fᵀ(T−T∞) [W·K]':>19s} {'chip T [°C]':>12s}")
    print(f"{'uniform start':24s} {n['initial_compliance']:19.5g} "
          f"{n['initial_chip_temperature']:12.2f}")
    print(f"{'optimized design':24s} {n['compliance']:19.5g} {n['chip_temperature']:12.2f}")
    print(f"{'all aluminium (bound)':24s} {n['solid_compliance']:19.5g} "
          f"{n['solid_chip_temperature']:12.2f}")
    print(f"thermal compliance reduced x{n['initial_compliance'] / n['compliance']:.2f} in "
          f"{n['iterations']} OC iterations ({'converged' if n['converged'] else 'limit'}, "
          f"{n['seconds']:.1f} s), volume {n['volume']:.3f}")
    print(f"dC/dh = {n['dC_dh']:.6g} W·K per W/(mm²·K) (adjoint); central difference "
          f"{n['dC_dh_fd']:.6g}")
    print(f"wrote design.png, temperature.png to {args.out}")
    return n


if __name__ == "__main__":
    main()

"""Thermal stress in the L-bracket: a heat solve drives an elastic one (one-way coupling).

The bundled L-bracket (mm, 1983 tri3 cells, ``fesens/data/meshes/lbracket.msh``): its top
edge is bolted to a wall held at 20 °C (clamped, and the temperature fixed there), the end
of the horizontal arm (the ``load`` edge) touches a part at T_hot = 220 °C. Steel:
κ = 0.05 W/(mm·K), E = 210 GPa, ν = 0.3, α = 1.2·10⁻⁵ /K, plane stress, 1 mm thick; the
strain-free temperature is 20 °C. No mechanical load: the stresses come from the
restrained thermal expansion (``model.thermal_strain(heat_solution, reference=20)``;
stresses ``D (ε − α ΔT I)``).

Printed: the temperature range, the largest displacement, the peak von Mises stress
(patch-recovered nodal stress) and where it is, and two sensitivities of the p-norm of the
cell von Mises stresses ``J`` (p = 8):

* ``dJ/dα`` (the expansion coefficient is a differentiable parameter): the stress is
  linear in α, so ``α dJ/dα = J`` exactly;
* ``dJ/dT_hot`` through *both* solves (the temperature field of the heat solve is the
  elastic solve's differentiable ``temperature``), against a central difference; the
  stress is linear in T_hot − 20 °C too, so ``(T_hot − 20) dJ/dT_hot = J``.

Run: ``python examples/thermal_bracket.py [--out DIR]`` (about a second; ``--fast`` is
accepted and changes nothing). Writes ``temperature.png`` and ``von_mises.png`` to ``--out``
(default ``results/examples/thermal_bracket``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from fesens.ad import grad
from fesens.mesh import read_mesh
from fesens.objectives import stress_pnorm
from fesens.physics import Elasticity, HeatConduction
from fesens.plotting import plot_nodal_field

MESH = Path(__file__).resolve().parents[1] / "fesens" / "data" / "meshes" / "lbracket.msh"
T_WALL, T_HOT = 20.0, 220.0  # °C
KAPPA, E, NU, ALPHA = 0.05, 210e3, 0.3, 1.2e-5  # W/(mm K), MPa, -, 1/K


def models() -> tuple[HeatConduction, Elasticity, np.ndarray]:
    """The heat model, the elastic model and the mask of the heat model's prescribed
    values that are at T_hot."""
    mesh = read_mesh(MESH)
    heat = HeatConduction(mesh, conductivity=KAPPA)
    heat.fix("top", value=T_WALL).fix("load", value=T_HOT)
    hot = heat.prescribed_values() == T_HOT
    elastic = Elasticity(mesh, E, NU, plane="stress", alpha=ALPHA).fix("top")
    return heat, elastic, hot


def run(out: str | Path | None = None) -> dict:
    """Solve both; key numbers; pictures to ``out``."""
    heat, elastic, hot = models()
    temperature = heat.solve().temperature
    elastic.thermal_strain(temperature, reference=T_WALL)
    solution = elastic.solve()
    von_mises = solution.nodal_von_mises()
    peak = int(np.argmax(von_mises))

    def j_of_alpha(alpha):
        return stress_pnorm(elastic.solve(alpha=alpha), p=8.0)

    def j_of_hot(t_hot):
        g = np.where(hot, 0.0, T_WALL) + t_hot * hot
        field = heat.solve(dirichlet=g).temperature
        return stress_pnorm(elastic.solve(temperature=field), p=8.0)

    J = float(j_of_alpha(ALPHA))
    step = 1.0
    numbers = dict(
        min_temperature=float(temperature.min()), max_temperature=float(temperature.max()),
        max_displacement=float(np.linalg.norm(solution.displacement, axis=1).max()),
        max_von_mises=float(von_mises[peak]), peak_at=elastic.mesh.points[peak].tolist(),
        J=J, dJ_dalpha=float(grad(j_of_alpha)(ALPHA)), dJ_dhot=float(grad(j_of_hot)(T_HOT)),
        dJ_dhot_fd=float((j_of_hot(T_HOT + step) - j_of_hot(T_HOT - step)) / (2 * step)),
        temperature=temperature, von_mises=von_mises,
        displacement=np.asarray(solution.displacement))
    if out is not None:
        write_outputs(elastic.mesh, numbers, Path(out))
    return numbers


def write_outputs(mesh, numbers: dict, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    temperature = numbers["temperature"]
    return [plot_nodal_field(mesh, temperature, out / "temperature.png",
                             title=f"temperature: wall {T_WALL:g} °C, hot end {T_HOT:g} °C",
                             label="T [°C]", cmap="inferno"),
            plot_nodal_field(mesh, numbers["von_mises"], out / "von_mises.png",
                             displacement=numbers["displacement"],
                             title=f"thermal stress: peak von Mises "
                                   f"{numbers['max_von_mises']:.3g} MPa",
                             label="von Mises (recovered at the nodes) [MPa]", cmap="inferno",
                             clip_percentile=99.0)]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/examples/thermal_bracket"))
    parser.add_argument("--fast", action="store_true", help="accepted; changes nothing")
    args = parser.parse_args(argv)
    n = run(args.out)
    x, y = n["peak_at"]
    print(f"temperature {n['min_temperature']:.1f} .. {n['max_temperature']:.1f} °C; "
          f"largest displacement {n['max_displacement']:.4g} mm")
    print(f"peak von Mises (SPR) {n['max_von_mises']:.1f} MPa at ({x:g}, {y:g}) mm")
    print(f"J = stress p-norm (p = 8) = {n['J']:.6g} MPa")
    print(f"alpha dJ/dalpha = {ALPHA * n['dJ_dalpha']:.6g} MPa (= J: stress linear in alpha)")
    print(f"dJ/dT_hot = {n['dJ_dhot']:.6g} MPa/K through both solves; central difference "
          f"{n['dJ_dhot_fd']:.6g}; (T_hot - 20) dJ/dT_hot = "
          f"{(T_HOT - T_WALL) * n['dJ_dhot']:.6g} MPa (= J)")
    print(f"wrote temperature.png, von_mises.png to {args.out}")
    return n


if __name__ == "__main__":
    main()

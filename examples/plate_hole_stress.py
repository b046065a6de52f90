"""Sensitivity of the peak von Mises stress of a plate with a hole to every element's
Young's modulus.

The bundled quarter plate ``meshes/plate_hole.msh`` (200 x 200 mm with a hole of radius
``a = 10`` mm, 1372 tri6 cells; symmetry conditions on both axes) is pulled by a unit
traction ``σ = 1`` MPa on its right edge. The example

* compares the nodal ``σ_xx`` at the top of the hole with Kirsch's concentration factor 3
  (about 3.03 for this finite width, Howland 1930), and ``σ_xx`` along the ligament
  ``x = 0`` with Kirsch's ``σ (1 + a²/2r² + 3a⁴/2r⁴)``;
* aggregates the cell von Mises stresses with the p-norm ``(Σ σ_e^p)^(1/p)`` for several
  ``p`` and compares it with the true maximum (the p-norm is an upper bound that
  approaches the maximum as ``p`` grows);
* computes the exact gradient of the p-norm with respect to the ``n_cells`` Young's moduli
  with one adjoint solve, checks it with a Taylor test, and with Euler's identity: the
  stresses do not change when every modulus is scaled by the same factor, so
  ``Σ_e E_e ∂J/∂E_e = 0``;
* writes the stress and the sensitivity field to ``plate_hole.vtu`` (ParaView, meshio)
  and a picture of both near the hole to ``plate_hole_sensitivity.png``.

Run: ``python examples/plate_hole_stress.py [--p 32] [--out DIR]`` (default
``results/examples/plate_hole_stress``; the mesh is small, so ``--fast`` changes nothing).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from matplotlib.collections import PolyCollection

from fesens.ad import taylor_test, value_and_grad
from fesens.mesh import read_mesh, write_mesh
from fesens.objectives import Differentiable, stress_pnorm
from fesens.output import per_volume, relative_sensitivity_name, sensitivity_name
from fesens.physics import Elasticity
from fesens.plotting import new_figure, save_figure, symmetric_log_scale

MESH = Path(__file__).resolve().parents[1] / "meshes" / "plate_hole.msh"
RADIUS, SIGMA = 10.0, 1.0  # mm, MPa
E_STEEL = 210e3  # MPa
ZOOM = 35.0  # mm: the picture shows [0, ZOOM]²


def build() -> Elasticity:
    """The quarter plate: symmetry on the axes, tension ``σ`` on the right edge."""
    model = Elasticity(read_mesh(MESH), E=E_STEEL, nu=0.3, plane="stress")
    model.fix("x_axis", components=1).fix("y_axis", components=0)
    model.traction("right", (SIGMA, 0.0), name="tension")
    return model


def kirsch_sigma_xx(r: np.ndarray) -> np.ndarray:
    """Kirsch's ``σ_xx`` on the ligament ``x = 0`` of an infinite plate, ``r ≥ a``."""
    return SIGMA * (1 + 0.5 * RADIUS**2 / r**2 + 1.5 * RADIUS**4 / r**4)


def check_kirsch(model: Elasticity, solution) -> dict:
    """Nodal ``σ_xx`` at the top of the hole and along the ligament ``a ≤ r ≤ 3a``."""
    mesh = model.mesh
    nodal = solution.nodal_stress()
    top = mesh.nearest_node((0.0, RADIUS))
    ligament = np.flatnonzero((mesh.points[:, 0] == 0.0) & (mesh.points[:, 1] <= 3 * RADIUS))
    r = mesh.points[ligament, 1]
    deviation = np.abs(nodal[ligament, 0, 0] / kirsch_sigma_xx(r) - 1)
    concentration = nodal[top, 0, 0] / SIGMA
    print(f"stress concentration σ_xx/σ at the top of the hole: {concentration:.4f} "
          f"(Kirsch 3, finite width 3.03)")
    print(f"σ_xx on the ligament a ≤ r ≤ 3a ({ligament.size} nodes) vs Kirsch: largest "
          f"deviation {deviation.max():.1%}")
    return {"concentration": concentration, "ligament_deviation": float(deviation.max())}


def run(p: float = 32.0, out: Path = Path("results/examples/plate_hole_stress")) -> dict:
    """Kirsch check, p-norm vs max, the gradient and its checks, VTU and PNG."""
    start = time.perf_counter()
    model = build()
    mesh = model.mesh
    print(f"plate with a hole: {mesh.n_cells} {mesh.cell_type} cells, "
          f"{model.dofmap.n_dofs} dofs, tension {SIGMA} MPa")
    solution = model.solve()
    numbers = check_kirsch(model, solution)
    von_mises = solution.von_mises()
    numbers["max_von_mises"] = float(von_mises.max())
    problem = Differentiable(model)
    E = np.full(mesh.n_cells, E_STEEL)

    def J(E, p=p):
        return stress_pnorm(problem.solve(E=E), p=p)

    print(f"\n  p    p-norm    p-norm / max σ_vm   (max cell σ_vm = {von_mises.max():.4f} MPa)")
    numbers["pnorm"] = {}
    for q in sorted({8.0, 16.0, 32.0, 64.0, p}):
        value = float(J(E, q))
        numbers["pnorm"][q] = value
        print(f"  {q:3g}  {value:8.4f}  {value / von_mises.max():10.4f}")

    tic = time.perf_counter()
    value, gradient = value_and_grad(J)(E)
    numbers["gradient_seconds"] = time.perf_counter() - tic
    numbers["gradient"] = gradient
    numbers["euler"] = float(abs(gradient @ E) / (np.linalg.norm(gradient) * np.linalg.norm(E)))
    print(f"\ngradient of the p-norm (p = {p:g}) w.r.t. {mesh.n_cells} moduli: "
          f"{numbers['gradient_seconds'] * 1e3:.0f} ms")
    print(f"Euler's identity Σ E_e ∂J/∂E_e = 0: |Σ E g| / (|E| |g|) = {numbers['euler']:.1e}")
    print("Taylor test along a random direction:")
    numbers["taylor_rate"] = taylor_test(J, E).rate

    # (E/J) ∂J/∂E_e per unit area: where stiffening (> 0) or softening (< 0) the plate
    # raises the peak stress, independently of the cell size.
    relative = E_STEEL * gradient / value / solution.cell_volumes
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    numbers["vtu"] = out / "plate_hole.vtu"
    write_mesh(numbers["vtu"], mesh, point_data={"displacement": solution.displacement},
               cell_data={"von_mises": von_mises, "E": E,
                          sensitivity_name("stress_pnorm", "E"): gradient,
                          per_volume(relative_sensitivity_name("stress_pnorm", "E")): relative})
    numbers["png"] = plot_fields(mesh, von_mises, relative, out / "plate_hole_sensitivity.png",
                                 title=f"p = {p:g}")
    numbers["seconds"] = time.perf_counter() - start
    print(f"wrote {numbers['vtu']}, {numbers['png']}; {numbers['seconds']:.1f} s")
    return numbers


def plot_fields(mesh, von_mises: np.ndarray, relative: np.ndarray, path: Path,
                title: str) -> Path:
    """Von Mises stress and the relative sensitivity density near the hole, side by side."""
    polygons = mesh.points[mesh.cells[:, : mesh.type_info.n_corners]]
    fig = new_figure(figsize=(11, 5.2))
    axes = fig.subplots(1, 2)
    signed = symmetric_log_scale(relative, clip_percentile=100.0, max_decades=3.0)
    panels = [
        (von_mises, "von Mises stress (MPa)", dict(cmap="viridis")),
        (relative, f"(E/J) ∂J/∂E_e / A_e  (1/mm²), J = σ_vm p-norm, {title}",
         dict(cmap="RdBu_r", norm=signed.norm)),
    ]
    for ax, (values, label, style) in zip(axes, panels, strict=True):
        cells = PolyCollection(polygons, array=values, edgecolors="face", linewidths=0.3,
                               antialiased=False, **style)
        ax.add_collection(cells)
        ax.set_xlim(0, ZOOM)
        ax.set_ylim(0, ZOOM)
        ax.set_aspect("equal")
        ax.set_xlabel("x (mm)")
        fig.colorbar(cells, ax=ax, orientation="horizontal", pad=0.12, label=label)
    axes[0].set_ylabel("y (mm)")
    fig.suptitle("plate with a hole under tension (quarter model, near the hole)")
    return save_figure(fig, path)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--p", type=float, default=32.0, help="p-norm exponent")
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="accepted for uniformity; the example is fast already")
    parser.add_argument("--out", type=Path, default=Path("results/examples/plate_hole_stress"))
    args = parser.parse_args(argv)
    return run(args.p, args.out)


if __name__ == "__main__":
    main()

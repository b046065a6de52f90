"""J2 plasticity against closed forms: the thick-walled cylinder and the perforated strip.

Both problems are perfectly plastic von Mises solids in plane strain (``E = 70000``,
``ν = 0.3``, ``σ_y = 250``; ``k = σ_y/√3``), loaded through an increment table
(:class:`~fesens.fem.analysis.incremental.IncrementalAnalysis`); every reference below is a
closed form, none comes from fesens.

**Thick-walled cylinder under internal pressure** (inner radius ``a = 1``, outer ``b = 2``;
Hill 1950, *The Mathematical Theory of Plasticity*, ch. V), a quarter of the ring with
symmetry conditions, the pressure on the bore:

* the elastic range (Lamé): ``u(b) = 2 (1 − ν²) p a² b / (E (b² − a²))``, up to the first
  yield at the bore, exact for every ν (Lamé's stresses, ``σ_z = ν(σ_r + σ_θ)``, in von
  Mises): ``p_e = σ_y (b² − a²) / √(3b⁴ + (1 − 2ν)² a⁴)``, Hill's ``k (1 − a²/b²)`` at
  ν = 1/2;
* the partly plastic tube, plastic for ``a ≤ r ≤ c``:
  ``p(c) = 2k [ln(c/a) + (b² − c²)/(2b²)]`` with the outer radial displacement
  ``u(b) = 2 (1 − ν²) k c² / (E b)`` (the elastic ring ``c ≤ r ≤ b`` yielding at ``r = c``).
  The table compares the pressure of an increment with Hill's at fesens's ``u(b)`` (near
  the limit ``u`` grows fast with ``p``, ``p`` with ``u`` slowly). Hill derives it with
  ``σ_z`` the mean of ``σ_r`` and ``σ_θ`` in the plastic zone, exact at ν = 1/2; at
  ν = 0.3 the J2 tube carries a little less;
* the limit pressure ``p_lim = 2k ln(b/a)``, for every ν: at collapse the stresses stop
  changing, the strain rates are plastic, and plane strain makes ``σ_z`` the mean. The
  increments approach it to ``0.98 p_lim``; one increment to ``1.02 p_lim`` must fail.

quad8 cells use the reduced 2 x 2 rule (``quadrature_order=2``): with the full 3 x 3 rule
they lock where the plastic flow must be incompressible (Nagtegaal, Parks & Rice 1974) and
carry pressures above the limit, as do fully integrated quad4 and hex8 cells (the hex8
slice, ``w = 0`` on both faces, is plane strain in 3D and is not taken beyond the limit).

**Perforated strip in tension** (half-width ``W = 10``, hole radius ``R = 5``, half-length
``L = 18``: a quarter with symmetry conditions, the end moved along the strip): the limit
load per unit thickness of the whole strip is the net section at the plane-strain yield
stress, ``F_lim = 2k · 2(W − R)``. It is exact, the static and kinematic theorems of limit
analysis (Hill 1950, ch. VIII) giving the same load: ``σ_yy = 2k`` in the ligaments
``R ≤ |x| ≤ W`` and zero elsewhere is statically admissible (lower bound), and the wedge
at each free edge sliding inwards between two 45° bands from the hole's edge, while the two
halves separate, dissipates the same power (upper bound). The discrete limit load of a
displacement method lies above it and closes in under refinement. The strip is a
plane-strain one: the classical perforated strip of Zienkiewicz, Valliappan & King (1969)
is plane stress, which fesens's J2 model does not offer.

Run: ``python examples/plastic_verification.py [--fast] [--out DIR]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: quad8 only, the strip 8 x 8). Prints the verification table
(reference, fesens, relative difference, source) and writes ``cylinder_pressure.png``
(pressure against the outer radial displacement, Hill's curve beside fesens's) and
``strip_plastic_zone.png`` (the equivalent plastic strain at the end of the stretch: the
band from the hole to the free edge) to ``--out`` (default
``results/examples/plastic_verification``).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from fesens.errors import NewtonError
from fesens.fem.analysis.incremental import IncrementalAnalysis
from fesens.mesh import Mesh, box, plate_with_hole, quarter_annulus
from fesens.physics.elastoplasticity import Elastoplasticity
from fesens.plotting import new_figure, plot_cell_field, save_figure

#: the material: Young's modulus, Poisson's ratio, yield stress
E, NU, SIGMA_Y = 70e3, 0.3, 250.0
#: the shear yield stress of von Mises
K = SIGMA_Y / np.sqrt(3.0)
#: the cylinder's radii
A, B = 1.0, 2.0
#: the strip: half-width, hole radius, half-length
W, R, L = 10.0, 5.0, 18.0


# --- closed forms ---------------------------------------------------------------------

def elastic_limit_pressure() -> float:
    """First yield at the bore (Lamé, von Mises in plane strain): exact for every ν."""
    return SIGMA_Y * (B**2 - A**2) / np.sqrt(3.0 * B**4 + (1.0 - 2.0 * NU) ** 2 * A**4)


def hill_pressure(c: float | np.ndarray) -> float | np.ndarray:
    """Hill's pressure with the plastic zone ``a ≤ r ≤ c``."""
    return 2.0 * K * (np.log(c / A) + (B**2 - c**2) / (2.0 * B**2))


def hill_outer_displacement(c: float | np.ndarray) -> float | np.ndarray:
    """The outer surface's radial displacement with the plastic zone ``a ≤ r ≤ c``."""
    return 2.0 * (1.0 - NU**2) * K * c**2 / (E * B)


def lame_outer_displacement(p: float) -> float:
    """The elastic ring's outer radial displacement under the bore pressure ``p`` (plane
    strain, Lamé)."""
    return 2.0 * (1.0 - NU**2) * p * A**2 * B / (E * (B**2 - A**2))


def hill_pressure_at(u_outer: float) -> float:
    """Hill's pressure at the outer radial displacement ``u_outer`` (its plastic radius
    from :func:`hill_outer_displacement`)."""
    return hill_pressure(np.sqrt(u_outer * E * B / (2.0 * (1.0 - NU**2) * K)))


def limit_pressure() -> float:
    """The cylinder's limit pressure ``2k ln(b/a)``, for every ν (at collapse the strain
    rates are plastic, plane strain makes ``σ_z`` the mean stress and ``σ_θ − σ_r = 2k``
    across the wall)."""
    return 2.0 * K * np.log(B / A)


def strip_limit_load() -> float:
    """The perforated strip's limit load of a quarter model per unit thickness: the
    ligament ``W − R`` at ``2k``. Exact by the two theorems of limit analysis (Hill 1950,
    ch. VIII): ``σ_yy = 2k`` in ``R ≤ |x| ≤ W`` and zero elsewhere is statically admissible
    (free hole and edges; lower bound); the wedge ``x − R ≥ |y|`` at each free edge moving
    inwards at ``v`` while the halves separate at ``2v`` slides on two 45° bands of length
    ``√2 (W − R)`` at the jump ``√2 v``, dissipating ``4k (W − R) v`` per ligament side,
    the same load (upper bound)."""
    return 2.0 * K * (W - R)


# --- meshes ---------------------------------------------------------------------------

def cylinder_mesh(n_radial: int, n_angular: int, cell_type: str = "quad8") -> Mesh:
    """A quarter of the ring ``a ≤ r ≤ b`` (sides ``inner``, ``outer``, ``x_axis``,
    ``y_axis``)."""
    return quarter_annulus(n_radial, n_angular, A, B, cell_type)


def cylinder_slice(n_radial: int, n_angular: int, thickness: float = 0.1) -> Mesh:
    """A quarter of the ring as one layer of hex8 cells ``0 ≤ z ≤ thickness``: the unit
    box's x mapped to the radius and y to the angle, its sides renamed as the 2D
    mesh's (``back``/``front`` are the faces ``z = 0`` and ``z = thickness``)."""
    mesh = box(n_radial, n_angular, 1, 1.0, 1.0, thickness, "hex8")
    x, y, z = mesh.points.T
    radius, angle = A + (B - A) * x, 0.5 * np.pi * y
    mesh.points = np.column_stack([radius * np.sin(0.5 * np.pi - angle),
                                   radius * np.sin(angle), z])
    for old, new in (("left", "inner"), ("right", "outer"), ("bottom", "x_axis"),
                     ("top", "y_axis")):
        mesh.node_sets[new] = mesh.node_sets.pop(old)
        mesh.facet_sets[new] = mesh.facet_sets.pop(old)
    mesh.validate()
    return mesh


def strip_mesh(n_radial: int, n_angular: int, cell_type: str = "quad8") -> Mesh:
    """A quarter of the strip ``0 ≤ x ≤ W``, ``0 ≤ y ≤ L`` with the hole ``r < R``:
    the plate with a hole ``[0, W]²`` stretched along y above ``y = R`` by
    ``(L − W) ((y − R)/(W − R))²`` (smooth, so quadratic cells stay valid; the hole keeps
    its circle); sides ``hole``, ``right`` (free edge), ``top`` (the moved end),
    ``x_axis``, ``y_axis``."""
    mesh = plate_with_hole(n_radial, n_angular, R, W, cell_type, grading=1.15)
    y = mesh.points[:, 1]
    stretch = (L - W) * (np.maximum(y - R, 0.0) / (W - R)) ** 2
    mesh.points = np.column_stack([mesh.points[:, 0], y + stretch])
    mesh.validate()
    return mesh


# --- fesens runs ----------------------------------------------------------------------

#: quad8 with the reduced 2 x 2 rule: the full 3 x 3 rule locks at collapse (Nagtegaal,
#: Parks & Rice 1974) and carries pressures above the limit
REDUCED = {"quadrature_order": 2}


def radial_unit(points: np.ndarray) -> np.ndarray:
    """``e_r`` at ``points`` ``(n, dim)``: the bore pressure is the traction ``p e_r``."""
    radial = np.array(points, dtype=float)
    if radial.shape[1] == 3:
        radial[:, 2] = 0.0
    return radial / np.linalg.norm(radial, axis=1, keepdims=True)


def cylinder_model(mesh: Mesh, **options) -> Elastoplasticity:
    """The ring with symmetry conditions and a unit pressure on the bore (plane strain in
    2D; in 3D ``w = 0`` on both faces)."""
    model = Elastoplasticity(mesh, E=E, nu=NU, yield_stress=SIGMA_Y, **options)
    model.fix("x_axis", components="y").fix("y_axis", components="x")
    if mesh.dim == 3:
        model.fix("back", components="z").fix("front", components="z")
    model.surface_load("inner", radial_unit, name="pressure")
    return model


def outer_displacement(mesh: Mesh, displacements: np.ndarray) -> np.ndarray:
    """The radial displacement of the outer surface on the x axis, per increment
    ``(N+1,)`` (the mean over the nodes at ``(b, 0[, z])``)."""
    nodes = np.intersect1d(mesh.node_sets["outer"], mesh.node_sets["x_axis"])
    return displacements[:, mesh.dim * nodes].mean(axis=1)


class CylinderRun(NamedTuple):
    """Pressures ``(N+1,)``, the outer radial displacement ``(N+1,)`` and whether the
    increment to ``1.02 p_lim`` failed (``None``: not tried)."""

    pressures: np.ndarray
    outer: np.ndarray
    beyond_limit_fails: bool | None


def cylinder_pressures(n_plastic: int = 8) -> np.ndarray:
    """The pressure table: 0, half the first yield, the first yield, then ``n_plastic``
    steps closing in on ``0.98 p_lim`` (finer near it)."""
    p_e, p_lim = elastic_limit_pressure(), limit_pressure()
    closing = 1.0 - (1.0 - np.linspace(0.0, 1.0, n_plastic + 1)[1:]) ** 2
    return np.concatenate([[0.0, 0.5 * p_e, p_e], p_e + (0.98 * p_lim - p_e) * closing])


def run_cylinder(mesh: Mesh, *, beyond: bool = True, **options) -> CylinderRun:
    """The cylinder along :func:`cylinder_pressures`; with ``beyond``, one more increment
    to ``1.02 p_lim``, where equilibrium does not exist and Newton must fail."""
    model = cylinder_model(mesh, **options)
    pressures = cylinder_pressures()
    solution = IncrementalAnalysis(model, factors=pressures).solve()
    fails = None
    if beyond:
        try:
            IncrementalAnalysis(model, factors=[*pressures, 1.02 * limit_pressure()]).solve()
            fails = False
        except NewtonError:
            fails = True
    return CylinderRun(pressures, outer_displacement(mesh, solution.displacements), fails)


class StripRun(NamedTuple):
    """End displacements ``(N+1,)``, the reaction on the end ``(N+1,)`` and the
    equivalent plastic strain per cell at the last increment ``(n_cells,)``."""

    displacements: np.ndarray
    reactions: np.ndarray
    plastic_strain: np.ndarray
    mesh: Mesh


def strip_model(mesh: Mesh, end: float, **options) -> Elastoplasticity:
    """The quarter strip with symmetry conditions, its end ``y = L`` moved along y by
    ``end`` (at the load factor 1); ``options`` go to the model."""
    model = Elastoplasticity(mesh, E=E, nu=NU, yield_stress=SIGMA_Y, **options)
    model.fix("x_axis", components="y").fix("y_axis", components="x")
    model.fix("top", components="y", value=end)
    return model


def end_reactions(model: Elastoplasticity, reactions: np.ndarray) -> np.ndarray:
    """The reaction on the strip's moved end per increment ``(N+1,)``, from the reactions
    ``(N+1, n_dofs)`` of its history."""
    dofs = model.dofmap.node_dofs(model.mesh.node_sets["top"], [1]).ravel()
    return reactions[:, dofs].sum(axis=1)


def run_strip(mesh: Mesh, end: float = 0.4, n_increments: int = 8, **options) -> StripRun:
    """The quarter strip, its end ``y = L`` moved along y by up to ``end`` in increments
    finer at the start."""
    model = strip_model(mesh, end, **options)
    factors = np.linspace(0.0, 1.0, n_increments + 1) ** 1.5
    solution = IncrementalAnalysis(model, factors=factors).solve()
    plastic = solution.equivalent_plastic_strain[-1].mean(axis=1)
    return StripRun(end * factors, end_reactions(model, solution.reactions), plastic, mesh)


# --- the table ------------------------------------------------------------------------

class Row(NamedTuple):
    """One line of the verification table."""

    quantity: str
    reference: float
    fesens: float
    source: str

    @property
    def difference(self) -> float:
        return (self.fesens - self.reference) / self.reference


def cylinder_rows(run: CylinderRun, label: str) -> list[Row]:
    """The outer displacement at half the first yield against Lamé's; the pressure at the
    outer displacement of three plastic increments against Hill's."""
    rows = [Row(f"cylinder {label}: u(b) at p_e/2", lame_outer_displacement(run.pressures[1]),
                float(run.outer[1]), "Lamé")]
    for index in (5, 8, 10):
        rows.append(Row(f"cylinder {label}, increment {index}: p at u(b) = "
                        f"{run.outer[index]:.5f}",
                        float(hill_pressure_at(run.outer[index])), float(run.pressures[index]),
                        "Hill 1950 ch. V"))
    return rows


def strip_rows(run: StripRun, label: str) -> list[Row]:
    """The end reaction at the end of the stretch against the limit load."""
    return [Row(f"strip {label}: reaction at u = {run.displacements[-1]:.2f}",
                strip_limit_load(), float(run.reactions[-1]), "net section at 2k")]


def print_table(rows: list[Row]) -> None:
    width = max(len(row.quantity) for row in rows)
    print(f"{'quantity':<{width}} | {'reference':>10} | {'fesens':>10} | {'rel. diff':>9} "
          "| source")
    for row in rows:
        print(f"{row.quantity:<{width}} | {row.reference:10.5g} | {row.fesens:10.5g} | "
              f"{100 * row.difference:+8.2f}% | {row.source}")


# --- pictures -------------------------------------------------------------------------

def plot_cylinder(runs: dict[str, CylinderRun], path: Path) -> Path:
    """Pressure against the outer radial displacement: Hill's curve and fesens's."""
    figure = new_figure(figsize=(5.5, 4.0), layout="constrained")
    ax = figure.subplots()
    p_e, p_lim = elastic_limit_pressure(), limit_pressure()
    radii = np.linspace(A, B, 200)
    elastic = np.linspace(0.0, p_e, 20)
    hill_u = np.concatenate([[lame_outer_displacement(p) for p in elastic],
                             hill_outer_displacement(radii)])
    ax.plot(hill_u, np.concatenate([elastic, hill_pressure(radii)]) / p_lim, "k-",
            label="Hill (1950)")
    for label, run in runs.items():
        ax.plot(run.outer, run.pressures / p_lim, "o", markersize=4, label=f"fesens {label}")
    ax.axhline(1.0, color="0.6", linestyle="--", linewidth=0.8)
    ax.set_xlabel("outer radial displacement u(b)")
    ax.set_ylabel("pressure / limit pressure")
    ax.set_title("thick-walled cylinder, plane strain, perfectly plastic")
    ax.legend()
    return save_figure(figure, path)


def plot_strip(run: StripRun, path: Path) -> Path:
    """The equivalent plastic strain of the strip at its last increment."""
    return plot_cell_field(run.mesh, run.plastic_strain, path,
                           title="perforated strip at the limit load",
                           label="equivalent plastic strain", cmap="magma")


# --- main -----------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("results/examples/plastic_verification"))
    args = parser.parse_args(argv)
    fast = args.fast or os.environ.get("FESENS_EXAMPLES_FAST") == "1"

    cylinders = {"quad8": run_cylinder(cylinder_mesh(8, 4), **REDUCED)}
    if not fast:
        cylinders["tri6"] = run_cylinder(cylinder_mesh(16, 8, "tri6"))
        cylinders["hex8"] = run_cylinder(cylinder_slice(16, 4), beyond=False)
    strips = {"quad8": run_strip(strip_mesh(*((8, 8) if fast else (16, 16))), **REDUCED)}
    if not fast:
        strips["tri6"] = run_strip(strip_mesh(16, 16, "tri6"))

    rows = [row for label, run in cylinders.items() for row in cylinder_rows(run, label)]
    rows += [row for label, run in strips.items() for row in strip_rows(run, label)]
    print_table(rows)
    print(f"cylinder: limit pressure {limit_pressure():.2f} (Hill); fesens converged to "
          "0.98 of it; the increment to 1.02 of it: " + ", ".join(
              f"{label} {'failed' if run.beyond_limit_fails else 'converged'}"
              for label, run in cylinders.items() if run.beyond_limit_fails is not None))
    pictures = [plot_cylinder(cylinders, args.out / "cylinder_pressure.png"),
                plot_strip(strips["quad8"], args.out / "strip_plastic_zone.png")]
    return {"rows": rows, "cylinders": cylinders, "strips": strips, "pictures": pictures}


if __name__ == "__main__":
    main()

"""The most energy absorbed by a plastically bent cantilever, beside its elastic design.

A plane-strain steel cantilever, 100 x 50 mm (48 x 24 quad4 cells), clamped on its left
edge, is bent by a downward displacement prescribed on a 5 mm patch at the middle of its
right edge (the cells under the patch are passive solid), in :data:`INCREMENTS` equal
increments up to 1 mm: J2 plasticity with E = 200 GPa, ν = 0.3, σ_y = 250 MPa and linear
isotropic hardening H = 2 GPa, which the end displacement drives well past first yield
(most of the members yield). With 40 % of the material, MMA maximizes the work absorbed on
the way, ``W = ∫ F dū ≈ Σ_n ½ (F_n + F_(n−1)) (ū_n − ū_(n−1))``, the area under the patch's
force–displacement curve (stored elastic energy and plastic dissipation; Maute, Schwarz &
Ramm 1998, "Adaptive topology optimization of elastoplastic structures", Struct. Optim. 15,
81–91, design for the energy an elastoplastic structure absorbs). The forces ``F_n`` are
the patch's reactions at the increments, one primitive over the history whose gradient is
the path-dependent adjoint (one reverse sweep over the increments).

The design variables go through a density filter (radius 1.5 cells) to densities ``ρ``,
the model's ``scale`` above a floor of 1e-3: the stiffness follows ``ρ^p`` (p = 3) and the
yield stress and hardening modulus ``ρ^q`` with ``q = 2.5 < p``. A cell's yield strain
``ρ^(q−p) σ_y / E`` then grows as it empties, so the void stays elastic instead of carrying
the plastic flow, and ``q > 1`` still makes intermediate densities a poor buy of strength.

The elastic design is the same loop with a yield stress out of reach: the model stays
linear (one increment gives ``W = ½ F ū`` exactly) and the design is the classic stiffest
one. The elastoplastic loop starts from it (from the uniform design it climbs slowly: the
plastic hinge at the clamp dominates its first gradients). Both designs then go through the
same plastic history; the script prints their absorbed work, plastic dissipation, peak
force and the share of cells solid in one and void in the other, and draws them side by
side (the equivalent plastic strain at the end over the elastoplastic design's solid
cells) and their force–displacement curves.

Run: ``python examples/plastic_design.py [--quick] [--out DIR]`` (``--quick``, also
``--fast`` or ``FESENS_EXAMPLES_FAST=1``: a 30 x 15 mesh, the filter still 1.5 cells, 20
and 10 iterations). Writes ``plastic_design.png`` and ``plastic_design_curves.png`` to
``results/examples/plastic_design``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
from matplotlib.collections import LineCollection, PolyCollection

from fesens.ad import getval
from fesens.fem.analysis.incremental import IncrementalAnalysis
from fesens.mesh import rectangle
from fesens.opt import MMA, DensityFilter, DesignProblem, optimize
from fesens.physics.elastoplasticity import Elastoplasticity
from fesens.plotting import new_figure, save_figure

# SI units: m, Pa, N per m of thickness, J per m of thickness
LENGTH, HEIGHT = 0.1, 0.05
E, NU = 200e9, 0.3
YIELD_STRESS, HARDENING = 250e6, 2e9
#: The elastic design's yield stress (Pa): never reached, the model stays linear.
OUT_OF_REACH = 1e15
PENALTY, YIELD_PENALTY = 3.0, 2.5
#: The model's density floor: a void cell keeps ``1e-9`` of the stiffness (SIMP's usual
#: floor) and ``10^-7.5`` of the yield stress.
FLOOR = 1e-3
VOLUME_FRACTION = 0.4
#: The prescribed downward displacement of the patch at the end of the history (m).
END_DISPLACEMENT = -1e-3
INCREMENTS = 8
#: The patch's half height (m): the right-edge nodes it holds.
PATCH = 2.5e-3
#: The mesh and each loop's iteration limit, of the full run and of ``--quick``.
FULL = {"cells": (48, 24), "elastic": 50, "plastic": 30}
QUICK = {"cells": (30, 15), "elastic": 20, "plastic": 10}
#: The plastic loop's move limit: it starts from a converged design.
PLASTIC_MOVE = 0.1


def build_model(cells: tuple[int, int], yield_stress: float) -> tuple[Elastoplasticity,
                                                                      np.ndarray]:
    """The cantilever on ``cells`` quad4 cells; returns the model and the patch's vertical
    dofs ``(n_patch,)``, prescribed at :data:`END_DISPLACEMENT` (times the load factor)."""
    mesh = rectangle(*cells, LENGTH, HEIGHT, cell_type="quad4")
    model = Elastoplasticity(mesh, E=E, nu=NU, yield_stress=yield_stress,
                             isotropic_modulus=HARDENING, penal=PENALTY,
                             yield_penal=YIELD_PENALTY)
    model.fix("left")

    def patch(points):
        return (np.isclose(points[:, 0], LENGTH)
                & (np.abs(points[:, 1] - HEIGHT / 2) <= PATCH * (1 + 1e-9)))

    model.fix(patch, components="y", value=END_DISPLACEMENT)
    return model, np.ravel(model.dofmap.node_dofs(mesh.nodes(patch), [1]))


def pad_cells(mesh, cells: tuple[int, int]) -> np.ndarray:
    """The cells under the patch (the last two columns, within a cell of the patch's
    height): passive solid, so the displacement always meets material."""
    centres = mesh.cell_centroids()
    width, height = LENGTH / cells[0], HEIGHT / cells[1]
    return np.flatnonzero((centres[:, 0] > LENGTH - 2 * width)
                          & (np.abs(centres[:, 1] - HEIGHT / 2) < PATCH + height))


def absorbed_work(factors: np.ndarray, forces):
    """``W = Σ_n ½ (F_n + F_(n−1)) (ū_n − ū_(n−1))`` of the patch's forces ``(N + 1,)`` at
    the load factors ``(N + 1,)`` (the trapezoid rule; traced when the forces are)."""
    steps = np.diff(factors) * END_DISPLACEMENT
    return np.sum(0.5 * steps * (forces[1:] + forces[:-1]))


def floored(rho):
    """The model's ``scale`` of densities ``ρ`` ``(n_cells,)``: ``ρ`` above the floor
    (traced)."""
    return FLOOR + (1.0 - FLOOR) * rho


class AbsorbedWork(NamedTuple):
    """What a design's load history gives its objective.

    Attributes
    ----------
    work : float
        ``W`` (J per m of thickness), traced in a traced solve.
    forces : numpy.ndarray
        The patch's force ``F_n`` at each increment ``(N + 1,)`` (N per m), traced too.
    """

    work: object
    forces: object

    def detached(self) -> AbsorbedWork:
        """The plain numbers (what an evaluation keeps)."""
        return AbsorbedWork(float(getval(self.work)), np.asarray(getval(self.forces)))


class AbsorbedWorkProblem(DesignProblem):
    """Maximize the work absorbed along a load history at a volume fraction: the objective
    minimized is ``−W(ρ) / W_ref``.

    Parameters
    ----------
    model : Elastoplasticity
    history : IncrementalAnalysis
        The load history of ``model``.
    factors : numpy.ndarray
        Its load factors ``(N + 1,)``, from 0 to 1.
    patch_dofs : numpy.ndarray
        ``(n_patch,)``: the prescribed dofs whose reactions make the force ``F``.
    reference : float
        ``W_ref``: a work of the order of the designs' (the uniform design's).
    **options
        As :class:`~fesens.opt.problem.DesignProblem` (the interpolation is the model's
        own: its ``scale`` is the density).
    """

    def __init__(self, model, history: IncrementalAnalysis, factors: np.ndarray,
                 patch_dofs: np.ndarray, reference: float = 1.0, **options):
        super().__init__(model, lambda state, rho: -state.work / self.reference,
                         reports={"work": lambda state, rho: state.work}, **options)
        self.history, self.patch_dofs, self.reference = history, patch_dofs, reference
        self.factors = np.asarray(factors, dtype=float)

    def _force(self, state, t):
        """``F_n``: the sum of the patch's reactions at one increment."""
        return np.sum(state.reactions[self.patch_dofs])

    def solve(self, rho) -> AbsorbedWork:
        """The patch's forces over the history at densities ``ρ`` and their work (traced:
        one primitive over the increments)."""
        forces = self.history.values(self._force, scale=floored(rho))
        return AbsorbedWork(absorbed_work(self.factors, forces), forces)


def design_problem(cells: tuple[int, int], yield_stress: float,
                   factors: np.ndarray) -> AbsorbedWorkProblem:
    """The design problem of the load table ``factors`` (from 0 to 1), its objective
    scaled by the uniform design's work."""
    model, patch_dofs = build_model(cells, yield_stress)
    problem = AbsorbedWorkProblem(
        model, IncrementalAnalysis(model, factors=factors), factors, patch_dofs,
        volume_fraction=VOLUME_FRACTION,
        filter=DensityFilter(model.mesh, radius=1.5 * LENGTH / cells[0]),
        passive_solid=pad_cells(model.mesh, cells))
    uniform = problem.solve(problem.density(problem.initial_design()))
    problem.reference = float(uniform.work)
    return problem


def plastic_factors() -> np.ndarray:
    """The plastic load table: :data:`INCREMENTS` equal increments from 0 to 1."""
    return np.linspace(0.0, 1.0, INCREMENTS + 1)


def loaded(problem: AbsorbedWorkProblem, rho: np.ndarray) -> dict:
    """A design ``ρ`` through the plastic history: its curve, work, dissipation and the
    equivalent plastic strain per cell at the end."""
    record = problem.history.solve(scale=floored(rho))
    displacement, forces = record.curve(problem.patch_dofs).T
    end = record.n_increments
    return {"displacement": -displacement, "force": -forces,
            "work": float(absorbed_work(problem.factors, forces)),
            "dissipation": float(record.plastic_work[end]),
            "peak_force": float(np.max(-forces)),
            "plastic_strain": record.cell_fields(end)["equivalent_plastic_strain"]}


def run_design(problem: AbsorbedWorkProblem, iterations: int, label: str,
               start: np.ndarray | None = None, move: float = 0.5) -> dict:
    """MMA (move limit ``move``) on ``problem`` from the design variables ``start``
    (default: uniform); returns the design, its variables and its history."""
    def report(record, evaluation, x):
        if record["iteration"] % 10 == 0:
            print(f"  {label} {record['iteration']:4d}  work {record['work']:10.2f}  "
                  f"volume {record['volume']:.4f}  change {record['change']:.4f}")

    result = optimize(problem, MMA(move=move), start, max_iter=iterations, tol_change=0.01,
                      callback=report)
    return {"density": result.evaluation.density, "x": result.x, "history": result.history,
            "iterations": len(result.history), "converged": result.converged,
            "volume": result.evaluation.volume_fraction,
            "objective": result.evaluation.objective}


def draw_designs(mesh, designs: dict, strain: np.ndarray, path: Path) -> Path:
    """The designs side by side in grey levels, the equivalent plastic strain at the end
    over the plastic design's solid cells (density > 0.5) in colour."""
    points = 1e3 * mesh.points  # drawn in mm
    polygons = points[mesh.cells[:, : mesh.type_info.n_corners]]
    outline = points[mesh.boundary_facets().facets[:, :2]]
    fig = new_figure(figsize=(12.0, 4.2), layout="constrained")
    axes = fig.subplots(1, len(designs))
    for ax, (title, density) in zip(axes, designs.items(), strict=True):
        grey = PolyCollection(polygons, array=density, cmap="gray_r", edgecolors="face",
                              linewidths=0.1)
        grey.set_clim(0.0, 1.0)
        ax.add_collection(grey)
        ax.add_collection(LineCollection(outline, colors="0.55", linewidths=0.6))
        ax.set_xlim(-0.02e3 * LENGTH, 1.02e3 * LENGTH)
        ax.set_ylim(-0.02e3 * LENGTH, 1e3 * HEIGHT + 0.02e3 * LENGTH)
        ax.set_aspect("equal")
        ax.set_title(title)
        ax.set_xlabel("x (mm)")
        ax.set_ylabel("y (mm)")
    yielded = (designs[PLASTIC] > 0.5) & (strain > 0.0)
    coloured = PolyCollection(polygons[yielded], array=strain[yielded], cmap="inferno_r",
                              edgecolors="face", linewidths=0.1)
    axes[-1].add_collection(coloured)
    fig.colorbar(grey, ax=axes[0], label="density", shrink=0.7, orientation="horizontal")
    fig.colorbar(coloured, ax=axes[-1], label="equivalent plastic strain at the end "
                 "(solid cells)", shrink=0.7, orientation="horizontal")
    return save_figure(fig, path)


def draw_curves(curves: dict, path: Path) -> Path:
    """Each design's force against the patch's displacement, under the plastic history."""
    fig = new_figure(figsize=(6.0, 4.2))
    ax = fig.add_subplot()
    for name, curve in curves.items():
        ax.plot(1e3 * curve["displacement"], 1e-3 * curve["force"], marker="o", markersize=3,
                label=f"{name}: W = {curve['work']:.1f} J/m")
    ax.set_xlabel("displacement of the loaded patch (mm)")
    ax.set_ylabel("force on the patch (kN per m of thickness)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title("both designs under the plastic load history")
    return save_figure(fig, path)


PLASTIC, ELASTIC = "elastoplastic design", "elastic design"


def run(quick: bool = False, out: Path = Path("results/examples/plastic_design")) -> dict:
    """Both designs, their curves under the plastic history, the pictures; returns the key
    numbers."""
    start = time.perf_counter()
    size = QUICK if quick else FULL
    plastic = design_problem(size["cells"], YIELD_STRESS, plastic_factors())
    # linear: one increment gives W = ½ F ū exactly
    elastic = design_problem(size["cells"], OUT_OF_REACH, np.array([0.0, 1.0]))
    mesh = plastic.mesh
    print(f"cantilever: {mesh.n_cells} quad4 cells, {INCREMENTS} increments to "
          f"{1e3 * END_DISPLACEMENT:g} mm, volume fraction <= {VOLUME_FRACTION}, MMA")
    numbers = {"uniform_work": plastic.reference}
    designs = {ELASTIC: run_design(elastic, size["elastic"], "elastic")}
    # the plastic loop refines the elastic design: from the uniform start it climbs slowly
    designs[PLASTIC] = run_design(plastic, size["plastic"], "plastic",
                                  designs[ELASTIC]["x"], move=PLASTIC_MOVE)
    curves = {name: loaded(plastic, entry["density"]) for name, entry in designs.items()}
    for name, entry in designs.items():
        curve = curves[name]
        print(f"{name}: {entry['iterations']} iterations "
              f"({'converged' if entry['converged'] else 'stopped'}), volume "
              f"{entry['volume']:.4f}; under the plastic history W = {curve['work']:.2f} "
              f"J/m, dissipation {curve['dissipation']:.2f} J/m, peak force "
              f"{1e-3 * curve['peak_force']:.1f} kN/m")
    gain = curves[PLASTIC]["work"] / curves[ELASTIC]["work"] - 1
    solid = {name: entry["density"] > 0.5 for name, entry in designs.items()}
    differing = float(np.mean(solid[PLASTIC] != solid[ELASTIC]))
    print(f"uniform design W = {plastic.reference:.2f} J/m; the elastoplastic design "
          f"absorbs {100 * gain:+.1f} % more than the elastic one; cells solid in one design "
          f"and void in the other: {100 * differing:.0f} %")
    out = Path(out)
    numbers.update(designs=designs, curves=curves, gain=gain, differing=differing, pictures=[
        draw_designs(mesh, {name: designs[name]["density"] for name in (ELASTIC, PLASTIC)},
                     curves[PLASTIC]["plastic_strain"], out / "plastic_design.png"),
        draw_curves(curves, out / "plastic_design_curves.png")])
    numbers["seconds"] = time.perf_counter() - start
    print(f"{numbers['seconds']:.1f} s; wrote", ", ".join(map(str, numbers["pictures"])))
    return numbers


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", "--fast", dest="quick", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="coarser mesh, fewer iterations (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--out", type=Path, default=Path("results/examples/plastic_design"))
    args = parser.parse_args(argv)
    return run(args.quick, args.out)


if __name__ == "__main__":
    main()

"""Ground-structure truss topology optimization: a Michell-like cantilever from many bars.

Nodes on a grid over a 2 x 1 rectangle, a candidate bar between every pair of nodes that
has no third node on it (:func:`fesens.mesh.ground_structure.ground_structure`), the left
edge pinned, a unit downward load at the middle of the right edge. The bar areas are the
design: ``A_e = A_max ρ_e`` (the density design problem with SIMP of penalty 1, i.e. a
stiffness linear in the area), the compliance is minimised subject to the material
volume ``Σ A_e L_e ≤ V`` (the truss's cell "volumes" are ``A_max L_e``) with the
optimality criteria (or ``--optimizer mma``). The problem is convex (Ben-Tal & Bendsøe
1993); most bars vanish and the remaining ones form a Michell-like layout
(Michell 1904; Hemp 1973).

Checked number: at the optimum of a single-load minimum-compliance truss every active bar
has the same stress magnitude, and the compliance equals
``(Σ |N_e| L_e)² / (E V)`` (the plastic-design identity of Hemp, *Optimum Structures*,
1973), computed from the final bar forces independently of the optimizer.

Run: ``python examples/truss_ground_structure.py [--fast] [--optimizer oc|mma] [--out DIR]``
(``--fast``, or ``FESENS_EXAMPLES_FAST=1``: a coarser grid). Writes ``truss.png`` and
``convergence.png`` to ``results/examples/truss_ground_structure``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from fesens.mesh.ground_structure import ground_structure
from fesens.objectives import compliance
from fesens.opt import SIMP, DesignProblem, make_optimizer, optimize
from fesens.physics.truss import Truss
from fesens.plotting import boundary_markers, plot_convergence, plot_truss

LENGTH, HEIGHT = 2.0, 1.0
#: Young's modulus, the largest area, and the material volume ``V`` of the truss.
E, A_MAX, VOLUME = 1.0, 1.0, 5.0
#: Bars thinner than this times A_max count as vanished (and are not drawn).
ACTIVE = 1e-3


def build(nx: int) -> DesignProblem:
    """The cantilever ground structure on an ``nx`` x ``nx/2`` grid as a design problem."""
    mesh = ground_structure((nx, nx // 2), (LENGTH, HEIGHT))
    model = Truss(mesh, A=A_MAX, E=E).fix("left")
    model.point_load((LENGTH, HEIGHT / 2), (0.0, -1.0), name="tip")
    # Σ ρ_e A_max L_e ≤ V as the fraction of the ground structure's volume Σ A_max L_e.
    fraction = VOLUME / float(np.sum(model.cell_volumes()))
    return DesignProblem(model, lambda state, rho: compliance(state),
                         volume_fraction=fraction,
                         interpolation=SIMP(penalty=1.0, minimum=1e-9))


def run(fast: bool = False, optimizer: str = "oc",
        out: Path = Path("results/examples/truss_ground_structure")) -> dict:
    """Optimize, check the optimality identity, draw; returns the key numbers."""
    start = time.perf_counter()
    problem = build(8 if fast else 12)
    model, mesh = problem.model, problem.mesh
    volume_limit = VOLUME
    print(f"ground structure: {mesh.n_points} nodes, {mesh.n_cells} candidate bars; "
          f"volume <= {volume_limit:.4g}; {optimizer.upper()}")

    def report(record, evaluation, x):
        if record["iteration"] % 25 == 0:
            print(f"  {record['iteration']:4d}  compliance {record['objective']:10.5f}  "
                  f"volume fraction {record['volume']:.4f}  change {record['change']:.4f}")

    result = optimize(problem, make_optimizer(optimizer), max_iter=1000 if fast else 2000,
                      tol_change=1e-4, callback=report)
    final = result.evaluation
    areas = A_MAX * final.density
    state = model.solve(scale=problem.interpolation(final.density))
    forces = state.axial_force()
    lengths = model.bar_lengths()
    active = areas > ACTIVE * A_MAX
    volume = float(areas @ lengths)
    plastic = float(np.abs(forces) @ lengths) ** 2 / (E * volume)
    stress = np.abs(state.axial_stress()[active])
    numbers = {
        "compliance": final.objective, "active_bars": int(active.sum()),
        "candidate_bars": mesh.n_cells, "volume": volume, "volume_limit": volume_limit,
        "plastic_compliance": plastic,
        "identity_error": abs(final.objective - plastic) / final.objective,
        "stress_spread": float((stress.max() - stress.min()) / stress.max()),
        "iterations": len(result.history), "converged": result.converged,
        "areas": areas, "forces": forces,
    }
    out = Path(out)
    numbers["pictures"] = [
        plot_truss(mesh, areas, out / "truss.png", forces=forces, threshold=ACTIVE,
                   title=f"ground structure: {numbers['active_bars']} of {mesh.n_cells} bars, "
                         f"compliance {final.objective:.4g}", **boundary_markers(model)),
        plot_convergence(result.history, out / "convergence.png",
                         volume_limit=problem.volume_fraction, objective="compliance"),
    ]
    numbers["seconds"] = time.perf_counter() - start
    print(f"{'converged' if result.converged else 'stopped'} after {numbers['iterations']} "
          f"iterations: compliance {final.objective:.6g}, {numbers['active_bars']} of "
          f"{mesh.n_cells} bars active (A > {ACTIVE:g} A_max), volume {volume:.4g} "
          f"(limit {volume_limit:.4g})")
    print(f"optimality: (Σ|N|L)²/(E V) = {plastic:.6g} (relative difference "
          f"{numbers['identity_error']:.1e}); active-bar |σ| spread "
          f"{numbers['stress_spread']:.1e}; {numbers['seconds']:.1f} s")
    print("wrote", ", ".join(str(p) for p in numbers["pictures"]))
    return numbers


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="coarser grid (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--optimizer", choices=("oc", "mma"), default="oc")
    parser.add_argument("--out", type=Path,
                        default=Path("results/examples/truss_ground_structure"))
    args = parser.parse_args(argv)
    return run(args.fast, args.optimizer, args.out)


if __name__ == "__main__":
    main()

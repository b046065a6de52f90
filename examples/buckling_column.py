"""Maximize the buckling load of a compressed column at half its volume (MMA).

A plane-stress column (1 wide, 2 tall, ``E = 1``, ``ν = 0.3``) is clamped at its foot and
compressed by a uniform load on its top edge (total 1, the reference load), as in the
column example of Ferrari, Sigmund & Guest, "Topology optimization with linearized
buckling criteria in 250 lines of Matlab" (Struct. Multidisc. Optim. 63, 2021): the top
row of cells is passive solid, so the load always meets material. The design variables
(one per quad4 cell) go through a density filter (radius 1.5 cells) to densities ``ρ``;
the stiffness is SIMP ``ρ³`` and the prestress is interpolated by ``ρ³`` without the SIMP
floor, so void cells buckle on nothing (:class:`fesens.opt.buckling_design.BucklingProblem`).

The objective is ``−KS(μ₁, μ₂, μ₃) / μ₁⁰``, a smooth lower bound of the lowest load factor
that stays differentiable when they coalesce (four are computed per iteration; ``μ₁⁰`` is
the uniform design's). Its gradient, which includes the adjoint of the static solve for
the dependence of ``K_σ`` on the displacements, is Taylor-tested before optimizing.

The run stops after its 120 iterations (40 with ``--fast``) without converging: the next
three load factors stay clustered just above the lowest and the largest design change stays
at the move limit 0.1, so the last digits of the final ``μ₁`` follow the rounding. Over
starts moved by 1e-12 (relative) and another OpenBLAS kernel it ended between 0.0199 and
0.0207 (0.0206 from the uniform start): quote it as about 0.020, within 3 %.

Run: ``python examples/buckling_column.py [--fast] [--out DIR]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: a coarser grid, fewer iterations). Prints the lowest load
factor before and after; writes ``density.png`` (the design) and ``mode1.png`` (the design
on its first buckling mode) to ``results/examples/buckling_column``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from fesens.ad import taylor_test, value_and_grad
from fesens.mesh import rectangle
from fesens.objectives import eigenvalue_ks
from fesens.opt import MMA, SIMP, DensityFilter, optimize
from fesens.opt.buckling_design import BucklingProblem
from fesens.physics import Elasticity
from fesens.plotting import plot_cell_field, plot_density

WIDTH, HEIGHT = 1.0, 2.0
E, NU = 1.0, 0.3
VOLUME_FRACTION = 0.5
#: Load factors in the KS bound, and computed per iteration (one more).
COUNT, N_MODES = 3, 4
KS_RHO = 20.0


def build(nx: int) -> BucklingProblem:
    """The column on an ``nx`` x ``2 nx`` quad4 grid; the objective scaled by the uniform
    design's lowest load factor."""
    ny = 2 * nx
    mesh = rectangle(nx, ny, WIDTH, HEIGHT, cell_type="quad4")
    model = Elasticity(mesh, E=E, nu=NU, plane="stress")
    model.fix("bottom")
    model.traction("top", (0.0, -1.0 / WIDTH))
    centres = mesh.points[mesh.cells].mean(axis=1)
    top_row = np.flatnonzero(centres[:, 1] > HEIGHT * (1 - 1 / ny))
    reference = {"mu": 1.0}

    def objective(result, rho):
        """``−KS`` of the lowest :data:`COUNT` load factors over the uniform design's μ₁."""
        return -eigenvalue_ks(result, rho=KS_RHO, count=COUNT) / reference["mu"]

    problem = BucklingProblem(model, objective, n_modes=N_MODES,
                              volume_fraction=VOLUME_FRACTION,
                              interpolation=SIMP(penalty=3.0, minimum=1e-6),
                              filter=DensityFilter(mesh, radius=1.5 * WIDTH / nx),
                              passive_solid=top_row)
    uniform = problem.solve(problem.density(problem.initial_design()))
    reference["mu"] = float(uniform.load_factors[0])
    return problem


def check_gradient(problem: BucklingProblem) -> dict:
    """Taylor test of the optimizer's gradient at the uniform design."""
    def J(x):
        rho = problem.density(x)
        return problem.objective(problem.solve(rho), rho)

    x = problem.initial_design()
    print("Taylor test of d(-KS/mu0)/dx at the uniform design (random direction):")
    taylor = taylor_test(J, x)
    evaluation = problem.evaluate(x)
    _, gradient = value_and_grad(J)(x)
    mismatch = float(np.max(np.abs(evaluation.gradient - gradient)) / np.max(np.abs(gradient)))
    return {"taylor_rate": taylor.rate, "gradient_mismatch": mismatch}


def run(fast: bool = False, out: Path = Path("results/examples/buckling_column")) -> dict:
    """Check the gradient, optimize, write the pictures; returns the key numbers."""
    start = time.perf_counter()
    problem = build(16 if fast else 40)
    mesh = problem.mesh
    print(f"compressed column: {mesh.n_cells} quad4 cells, {problem.model.dofmap.n_dofs} "
          f"dofs, volume fraction <= {VOLUME_FRACTION}, KS of the lowest {COUNT} buckling "
          "load factors, MMA")
    numbers = check_gradient(problem)
    initial = problem.evaluate(problem.initial_design()).state

    def report(record, evaluation, x):
        if record["iteration"] % 10 == 0:
            print(f"  {record['iteration']:4d}  mu1 {evaluation.state.load_factors[0]:.6g}  "
                  f"volume {record['volume']:.4f}  change {record['change']:.4f}")

    result = optimize(problem, MMA(move=0.1), max_iter=40 if fast else 120, tol_change=0.01,
                      callback=report)
    final = result.evaluation
    buckled = final.state
    numbers.update(
        load_factor_before=float(initial.load_factors[0]),
        load_factor_after=float(buckled.load_factors[0]),
        load_factors_after=np.asarray(buckled.load_factors), volume=final.volume_fraction,
        iterations=len(result.history), converged=result.converged, density=final.density)
    shape = buckled.vectors[:, 0].reshape(mesh.n_points, 2)
    out = Path(out)
    before, after = numbers["load_factor_before"], numbers["load_factor_after"]
    numbers["pictures"] = [
        plot_density(mesh, final.density, out / "density.png",
                     title=f"compressed column: mu1 {after:.4f} (uniform {before:.4f}), "
                           f"volume {final.volume_fraction:.3f}"),
        plot_cell_field(mesh, final.density, out / "mode1.png", displacement=shape,
                        cmap="gray_r", label="density",
                        title=f"first buckling mode, mu1 = {after:.4f}"),
    ]
    numbers["seconds"] = time.perf_counter() - start
    print(f"{'converged' if result.converged else 'stopped'} after {numbers['iterations']} "
          f"iterations: lowest load factor before {before:.6g}, after {after:.6g} "
          f"({after / before:.3f}x); lowest {N_MODES} after: "
          f"{', '.join(f'{f:.6g}' for f in numbers['load_factors_after'])}; volume "
          f"{final.volume_fraction:.4f}; {numbers['seconds']:.1f} s")
    print("wrote", ", ".join(str(p) for p in numbers["pictures"]))
    return numbers


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="coarser grid, fewer iterations (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--out", type=Path, default=Path("results/examples/buckling_column"))
    args = parser.parse_args(argv)
    return run(args.fast, args.out)


if __name__ == "__main__":
    main()

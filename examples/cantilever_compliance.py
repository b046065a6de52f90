"""Compliance minimisation of a 2D cantilever through the Python API, gradient checked first.

The cantilever (2 x 1, plane stress, ``E = 1``, ``ν = 0.3``) is clamped on its left edge
and carries a unit downward point load at the middle of its right edge. The design
variables ``x`` (one per quad4 cell) go through a density filter (radius 1.5 cells) and
SIMP (``p = 3``) to the stiffness scale; the volume fraction is at most 0.4.

Before optimizing, the example checks the adjoint gradient of the compliance with respect
to ``x`` in three ways:

* ``taylor_test``: the Taylor remainder table, converging at rate 2;
* ``check_grad``: directional derivatives against central finite differences;
* a closed form: a uniform design ``x = v`` stays uniform after the filter, so the
  compliance is ``C_solid / s(v)`` and its derivative along ``x → x + t·1`` is
  ``−C s′(v) / s(v)`` (``= −3C/v`` up to the tiny SIMP floor).

Then the optimality-criteria (or ``--optimizer mma``) loop runs to convergence.

Run: ``python examples/cantilever_compliance.py [--fast] [--optimizer oc|mma] [--out DIR]``
(``--fast``, or ``FESENS_EXAMPLES_FAST=1``: a coarser grid). Writes ``density.png`` and
``convergence.png`` to ``results/examples/cantilever_compliance``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from fesens.ad import check_grad, taylor_test, value_and_grad
from fesens.mesh import rectangle
from fesens.objectives import compliance
from fesens.opt import SIMP, DensityFilter, DesignProblem, make_optimizer, optimize
from fesens.physics import Elasticity
from fesens.plotting import plot_convergence, plot_density

LENGTH, HEIGHT = 2.0, 1.0
VOLUME_FRACTION = 0.4


def build(nx: int) -> DesignProblem:
    """The cantilever on an ``nx`` x ``nx/2`` quad4 grid as a density design problem."""
    ny = nx // 2
    mesh = rectangle(nx, ny, LENGTH, HEIGHT, cell_type="quad4")
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress").fix("left")
    model.point_load((LENGTH, HEIGHT / 2), (0.0, -1.0), name="tip")
    return DesignProblem(
        model,
        lambda state, rho: compliance(state),
        volume_fraction=VOLUME_FRACTION,
        interpolation=SIMP(penalty=3.0),
        filter=DensityFilter(mesh, radius=1.5 * LENGTH / nx),
    )


def check_gradient(problem: DesignProblem) -> dict:
    """Taylor test, finite differences and the uniform-design closed form at ``x = v``."""
    def C(x):
        return compliance(problem.solve(problem.density(x)))

    x = problem.initial_design()
    print("Taylor test of dC/dx at the uniform design (random direction):")
    taylor = taylor_test(C, x)
    # Step 1e-4 on variables of order 1: with 1e-6 the round-off of the two solves is
    # already visible in directions along which C changes little.
    fd_error = check_grad(C, x, n_directions=3, eps=1e-4)
    print(f"check_grad: largest relative error against central differences {fd_error:.1e}")
    value, gradient = value_and_grad(C)(x)
    v, simp = VOLUME_FRACTION, problem.interpolation
    s = simp.minimum + v**3 * (1 - simp.minimum)
    closed_form = -value * 3 * v**2 * (1 - simp.minimum) / s
    along_ones = float(gradient.sum())
    print(f"derivative along x + t·1: adjoint {along_ones:.10e}, closed form "
          f"-C s'(v)/s(v) {closed_form:.10e}")
    return {"taylor_rate": taylor.rate, "fd_error": fd_error,
            "uniform_compliance": value, "max_gradient": float(gradient.max()),
            "closed_form_error": abs(along_ones - closed_form) / abs(closed_form)}


def run(fast: bool = False, optimizer: str = "oc",
        out: Path = Path("results/examples/cantilever_compliance")) -> dict:
    """Check the gradient, optimize, write the pictures; returns the key numbers."""
    start = time.perf_counter()
    problem = build(60 if fast else 96)
    mesh = problem.mesh
    print(f"cantilever: {mesh.n_cells} quad4 cells, {problem.model.dofmap.n_dofs} dofs, "
          f"volume fraction <= {VOLUME_FRACTION}, SIMP 3, density filter, {optimizer.upper()}")
    numbers = check_gradient(problem)
    solid = problem.model.solve().compliance()  # x = 1 everywhere
    numbers["solid_compliance"] = solid

    def report(record, evaluation, x):
        if record["iteration"] % 10 == 0:
            print(f"  {record['iteration']:4d}  compliance {record['objective']:10.5f}  "
                  f"volume {record['volume']:.4f}  change {record['change']:.4f}")

    result = optimize(problem, make_optimizer(optimizer), max_iter=100 if fast else 250,
                      tol_change=0.01, callback=report)
    final = result.evaluation
    numbers.update(compliance=final.objective, volume=final.volume_fraction,
                   iterations=len(result.history), converged=result.converged,
                   density=final.density, grayness=float(np.mean(4 * final.density
                                                                  * (1 - final.density))))
    out = Path(out)
    numbers["pictures"] = [
        plot_density(mesh, final.density, out / "density.png",
                     title=f"cantilever: compliance {final.objective:.3f}, "
                           f"volume {final.volume_fraction:.3f}"),
        plot_convergence(result.history, out / "convergence.png",
                         volume_limit=VOLUME_FRACTION, objective="compliance"),
    ]
    numbers["seconds"] = time.perf_counter() - start
    print(f"{'converged' if result.converged else 'stopped'} after {numbers['iterations']} "
          f"iterations: compliance {final.objective:.4f} (uniform design "
          f"{numbers['uniform_compliance']:.4f}, full solid {solid:.4f}), volume "
          f"{final.volume_fraction:.4f}, grayness {numbers['grayness']:.3f}; "
          f"{numbers['seconds']:.1f} s")
    print("wrote", ", ".join(str(p) for p in numbers["pictures"]))
    return numbers


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="coarser grid (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--optimizer", choices=("oc", "mma"), default="oc")
    parser.add_argument("--out", type=Path, default=Path("results/examples/cantilever_compliance"))
    args = parser.parse_args(argv)
    return run(args.fast, args.optimizer, args.out)


if __name__ == "__main__":
    main()

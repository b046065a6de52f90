"""The gradients of a distributed design problem (run by test_distributed_gradients.py,
serially and under ``mpirun -n 2``): each rank writes ``rank<r>.npz`` into the folder given.

The mbb preset (60 x 20 quad4, density filter) at a random design (the same whole vector on
any number of ranks; each rank takes its part): the compliance and volume with their
gathered gradients, the second-order Taylor remainders of the compliance along a random
direction (the slope ⟨∇J, h⟩ summed over the ranks), and central differences of single
design variables (each perturbed on the rank that holds it).
"""

import sys
from pathlib import Path

import numpy as np

from fesens.config import load_preset
from fesens.config.mpi_run import build_run
from fesens.mpi import collective

out = Path(sys.argv[1])
ranks = collective()
config = load_preset("mbb")
if ranks.distributed:  # MUMPS across the ranks: differences of exact solves
    config.data["solver"]["backend"] = "petsc_direct"
problem = build_run(config).problem
n_whole = int(ranks.sum(problem.n_design))
rng = np.random.default_rng(7)
x_whole = 0.2 + 0.6 * rng.random(n_whole)
h_whole = rng.standard_normal(n_whole)
x, h = problem.design_part(x_whole), problem.design_part(h_whole)

evaluation = problem.evaluate(x)
J0, gradient = evaluation.objective, evaluation.gradient
slope = ranks.dot(gradient, h)
steps = 1e-2 * 0.5 ** np.arange(5)
remainders = np.array([abs(problem.evaluate(x + e * h).objective - J0 - e * slope)
                       for e in steps])

# central differences of three design variables: the first (at the load) and one on each
# side of the ranks' interface (a 2-rank split of the 60 columns)
picked = np.array([0, 29 * 20 + 10, 30 * 20 + 10])
differences = []
for index in picked:
    unit = np.zeros(n_whole)
    unit[index] = 1e-3  # smaller steps lose digits to the solves' round-off
    step = problem.design_part(unit)
    plus, minus = problem.evaluate(x + step), problem.evaluate(x - step)
    differences.append([(plus.objective - minus.objective) / 2e-3,
                        (plus.constraints[0] - minus.constraints[0]) / 2e-3])

np.savez(out / f"rank{ranks.rank}.npz", objective=J0,
         gradient=problem.gather_design(gradient),
         volume_gradient=problem.gather_design(evaluation.constraint_gradients[0]),
         remainders=remainders, steps=steps, picked=picked, differences=np.array(differences),
         size=ranks.size)

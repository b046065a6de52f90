"""A transient or dynamic run solves the assembled step matrix ``a M + b K``; the device
multigrid (``gmg`` with ``device = "numpy"``, or ``"gpu"``) solves the lattice operator of
the cells' stiffness only, so from Python such a run is refused before its first step with
a ``ValueError`` naming the device and ``device = "cpu"`` (it failed inside the solver with
"device_gmg solves matrix-free lattice operators only"); the CPU multigrid
(``device = "cpu"``) takes the assembled step matrix and gives the direct solver's run."""

import numpy as np
import pytest

from fesens.fem.transient import TransientProblem
from fesens.fem.transient.dynamics import DynamicProblem
from fesens.mesh.generators import rectangle
from fesens.physics import Elasticity, HeatConduction

DEVICE = {"matrix_free": True, "device": "numpy"}


def plate() -> HeatConduction:
    model = HeatConduction(rectangle(4, 4, 1.0, 1.0))
    model.fix("left")
    model.heat_source(1.0)
    return model


def cantilever() -> Elasticity:
    model = Elasticity(rectangle(4, 2, 2.0, 1.0), E=1.0, nu=0.3)
    model.fix("left")
    model.point_load((2.0, 0.5), (1.0, 0.0))
    return model


def total(state, t):
    return np.sum(state)


@pytest.mark.parametrize("problem", [
    lambda options: TransientProblem(plate(), t_end=0.2, dt=0.1, solver="gmg",
                                     solver_options=options),
    lambda options: DynamicProblem(cantilever(), t_end=0.2, dt=0.1, solver="gmg",
                                   solver_options=options)], ids=["transient", "dynamic"])
def test_the_device_multigrid_is_refused_before_the_first_step(problem):
    with pytest.raises(ValueError, match=r"a M \+ b K.*device multigrid.*'device': 'numpy'"
                                         r".*device = \"cpu\""):
        problem(DEVICE).values(total)


def test_the_cpu_multigrid_runs_the_assembled_step_matrix_as_the_direct_solver():
    runs = {}
    for solver, options in (("gmg", {"matrix_free": True, "device": "cpu"}), ("superlu", {})):
        problem = TransientProblem(plate(), t_end=0.2, dt=0.1, solver=solver,
                                   solver_options=options)
        runs[solver] = problem.values(total)
    np.testing.assert_allclose(runs["gmg"], runs["superlu"], rtol=1e-7)
    assert runs["superlu"][-1] > 0.0

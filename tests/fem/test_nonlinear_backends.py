"""Every linear backend that fits solves the Newton steps: the converged states agree with
LU's to round-off (the Newton tolerance is met whichever backend solves each step; an
iterative one's own tolerance only changes how the residual got there)."""

import numpy as np
import pytest

from fesens.errors import SolverError
from fesens.mesh import rectangle
from fesens.physics import FiniteStrainElasticity, NonlinearHeatConduction
from fesens.solvers import available_solvers, solver_class

MESH = rectangle(20, 4, 5.0, 1.0)


def bent_strip(solver):
    model = FiniteStrainElasticity(MESH, E=100.0, nu=0.3).fix("left")
    model.traction("right", (0.0, -0.5))
    return model.solve(solver=solver, steps=2).u


def heated_strip(solver):
    model = NonlinearHeatConduction(MESH, conductivity=1.0, beta=0.5)
    model.fix("left", value=0.0).fix("right", value=1.0)
    return model.solve(solver=solver).u


@pytest.mark.parametrize("backend", available_solvers())
def test_a_symmetric_tangent_solves_with_every_backend(backend):
    reference = bent_strip("lu")
    assert np.abs(reference).max() > 0.05  # a large deflection: several Newton iterations
    u = bent_strip(backend)
    assert np.abs(u - reference).max() < 1e-9 * np.abs(reference).max()


@pytest.mark.parametrize("backend", available_solvers())
def test_a_non_symmetric_tangent_solves_with_every_general_backend(backend):
    reference = heated_strip("lu")
    if solver_class(backend).symmetric:
        with pytest.raises(SolverError, match="tangent of NonlinearHeatConduction is not "
                                              "symmetric"):
            heated_strip(backend)
        return
    u = heated_strip(backend)
    assert np.abs(u - reference).max() < 1e-9 * np.abs(reference).max()

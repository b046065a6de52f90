"""Heat conduction: thermal objectives × parameter kinds, Taylor rate 2 and finite differences.

The plate of :func:`adjoint_helpers.plate` has a non-uniform prescribed temperature, a heat
source and a flux, so every kind of differentiable input is present in every solve.
"""

import numpy as np
import pytest
from adjoint_helpers import assert_gradient, densities, plate

from fesens.objectives import Differentiable, mean_temperature, thermal_compliance

MODEL = plate()
N_CELLS = MODEL.mesh.n_cells
T0 = MODEL.prescribed_values()
RNG = np.random.default_rng(11)

OBJECTIVES = {
    "thermal_compliance": thermal_compliance,
    "mean_temperature": lambda state: mean_temperature(state, "right"),
}

PARAMETERS = {
    "conductivity": (RNG.uniform(0.5, 2.0, N_CELLS),
                     lambda pb, kappa: pb.solve(conductivity=kappa)),
    "density": (densities(N_CELLS, seed=12), lambda pb, x: pb.solve(scale=x**3)),
    "heat_source": (1.4, lambda pb, m: pb.solve(loads={"source": m})),
    "flux": (0.7, lambda pb, m: pb.solve(loads={"flux": m})),
    "prescribed": (T0 + 0.1 * RNG.standard_normal(T0.size),
                   lambda pb, g: pb.solve(dirichlet=g)),
    "several": (
        {"kappa": RNG.uniform(0.5, 2.0, N_CELLS), "x": densities(N_CELLS, seed=13),
         "source": 1.4, "flux": 0.7, "T": T0 + 0.1 * RNG.standard_normal(T0.size)},
        lambda pb, p: pb.solve(conductivity=p["kappa"], scale=p["x"] ** 3,
                               loads={"source": p["source"], "flux": p["flux"]},
                               dirichlet=p["T"]),
    ),
}

#: The temperature is affine in the load magnitudes and in the prescribed values; fᵀT is
#: affine in the prescribed values (f does not depend on them).
AFFINE = {("mean_temperature", kind) for kind in ("heat_source", "flux", "prescribed")}
AFFINE.add(("thermal_compliance", "prescribed"))


@pytest.mark.parametrize("kind", PARAMETERS)
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_thermal_objective_gradient(objective, kind):
    problem = Differentiable(plate())
    x0, solve = PARAMETERS[kind]
    J = OBJECTIVES[objective]

    def fun(x):
        return J(solve(problem, x))

    assert_gradient(fun, x0, affine=(objective, kind) in AFFINE)


def test_thermal_gradient_with_thickness():
    """The 2D thickness multiplies conductances and loads alike: still exact."""
    problem = Differentiable(plate(thickness=0.3))
    kappa = RNG.uniform(0.5, 2.0, N_CELLS)
    assert_gradient(lambda k: thermal_compliance(problem.solve(conductivity=k)), kappa)

"""Problems and objectives shared by the adapter tests: each test compares a gradient
through an adapter with fesens's own (``fesens.ad.value_and_grad``) on the same function."""

import numpy as np

from fesens.mesh import box, rectangle
from fesens.objectives import Differentiable, compliance, displacement_norm, stress_pnorm
from fesens.physics import Elasticity

#: The agreement asked of every adapter, relative to the largest gradient entry.
RTOL = 1e-10

OBJECTIVES = {
    "compliance": compliance,
    "displacement_norm": displacement_norm,
    "stress_pnorm": lambda state: stress_pnorm(state, p=8.0),
}

#: Two load cases: magnitudes of the named loads of :func:`problem`.
CASES = [{"shear": 1.0, "gravity": 0.0}, {"shear": -0.5, "gravity": 2.0}]


def problem(dim: int) -> Differentiable:
    """A clamped cantilever with a ``shear`` traction and ``gravity``: quad4 in 2D
    (6 x 3 cells), hex8 in 3D (3 x 2 x 2 cells)."""
    if dim == 2:
        model = Elasticity(rectangle(6, 3, 2.0, 1.0, cell_type="quad4"), E=1.0, nu=0.3,
                           plane="stress")
        model.traction("right", (0.2, -1.0), name="shear")
        model.body_force((0.01, -0.03), name="gravity")
    else:
        model = Elasticity(box(3, 2, 2, 3.0, 1.0, 1.0, cell_type="hex8"), E=1.0, nu=0.3)
        model.traction("right", (0.2, -1.0, 0.5), name="shear")
        model.body_force((0.01, -0.03, 0.02), name="gravity")
    model.fix("left")
    return Differentiable(model)


def objective(dim: int, name: str, load_cases: bool):
    """``x ↦ J(solve(scale=x³))`` on :func:`problem`, with :data:`CASES` or one case.

    Stress objectives take one load case per state, so with :data:`CASES` the p-norm is
    summed over one solve per case."""
    solved = problem(dim)
    J = OBJECTIVES[name]
    if load_cases and name == "stress_pnorm":
        return lambda x: sum(J(solved.solve(scale=x**3, loads=case)) for case in CASES)
    if load_cases:
        return lambda x: J(solved.solve(scale=x**3, load_cases=CASES))
    return lambda x: J(solved.solve(scale=x**3))


def densities(fun_dim: int, seed: int = 0) -> np.ndarray:
    """Seeded densities in ``[0.3, 1]`` for the mesh of :func:`problem`."""
    n_cells = 18 if fun_dim == 2 else 12
    return np.random.default_rng(seed).uniform(0.3, 1.0, n_cells)


def relative_error(a, b) -> float:
    """``max|a − b| / max|b|``."""
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(b)))


def pytree_function(dim: int):
    """``(params, factor) ↦ {"compliance": C · factor, "tip": u[-4:]}`` on :func:`problem`,
    with ``params = {"x": densities, "load": shear magnitude}``: pytrees in and out."""
    solved = problem(dim)

    def fun(params, factor):
        state = solved.solve(scale=params["x"] ** 3, loads={"shear": params["load"],
                                                              "gravity": 1.0})
        return {"compliance": compliance(state) * factor, "tip": state.u[-4:]}

    return fun

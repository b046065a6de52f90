"""Every element type in 2D (plane stress and plane strain) and 3D: compliance and the
von Mises p-norm with respect to SIMP densities pass the Taylor test and finite differences.
"""

import numpy as np
import pytest
from adjoint_helpers import (
    CELL_TYPES_2D,
    CELL_TYPES_3D,
    assert_gradient,
    beam,
    densities,
    relative_difference,
)

from fesens.ad import grad
from fesens.objectives import Differentiable, compliance, stress_pnorm

CASES = [(cell_type, plane, False) for cell_type in CELL_TYPES_2D
         for plane in ("stress", "strain")]
CASES += [(cell_type, None, False) for cell_type in CELL_TYPES_3D]
# Distorted quadrilaterals and hexahedra: cells that are not translates of one another
# (per-cell element matrices and averaged strain gradients).
CASES += [("quad4", "strain", True), ("hex8", None, True)]
IDS = [f"{c}-{p or '3d'}{'-distorted' if d else ''}" for c, p, d in CASES]

OBJECTIVES = {"compliance": compliance, "stress_pnorm": lambda s: stress_pnorm(s, p=6.0)}


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize(("cell_type", "plane", "distorted"), CASES, ids=IDS)
def test_density_gradient_per_element_type(cell_type, plane, distorted, objective):
    model = beam(cell_type, plane, distorted=distorted)
    problem = Differentiable(model)
    J = OBJECTIVES[objective]
    x = densities(model.mesh.n_cells, seed=21)
    assert_gradient(lambda x: J(problem.solve(scale=x**3)), x)


@pytest.mark.parametrize("cell_type", CELL_TYPES_2D)
def test_plane_assumption_changes_the_gradient(cell_type):
    """Guard against a plane flag that is silently ignored by the traced path."""
    x = densities(beam(cell_type, "stress").mesh.n_cells, seed=22)
    gradients = [grad(lambda x, p=plane: stress_pnorm(
        Differentiable(beam(cell_type, p)).solve(scale=x**3)))(x)
        for plane in ("stress", "strain")]
    assert relative_difference(*gradients) > 1e-3


def clamp_motion_3d(points: np.ndarray) -> np.ndarray:
    """A non-rigid prescribed displacement of a 3D clamp, ``(n, 3)``."""
    y, z = points[:, 1], points[:, 2]
    return np.column_stack([0.05 * y**2, 0.02 * z, -0.03 * y])


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("cell_type", CELL_TYPES_3D)
def test_3d_density_and_dirichlet_gradient(cell_type, objective):
    """The Dirichlet lift in 3D: densities and prescribed values differentiated together."""
    model = beam(cell_type)
    model.fix("left", value=clamp_motion_3d)
    problem = Differentiable(model)
    J = OBJECTIVES[objective]
    g0 = model.prescribed_values()
    point = {"x": densities(model.mesh.n_cells, seed=23),
             "g": g0 + 0.01 * np.random.default_rng(23).standard_normal(g0.size)}
    assert_gradient(lambda p: J(problem.solve(scale=p["x"] ** 3, dirichlet=p["g"])), point)

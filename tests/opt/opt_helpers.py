"""Shared set-up of the design-optimization tests: top88's half MBB beam."""

from __future__ import annotations

import numpy as np

from fesens.mesh import rectangle
from fesens.objectives import compliance
from fesens.opt import SIMP, DesignProblem, Evaluation, make_filter
from fesens.opt.optimizer_base import Optimizer
from fesens.physics import Elasticity


def mbb_model(nelx: int, nely: int, cell_type: str = "quad4") -> Elasticity:
    """top88's half MBB beam on a grid of unit cells (Andreassen et al. 2011, §2).

    ``E = 1``, ``ν = 0.3``, plane stress, unit thickness; ``u_x = 0`` on the symmetry line
    (left side), ``u_y = 0`` at the lower right corner, unit downward load at the upper left
    corner.
    """
    mesh = rectangle(nelx, nely, float(nelx), float(nely), cell_type=cell_type)
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress")
    model.fix("left", components=0)
    model.fix(lambda p: np.isclose(p[:, 0], nelx) & np.isclose(p[:, 1], 0.0), components=1)
    model.point_load((0.0, float(nely)), (0.0, -1.0), name="F")
    return model


def mbb_problem(nelx: int, nely: int, radius: float, filter_kind: str,
                cell_type: str = "quad4", **options) -> DesignProblem:
    """Minimum compliance at volume fraction 0.5, SIMP p = 3, E_min = 1e-9 (top88)."""
    model = mbb_model(nelx, nely, cell_type)
    return DesignProblem(model, lambda state, rho: compliance(state), volume_fraction=0.5,
                         interpolation=SIMP(3.0, 1e-9),
                         filter=make_filter(filter_kind, model.mesh, radius), **options)


def objectives(result) -> np.ndarray:
    """The objective history of an :func:`~fesens.opt.optimize` result."""
    return np.array([record["objective"] for record in result.history])


def toy_evaluation(*, gradient, constraints, constraint_gradients, objective=0.0,
                   **fields) -> Evaluation:
    """The :class:`Evaluation` of an optimizer test's closed-form responses: no model, so
    no densities, volume or state."""
    return Evaluation(objective, gradient, constraints, constraint_gradients, density=None,
                      volume_fraction=float("nan"), state=None, **fields)


class Standstill(Optimizer):
    """An optimizer that keeps the design it is given: the change is 0 at every iteration,
    so only the schedules, the problem and the constraints decide how the loop ends."""

    name = "standstill"
    general_constraints = True
    bound_constraints = True

    def step(self, x, evaluation, volume_excess, iteration):
        return x.copy()

    def state(self) -> dict:
        return {}

    def load_state(self, state: dict) -> None:
        pass

"""Nonlinear transient heat conduction in a topology design with SIMP's minimum of 1e-9
(fesens/fem/transient/nonlinear_steps.py, fesens/fem/nonlinear/newton.py).

A design-independent source heats void cells whose heat capacity follows the density (zero
in void) while their conductivity keeps the interpolation's minimum: there the temperature
follows the source almost at once and rises to the order of ``sqrt(Q L² / (k_min β))``
(thousands of degrees), so that Newton's first correction from the level before, taken
with the tangent of that level's low conductivity, overshoots it by orders of magnitude.
The line search must then shorten the step by as much, which ten halvings (``α ≥ 1e-3``)
do not. BDF2 and Crank–Nicolson also overshoot a temperature that relaxes within a step,
here below ``T_ref − 1/β`` where ``k(T) ≤ 0``: such a step has no admissible solution,
which the error says, naming backward Euler as the remedy."""

from __future__ import annotations

import numpy as np
import pytest

from fesens.ad import taylor_test, value_and_grad
from fesens.errors import NewtonError
from fesens.fem.nonlinear.newton import Evaluation, NewtonOptions, newton
from fesens.fem.transient import TransientProblem
from fesens.mesh.generators import rectangle
from fesens.physics.nonlinear_conduction import NonlinearHeatConduction

MINIMUM = 1e-9  # SIMP's default minimum of the stiffness interpolation (top88's Emin)
PULSE = ([0.0, 0.05, 0.1], [0.0, 1.0, 0.0])


class Kirchhoff:
    """``R(x) = ε (x + x²/2) − 1``: a conductivity ``ε (1 + x)`` that grows with the
    temperature, heated by a unit source; the root ``x* = sqrt(1 + 2/ε) − 1`` lies far
    below the first Newton correction ``1/ε`` from ``x = 0``."""

    def __init__(self, eps: float):
        self.eps = eps

    def evaluate(self, x, t):
        return Evaluation(self.eps * (x + 0.5 * x ** 2) - 1.0, 1.0)

    def solve_tangent(self, x, t, rhs):
        return rhs / (self.eps * (1.0 + x))


def test_the_line_search_reaches_a_root_far_below_the_first_correction():
    """ε = 1e-9: the full correction overshoots the root by a factor 2e4, which ten
    halvings of the step (down to 1e-3) do not reach; the interpolated backtracking does,
    and Newton converges to the closed-form root."""
    eps = MINIMUM
    x, residuals = newton(Kirchhoff(eps), np.array([0.0]), 1.0, NewtonOptions())
    assert x[0] == pytest.approx(np.sqrt(1.0 + 2.0 / eps) - 1.0, rel=1e-10)
    assert residuals[-1] <= 1e-10 and len(residuals) <= 25


def _plate():
    """The plate of the nonlinear design (6 × 3 cells of 1 × 0.5), held at 0 on its left
    side, heated by a pulsed source ``q`` everywhere and a flux into its right side."""
    model = NonlinearHeatConduction(rectangle(6, 3, 1.0, 0.5), conductivity=2.0, beta=0.5)
    model.fix("left")
    model.heat_source(5.0, name="q")
    model.flux_load("right", 1.0, name="f")
    return model


def _design(void: float) -> np.ndarray:
    """Densities ``(18,)``: the two columns at the held side at ``void``, solid elsewhere
    (the design OC reaches on that plate)."""
    return np.where(np.arange(18) % 6 < 2, void, 1.0)


def _inputs(rho):
    """SIMP stiffness with the minimum, heat capacity linear in the density."""
    return {"histories": {"q": PULSE}, "heat_capacity": 3.0 * rho,
            "scale": MINIMUM + rho ** 3 * (1.0 - MINIMUM)}


@pytest.mark.parametrize("scheme", ["bdf2", "backward_euler", "crank_nicolson"])
def test_void_cells_at_the_minimum_converge(scheme):
    """Zero heat capacity and conductivity 2e-9 in the void: every step converges with
    the default Newton options (the first one failed in its line search before), the void
    heats up to about 1.2e4 and the solid stays below 1. Full Newton steps (no line
    search), another path to the same discrete solution, give the same levels at a tight
    tolerance, and the solid's levels of the default tolerance are theirs."""
    model = _plate()
    rho = _design(0.0)

    def levels(**newton):
        problem = TransientProblem(model, t_end=0.2, dt=0.01, scheme=scheme,
                                   newton=newton or None)
        return np.array([T for _, _, T in problem.states(**_inputs(rho))])

    default = levels()
    hottest = float(default.max())
    assert 1.0e4 < hottest < 1.4e4, hottest
    solid = model.mesh.points[:, 0] > 1.0 / 3 + 1e-9
    assert float(default[:, solid].max()) < 1.0
    tight = levels(rtol=1e-13)
    assert np.max(np.abs(tight - levels(rtol=1e-13, line_search=None))) <= 1e-11 * hottest
    assert np.max(np.abs(default[:, solid] - tight[:, solid])) <= 1e-9


@pytest.mark.parametrize(("void", "scheme", "in_void", "step", "h"), [
    (0.0, "bdf2", False, 1e-2, 1e-5),
    (0.0, "backward_euler", False, 1e-2, 1e-5),
    (1e-4, "bdf2", True, 2e-5, 1e-8),
])
def test_gradients_through_void_cells_pass_taylor_tests(void, scheme, in_void, step, h):
    """A weighted sum of the far corner's temperature over the 20 steps: the Taylor
    remainder falls at rate 2 and a central difference matches (rel. 1e-6). At ρ = 0 the
    direction leaves the void cells at 0 (a negative density has no meaning, and their
    zero heat capacity is the edge of the run's domain, where the value is not smooth);
    at ρ = 1e-4 it moves every cell, by less than the void density."""
    model = _plate()
    problem = TransientProblem(model, t_end=0.2, dt=0.01, scheme=scheme)
    corner = model.mesh.nearest_node((1.0, 0.5))
    weights = np.linspace(0.5, 1.5, problem.n_steps + 1)

    def objective(rho):
        return np.sum(weights * problem.values(lambda T, t: T[corner], **_inputs(rho)))

    rho = _design(void)
    direction = np.random.default_rng(0).standard_normal(rho.size)
    if not in_void:
        direction[rho == 0.0] = 0.0
    result = taylor_test(objective, rho, direction, step=step, verbose=False)
    assert np.all(np.abs(result.rates - 2.0) < 0.25), result
    _, gradient = value_and_grad(objective)(rho)
    central = (objective(rho + h * direction) - objective(rho - h * direction)) / (2 * h)
    assert float(gradient @ direction) == pytest.approx(central, rel=1e-6)


@pytest.mark.parametrize("scheme", ["bdf2", "crank_nicolson"])
def test_an_overshoot_out_of_the_admissible_range_names_the_scheme(scheme):
    """Void at 1e-8 (heat capacity 3e-8 against conductivity 2e-9): when the pulse ends
    the void temperatures relax within a step, and BDF2 and Crank–Nicolson overshoot
    below T = −2, where k(T) ≤ 0 (with the rest solved, the residual of the void nodes next
    to the held side stays positive for every common temperature of theirs down to −2):
    the step has no admissible solution, and the error names the scheme and backward
    Euler; backward Euler runs the same design and stays above −2."""
    model = _plate()
    rho = _design(1e-8)
    problem = TransientProblem(model, t_end=0.2, dt=0.01, scheme=scheme)
    with pytest.raises(NewtonError, match=rf"time step 11 .*inadmissible.*Scheme "
                                          rf"\"{scheme}\" overshoots.*backward_euler") as caught:
        problem.values(lambda T, t: T[0], **_inputs(rho))
    assert caught.value.state.shape == (model.dofmap.n_dofs,)
    stable = TransientProblem(model, t_end=0.2, dt=0.01, scheme="backward_euler")
    levels = [T for _, _, T in stable.states(**_inputs(rho))]
    assert min(float(T.min()) for T in levels) > -2.0 + 1e-6

"""Frequency design problems: the mass/stiffness interpolations of Du & Olhoff and
Pedersen, and the eigen solve as the design problem's traced "solve"."""

import numpy as np
import pytest

from fesens.ad import grad, taylor_test
from fesens.fem.analysis import ModalAnalysis
from fesens.mesh import rectangle
from fesens.objectives import eigenvalue, eigenvalue_ks
from fesens.opt import SIMP
from fesens.opt.frequency import THRESHOLD, DuOlhoff, FrequencyProblem, Pedersen
from fesens.physics import Elasticity


@pytest.mark.parametrize("interpolation", [DuOlhoff(), Pedersen()])
def test_interpolations_are_continuous_with_continuous_slope_of_the_mass(interpolation):
    below, above = THRESHOLD * (1 - 1e-9), THRESHOLD * (1 + 1e-9)
    for f in (interpolation, interpolation.mass):
        assert f(np.array(below)) == pytest.approx(f(np.array(above)), rel=1e-7)
    slope = grad(lambda r: interpolation.mass(r))
    assert slope(below) == pytest.approx(slope(above), rel=1e-6)
    # No localized modes: stiffness over mass stays away from zero in the void.
    rho = np.array([1e-3, 1e-2, 0.05])
    ratio = interpolation(rho) / interpolation.mass(rho)
    assert np.all(ratio >= 0.99 * interpolation(THRESHOLD) / THRESHOLD)
    assert interpolation.mass(0.0) > 0.0  # no massless dof where the density is 0


def test_du_olhoff_mass_is_linear_above_the_threshold_and_sixth_power_below():
    mass = DuOlhoff(mass_minimum=1e-12).mass
    assert mass(0.5) == pytest.approx(0.5, rel=1e-10)
    assert mass(1e-3) == pytest.approx(6e5 * 1e-18 - 5e6 * 1e-21 + 1e-12, rel=1e-6)


def _beam(nx=16, ny=4):
    model = Elasticity(rectangle(nx, ny, 4.0, 1.0), E=1.0, nu=0.3, plane="stress")
    return model.fix("left")


def test_frequency_problem_solves_modes_with_interpolated_mass_and_stiffness():
    model = _beam()
    problem = FrequencyProblem(model, lambda modes, rho: -eigenvalue(modes, 0), n_modes=3,
                               density=2.0, volume_fraction=0.5)
    x = np.random.default_rng(0).uniform(0.05, 1.0, problem.n_design)
    rho = problem.density(x)
    interpolation = problem.interpolation
    direct = ModalAnalysis(model, 3).run(density=2.0 * interpolation.mass(rho),
                                         scale=interpolation(rho))
    evaluation = problem.evaluate(x)
    np.testing.assert_allclose(evaluation.state.values, direct.values, rtol=1e-10)
    assert evaluation.objective == pytest.approx(-direct.values[0], rel=1e-10)
    result = taylor_test(lambda x: problem.objective(problem.solve(problem.density(x)), None),
                         x, verbose=False)
    assert result.rate == pytest.approx(2.0, abs=0.1)
    assert evaluation.gradient == pytest.approx(
        grad(lambda x: -problem.solve(problem.density(x)).values[0])(x), rel=1e-10)


def test_added_mass_lowers_the_frequency():
    def first(added):
        problem = FrequencyProblem(_beam(), lambda modes, rho: -eigenvalue_ks(modes, count=2),
                                   n_modes=3, volume_fraction=0.5, added_density=added)
        return problem.evaluate(problem.initial_design()).state.values[0]

    tip = np.zeros(64)
    tip[-1] = 5.0
    assert first(tip) < first(0.0)


def test_frequency_problem_refuses_an_interpolation_without_mass_and_load_cases():
    with pytest.raises(TypeError, match="DuOlhoff or Pedersen"):
        FrequencyProblem(_beam(), lambda m, r: 0.0, volume_fraction=0.5,
                         interpolation=SIMP())
    with pytest.raises(ValueError, match="load_cases"):
        FrequencyProblem(_beam(), lambda m, r: 0.0, volume_fraction=0.5,
                         load_cases=[{"P": 1.0}])
    with pytest.raises(ValueError, match="density"):
        FrequencyProblem(_beam(), lambda m, r: 0.0, volume_fraction=0.5,
                         density=0.0)

"""The grayness of a design: each cell's distance to the nearest value a crisp design takes
(void and solid; with the ordered SIMP of Zuo & Saitou, void and each phase's density),
normalized to 1 midway between two adjacent values. With void and solid only it is
Sigmund's ``4 ρ (1 − ρ)`` (Struct. Multidisc. Optim. 33, 2007, 401–424), written out here."""

import numpy as np
import pytest

from fesens.mesh import rectangle
from fesens.objectives import compliance
from fesens.opt import DesignProblem, OrderedSIMP
from fesens.opt.interpolation import INTERPOLATIONS, SIMP
from fesens.physics import Elasticity
from fesens.workflow.design_fields import grayness_report

#: Light phase at half the heavy one's density: admissible values 0, 0.5 and 1.
TWO_PHASES = {"moduli": [0.6, 1.0], "densities": [0.5, 1.0]}
#: Three phases at uneven spacing: admissible values 0, 0.2, 0.6 and 1.
THREE_PHASES = {"moduli": [0.1, 0.5, 1.0], "densities": [0.2, 0.6, 1.0]}


def _problem(interpolation) -> DesignProblem:
    mesh = rectangle(12, 4, 12.0, 4.0)  # equal cells: the volume mean is the plain mean
    model = Elasticity(mesh)
    model.fix("left")
    model.point_load([12.0, 2.0], [0.0, -1.0], name="F")
    return DesignProblem(model, lambda s, rho: compliance(s), volume_fraction=0.5,
                         interpolation=interpolation)


def test_the_admissible_values_are_void_solid_or_void_and_each_phase():
    np.testing.assert_array_equal(SIMP().admissible_values(), [0.0, 1.0])
    np.testing.assert_allclose(OrderedSIMP(**THREE_PHASES).admissible_values(),
                               [0.0, 0.2, 0.6, 1.0])


@pytest.mark.parametrize("name", sorted(set(INTERPOLATIONS) - {"ordered"}))
def test_with_void_and_solid_the_grayness_is_sigmunds(name):
    x = np.random.default_rng(4).uniform(0.0, 1.0, 200)
    np.testing.assert_allclose(INTERPOLATIONS[name]().grayness(x), 4.0 * x * (1.0 - x),
                               rtol=1e-15, atol=0.0)


def test_a_crisp_phase_is_not_gray_and_midway_between_two_values_is_the_most_gray():
    ordered = OrderedSIMP(**THREE_PHASES)
    np.testing.assert_array_equal(ordered.grayness(np.array([0.0, 0.2, 0.6, 1.0])), 0.0)
    np.testing.assert_allclose(ordered.grayness(np.array([0.1, 0.4, 0.8])), 1.0, rtol=1e-15)
    # a quarter of the way from 0.2 to 0.6: 4 · (1/4) · (3/4)
    assert ordered.grayness(np.array([0.3]))[0] == pytest.approx(0.75, rel=1e-14)


def test_the_report_of_a_crisp_light_phase_is_zero_and_midway_is_a_hundred():
    problem = _problem(OrderedSIMP(**TWO_PHASES))
    report, n = grayness_report(problem), problem.mesh.n_cells
    assert report(None, np.full(n, 0.5)) == 0.0            # every cell of the light phase
    # Sigmund's measure counts the same design as all gray
    assert grayness_report(_problem(SIMP()))(None, np.full(n, 0.5)) == pytest.approx(100.0)
    crisp = np.resize([0.0, 0.5, 1.0], n)                  # void, light and heavy cells
    assert report(None, crisp) == 0.0
    assert report(None, np.full(n, 0.25)) == pytest.approx(100.0)
    assert report(None, np.full(n, 0.75)) == pytest.approx(100.0)
    # half the cells a quarter of the way from light to heavy (3/4), half heavy
    half = np.where(np.arange(n) < n // 2, 0.625, 1.0)
    assert report(None, half) == pytest.approx(37.5)

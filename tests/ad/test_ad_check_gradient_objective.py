"""``fesens.ad.check_gradient`` on an objective of ``fesens.objectives``, as the API guide
shows it (the SIMP compliance of a cantilever): a right gradient passes at rate 2, a
solve rule off by a percent fails, and the seed repeats the direction."""

import numpy as np
import pytest
from gradient_faults import solve_rule_off_by_a_percent  # noqa: F401 - fixture

from fesens.ad import check_gradient
from fesens.mesh import rectangle
from fesens.objectives import Differentiable, compliance
from fesens.physics import Elasticity


def simp_compliance():
    """The guide's objective on a 12 x 4 grid: ``J(x) = C(x³)`` and the point ``x``."""
    mesh = rectangle(12, 4, 12.0, 4.0, cell_type="quad4")
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress").fix("left")
    model.point_load((12.0, 0.0), (0.0, -1.0), name="tip")
    problem = Differentiable(model)
    x = np.linspace(0.3, 0.9, mesh.n_cells)
    return (lambda x: compliance(problem.solve(scale=x**3))), x


def test_a_right_gradient_passes_with_rate_two():
    J, x = simp_compliance()
    check = check_gradient(J, x, scale=x, seed=0)
    assert check.passed, "\n".join(check.lines())
    assert check.rate == pytest.approx(2.0, abs=0.05)
    assert check.difference.agreement < 1e-6
    assert check.lines()[-1].startswith("gradient check: pass: ")


@pytest.mark.usefixtures("solve_rule_off_by_a_percent")
def test_a_solve_rule_off_by_a_percent_fails():
    J, x = simp_compliance()
    check = check_gradient(J, x, scale=x, seed=0)
    assert not check.passed
    # the density reaches C = f·u through the solve alone: ∇J·h is 1.01 times the truth
    assert check.difference.slope == pytest.approx(1.01 * check.difference.difference,
                                                   rel=1e-6)
    assert check.rate < 1.5  # the remainders fall at rate 1 once the step is small
    assert check.lines()[-1].startswith("gradient check: FAIL: agreement 9.9e-03")


def test_the_seed_repeats_the_direction():
    J, x = simp_compliance()
    first, again = check_gradient(J, x, scale=x, seed=3), check_gradient(J, x, scale=x, seed=3)
    assert first.difference == again.difference
    assert check_gradient(J, x, scale=x, seed=4).difference.slope != first.difference.slope

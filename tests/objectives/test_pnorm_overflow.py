"""The stress p-norm does not overflow: stresses of a steel cantilever in pascals (1e8)
raised to p = 40, or stresses of order 10 to p = 1000, exceed float64 (σ^p > 1e308), and
the aggregate was infinite, its adjoint "b contains non-finite values". The value is
checked against the log-space form ``exp(logsumexp(p log σ_e) / p)`` (scipy), the
gradient by the Taylor test and central differences."""

import numpy as np
import pytest
from scipy.special import logsumexp

from fesens.ad import check_grad, taylor_test
from fesens.mesh import rectangle
from fesens.objectives import Differentiable, stress_pnorm
from fesens.physics import Elasticity


def _cantilever(E: float, tip: float) -> Elasticity:
    """2 x 1, clamped on the left, a downward tip force."""
    model = Elasticity(rectangle(6, 3, 2.0, 1.0), E=E, nu=0.3, plane="stress")
    model.fix("left")
    model.point_load((2.0, 0.0), (0.0, -tip), name="tip")
    return model


#: (E, tip force, p): steel in pascals, and a unit modulus with stresses of order 10.
CASES = {"steel-p40": (2e11, 1e8, 40.0), "unit-p1000": (1.0, 10.0, 1000.0)}


@pytest.mark.parametrize("case", CASES)
def test_the_aggregate_is_finite_and_equals_its_log_space_form(case):
    E, tip, p = CASES[case]
    state = _cantilever(E, tip).solve()
    vm2 = np.asarray(state.von_mises_squared())
    assert 0.5 * p * np.log10(np.max(vm2)) > 308  # the sum of powers overflows
    expected = np.exp(logsumexp(0.5 * p * np.log(vm2)) / p)
    assert float(stress_pnorm(state, p)) == pytest.approx(expected, rel=1e-12)


def test_a_moderate_aggregate_is_the_plain_sum_of_powers():
    state = _cantilever(1.0, 0.01).solve()
    vm2 = np.asarray(state.von_mises_squared())
    assert float(stress_pnorm(state, 8.0)) == pytest.approx(
        np.sum(vm2 ** 4.0) ** (1 / 8.0), rel=1e-14)
    assert float(stress_pnorm(_cantilever(1.0, 0.0).solve(), 8.0)) == 0.0  # no load


@pytest.mark.parametrize("case", CASES)
def test_the_gradient_passes_the_taylor_test(case):
    """In the SIMP densities; p = 1000 bends sharply, so its Taylor steps start smaller."""
    E, tip, p = CASES[case]
    problem = Differentiable(_cantilever(E, tip))
    x = np.random.default_rng(4).uniform(0.4, 1.0, 18)

    def objective(x):
        return stress_pnorm(problem.solve(scale=x ** 3), p) / tip

    result = taylor_test(objective, x, step=1e-2 if p < 100 else 1e-5, verbose=False)
    assert result.rate == pytest.approx(2.0, abs=0.2), result.table()
    check_grad(objective, x)

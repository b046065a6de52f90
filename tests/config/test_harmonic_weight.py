"""The sign of a harmonic objective's ``weight``: ``weight × Σ_ω |j(u(ω))|``, so that a
weight of −1 gives minus the value and minus the gradient of +1 (the weight inside the
magnitude vanished in ``|·|``), and an optimization with −1 increases the response that
+1 decreases."""

import numpy as np
import pytest

from fesens.ad import value_and_grad
from fesens.config import build_optimizer, build_problem, parse_config, preset_text
from fesens.opt.loop import optimize

#: The tip deflection of dynamic_compliance on a coarse mesh, at a design with variation.
TIP = ('type = "compliance"           # |f · u| at each driving frequency, summed',
       'type = "displacement"\npoint = [2.0, 0.5]\ncomponent = 1\nweight = {weight}')


def _problem(tmp_path, weight: float):
    text = preset_text("dynamic_compliance").replace("cells = [40, 20]", "cells = [8, 4]")
    assert TIP[0] in text
    text = text.replace(TIP[0], TIP[1].format(weight=weight))
    config = parse_config(text, source="dynamic_compliance", base_dir=tmp_path)
    return config, build_problem(config)


def _objective(problem):
    def f(x):
        rho = problem.evaluated_densities(x)
        return problem.objective(problem.solve(rho), rho)

    return f


def test_a_weight_of_minus_one_negates_the_value_and_the_gradient(tmp_path):
    x = np.random.default_rng(2).uniform(0.3, 0.8, 32)
    plus, plus_grad = value_and_grad(_objective(_problem(tmp_path, 1.0)[1]))(x)
    minus, minus_grad = value_and_grad(_objective(_problem(tmp_path, -1.0)[1]))(x)
    half, _ = value_and_grad(_objective(_problem(tmp_path, 0.5)[1]))(x)
    assert plus > 0
    assert float(minus) == -float(plus)
    np.testing.assert_array_equal(minus_grad, -plus_grad)
    assert float(half) == pytest.approx(0.5 * float(plus), rel=1e-14)


def _amplitude(problem, x) -> float:
    """``|u_tip|`` at the design ``x`` (the weight's sign removed)."""
    return abs(float(_objective(problem)(x)))


def test_an_optimization_with_weight_minus_one_goes_the_other_way(tmp_path):
    """From the uniform start, three MMA iterations lower the tip amplitude with weight
    +1 and raise it with −1."""
    ends = {}
    for weight in (1.0, -1.0):
        config, problem = _problem(tmp_path, weight)
        result = optimize(problem, build_optimizer(config), max_iter=3, tol_change=0.0)
        start = _amplitude(problem, problem.initial_design())
        ends[weight] = _amplitude(problem, result.x) / start
    assert ends[1.0] < 0.99
    assert ends[-1.0] > 1.01

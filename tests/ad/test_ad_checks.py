"""The gradient checks themselves: they pass right gradients, fail wrong ones, and do not
mistake finite-difference round-off for an error."""

import numpy as np
import pytest
from ad_helpers import normal, scratch_rules  # noqa: F401 - fixture

from fesens.ad import check_grad, defvjp, primitive, taylor_test

X = normal(20, seed=3)


def cube_with_rule(factor: float):
    """``sum(x³)`` through a primitive whose VJP rule is ``factor`` times the right one."""
    cube = primitive(lambda x: x**3, "cube")
    defvjp(cube, lambda ans, x: lambda g: factor * 3.0 * x**2 * g)
    return lambda x: np.sum(cube(x))


@pytest.mark.usefixtures("scratch_rules")
def test_check_grad_passes_a_right_gradient_and_fails_one_off_by_a_percent():
    assert check_grad(cube_with_rule(1.0), X) < 1e-8
    with pytest.raises(AssertionError, match=r"relative error 9\.90\de-03.*gradient·h = "):
        check_grad(cube_with_rule(1.01), X)


def test_check_grad_does_not_report_round_off_as_an_error():
    """``1e6 + 1e-9 Σx``: the derivative (~1e-9) is far below what central differences of
    values ~1e6 resolve (ulp 1e-10 / ε), so the old relative measure reported ~100 %."""
    f = lambda x: 1e6 + 1e-9 * np.sum(x)  # noqa: E731
    assert check_grad(f, X) == 0.0


@pytest.mark.usefixtures("scratch_rules")
def test_check_grad_still_fails_a_wrong_gradient_above_the_round_off_floor():
    f_wrong = cube_with_rule(0.5)
    with pytest.raises(AssertionError):
        check_grad(lambda x: 1e3 + f_wrong(x), X)


@pytest.mark.usefixtures("scratch_rules")
def test_taylor_rate_is_two_for_a_right_gradient_and_one_for_a_wrong_one():
    right = taylor_test(cube_with_rule(1.0), X, verbose=False)
    wrong = taylor_test(cube_with_rule(1.01), X, verbose=False)
    assert right.rate == pytest.approx(2.0, abs=0.1)
    assert wrong.rate < 1.2


def simp_compliance():
    """The SIMP compliance of a 60 x 20 quad4 cantilever and densities in [0.2, 1] at which
    central differences of step 1e-6 differ from the (right) gradient by 1.5e-5 relative:
    the round-off of the solves (~1e-12 relative), amplified by the step."""
    from fesens.mesh import rectangle
    from fesens.objectives import Differentiable, compliance
    from fesens.physics import Elasticity

    mesh = rectangle(60, 20, 60.0, 20.0, cell_type="quad4")
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress")
    model.fix("left")
    model.point_load((60.0, 0.0), (0.0, -1.0))
    problem = Differentiable(model, "cholmod")
    rho = np.random.default_rng(1).uniform(0.2, 1.0, mesh.n_cells)
    return (lambda x: compliance(problem.solve(scale=1e-9 + x**3))), rho


def with_pullback(fun, change):
    """``fun`` whose gradient passes through ``change`` (a wrong VJP rule of an identity)."""
    identity = primitive(lambda x: x * 1.0, "identity")
    defvjp(identity, lambda ans, x: change)
    return lambda x: fun(identity(x))


@pytest.mark.usefixtures("scratch_rules")
def test_check_grad_with_defaults_passes_a_right_simp_gradient_blurred_by_solver_round_off():
    """The right gradient passes on every direction; one off by 1e-3 relative, or with the
    sign of its largest component flipped, fails on every direction."""
    from fesens.ad import grad

    fun, rho = simp_compliance()
    for seed in range(3):
        assert check_grad(fun, rho, seed=seed) < 1e-5
    largest = int(np.argmax(np.abs(grad(fun)(rho))))

    def flip(g):
        g = np.array(g, dtype=float)
        g[largest] = -g[largest]
        return g

    for change in (lambda g: (1 + 1e-3) * g, flip):
        wrong = with_pullback(fun, change)
        for seed in range(3):
            with pytest.raises(AssertionError, match="gradient check failed"):
                check_grad(wrong, rho, seed=seed)

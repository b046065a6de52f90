"""DesignProblem: gradients of every response, passive cells, input validation."""

import numpy as np
import pytest
from opt_helpers import mbb_model, mbb_problem, toy_evaluation

from fesens.objectives import compliance, displacement_at
from fesens.opt import OC, Constraint, DesignProblem, Heaviside, make_filter, optimize


def remainder_rates(function, gradient, x, direction, steps=(1e-2, 5e-3, 2.5e-3, 1.25e-3)):
    """Taylor remainders ``|J(x + εh) − J(x) − ε ∇J·h|`` and their rates (2 if ∇J is right)."""
    J0, slope = function(x), gradient @ direction
    residuals = np.array([abs(function(x + e * direction) - J0 - e * slope) for e in steps])
    return np.log2(residuals[:-1] / residuals[1:])


def test_every_response_gradient_passes_taylor_test():
    """Density filter, Heaviside projection, passive cells and a displacement constraint:
    the objective gradient and both constraint-gradient rows are exact."""
    deflection = Constraint("deflection", lambda s, rho: -displacement_at(s, (6.0, 0.0), 1),
                            50.0)
    problem = mbb_problem(12, 4, 1.5, "density", projection=Heaviside(2.0),
                          passive_solid=[36], passive_void=[47], constraints=[deflection])
    rng = np.random.default_rng(4)
    x = rng.uniform(0.3, 0.7, problem.n_design)
    h = rng.uniform(-1.0, 1.0, problem.n_design)
    evaluation = problem.evaluate(x)
    assert evaluation.gradient.shape == (problem.n_design,)
    assert evaluation.constraint_gradients.shape == (2, problem.n_design)
    rates = remainder_rates(lambda y: problem.evaluate(y).objective, evaluation.gradient, x, h)
    assert np.all(rates > 1.9)
    for i in range(2):
        rates = remainder_rates(lambda y, i=i: problem.evaluate(y).constraints[i],
                                evaluation.constraint_gradients[i], x, h)
        assert np.all(rates > 1.9)


def test_passive_cells_stay_solid_and_void():
    model = mbb_model(20, 8)
    centroids = model.mesh.cell_centroids()
    solid = np.flatnonzero(centroids[:, 1] > 7.0)  # the top row
    void = np.flatnonzero((np.abs(centroids[:, 0] - 10.0) < 2) & (centroids[:, 1] < 4))
    problem = DesignProblem(model, lambda s, rho: compliance(s), volume_fraction=0.5,
                            filter=make_filter("density", model.mesh, 2.0),
                            passive_solid=solid, passive_void=void)
    assert problem.n_design == model.mesh.n_cells - solid.size - void.size
    result = optimize(problem, OC(), max_iter=8)
    density = problem.evaluate(result.x).density
    assert np.all(density[solid] == 1.0)
    assert np.all(density[void] == 0.0)
    assert problem.volume_fraction_of(result.x) <= 0.5 + 1e-3


@pytest.mark.parametrize("fraction", [0.0, -0.2, 1.5, float("nan")])
def test_volume_fraction_out_of_range_raises(fraction):
    with pytest.raises(ValueError, match=r"volume_fraction must be in \(0, 1\]"):
        DesignProblem(mbb_model(4, 2), lambda s, rho: compliance(s), volume_fraction=fraction)


def test_bad_passive_sets_raise():
    model = mbb_model(4, 2)
    with pytest.raises(ValueError, match="every cell is passive: nothing to design"):
        DesignProblem(model, lambda s, rho: compliance(s), volume_fraction=0.5,
                      passive_solid=np.arange(4), passive_void=np.arange(4, 8))
    with pytest.raises(ValueError, match="both passive solid and passive void"):
        DesignProblem(model, lambda s, rho: compliance(s), volume_fraction=0.5,
                      passive_solid=[0, 1], passive_void=[1])


@pytest.mark.parametrize("move", [0.0, -0.1, 1.5])
def test_oc_move_limit_out_of_range_raises(move):
    with pytest.raises(ValueError, match=r"OC move limit must be in \(0, 1\]"):
        OC(move=move)


@pytest.mark.parametrize("gradient", [-np.ones(8), np.zeros(8)])
def test_oc_bisection_ends_when_the_volume_bound_never_binds(gradient):
    """A volume bound that every reachable design meets (volume fraction 1, or no load: a
    zero gradient) sends λ to 0; the step returns the fullest design allowed instead of
    dividing by zero."""
    x = np.full(8, 0.5)
    evaluation = toy_evaluation(gradient=gradient, constraints=np.zeros(1),
                                constraint_gradients=np.full((1, 8), 1 / 8))
    step = OC(move=0.2).step(x, evaluation, lambda design: np.mean(design) - 1.0, 1)
    expected = 0.7 if gradient.any() else 0.3
    np.testing.assert_allclose(step, np.full(8, expected))


@pytest.mark.parametrize(("kind", "projection", "affine"), [
    ("density", None, True), ("helmholtz", None, True), ("density", Heaviside(4.0), False)])
def test_volume_excess_matches_the_filtered_volume(kind, projection, affine):
    """The optimizers' volume function: the affine shortcut (linear filter, no projection)
    gives the filtered volume to round-off; with a projection the exact one is used."""
    problem = mbb_problem(12, 4, 1.5, kind, projection=projection, passive_solid=[36])
    rng = np.random.default_rng(5)
    x = rng.uniform(0.2, 0.8, problem.n_design)
    excess = problem.volume_excess(x, problem.evaluate(x))
    candidates = [np.clip(x + rng.uniform(-0.2, 0.2, x.size), 0.0, 1.0) for _ in range(3)]
    exact = [problem.volume_fraction_of(c) - 0.5 for c in candidates]
    if affine:  # the shortcut must not filter the candidates
        problem.volume_fraction_of = lambda candidate: pytest.fail("filtered a candidate")
    for candidate, value in zip(candidates, exact, strict=True):
        assert excess(candidate) == pytest.approx(value, abs=1e-13 if affine else 0.0)

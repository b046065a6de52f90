"""BucklingProblem (fesens/opt/buckling.py): its traced solve, the stress interpolation
without the SIMP floor, compliance with a buckling constraint, refused options."""

import numpy as np
import pytest

from fesens.ad import taylor_test
from fesens.mesh import rectangle
from fesens.objectives import compliance, eigenvalue_ks
from fesens.opt import SIMP, Constraint, DensityFilter
from fesens.opt.buckling_design import BucklingProblem
from fesens.physics import ElasticBuckling, Elasticity


def column():
    model = Elasticity(rectangle(8, 16, 1.0, 2.0), E=1.0, nu=0.3, plane="stress")
    model.fix("bottom")
    model.traction("top", (0.0, -1.0))
    return model


def test_solve_interpolates_the_stiffness_and_the_stress_without_the_floor():
    model = column()
    problem = BucklingProblem(model, lambda r, rho: -r.load_factors[0], volume_fraction=0.5,
                              interpolation=SIMP(3.0, minimum=1e-3))
    rho = np.random.default_rng(0).uniform(0.2, 1.0, model.mesh.n_cells)
    assert problem.stress_scale(rho) == pytest.approx(rho**3, rel=1e-12)
    expected = ElasticBuckling(model, 4).run(scale=1e-3 + rho**3 * (1 - 1e-3),
                                             stress_scale=rho**3).load_factors
    assert problem.solve(rho).load_factors == pytest.approx(expected, rel=1e-12)


def test_compliance_with_a_buckling_constraint_gradients():
    """Objective compliance(result.solution), constraint KS(μ) ≥ μ_min written as
    (1/KS) / (1/μ_min) − 1 ≤ 0: both gradients pass Taylor tests through evaluate."""
    model = column()
    limit = 0.05

    def inverse_ks(result, rho):
        return 1.0 / eigenvalue_ks(result, count=2)

    problem = BucklingProblem(model, lambda r, rho: compliance(r.solution), n_modes=3,
                              volume_fraction=0.5, filter=DensityFilter(model.mesh, 0.2),
                              constraints=[Constraint("buckling", inverse_ks, 1 / limit)])
    x0 = np.random.default_rng(1).uniform(0.4, 0.9, problem.n_design)
    evaluation = problem.evaluate(x0)
    assert evaluation.constraints.shape == (2,)
    assert evaluation.extras["buckling"] == pytest.approx(
        1 / float(eigenvalue_ks(evaluation.state, count=2)), rel=1e-12)
    for row in (None, 1):  # the objective, then the buckling constraint (after the volume)
        def response(x, row=row):
            rho = problem.density(x)
            result = problem.solve(rho)
            if row is None:
                return problem.objective(result, rho)
            return inverse_ks(result, rho) * limit - 1.0

        assert taylor_test(response, x0).rate == pytest.approx(2.0, abs=0.1)
        gradient = evaluation.gradient if row is None else evaluation.constraint_gradients[row]
        direction = np.random.default_rng(2).standard_normal(x0.size)
        step = 1e-6
        difference = (response(x0 + step * direction) - response(x0 - step * direction)) / (
            2 * step)
        assert gradient @ direction == pytest.approx(difference, rel=1e-5)


def test_load_cases_and_iterative_solvers_are_refused():
    with pytest.raises(ValueError, match="load_cases"):
        BucklingProblem(column(), lambda r, rho: 0.0, volume_fraction=0.5,
                        load_cases=[{}, {}])
    with pytest.raises(ValueError, match="direct solver"):
        BucklingProblem(column(), lambda r, rho: 0.0, volume_fraction=0.5, solver="cg")

"""Every analysis has one shape (fesens/fem/analysis/base.py): built from a model and its
settings, ``run`` on the (traced) inputs. The names each replaced (``model.modes``,
``buckling``, ``linear_buckling``, ``harmonic_response``) stay for one release: each warns,
naming its replacement, and returns the same bits, values and gradients."""

import numpy as np
import pytest

from fesens.ad import grad
from fesens.fem import buckling as fem_buckling
from fesens.fem.analysis import Analysis, BucklingAnalysis, ModalAnalysis, StaticAnalysis
from fesens.fem.analysis.buckling import buckling
from fesens.fem.transient import (
    DynamicProblem,
    HarmonicAnalysis,
    TransientProblem,
    harmonic_response,
)
from fesens.mesh import rectangle
from fesens.physics import ElasticBuckling, Elasticity, HeatConduction, linear_buckling
from fesens.physics.geometric_stiffness import elastic_prestress


def _column():
    model = Elasticity(rectangle(16, 2, 8.0, 1.0), E=1e3, nu=0.3, plane="stress")
    model.fix("left")
    model.traction("right", (-1.0, 0.0))
    return model


def _same(a, b):
    return np.array_equal(np.asarray(a), np.asarray(b))


def test_every_analysis_is_an_analysis():
    for cls in (StaticAnalysis, ModalAnalysis, BucklingAnalysis, ElasticBuckling,
                HarmonicAnalysis, TransientProblem, DynamicProblem):
        assert issubclass(cls, Analysis), cls


def test_model_modes_warns_and_gives_the_analysis_bits():
    model = _column()
    rho = np.random.default_rng(0).uniform(0.5, 1.5, model.mesh.n_cells)
    analysis = ModalAnalysis(model, 3, lumped=True)
    with pytest.deprecated_call(match="ModalAnalysis"):
        old = model.modes(3, density=rho, lumped=True)
    assert _same(old.values, analysis.run(density=rho).values)
    with pytest.deprecated_call(match="ModalAnalysis"):
        old_grad = grad(lambda r: model.modes(3, density=r, lumped=True).values[0])(rho)
    assert _same(old_grad, grad(lambda r: analysis.run(density=r).values[0])(rho))


@pytest.mark.parametrize("old", [buckling, fem_buckling])
def test_buckling_warns_and_gives_the_analysis_bits(old):
    model = _column()
    x = np.random.default_rng(1).uniform(0.6, 1.0, model.mesh.n_cells)
    analysis = BucklingAnalysis(model, 2, elastic_prestress())
    with pytest.deprecated_call(match="BucklingAnalysis"):
        old_grad = grad(lambda s: old(model, 2, elastic_prestress(),
                                      scale=s ** 3).load_factors[0])(x)
    assert _same(old_grad, grad(lambda s: analysis.run(scale=s ** 3).load_factors[0])(x))


def test_linear_buckling_warns_and_gives_the_analysis_bits():
    model = _column()
    x = np.random.default_rng(2).uniform(0.6, 1.0, model.mesh.n_cells)
    analysis = ElasticBuckling(model, 2)
    with pytest.deprecated_call(match="ElasticBuckling"):
        old = grad(lambda s: linear_buckling(model, 2, scale=s ** 3,
                                             stress_scale=s ** 2).load_factors[0])(x)
    new = grad(lambda s: analysis.run(scale=s ** 3, stress_scale=s ** 2).load_factors[0])(x)
    assert _same(old, new)
    with pytest.raises(TypeError, match="Elasticity"):
        ElasticBuckling(HeatConduction(rectangle(2, 2)), 1)


def test_harmonic_response_warns_and_gives_the_analysis_bits():
    model = _column()
    omegas = np.array([0.5, 2.0])
    scale = np.random.default_rng(3).uniform(0.5, 1.5, model.mesh.n_cells)
    analysis = HarmonicAnalysis(model, lumped=True)
    with pytest.deprecated_call(match="HarmonicAnalysis"):
        old = grad(lambda s: np.sum(harmonic_response(
            model, omegas, lumped=True, damping=(0.1, 0.01), scale=s).compliance()))(scale)
    new = grad(lambda s: np.sum(analysis.run(omegas, damping=(0.1, 0.01),
                                             scale=s).compliance()))(scale)
    assert _same(old, new)


def test_static_and_transient_runs_are_their_solve_and_values():
    model = _column()
    assert _same(StaticAnalysis(model, solver="superlu").run(E=2e3).u,
                 model.solve(solver="superlu", E=2e3).u)
    heat = HeatConduction(rectangle(4, 2))
    heat.fix("left")
    heat.volume_load(1.0)
    problem = TransientProblem(heat, t_end=1.0, dt=0.25)

    def step_term(T, t):
        return np.sum(T ** 2)

    assert _same(problem.run(step_term, density=2.0), problem.values(step_term, density=2.0))

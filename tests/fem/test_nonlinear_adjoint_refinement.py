"""The adjoint of a nonlinear solve refined with Newton's last factorization: the same
gradient as the assembled converged tangent's, no extra factorization, and the fallback
to that tangent where the kept factorization is too far from it or was replaced."""

from __future__ import annotations

import numpy as np
import pytest

from fesens.ad import taylor_test, value_and_grad, vjp
from fesens.fem.nonlinear.implicit_solve import ResidualSolve
from fesens.mesh.generators import rectangle
from fesens.objectives import compliance
from fesens.physics.hyperelasticity import FiniteStrainElasticity
from fesens.physics.nonlinear_conduction import NonlinearHeatConduction


def heat():
    mesh = rectangle(8, 4, 1.0, 0.5, "quad4")
    model = NonlinearHeatConduction(mesh, conductivity=1.5, beta=0.8)
    model.fix("left", value=0.5)
    model.fix("right", value=4.0)
    model.heat_source(5.0, name="source")
    return model


def beam():
    model = FiniteStrainElasticity(rectangle(6, 2, 2.0, 0.4, "quad4"), E=100.0, nu=0.3)
    model.fix("left", value=lambda p: np.c_[0.02 * p[:, 1], 0.0 * p[:, 1]])
    model.point_load("right", (0.0, -0.05), name="tip")
    model.body_force((0.0, -0.1), name="weight")
    return model


@pytest.fixture
def corrections(monkeypatch):
    """The :attr:`ResidualSolve.refinements` of every adjoint solve, in order."""
    seen = []
    adjoint = ResidualSolve.adjoint

    def spy(self, *args, **kwargs):
        lam = adjoint(self, *args, **kwargs)
        seen.append(self.refinements)
        return lam

    monkeypatch.setattr(ResidualSolve, "adjoint", spy)
    return seen


def exact(monkeypatch):
    """Switch the refinement off: every adjoint assembles the converged tangent."""
    monkeypatch.setattr(ResidualSolve, "_refined_adjoint", lambda *args, **kwargs: None)


def heat_gradient(warm: bool, newton=None):
    model = heat()
    kappa = np.full(model.mesh.n_cells, 1.5)
    if warm:
        model.solve(conductivity=kappa)
    moved = kappa * (1 + 0.02 * np.sin(np.arange(kappa.size)))
    return value_and_grad(lambda k: compliance(model.solve(
        conductivity=k, warm_start=warm, newton=newton)))(moved)[1]


def beam_gradient():
    model = beam()
    E = 100.0 * (1 + 0.1 * np.cos(np.arange(model.mesh.n_cells)))
    return value_and_grad(lambda E: compliance(model.solve(E=E)))(E)[1]


@pytest.mark.parametrize("case", [lambda: heat_gradient(False), lambda: heat_gradient(True),
                                  beam_gradient], ids=["heat-cold", "heat-warm", "beam"])
def test_the_refined_gradient_is_the_exact_paths(case, corrections, monkeypatch):
    refined = case()
    assert len(corrections) == 1 and corrections[0] is not None
    exact(monkeypatch)
    reference = case()
    assert corrections[1] is None
    assert np.linalg.norm(refined - reference) <= 1e-10 * np.linalg.norm(reference)


def test_taylor_rate_of_the_refined_gradient(corrections):
    model = heat()
    kappa = 1.5 * (1 + 0.2 * np.random.default_rng(3).random(model.mesh.n_cells))
    result = taylor_test(lambda k: compliance(model.solve(conductivity=k, warm_start=False)),
                         kappa, verbose=False)
    assert result.rate > 1.9, result.table()
    assert corrections and all(c is not None for c in corrections)


def test_a_loose_newton_falls_back_to_the_assembled_tangent(corrections, monkeypatch):
    """``rtol = 0.3``: Newton stops two iterations from the reference, so its last
    factorization (of the first iterate) is far from the converged tangent: the
    refinement gives way, one more factorization, and the gradient is the exact path's."""
    loose = {"rtol": 0.3, "stol": 0.0}
    model = heat()
    backend = model.tangent_solver()
    kappa = np.full(model.mesh.n_cells, 1.5)

    def fun(k):
        return compliance(model.solve(conductivity=k, warm_start=False, newton=loose))

    before = backend.stats["n_numeric"]
    fun(kappa)
    forward = backend.stats["n_numeric"]
    fallback = value_and_grad(fun)(kappa)[1]
    assert backend.stats["n_numeric"] - forward == (forward - before) + 1
    assert corrections == [None]
    assert model.solve(conductivity=kappa, newton=loose, warm_start=False
                       ).report.iterations <= 2
    exact(monkeypatch)
    assert np.array_equal(fallback, value_and_grad(fun)(kappa)[1])


def test_a_replaced_factorization_is_made_again(corrections):
    """Another solve on the shared backend between the forward solve and its pullback
    replaces Newton's factorization: the adjoint factorizes Newton's last tangent again
    (one factorization) and refines with it, so its gradient has the bits of the one
    without the intervening solve."""
    model = heat()
    backend = model.tangent_solver()
    kappa = np.full(model.mesh.n_cells, 1.5)

    def fun(k):
        return compliance(model.solve(conductivity=k, warm_start=False))

    _, pull = vjp(fun, kappa)
    model.solve(conductivity=2 * kappa, warm_start=False)
    before = backend.stats["n_numeric"]
    replaced = pull(1.0)
    assert backend.stats["n_numeric"] == before + 1
    _, pull = vjp(fun, kappa)
    before = backend.stats["n_numeric"]
    direct = pull(1.0)
    assert backend.stats["n_numeric"] == before
    assert corrections[0] is not None and corrections[1] == corrections[0]
    assert np.array_equal(replaced, direct)


def test_a_refinement_stalled_at_round_off_keeps_its_best(corrections, monkeypatch):
    """A target below the product's round-off (``rtol_adjoint = 1e-17``): the residual
    stops halving near ``1e-15``, under ``rtol_stagnation``, so the best refined ``λ`` is
    taken (no factorization) and the gradient is still the exact path's."""
    monkeypatch.setattr(ResidualSolve, "rtol_adjoint", 1e-17)
    refined = heat_gradient(False)
    assert corrections[0] is not None and corrections[0] >= 2
    exact(monkeypatch)
    reference = heat_gradient(False)
    assert np.linalg.norm(refined - reference) <= 1e-10 * np.linalg.norm(reference)


def test_a_stall_above_round_off_falls_back(corrections, monkeypatch):
    """``rtol_stagnation = 0`` makes every stall count as too far: the adjoint assembles
    the converged tangent."""
    monkeypatch.setattr(ResidualSolve, "rtol_adjoint", 1e-17)
    monkeypatch.setattr(ResidualSolve, "rtol_stagnation", 0.0)
    heat_gradient(False)
    assert corrections == [None]

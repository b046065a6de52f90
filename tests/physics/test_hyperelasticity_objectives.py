"""Objectives of a finite-strain state: the strain energy ``∫ W dΩ`` and the p-norm and KS
aggregates of the cell-mean Cauchy von Mises stress, in closed form on a homogeneous
deformation and differentiated through the Newton solve (Taylor tests, central
differences); their config kinds in the physics' fragment."""

from __future__ import annotations

import numpy as np
import pytest

from fesens.ad import check_grad, taylor_test
from fesens.config.objectives import check_offered_kinds, objective_kind
from fesens.mesh.generators import rectangle
from fesens.objectives import (
    compliance,
    mean_value,
    strain_energy,
    stress_ks,
    stress_pnorm,
    von_mises_squared,
)
from fesens.physics.elastic_law import von_mises
from fesens.physics.elasticity import Elasticity
from fesens.physics.hyperelastic_law import lame_constants
from fesens.physics.hyperelasticity import FiniteStrainElasticity


def on_boundary(mesh):
    low, high = mesh.points.min(axis=0), mesh.points.max(axis=0)
    return lambda p: (np.isclose(p, low) | np.isclose(p, high)).any(axis=1)


def test_homogeneous_deformation_in_closed_form():
    """A homogeneous plane-strain deformation ``x = F X`` prescribed on the boundary is
    reproduced exactly (the patch test), so the objectives take the closed forms of the
    compressible neo-Hookean law (Bonet & Wood, *Nonlinear Continuum Mechanics for Finite
    Element Analysis*, 2nd ed., 2008, eqs. 6.27-6.29):
    ``W = μ/2 (tr C − 3) − μ ln J + λ/2 (ln J)²`` times the area and the thickness, and
    ``σ = μ/J (b − I) + λ ln J / J I`` (``σ_zz = λ ln J / J``), whose von Mises stress is
    every cell's, so the p-norm is ``n_cells^(1/p) σ_vm`` and KS lies in
    ``[σ_vm, σ_vm + ln(n_cells)/ρ]``."""
    mesh = rectangle(4, 3, 1.0, 0.75, "quad4")
    F = np.array([[1.2, 0.1], [-0.05, 0.9]])
    model = FiniteStrainElasticity(mesh, E=200.0, nu=0.3, thickness=0.5)
    model.fix(on_boundary(mesh), value=lambda p: p @ (F - np.eye(2)).T)
    solution = model.solve(steps=2)
    lam, mu = lame_constants(200.0, 0.3, "strain")
    J = np.linalg.det(F)
    W = mu / 2 * (np.trace(F.T @ F) + 1 - 3) - mu * np.log(J) + lam / 2 * np.log(J) ** 2
    assert strain_energy(solution) == pytest.approx(W * 0.75 * 0.5, rel=1e-12)
    sigma = np.zeros((3, 3))
    sigma[:2, :2] = mu / J * (F @ F.T - np.eye(2))
    sigma += lam * np.log(J) / J * np.eye(3)
    vm = von_mises(sigma)
    n = mesh.n_cells
    assert np.allclose(von_mises_squared(solution), vm ** 2, rtol=1e-10)
    assert np.allclose(solution.von_mises(), vm, rtol=1e-10)
    assert stress_pnorm(solution, p=8.0) == pytest.approx(n ** (1 / 8) * vm, rel=1e-10)
    ks = stress_ks(solution, rho=20.0, reference=vm)
    assert ks == pytest.approx(vm + vm * np.log(n) / 20.0, rel=1e-10)
    # a stress scale replaces the density scale: σ is linear in the Lamé constants
    half = model.solve(steps=2, scale=0.5 * np.ones(n))
    assert np.allclose(von_mises_squared(half, stress_scale=2.0), 4 * vm ** 2, rtol=1e-10)


def test_small_loads_give_the_linear_stress_and_energy():
    """At a tiny load the finite-strain von Mises stresses are those of linear plane-strain
    elasticity, and the strain energy is half the compliance (Clapeyron's theorem)."""
    mesh = rectangle(8, 2, 2.0, 0.4, "quad8")
    factor = 1e-6
    models = [Elasticity(mesh, E=100.0, nu=0.3, plane="strain"),
              FiniteStrainElasticity(mesh, E=100.0, nu=0.3)]
    for model in models:
        model.fix("left")
        model.traction("right", (0.0, -0.5 * factor))
    linear, finite = models[0].solve(), models[1].solve()
    assert np.allclose(von_mises_squared(finite), von_mises_squared(linear), rtol=1e-5,
                       atol=1e-10 * np.max(von_mises_squared(linear)))
    assert strain_energy(finite) == pytest.approx(0.5 * compliance(linear), rel=1e-5)


@pytest.fixture
def beam():
    """A plane-strain cantilever bent far into the nonlinear range under a tip force and
    its weight (at scale 0.8 its tip falls by 0.64 of its length and moves 0.31 of it
    back)."""
    model = FiniteStrainElasticity(rectangle(6, 2, 2.0, 0.4, "quad8"), E=100.0, nu=0.3)
    model.fix("left")
    model.point_load("right", (0.0, -0.05), name="tip")
    model.body_force((0.0, -0.2), name="weight")
    return model


OBJECTIVES = {
    "strain_energy": strain_energy,
    "stress_pnorm": lambda s: stress_pnorm(s, p=8.0),
    "stress_ks": lambda s: stress_ks(s, rho=5.0),
    "relaxed_pnorm": lambda s: stress_pnorm(s, p=6.0,
                                            stress_scale=s.parameters["scale"] ** 0.5),
    "mean_displacement": lambda s: mean_value(s, "right", component=1),
}


def inputs(model, name):
    """The solve of ``name`` and where it is evaluated."""
    rng = np.random.default_rng(7)
    n = model.mesh.n_cells
    x = 0.6 + 0.4 * rng.random(n)
    return {
        "E": (lambda E: model.solve(E=E, scale=x), 100.0 * (1 + 0.3 * rng.random(n))),
        "scale": (lambda s: model.solve(scale=s), x),
        "load": (lambda m: model.solve(scale=x, loads={"tip": m}), 1.2),
        "points": (lambda X: model.solve(scale=x, points=X),
                   model.mesh.points + 0.005 * rng.standard_normal(model.mesh.points.shape)),
    }[name]


@pytest.mark.parametrize("wrt", ["E", "scale", "load", "points"])
@pytest.mark.parametrize("objective", list(OBJECTIVES))
def test_taylor_through_the_newton_solve(beam, objective, wrt):
    """Taylor remainders of each objective's gradient through the Newton solve fall at
    rate 2 (Farrell et al., SIAM J. Sci. Comput. 35, 2013)."""
    solve, x = inputs(beam, wrt)
    result = taylor_test(lambda v: OBJECTIVES[objective](solve(v)), x, verbose=False)
    assert result.rate > 1.9, result.table()


@pytest.mark.parametrize("objective", ["strain_energy", "stress_pnorm", "stress_ks"])
def test_central_differences_agree(beam, objective):
    solve, x = inputs(beam, "E")
    assert check_grad(lambda v: OBJECTIVES[objective](solve(v)), x, rtol=1e-5) < 1e-5


def test_the_fragment_offers_the_objectives_as_config_kinds(beam):
    """The config's ``[objective] type`` of hyperelasticity names each kind, whose
    response is the objective of the state."""
    fragment = FiniteStrainElasticity.config
    check_offered_kinds(fragment, FiniteStrainElasticity.solution_class)
    for name in ("strain_energy", "stress_pnorm", "stress_ks", "compliance", "displacement"):
        assert name in fragment.responses
    solution = beam.solve()
    rho = np.ones(beam.mesh.n_cells)
    energy = objective_kind("strain_energy").build({"type": "strain_energy"}, None)
    assert energy(solution, rho) == strain_energy(solution)
    pnorm = objective_kind("stress_pnorm").build({"type": "stress_pnorm", "p": 8.0}, None)
    assert pnorm(solution, rho) == stress_pnorm(solution, 8.0)


def test_a_state_without_a_stored_energy_is_refused():
    model = Elasticity(rectangle(2, 1, 1.0, 0.5, "quad4"), E=1.0, nu=0.3)
    model.fix("left")
    model.traction("right", (0.0, -1.0))
    with pytest.raises(TypeError, match="half its compliance"):
        strain_energy(model.solve())


@pytest.mark.parametrize("objective", [{"type": "strain_energy"},
                                       {"type": "stress_pnorm", "p": 8.0},
                                       {"type": "stress_ks", "rho": 5.0}],
                         ids=["strain_energy", "stress_pnorm", "stress_ks"])
def test_config_design_objective_through_the_newton_solve(tmp_path, objective):
    """A config's ``[objective]`` of these kinds for hyperelasticity builds a design problem
    (SIMP, density filter) whose objective passes the Taylor test in the design."""
    from fesens.config import build_problem, resolve

    raw = {
        "mesh": {"type": "rectangle", "size": [2.0, 0.4], "cells": [8, 2]},
        "physics": {"type": "hyperelasticity"},
        "material": {"E": 100.0, "nu": 0.3},
        "supports": [{"group": "left"}],
        "loads": [{"type": "traction", "group": "right", "value": [0.0, -0.3]}],
        "constraints": {"volume_fraction": 0.5}, "penalization": {"type": "simp"},
        "filter": {"type": "density", "radius": 0.3}, "objective": objective,
    }
    problem = build_problem(resolve(raw, base_dir=tmp_path, source="test"))

    def J(x):
        rho = problem.evaluated_densities(x)
        return problem.objective(problem.solve(rho), rho)

    x = np.random.default_rng(3).uniform(0.5, 0.9, problem.mesh.n_cells)
    result = taylor_test(J, x, verbose=False)
    assert result.rates.min() > 1.9, result.rates

"""Objectives of the states at several load factors of one load-stepped Newton solve
(``solve(at_load_factors=...)``, ``solution.at(k)``): the load steps end on the factors,
each state is the equilibrium at its load, gradients pass Taylor tests and central
differences, and an objective costs one transposed solve per state it reads."""

from __future__ import annotations

import numpy as np
import pytest

from fesens.ad import NotDifferentiableError, check_grad, grad, hvp, taylor_test
from fesens.fem.nonlinear.implicit_solve import ResidualSolve
from fesens.mesh.generators import rectangle
from fesens.objectives import compliance, mean_value, misfit
from fesens.physics.hyperelasticity import FiniteStrainElasticity
from fesens.physics.nonlinear_conduction import NonlinearHeatConduction

FACTORS = [0.4, 1.0]


@pytest.fixture
def beam():
    """A plane-strain cantilever bent far into the nonlinear range (its tip falls by 0.3 of
    its length at the full load), with a prescribed shear of its clamped end."""
    model = FiniteStrainElasticity(rectangle(6, 2, 2.0, 0.4, "quad4"), E=100.0, nu=0.3)
    model.fix("left", value=lambda p: np.c_[0.02 * p[:, 1], 0.0 * p[:, 1]])
    model.point_load("right", (0.0, -0.05), name="tip")
    model.body_force((0.0, -0.1), name="weight")
    return model


def tip(model) -> int:
    """The dof of the vertical displacement of the lower right corner."""
    return 2 * model.mesh.nearest_node([2.0, 0.0]) + 1


def test_the_steps_end_on_the_factors_and_each_state_is_its_own_equilibrium(beam):
    """The state at ``t`` equals a separate solve under ``t`` times the loads and the
    prescribed values (path independence of a hyperelastic equilibrium), and the steps end
    on every requested factor exactly: an increment that would pass one is shortened to
    end on it, and the next starts there."""
    factors = [0.25, 0.5, 0.8]
    solution = beam.solve(at_load_factors=factors, steps=8, newton={"adaptive": False})
    assert solution.at_load_factors == tuple(factors)
    landed = solution.report.load_factors
    assert all(t in landed for t in factors) and landed[-1] == 1.0
    assert np.allclose(landed, [0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.8, 0.925, 1.0])
    g = beam.prescribed_values()
    for k, t in enumerate(factors):
        state = solution.at(k)
        alone = beam.solve(loads={"tip": t, "weight": t}, dirichlet=t * g, warm_start=False)
        assert np.abs(state.u - alone.u).max() < 1e-8 * np.abs(alone.u).max()
        assert np.allclose(state.f, t * solution.f)
        assert state.load_magnitudes == {"tip": t, "weight": t}
    # the full-load state is the solution itself, as without at_load_factors
    plain = beam.solve(warm_start=False)
    assert np.abs(solution.u - plain.u).max() < 1e-8 * np.abs(plain.u).max()
    # not linear: four times the deflection at a quarter of the load is 1.11 times the
    # deflection at the full load (the bent beam stiffens)
    quarter, full = solution.at(0).u[tip(beam)], solution.u[tip(beam)]
    assert full < -0.25 * 2.0 and 4 * quarter / full > 1.08


def two_level_compliance(solution):
    """The sum of the end compliances at both load levels (a stiffness measured along the
    load path), plus a cubic of the first state (a cotangent without structure)."""
    return (compliance(solution.at(0)) + compliance(solution.at(1))
            + 3.0 * np.sum(solution.at(0).u ** 3))


def cases(model):
    rng = np.random.default_rng(11)
    n = model.mesh.n_cells
    x = 0.6 + 0.4 * rng.random(n)

    def at(**inputs):
        return two_level_compliance(model.solve(at_load_factors=FACTORS, **inputs))

    return {
        "E": (lambda E: at(E=E), 100.0 * (1 + 0.3 * rng.random(n))),
        "scale": (lambda s: at(scale=0.05 + 0.95 * s ** 3), x),
        "load": (lambda m: at(loads={"tip": m, "weight": 1.0}), 1.3),
        "dirichlet": (lambda g: at(dirichlet=g), model.prescribed_values()
                      + 0.01 * rng.random(model.constrained_dofs.size)),
        "points": (lambda X: at(points=X),
                   model.mesh.points + 0.005 * rng.standard_normal(model.mesh.points.shape)),
    }


@pytest.mark.parametrize("wrt", ["E", "scale", "load", "dirichlet", "points"])
def test_taylor_of_an_objective_of_two_load_levels(beam, wrt):
    """Taylor remainders fall at rate 2 (Farrell et al., SIAM J. Sci. Comput. 35, 2013)."""
    fun, x = cases(beam)[wrt]
    result = taylor_test(fun, x, verbose=False)
    assert result.rate > 1.9, result.table()


@pytest.mark.parametrize("wrt", ["E", "load", "points"])
def test_central_differences_of_an_objective_of_two_load_levels(beam, wrt):
    fun, x = cases(beam)[wrt]
    assert check_grad(fun, x, rtol=1e-5) < 1e-5


def test_fit_of_a_load_displacement_curve(beam):
    """An inverse problem: the modulus field from the tip deflections at three loads, the
    misfit ``½ Σ (u_tip(t_k) − m_k)²`` to the deflections of another modulus."""
    node = beam.mesh.nearest_node([2.0, 0.0])
    factors = [0.3, 0.6, 1.0]
    measured = [beam.solve(E=120.0, at_load_factors=factors).at(k).u[tip(beam)]
                for k in range(3)]

    def fun(E):
        solution = beam.solve(E=E, at_load_factors=factors)
        return sum(misfit(solution.at(k), [node], [measured[k]], component=1)
                   for k in range(3))

    E = 100.0 * (1 + 0.2 * np.random.default_rng(2).random(beam.mesh.n_cells))
    result = taylor_test(fun, E, verbose=False)
    assert result.rate > 1.9, result.table()
    assert check_grad(fun, E, rtol=1e-5) < 1e-5
    assert np.all(grad(fun)(E) < 0)  # stiffer everywhere comes closer to E = 120


def counted(model):
    """The tangent solver of ``model`` with a count of its transposed solves."""
    backend = model.tangent_solver()
    calls = []
    solve_transpose = backend.solve_transpose

    def counting(b):
        calls.append(1)
        return solve_transpose(b)

    backend.solve_transpose = counting
    return backend, calls


@pytest.mark.parametrize(("objective", "solves"), [
    (lambda s: compliance(s.at(0)) + compliance(s.at(1)), 2),
    (lambda s: compliance(s.at(1)), 1),
    (lambda s: compliance(s), 1),
    (lambda s: np.sum(s.at(0).u ** 2), 1),
], ids=["both", "last", "solution", "first"])
def test_one_transposed_solve_per_state_used(beam, objective, solves, monkeypatch):
    """One adjoint solve per state the objective reads: one transposed substitution, plus
    one per refinement correction where it reuses Newton's last factorization."""
    backend, calls = counted(beam)
    corrections = []
    adjoint = ResidualSolve.adjoint

    def spy(self, *args, **kwargs):
        lam = adjoint(self, *args, **kwargs)
        corrections.append(self.refinements or 0)
        return lam

    monkeypatch.setattr(ResidualSolve, "adjoint", spy)
    E = 100.0 * np.ones(beam.mesh.n_cells)
    gradient = grad(lambda E: objective(beam.solve(E=E, solver=backend,
                                                   at_load_factors=[0.5, 1.0])))(E)
    assert len(corrections) == solves
    assert len(calls) == solves + sum(corrections)
    assert np.all(np.isfinite(gradient)) and np.any(gradient != 0)


def test_heat_conduction_with_a_conductivity_of_the_temperature():
    """The states of a non-symmetric tangent (``k(T)``, LU) along a heated strip: Taylor
    test of the mean temperatures at two heat inputs in the conductivity field."""
    mesh = rectangle(6, 2, 1.0, 0.3, "quad4")
    model = NonlinearHeatConduction(mesh, conductivity=2.0, beta=0.8,
                                    reference_temperature=0.0)
    model.fix("left", value=0.5)
    model.heat_source(8.0, name="source")
    k = 2.0 * (1 + 0.3 * np.random.default_rng(4).random(mesh.n_cells))

    def fun(k):
        solution = model.solve(conductivity=k, at_load_factors=[0.5, 1.0])
        return mean_value(solution.at(0), "right") ** 2 + 2.0 * mean_value(solution, "right")

    result = taylor_test(fun, k, verbose=False)
    assert result.rate > 1.9, result.table()


def test_refusals(beam):
    for factors in ([], [0.5, 0.5], [0.6, 0.3], [0.0, 1.0], [0.5, 1.2], [[0.5]],
                    [np.nan]):
        with pytest.raises(ValueError, match="at_load_factors must be increasing"):
            beam.solve(at_load_factors=factors)
    with pytest.raises(ValueError, match="solve with at_load_factors"):
        beam.solve().at(0)
    solution = beam.solve(at_load_factors=[0.5])
    assert solution.at_load_factors == (0.5,)
    with pytest.raises(IndexError):
        solution.at(1)

    class WithHistory(FiniteStrainElasticity):
        path_independent = False

    model = WithHistory(rectangle(2, 1, 1.0, 0.5, "quad4"), E=1.0)
    model.fix("left")
    with pytest.raises(ValueError, match="path dependent"):
        model.solve(at_load_factors=[0.5, 1.0])


def test_hessian_vector_products_are_refused_with_the_reason(beam):
    def fun(E):
        return compliance(beam.solve(E=E, at_load_factors=[0.5, 1.0]).at(0))

    E = 100.0 * np.ones(beam.mesh.n_cells)
    with pytest.raises(NotDifferentiableError, match="second derivatives"):
        hvp(fun)(E, np.ones_like(E))

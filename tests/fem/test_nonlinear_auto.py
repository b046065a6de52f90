"""``auto`` for a symmetric tangent that may be indefinite: CHOLMOD, and LU for each
factorization that finds it not positive definite (``cholmod_lu``), counted in the Newton
report; an explicit ``"cholmod"`` still refuses such a tangent and cuts the load back."""

import numpy as np
import pytest

import fesens.solvers.cholmod as cholmod_module
from fesens.ad import grad, taylor_test
from fesens.fem.nonlinear.implicit_solve import ResidualSolve
from fesens.mesh import rectangle
from fesens.physics import FiniteStrainElasticity
from fesens.solvers import cholmod_available, solver_class
from fesens.solvers.policy import tangent_choice
from fesens.workflow.nonlinear import newton_summary

needs_cholmod = pytest.mark.skipif(not cholmod_available(),
                                   reason="scikit-sparse (CHOLMOD) not installed")
#: Full Newton steps: the first iterates of a strongly bent strip overshoot into states
#: whose tangent is indefinite (measured: 1 of 8 factorizations), which a line search on
#: the energy would have kept out of.
FULL_STEPS = {"line_search": None}


def bent_strip(traction: float = 0.5) -> FiniteStrainElasticity:
    """A 5 x 1 plane-strain strip clamped on the left, a dead downward traction on the
    right (at 0.5 the tip deflects by about 2.6, half the length)."""
    model = FiniteStrainElasticity(rectangle(20, 4, 5.0, 1.0), E=100.0, nu=0.3)
    model.fix("left").traction("right", (0.0, -traction), name="tip")
    return model


def compressed_column() -> FiniteStrainElasticity:
    """A 0.25 x 5 plane-strain column clamped at the bottom, pressed at the top by 3 times
    its Euler load ``π² E' I / (4 L²)`` (``E' = E / (1 − ν²)``) with a lateral push of
    1/3000 of it: Newton from the straight column converges to the near-straight
    equilibrium, which is unstable, so its converged tangent is indefinite."""
    E, nu, L, h = 100.0, 0.3, 5.0, 0.25
    euler = np.pi ** 2 * E / (1 - nu ** 2) * h ** 3 / 12 / (4 * L ** 2)
    model = FiniteStrainElasticity(rectangle(2, 40, h, L, "quad8"), E=E, nu=nu)
    model.fix("bottom").traction("top", (0.001 * euler / h, -3 * euler / h), name="top")
    return model


@needs_cholmod
def test_auto_is_cholesky_with_an_lu_fallback_and_says_why():
    model = bent_strip()
    backend = model.tangent_solver("auto")
    assert backend.name == "cholmod_lu" and backend.is_direct and backend.symmetric
    assert "may be indefinite" in model.solver_choice.line()
    assert "LU" in model.solver_choice.reason
    # the choice is the policy's, and a definite or non-symmetric tangent keeps its own
    assert tangent_choice(True, True) is None
    assert str(tangent_choice(False, False)) == solver_class("lu").name


def test_without_cholmod_auto_is_lu(monkeypatch):
    monkeypatch.setattr(cholmod_module, "_cholmod", None)
    choice = tangent_choice(True, False)
    assert str(choice) == solver_class("lu").name
    assert "not installed" in choice.reason
    assert bent_strip().tangent_solver("auto").name == solver_class("lu").name


@needs_cholmod
def test_an_indefinite_iterate_falls_back_to_lu_and_the_state_is_lus():
    auto = bent_strip().solve(newton=FULL_STEPS)
    report = auto.report
    assert report.fallbacks >= 1 and report.factorizations == report.iterations
    assert report.cutbacks == []  # no load cut back because of an indefinite tangent
    assert "not positive" in report.fallback_reason and "LDL^T" in report.fallback_reason
    assert f"{report.fallbacks} of {report.factorizations} tangent factorizations fell " \
           "back" in report.table()
    summary = newton_summary(report)  # what `fesens solve` writes and prints
    assert (summary["fallbacks"], summary["factorizations"]) == (report.fallbacks,
                                                                  report.factorizations)
    lu = bent_strip().solve(solver="lu", newton=FULL_STEPS)
    assert lu.report.fallbacks == 0
    scale = np.abs(lu.u).max()
    assert scale > 1.0
    assert np.abs(auto.u - lu.u).max() < 1e-10 * scale


@needs_cholmod
def test_explicit_cholmod_still_cuts_the_load_back():
    """The same solve with ``solver="cholmod"``: the indefinite tangent fails the step,
    which is cut back (the behaviour before ``auto`` fell back)."""
    report = bent_strip().solve(solver="cholmod", newton=FULL_STEPS).report
    assert report.fallbacks == 0
    assert report.cutbacks and all("cholmod" in why for _, why in report.cutbacks)


@needs_cholmod
def test_a_definite_path_uses_no_lu():
    """A small load: every iterate's tangent is positive definite, so every factorization
    is CHOLMOD's."""
    model = bent_strip(0.05)
    backend = model.tangent_solver("auto")
    report = model.solve(newton=FULL_STEPS, steps=2).report
    assert report.factorizations >= 4 and report.fallbacks == 0
    assert backend.stats["n_fallbacks"] == 0


@needs_cholmod
def test_taylor_through_solves_that_fell_back():
    """Every evaluation follows the full load path (no warm start) through the iterates
    whose tangent LU factorized; the gradient (adjoint refined with Newton's last
    factorization) passes the Taylor test."""
    model = bent_strip()
    rng = np.random.default_rng(3)
    x0 = 0.8 + 0.2 * rng.random(model.mesh.n_cells)
    reports = []

    def compliance(x):
        solution = model.solve(scale=x, newton=FULL_STEPS, warm_start=False)
        reports.append(solution.report)
        return np.dot(np.asarray(model.load_vector()), solution.u)

    result = taylor_test(compliance, x0, verbose=False)
    assert result.rate > 1.9, result.table()
    assert all(report.fallbacks >= 1 for report in reports)


@needs_cholmod
def test_the_adjoint_of_an_unstable_equilibrium_factorizes_its_tangent_by_lu(monkeypatch):
    """At the compressed column's unstable equilibrium the converged tangent is
    indefinite: the adjoint, made to factorize it, falls back to LU there and gives LU's
    gradient, which passes the Taylor test."""
    monkeypatch.setattr(ResidualSolve, "max_refinements", 0)  # the assembled tangent

    reports = []

    def column_compliance(solver):
        model = compressed_column()
        load = np.asarray(model.load_vector())

        def compliance(x):
            solution = model.solve(scale=x, solver=solver, warm_start=False)
            reports.append(solution.report)
            return np.dot(load, solution.u)

        return model, compliance

    model, compliance = column_compliance("auto")
    backend = model.tangent_solver("auto")
    x0 = np.ones(model.mesh.n_cells)
    forward = model.solve(scale=x0, warm_start=False).report
    assert forward.fallbacks >= 1 and forward.cutbacks == []
    before = backend.stats["n_fallbacks"]
    gradient = grad(compliance)(x0)
    # the gradient's forward takes the same path, then the adjoint falls back once more,
    # which that solve's report counts
    assert backend.stats["n_fallbacks"] - before == forward.fallbacks + 1
    assert reports[-1].fallbacks == forward.fallbacks + 1
    assert reports[-1].factorizations == forward.factorizations + 1
    lu_gradient = grad(column_compliance("lu")[1])(x0)
    assert np.abs(gradient - lu_gradient).max() < 1e-8 * np.abs(lu_gradient).max()
    result = taylor_test(compliance, x0, verbose=False)
    assert result.rate > 1.9, result.table()

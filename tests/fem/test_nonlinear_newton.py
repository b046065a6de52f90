"""Newton–Raphson (line search, load steps, cut-backs) and the nonlinear solve primitive:
convergence, failures and their reports, the cost of the adjoint, warm starts."""

from __future__ import annotations

import numpy as np
import pytest

from fesens.ad import NotDifferentiableError, grad, hvp, value_and_grad
from fesens.errors import NewtonError, SolverError
from fesens.fem.nonlinear.implicit_solve import ResidualSolve
from fesens.fem.nonlinear.newton import Evaluation, NewtonOptions, newton, solve_steps
from fesens.mesh.generators import rectangle
from fesens.objectives import compliance
from fesens.physics.nonlinear_conduction import NonlinearHeatConduction


class Arctan:
    """``R(x, t) = arctan(x) − t c``: full Newton steps diverge from ``|x| > 1.39``
    (Nocedal & Wright, *Numerical Optimization*, 2nd ed., §11.1), a line search on the
    residual norm does not."""

    def __init__(self, c=0.0):
        self.c = c
        self.solves = 0

    def evaluate(self, x, t):
        return Evaluation(np.arctan(x) - t * self.c, 1.0)

    def solve_tangent(self, x, t, rhs):
        self.solves += 1
        return rhs * (1.0 + x ** 2)


def test_line_search_rescues_a_diverging_newton():
    with pytest.raises(Exception, match="no convergence") as caught:
        newton(Arctan(), np.array([3.0]), 1.0, NewtonOptions(line_search=None,
                                                             max_iterations=5))
    assert "no convergence" in caught.value.reason
    x, residuals = newton(Arctan(), np.array([3.0]), 1.0, NewtonOptions())
    assert abs(x[0]) < 1e-10
    assert residuals[-1] < 1e-10


def quadratic_heat(cell_type="quad4", beta=0.8):
    mesh = rectangle(8, 4, 1.0, 0.5, cell_type)
    model = NonlinearHeatConduction(mesh, conductivity=1.5, beta=beta)
    model.fix("left", value=0.5)
    model.fix("right", value=4.0)
    model.heat_source(5.0, name="source")
    return model


def test_newton_converges_quadratically():
    solution = quadratic_heat().solve(newton={"rtol": 1e-13})
    residuals = solution.report.history[0]
    assert len(residuals) <= 8
    # e_(k+1) ≈ C e_k²: the ratio r_(k+1) / r_k² stays bounded while r_k falls fast
    tail = residuals[-4:]
    assert tail[-1] < 1e-12 * residuals[0]
    ratios = tail[1:] / tail[:-1] ** 2
    print("residuals", residuals, "r_(k+1)/r_k^2", ratios)
    assert np.all(ratios < 10.0)
    assert tail[-2] / tail[-3] < 1e-2  # superlinear: each step gains more than the last


def test_a_stalled_newton_raises_with_history_and_last_converged_step():
    model = quadratic_heat()
    with pytest.raises(NewtonError, match="did not converge") as caught:
        model.solve(steps=4, newton={"max_iterations": 2, "max_cutbacks": 1,
                                     "adaptive": False})
    error = caught.value
    assert "no convergence in 2 iterations" in error.reason
    assert len(error.history) >= 2
    assert all(isinstance(h, np.ndarray) for h in error.history)
    assert 0.0 <= error.load_factor < 1.0
    assert error.state.shape == (model.dofmap.n_dofs,)
    # the kept state holds the prescribed values of its load factor
    g = model.prescribed_values()
    expected = error.load_factor * g + (1 - error.load_factor) * 0.0
    assert np.allclose(error.state[model.constrained_dofs], expected)


def test_cut_back_happens_and_is_reported():
    model = quadratic_heat(beta=3.0)
    solution = model.solve(newton={"max_iterations": 3})
    cutbacks = solution.report.cutbacks
    assert cutbacks, solution.report.table()
    assert all("no convergence in 3 iterations" in reason for _, reason in cutbacks)
    assert solution.report.load_factors[-1] == 1.0
    reference = model.solve(warm_start=False)
    assert np.allclose(solution.u, reference.u, rtol=1e-9, atol=1e-12)
    assert "cut back" in solution.report.table()


def test_load_path_and_reactions():
    model = quadratic_heat()
    solution = model.solve(steps=5, newton={"adaptive": False}, warm_start=False)
    factors, norms = solution.load_path()
    assert np.allclose(factors, np.linspace(0, 1, 6))
    assert norms[-1] == pytest.approx(np.linalg.norm(solution.u))
    node = int(model.mesh.nodes("right")[0])
    assert solution.load_path(dof=node)[1][-1] == pytest.approx(4.0)
    # heat balance: R_c = F_int,c − f_c, and F_int sums to zero (∇ of a constant), so the
    # reactions sum to minus the heat the source gives
    assert np.sum(solution.reactions()) == pytest.approx(-np.sum(solution.f), rel=1e-9)


def test_gradient_costs_no_factorization_only_substitutions(monkeypatch):
    """The adjoint refines with Newton's last factorization: no numeric factorization
    beyond the forward's, one transposed substitution plus one per correction."""
    model = quadratic_heat()
    backend = model.tangent_solver()
    kappa = np.full(model.mesh.n_cells, 1.5)
    corrections = []
    adjoint = ResidualSolve.adjoint

    def spy(self, *args, **kwargs):
        lam = adjoint(self, *args, **kwargs)
        corrections.append(self.refinements)
        return lam

    monkeypatch.setattr(ResidualSolve, "adjoint", spy)

    def fun(k):
        return compliance(model.solve(conductivity=k, warm_start=False))

    before = backend.stats
    fun(kappa)
    forward = backend.stats
    value_and_grad(fun)(kappa)
    after = backend.stats
    n_forward = forward["n_numeric"] - before["n_numeric"]
    assert n_forward >= 3  # the Newton iterations
    assert after["n_numeric"] - forward["n_numeric"] == n_forward
    assert len(corrections) == 1 and corrections[0] is not None
    assert 1 <= corrections[0] <= ResidualSolve.max_refinements
    assert after["n_solves"] - forward["n_solves"] == (forward["n_solves"] - before["n_solves"]
                                                       + 1 + corrections[0])


def test_warm_start_from_the_last_converged_state():
    model = quadratic_heat()
    kappa = np.full(model.mesh.n_cells, 1.5)
    first = model.solve(conductivity=kappa)
    assert not first.report.warm_start
    moved = kappa * (1 + 0.02 * np.random.default_rng(0).random(kappa.size))
    warm = model.solve(conductivity=moved)
    cold = model.solve(conductivity=moved, warm_start=False)
    assert warm.report.warm_start and not cold.report.warm_start
    assert len(warm.report.history[0]) < len(cold.report.history[0])
    assert np.allclose(warm.u, cold.u, rtol=1e-10, atol=1e-12)
    assert not model.solve(conductivity=10 * kappa).report.warm_start  # too far


def test_hessian_vector_products_are_refused_with_the_reason():
    model = quadratic_heat()
    kappa = np.full(model.mesh.n_cells, 1.5)

    def fun(k):
        return compliance(model.solve(conductivity=k))

    assert np.all(np.isfinite(grad(fun)(kappa)))
    with pytest.raises(NotDifferentiableError, match="second derivatives"):
        hvp(fun)(kappa, np.ones_like(kappa))


def test_a_symmetric_backend_is_refused_for_a_non_symmetric_tangent():
    model = quadratic_heat()
    with pytest.raises(SolverError, match="not symmetric"):
        model.solve(solver="cg")
    assert not model.tangent_solver().symmetric


def test_options_are_checked():
    model = quadratic_heat()
    with pytest.raises(TypeError, match="unknown newton option"):
        model.solve(newton={"tolerance": 1e-3})
    with pytest.raises(ValueError, match="line_search"):
        model.solve(newton={"line_search": "wolfe"})
    with pytest.raises(ValueError, match="needs a stored energy"):
        model.solve(newton={"line_search": "energy"})
    with pytest.raises(ValueError, match="steps"):
        model.solve(steps=0)


def test_solve_steps_reports_every_converged_step():
    system = Arctan(c=1.2)
    x, report = solve_steps(system, np.array([0.0]), NewtonOptions(steps=3, adaptive=False))
    assert np.tan(1.2) == pytest.approx(x[0], rel=1e-9)
    assert report.load_factors == pytest.approx([0, 1 / 3, 2 / 3, 1])
    assert len(report.states) == 4


class RoundOff:
    """``R(x) = x − 1 + 10⁻⁹ sin(10¹² x)``: the root ``x ≈ 1`` behind a noise floor of
    ``10⁻⁹`` (a round-off stand-in), with a residual scale (``10⁻¹²``) the floor never
    lets ``rtol`` reach."""

    def evaluate(self, x, t):
        return Evaluation(x - 1.0 + 1e-9 * np.sin(1e12 * x), 1e-12)

    def solve_tangent(self, x, t, rhs):
        return rhs


def test_a_residual_at_its_round_off_ends_on_the_step_test():
    with pytest.raises(Exception, match="stalled|no convergence"):
        newton(RoundOff(), np.array([0.3]), 1.0, NewtonOptions(stol=0.0))
    x, residuals = newton(RoundOff(), np.array([0.3]), 1.0, NewtonOptions())
    assert abs(x[0] - 1.0) < 1e-8
    assert len(residuals) <= 4


class Asymptote:
    """``R(x, t) = x − t`` solved with a tangent off by a factor (linear convergence, so a
    step never takes few enough iterations to grow the increment), inadmissible from
    ``t = 0.5`` on: every step below 0.5 converges, every one reaching it fails, so halving
    on failure alone approaches 0.5 in ever smaller steps without end."""

    def __init__(self):
        self.evaluations = 0

    def evaluate(self, x, t):
        self.evaluations += 1
        if t >= 0.5:
            return Evaluation(np.empty(0), 0.0, reason="past the asymptote")
        return Evaluation(x - t, 1.0)

    def solve_tangent(self, x, t, rhs):
        return 0.5 * rhs


def test_the_load_increment_has_a_floor():
    system = Asymptote()
    options = NewtonOptions(steps=1, max_cutbacks=4, line_search=None, max_iterations=60)
    with pytest.raises(NewtonError, match=r"load increment .* below its floor 0.0625 "
                                          r"\(1/steps / 2\^max_cutbacks\)") as caught:
        solve_steps(system, np.array([0.0]), options)
    assert 0.4 < caught.value.load_factor < 0.5
    assert system.evaluations < 2000  # ends, instead of halving towards round-off

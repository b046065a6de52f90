"""The default line search ``"auto"`` (full Newton steps first, a search only where they
fail) and the advice of a failed solve, decided from what happened."""

from __future__ import annotations

import numpy as np
import pytest

from fesens.errors import NewtonError, SolverError
from fesens.fem.nonlinear.newton import Evaluation, NewtonOptions, solve_steps
from tests.fem.test_nonlinear_newton import Arctan, quadratic_heat


class Elastica:
    """A two-unknown model of a slender beam: axial displacement ``u`` and deflection
    ``w`` with the energy ``Π = K (u + w²/2)² / 2 + w² / 2 − t f w`` (a stiff axis,
    ``K = 10⁶``, whose strain a deflection changes by ``w²/2``). The first Newton step
    from rest deflects the beam without shortening it: the residual rises a
    million-fold and the energy with it, so both searches refuse the full step, which
    converges in a few iterations."""

    def __init__(self, stiffness=1e6, force=1.0):
        self.K, self.f = stiffness, force

    def evaluate(self, x, t):
        u, w = x
        strain = u + w * w / 2
        residual = np.array([self.K * strain, self.K * strain * w + w - t * self.f])
        energy = self.K * strain ** 2 / 2 + w * w / 2 - t * self.f * w
        return Evaluation(residual, t * self.f, energy)

    def solve_tangent(self, x, t, rhs):
        u, w = x
        strain = u + w * w / 2
        tangent = np.array([[self.K, self.K * w],
                            [self.K * w, self.K * (w * w + strain) + 1.0]])
        return np.linalg.solve(tangent, rhs)


def iterations(system, **options) -> int:
    return solve_steps(system, np.zeros(2), NewtonOptions(**options))[1].iterations


def test_auto_takes_the_full_steps_that_the_searches_cut():
    """On :class:`Elastica` ``"auto"`` takes as many iterations as full Newton steps
    (none rejected), over 100 times fewer than the energy search (measured 1704), while
    the residual search fails even after 8 cut-backs; the answer (``u = −w²/2``,
    ``w ≈ f``) is the same."""
    full = iterations(Elastica(), line_search=None)
    assert iterations(Elastica()) == full <= 10
    assert iterations(Elastica(), line_search="energy", max_iterations=200) >= 100 * full
    with pytest.raises(NewtonError):
        iterations(Elastica(), line_search="residual", max_iterations=50)
    x, _ = solve_steps(Elastica(), np.zeros(2), NewtonOptions(rtol=1e-12))
    assert abs(x[0] + x[1] ** 2 / 2) < 1e-9 and abs(x[1] - 1.0) < 1e-5


def test_auto_equals_the_residual_search_where_it_takes_full_or_halving_steps():
    """Where the residual search accepts the full step, or the step its model predicts
    halves the residual's decrease bound, ``"auto"`` takes the same iterates bit for bit
    (nonlinear heat, ``β = 3``: one rejected full step)."""
    histories = [quadratic_heat(beta=3.0).solve(newton={"line_search": search}).report.history
                 for search in ("auto", "residual")]
    assert len(histories[0]) == len(histories[1])
    for auto, residual in zip(*histories, strict=True):
        assert np.array_equal(auto, residual)


def test_the_watchdog_hands_a_diverging_newton_to_the_search():
    """Full Newton steps on ``arctan(x) = 0`` from ``x = 3`` diverge (Nocedal & Wright
    §11.1); ``"auto"`` gives up on them after the watchdog's iterations without a new
    lowest residual and converges with the search from the best iterate, within
    ``max_iterations`` for both phases together."""
    x, report = solve_steps(Arctan(), np.array([3.0]), NewtonOptions(max_iterations=25,
                                                                     max_cutbacks=0))
    assert abs(x[0]) < 1e-10 and report.iterations <= 25
    residuals = report.history[0]
    assert residuals[1] > residuals[0]  # the full step was taken first


# ------------------------------------------------------------ the advice of a failure
def failure(system, x0, **options) -> NewtonError:
    with pytest.raises(NewtonError) as caught:
        solve_steps(system, np.asarray(x0, dtype=float), NewtonOptions(**options))
    return caught.value


def test_a_search_that_cuts_converging_full_steps_advises_none():
    error = failure(Elastica(), [0.0, 0.0], line_search="residual", max_iterations=10,
                    max_cutbacks=0)
    assert 'line_search = "none"' in str(error) and "full Newton steps" in str(error)
    assert iterations(Elastica(), line_search=None, max_iterations=10) <= 10


def test_a_stalled_large_increment_advises_the_load_steps_that_converge():
    """Newton on ``arctan(x) = 1.53 t`` from ``x = 0`` needs more than 8 iterations at
    the full load and at half of it; the advice names ``steps = 4`` (increments of 0.25),
    and that many steps converge."""
    options = {"line_search": None, "max_iterations": 8, "max_cutbacks": 1,
               "adaptive": False}
    error = failure(Arctan(c=1.53), [0.0], **options)
    assert "steps = 4: increments of 0.25" in str(error), str(error)
    assert "max_iterations = 16" in str(error)
    assert 'line_search = "none"' not in str(error)
    x, _ = solve_steps(Arctan(c=1.53), np.array([0.0]), NewtonOptions(**{**options,
                                                                        "steps": 4}))
    assert abs(np.arctan(x[0]) - 1.53) < 1e-10


class Inverting:
    """``R = x − 2t``, inadmissible (``det F <= 0``) beyond ``x = 1``: the load pushes the
    state out of the law's domain."""

    def evaluate(self, x, t):
        if x[0] > 1.0:
            return Evaluation(np.empty(0), 0.0, reason="det F <= 0 in 1 inverted element(s) [0]")
        return Evaluation(x - 2.0 * t, 1.0)

    def solve_tangent(self, x, t, rhs):
        return rhs


def test_inadmissible_trial_states_are_named_with_their_remedy():
    error = failure(Inverting(), [0.0], max_cutbacks=2)
    assert "det F <= 0" in error.reason
    assert "left the law's domain" in str(error) and "refine the mesh" in str(error)
    assert "steps =" not in str(error)


class Singular(Arctan):
    def solve_tangent(self, x, t, rhs):
        raise SolverError("the tangent is singular")


def test_a_failed_tangent_solve_advises_a_backend():
    error = failure(Singular(c=1.0), [0.0], max_cutbacks=0)
    assert "tangent solve failed" in str(error) and 'solver = "lu"' in str(error)


def test_a_limit_load_is_named_the_end_of_the_load_path():
    """``arctan(x) = 2t`` has no root beyond ``t = π/4``: the steps reach it and the
    residual stops falling there at the smallest increment; the advice says the load path
    may end there and suggests no number of load steps."""
    with np.errstate(over="ignore", invalid="ignore"):  # iterates past the limit overflow
        error = failure(Arctan(c=2.0), [0.0], line_search="residual")
    assert "The load path may end there" in str(error) and "steps =" not in str(error)
    assert np.pi / 4 - 0.01 < error.load_factor < np.pi / 4

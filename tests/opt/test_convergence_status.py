"""'Converged' means converged: the stop rule held, the constraints are met within
``constraint_tol`` and the design holds material; otherwise the run says ``infeasible`` or
``degenerate``. And OC's positive lower bound keeps an all-void start (and a mechanism's
emptied cells) able to grow.

The small MBB beam of ``opt_helpers`` (24 x 8 cells, volume fraction 0.5, density filter):
a uniform design stays uniform under the filter, so its volume fraction is the start value.
"""

import numpy as np
import pytest
from opt_helpers import Standstill, mbb_problem

from fesens.objectives import compliance
from fesens.opt import OC, Constraint, optimize
from fesens.opt.status import STATUSES


def small_problem(**options):
    return mbb_problem(24, 8, 1.5, "density", **options)


def test_statuses_and_their_exit_codes_are_the_documented_ones():
    assert {name: s.exit_code for name, s in STATUSES.items()} == {
        "converged": 0, "max_iter": 0, "infeasible": 3, "degenerate": 4}


def test_a_volume_above_its_limit_is_infeasible_not_converged():
    problem = small_problem()
    result = optimize(problem, Standstill(), np.full(problem.n_design, 0.7), max_iter=5)
    assert len(result.history) == 1  # the stop rule held at once
    assert result.status == "infeasible" and not result.converged
    assert "volume_fraction 0.7 (limit 0.5)" in result.reason
    assert "constraint_tol = 0.001" in result.reason


def test_a_violated_stiffness_limit_is_infeasible():
    problem = small_problem(constraints=[
        Constraint("compliance", lambda state, rho: compliance(state), limit=1e-6)])
    result = optimize(problem, Standstill(), np.full(problem.n_design, 0.5), max_iter=5)
    assert result.status == "infeasible"
    assert "compliance" in result.reason and "volume_fraction" not in result.reason


@pytest.mark.parametrize(("tol", "status"), [(1e-3, "converged"), (1e-4, "infeasible")])
def test_the_constraint_tolerance_decides(tol, status):
    """A start 5e-4 above the volume fraction: within 1e-3, beyond 1e-4."""
    problem = small_problem()
    result = optimize(problem, Standstill(), np.full(problem.n_design, 0.5005), max_iter=5,
                      constraint_tol=tol)
    assert result.status == status
    assert result.converged == (status == "converged")


def test_a_design_without_material_is_degenerate_even_when_the_change_is_zero():
    problem = small_problem()
    result = optimize(problem, Standstill(), np.zeros(problem.n_design), max_iter=5)
    assert result.status == "degenerate" and not result.converged
    assert "volume fraction 0," in result.reason


def test_a_degenerate_design_at_the_iteration_limit_is_degenerate():
    """A negative ``tol_change`` never stops the loop: the limit ends it."""
    problem = small_problem()
    result = optimize(problem, OC(x_min=0.0), np.zeros(problem.n_design), max_iter=2,
                      tol_change=-1.0)
    assert len(result.history) == 2
    assert result.status == "degenerate"


def test_oc_grows_from_an_all_void_start():
    """With a lower bound of 0 the multiplicative update keeps x = 0 at 0: the first step
    changes nothing and the run 'converged after 1 iteration' at volume 0."""
    problem = small_problem()
    result = optimize(problem, OC(), np.zeros(problem.n_design), max_iter=60)
    assert result.history[0]["change"] == pytest.approx(0.2)  # the move limit, from x_min
    assert len(result.history) > 1
    assert result.evaluation.volume_fraction == pytest.approx(0.5, abs=1e-3)
    assert result.status in ("converged", "max_iter")


def test_oc_with_top88s_lower_bound_stays_void_and_says_so():
    problem = small_problem()
    result = optimize(problem, OC(x_min=0.0), np.zeros(problem.n_design), max_iter=60)
    assert len(result.history) == 1 and result.history[0]["change"] == 0.0
    assert result.status == "degenerate"


def test_oc_keeps_its_lower_bound():
    """From the uniform 0.5, three steps of the move limit 0.2 reach the bound."""
    problem = small_problem()
    result = optimize(problem, OC(x_min=1e-3, damping=0.3), max_iter=8, tol_change=-1.0)
    assert result.x.min() == pytest.approx(1e-3)


@pytest.mark.parametrize(("option", "value", "words"), [
    ("damping", 0.0, "damping must be in (0, 1]"),
    ("damping", 1.5, "damping must be in (0, 1]"),
    ("x_min", 1.0, "x_min (the lower bound of the design variables) must be in [0, 1)"),
    ("x_min", -0.1, "x_min"),
])
def test_oc_refuses_options_outside_their_range(option, value, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        OC(**{option: value})


def test_the_topology_guide_quotes_the_codes_thresholds_and_defaults():
    import inspect
    from pathlib import Path

    import fesens
    from fesens.opt.status import CONSTRAINT_TOL, DEGENERATE_FRACTION

    text = (Path(fesens.__file__).parent / "docs" / "topology.md").read_text()
    defaults = inspect.signature(OC).parameters
    assert f"below {DEGENERATE_FRACTION:g} of its limit" in text
    assert CONSTRAINT_TOL == 1e-3 and "`stop.constraint_tol` (default 1e-3)" in text
    assert defaults["x_min"].default == 1e-9 and "`[optimizer] x_min`, default 1e-9," in text
    assert defaults["damping"].default == 0.5 and "(default 0.5, top88's square root)" in text


class BreaksDown(Standstill):
    """An optimizer whose subproblem breaks down at its second step: NaN design variables
    from a finite evaluation (MMA's interior point did so on a dynamic stress design)."""

    name = "breaks_down"

    def step(self, x, evaluation, volume_excess, iteration):
        return x + (np.nan if iteration == 2 else 0.0)


def test_a_nan_design_from_the_optimizer_stops_the_run_before_it_is_saved(tmp_path):
    from fesens.errors import NonFiniteError
    from fesens.opt.checkpoint import load_checkpoint

    problem = small_problem()
    with pytest.raises(NonFiniteError, match="iteration 2: breaks_down's update gave NaN"):
        optimize(problem, BreaksDown(), np.full(problem.n_design, 0.5), max_iter=5,
                 tol_change=-1.0, checkpoint=tmp_path / "checkpoint.npz")
    x, iteration, _, _ = load_checkpoint(tmp_path / "checkpoint.npz")
    assert iteration == 1 and np.all(np.isfinite(x))

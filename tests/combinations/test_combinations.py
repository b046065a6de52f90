"""Every combination of what a config can choose is refused at check time or runs right.

The axes (:mod:`axes`) are read from the registries: command, physics, a physics' choice
(plane, material law, void treatment), Newton's line search, mesh, analysis, time scheme,
objective, ``--wrt``, optimizer, filter, projection and robust, manufacturing constraint,
solver, device and ranks. A point of their product either is refused before anything is
written (exit 2, one ``error:`` line) or runs (exit 0) and passes the invariants of its
command (:mod:`runner`): the gradient against central differences, a study's sample against
``fesens sensitivity``, ``weight = -1`` against ``+1``, a resumed optimization against the
uninterrupted one, and a symmetric design of the symmetric data.

``make test`` samples the product with Hypothesis (derandomized: the same points on every
run); ``FESENS_COMBINATIONS=all`` (``make combinations``) walks all of it in
``FESENS_COMBINATIONS_SHARDS`` shards (default 1000), one test each.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import axes
import pytest
import runner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fesens.errors import FesensWarning

#: ``all``: walk every combination (slow: see fesens/docs/combinations.md); else sample.
MODE = os.environ.get("FESENS_COMBINATIONS", "sample")
#: Drawn points per command in ``make test`` (most are refused at once; a run takes 0.1 s
#: (solve, sensitivity, study) to a few seconds (optimize with its resumed copy)).
EXAMPLES = {"solve": 40, "sensitivity": 120, "study": 60, "optimize": 50}


def _point(**where) -> dict:
    """A full point: the first value of every axis, then ``where``."""
    point = {axis.name: axis.values[0] for axis in axes.axes()}
    point.update(where)
    return point


@dataclass(frozen=True)
class Known:
    """A failure found by this test and not fixed yet: one point that shows it, the axes
    whose values make it (the points it covers) and why."""

    point: dict
    axes: tuple[str, ...]
    reason: str
    strict: bool = True

    def covers(self, point: dict) -> bool:
        return all(point.get(name) == self.point[name] for name in self.axes)


#: Failures this test found that are still open. A point one of them covers may fail (it is
#: counted as known); :func:`test_known_failure` runs each failure's own point and expects
#: it to fail (``strict=False``: a change under way fixes it).
KNOWN: tuple[Known, ...] = (
    Known(_point(command="optimize", physics="elasticity", mesh="rectangle",
                 analysis="dynamic", objective="stress_ks", optimizer="mma",
                 filter="density", solver="cholmod"),
          ("command", "analysis", "objective", "optimizer"),
          "MMA's subproblem breaks down at iteration 4 (objective gradient entries up to "
          "5e10 at a value of 5: its interior point gives NaN); the run stops with "
          "NonFiniteError, exit 1, where it wrote a NaN design with exit 0"),
    Known(_point(command="optimize", physics="hyperelasticity", mesh="rectangle",
                 objective="volume", optimizer="mma", filter="density",
                 local_stress="augmented_lagrangian", solver="auto"),
          ("command", "physics", "optimizer", "local_stress"),
          "MMA's subproblem breaks down on the augmented Lagrangian of a finite-strain "
          "design (1 / (x - alpha) divides by zero at its first iteration, then NaN): the run "
          "ends with exit 1 and that warning as its error, where it should refuse or "
          "converge"),
    Known(_point(command="optimize", physics="hyperelasticity", mesh="rectangle",
                 objective="stress_ks", optimizer="oc", filter="density", solver="auto"),
          ("command", "physics", "objective"),
          "a design of the KS stress of a finite-strain cantilever loses the data's mirror "
          "symmetry: OC with the density filter, mirrored densities 6.06e-03 apart after 4 "
          "iterations (the same at 721cac4, before the elastoplastic physics joined the walk "
          "and moved the drawn points); MMA with a robust projection and the energy "
          "interpolation of void cells, 2.19e-01 apart",
          strict=False),
    *(Known(_point(command="sensitivity", physics="hyperelasticity",
                   physics_choice=("law", "mooney-rivlin"), mesh="rectangle",
                   objective="stress_ks", wrt=wrt, solver="auto"),
            ("command", "physics", "objective", "wrt"),
            f"check_grad's central difference of stress_ks in a law constant ({wrt}) steps "
            "by 9e-6, where Newton's stopping error (rtol 1e-10) moves the value by 1e-11: "
            "its noise estimate (3e-15, round-off) misses it, and the 3e-5 difference fails "
            "the check; the gradient itself converges at rate 2 (steps 1e-2 to 1e-4: "
            "relative error 4.5e-3, 4.7e-5, 4.8e-7)") for wrt in ("c10", "kappa")),
)


def known(point: dict) -> Known | None:
    return next((k for k in KNOWN if k.covers(point)), None)


@st.composite
def points(draw, command: str) -> dict:
    """A point of the product for ``command``, inert axes at their first value; each axis
    drawn from all its values or from those the drawn physics offers (half the points
    would otherwise be refused for a choice its physics lacks)."""
    point = {"command": command}
    for axis in axes.axes()[1:]:
        if not axes.applies(axis, point):
            point[axis.name] = axis.values[0]
            continue
        point[axis.name] = draw(st.sampled_from(axis.values)
                                | st.sampled_from(axes.offered(axis, point)))
    return point


def run_point(point: dict) -> runner.Outcome:
    """The outcome of ``point`` in a fresh folder; fesens's warnings of doubtful values are
    the CLI's own lines, not test errors."""
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore", FesensWarning)
        return runner.outcome(point, Path(folder))


def _assert_refused_or_checked(outcome: runner.Outcome) -> None:
    assert outcome.status in ("refused", "checked"), \
        f"{outcome.point}: {outcome.message}"


def _sampled(command: str):
    @pytest.mark.skipif(MODE == "all", reason="FESENS_COMBINATIONS=all walks them all")
    @settings(max_examples=EXAMPLES[command], deadline=None, derandomize=True,
              database=None, suppress_health_check=list(HealthCheck))
    @given(point=points(command))
    def test(point):
        outcome = run_point(point)
        if outcome.status == "failed" and known(point) is not None:
            event("known failure")
            return
        event(outcome.status)  # --hypothesis-show-statistics counts them
        _assert_refused_or_checked(outcome)

    return test


test_solve_combinations = _sampled("solve")
test_sensitivity_combinations = _sampled("sensitivity")
test_study_combinations = _sampled("study")
test_optimize_combinations = _sampled("optimize")


@pytest.mark.parametrize("failure", [
    pytest.param(k, marks=pytest.mark.xfail(strict=k.strict, reason=k.reason),
                 id="-".join(str(k.point[name]) for name in k.axes)) for k in KNOWN])
def test_known_failure(failure):
    """Each open failure on its own point: xfail until it is fixed (then strict ones fail,
    and the entry goes)."""
    _assert_refused_or_checked(run_point(failure.point))


#: Shards of the exhaustive walk: shard ``i`` takes the points whose number is ``i`` modulo
#: this, so that pytest-xdist spreads the walk over its workers (``make combinations``) and
#: one shard (``test_every_combination[0]``) is an even sample of the whole product.
SHARDS = int(os.environ.get("FESENS_COMBINATIONS_SHARDS", "1000"))


@pytest.mark.skipif(MODE != "all", reason="set FESENS_COMBINATIONS=all to walk them all")
@pytest.mark.parametrize("shard", range(SHARDS) if MODE == "all" else [0])
def test_every_combination(shard):
    """Every point of one shard: refused or checked, or failed where a known failure
    covers it."""
    failures, tally = [], {"refused": 0, "checked": 0, "known": 0, "failed": 0}
    for number, point in enumerate(axes.combinations()):
        if number % SHARDS != shard:
            continue
        outcome = run_point(point)
        if outcome.status == "failed" and known(point) is not None:
            tally["known"] += 1
            continue
        tally[outcome.status] += 1
        if outcome.status == "failed":
            failures.append(f"{point}: {outcome.message}")
    print(f"combinations (shard {shard} of {SHARDS}): {tally}")
    assert not failures, f"{len(failures)} failed:\n" + "\n".join(failures)


def test_every_registered_choice_has_its_data():
    """What no registry can give (a tiny mesh per generator, a value per required key, a
    symmetric value per manufacturing constraint, a node load per physics, the invariants
    of a command) exists for every registered choice, so a new one joins the walk."""
    by_name = {axis.name: axis for axis in axes.axes()}
    for point in (_point(command=c, physics=p, mesh=m, objective=o, filter=f, projection=j,
                         manufacturing=k)
                  for c in axes.config_commands() for p in by_name["physics"].values
                  for m in by_name["mesh"].values for o in axes.objective_types()
                  for f, j, k in zip(*(by_name[name].values for name in
                                       ("filter", "projection", "manufacturing")),
                                     strict=False)):
        axes.config_for(point)
    for physics in by_name["physics"].values:  # a law's constants, each physics' choices
        for choice in by_name["physics_choice"].values:
            axes.config_for(_point(command="solve", physics=physics, physics_choice=choice))
    assert set(axes.config_commands()) <= set(runner.INVARIANTS)


@pytest.mark.parametrize("registry, name, axis", [
    ("fesens.opt.OPTIMIZERS", "toy", "optimizer"),
    ("fesens.opt.filters.FILTERS", "toy", "filter"),
])
def test_axes_follow_their_registries(monkeypatch, registry, name, axis):
    """An entry added to a registry is a value of its axis: nothing is listed by hand."""
    import importlib

    module, attribute = registry.rsplit(".", 1)
    table = getattr(importlib.import_module(module), attribute)
    monkeypatch.setitem(table, name, next(iter(table.values())))
    (found,) = (a for a in axes.axes() if a.name == axis)
    assert name in found.values


def test_a_broken_invariant_is_a_failure(monkeypatch):
    """The sample would see a wrong gradient: a sensitivity whose pullback is off by 1 %
    fails the central-difference invariant."""
    from fesens.ad import vjp
    from fesens.workflow import analysis

    def off(fun, x):
        value, pullback = vjp(fun, x)
        return value, lambda cotangent: 1.01 * pullback(cotangent)

    monkeypatch.setattr(analysis, "vjp", off)
    point = _point(command="sensitivity", physics="elasticity", mesh="rectangle",
                   objective="compliance", wrt="density", solver="superlu")
    outcome = run_point(point)
    assert outcome.status == "failed" and "gradient" in outcome.message, outcome


def test_docs_quote_the_product_size():
    """fesens/docs/combinations.md quotes the line tests/combinations/count.py prints."""
    import count

    guide = (Path(__file__).resolve().parents[2] / "fesens" / "docs" / "combinations.md")
    assert count.size_lines()[-1] in guide.read_text(encoding="utf-8").replace("\n", " ")


@pytest.mark.parametrize("solver, expected", [
    ({"backend": "superlu"}, 1e-12),
    ({"backend": "gmg"}, 1e-7),  # the backend's default rtol 1e-8
    ({"backend": "cg", "options": {"rtol": 1e-6}}, 1e-5),
])
def test_two_evaluations_agree_to_the_solver_tolerance(solver, expected):
    """Round-off for a direct solver; ten times the rtol an iterative one runs with (the
    config's options, else the backend's default): warm starts differ between the two."""
    assert runner.same_tolerance({"solver": solver}) == pytest.approx(expected, rel=1e-12)

"""``[penalization] type = "ordered"``: several solid phases and void from a config (the
``multimaterial`` preset), the cost constraint ``[constraints] cost_fraction`` and its
gradient, and the refusals of inconsistent phases, each naming its key (exit code 2 from
the command line)."""

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from fesens.cli import cli
from fesens.config import ConfigError, build_problem, parse_config, preset_text
from fesens.objectives.static import volume
from fesens.opt.interpolation import OrderedSIMP

PRESET = preset_text("multimaterial")
WITH_COST = PRESET.replace('names = ["light", "heavy"]',
                           'names = ["light", "heavy"]\ncosts = [1.0, 0.5]', 1) \
    .replace("volume_fraction = 0.4", "volume_fraction = 0.4\ncost_fraction = 0.3", 1)


def parsed(text: str):
    return parse_config(text, source="multimaterial", base_dir=Path("."))


def edited(old: str, new: str, text: str = PRESET) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def test_the_preset_builds_the_ordered_interpolation_with_its_phases():
    problem = build_problem(parsed(PRESET))
    interpolation = problem.interpolation
    assert isinstance(interpolation, OrderedSIMP)
    assert interpolation.names == ["light", "heavy"]
    np.testing.assert_array_equal(interpolation.breakpoints, [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(interpolation.relative_moduli, [1e-9, 0.6, 1.0])
    assert problem.constraints == []  # the mass is the volume constraint on x
    assert interpolation.labels() == ["light: E = 0.6, density 0.5",
                                      "heavy: E = 1, density 1"]


def test_the_cost_constraint_and_its_gradient():
    """``cost_fraction``: ``Σ x P(x) v / V ≤ limit``; its gradient passes a Taylor test
    (densities away from the breakpoint 0.5 over the steps) and central differences."""
    small = WITH_COST.replace("size = [60.0, 20.0]", "size = [12.0, 4.0]") \
        .replace("cells = [60, 20]", "cells = [12, 4]").replace("[60.0, 0.0]", "[12.0, 0.0]") \
        .replace("[0.0, 20.0]", "[0.0, 4.0]")
    problem = build_problem(parsed(small))
    assert problem.n_design == 48
    assert [c.name for c in problem.constraints] == ["cost_fraction"]
    assert problem.constraints[0].limit == 0.3
    rng = np.random.default_rng(0)
    x = rng.uniform(0.05, 0.95, problem.n_design)
    h = rng.uniform(-1.0, 1.0, problem.n_design)
    steps = (1e-3, 5e-4, 2.5e-4, 1.25e-4)
    rho = problem.density(x)
    assert np.min(np.abs(rho - 0.5)) > steps[0]
    evaluation = problem.evaluate(x)
    cost = float(volume(problem.model, problem.interpolation.cost(rho), fraction=True))
    assert evaluation.extras["cost_fraction"] == pytest.approx(cost, rel=1e-13)
    assert evaluation.constraints[1] == pytest.approx(cost / 0.3 - 1.0, rel=1e-13)
    gradient = evaluation.constraint_gradients[1]

    def constraint(y):
        return problem.evaluate(y).constraints[1]

    residuals = [abs(constraint(x + e * h) - evaluation.constraints[1] - e * gradient @ h)
                 for e in steps]
    assert np.all(np.log2(np.array(residuals[:-1]) / residuals[1:]) > 1.9)
    e = np.zeros_like(x)
    e[7] = 1e-6
    assert gradient[7] == pytest.approx((constraint(x + e) - constraint(x - e)) / 2e-6,
                                        rel=1e-6)


@pytest.mark.parametrize(("old", "new", "message"), [
    ("moduli = [0.6, 1.0]", "moduli = [1.0]", "penalization.moduli: give 2 or 3 solid phases"),
    ("densities = [0.5, 1.0]", "densities = [1.0, 0.5]",
     r"penalization.densities = \[1.0, 0.5\] must increase strictly"),
    ("moduli = [0.6, 1.0]", "moduli = [1.0, 0.6]",
     r"penalization.moduli = \[1.0, 0.6\] must increase strictly"),
    ("densities = [0.5, 1.0]", "densities = [0.3, 0.5, 1.0]",
     r"penalization.densities: give one value per phase \(2, as moduli\), got 3"),
    ('names = ["light", "heavy"]', 'names = ["light"]', "penalization.names: give one value"),
    ('names = ["light", "heavy"]', "names = [1, 2]", r"penalization.names\[0\] = 1"),
    ('names = ["light", "heavy"]', 'names = ["light", "heavy"]\ncosts = [1.0, -1.0]',
     r"penalization.costs = \[1.0, -1.0\] is not allowed"),
    ("moduli = [0.6, 1.0]\n", "", "missing key 'penalization.moduli'"),
    ("minimum = 1e-9", "minimum = 0.7", "penalization.minimum = 0.7 makes void as stiff"),
    ('type = "ordered"', 'type = "simp"', "penalization.moduli is not used here"),
    ("volume_fraction = 0.4", "volume_fraction = 0.4\ncost_fraction = 0.3",
     "constraints.cost_fraction needs the phases' costs"),
])
def test_inconsistent_phases_are_refused_naming_the_key(old, new, message):
    with pytest.raises(ConfigError, match=message):
        parsed(edited(old, new))


def test_the_cost_constraint_needs_an_optimizer_with_general_constraints():
    with pytest.raises(ConfigError, match='cost_fraction is a second constraint, which '
                                          'optimizer.type = "oc" cannot handle'):
        parsed(edited('type = "mma"', 'type = "oc"', WITH_COST))


@pytest.mark.parametrize(("old", "new", "message"), [
    ("densities = [0.5, 1.0]", "densities = [1.0, 0.5]", "penalization.densities"),
    ("moduli = [0.6, 1.0]", "moduli = [0.6, 1.0, 2.0, 3.0]", "penalization.moduli"),
    ("volume_fraction = 0.4", "volume_fraction = 0.4\ncost_fraction = 0.3",
     "constraints.cost_fraction"),
])
def test_config_errors_exit_2_from_the_command_line(old, new, message, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(edited(old, new))
    result = CliRunner().invoke(cli, ["optimize", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "out").exists()

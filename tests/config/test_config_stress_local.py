"""``[constraints.stress]``: the local stress constraints of a config, built into an
augmented Lagrangian problem, and the keys and combinations refused at check time naming
the key."""

from pathlib import Path

import numpy as np
import pytest

from fesens.config import ConfigError, build_problem, parse_config, preset_text
from fesens.opt.augmented_lagrangian import AugmentedLagrangianProblem

TINY = """
[mesh]
type = "rectangle"
size = [2.0, 1.0]
cells = [12, 6]

[[supports]]
group = "left"

[[loads]]
type = "point"
point = [2.0, 0.5]
value = [0.0, -1.0]

[objective]
type = "volume"

[constraints]
volume_fraction = 1.0

[constraints.stress]
limit = 1.0

[filter]
type = "density"
radius = 0.25

[optimizer]
type = "mma"
"""


LOADS = """[[loads]]
type = "point"
point = [2.0, 0.5]
value = [0.0, -1.0]"""


def parsed(text: str):
    return parse_config(text, source="stress", base_dir=Path("."))


def test_the_preset_constrains_every_designed_cell():
    config = parsed(preset_text("lbracket_stress_local"))
    problem = build_problem(config)
    assert isinstance(problem, AugmentedLagrangianProblem)
    np.testing.assert_array_equal(problem.stress.cells, problem.design)
    # the L: a 100 x 100 square of 1 mm cells less the 60 x 60 cut-out and the loaded
    # 4 x 4 corner of the arm's end
    assert problem.stress.cells.size == 100 * 100 - 60 * 60 - 4 * 4
    assert (problem.stress.limit, problem.stress.relaxation) == (100.0, "polynomial")


def test_defaults_are_polystress():
    spec = parsed(TINY).data["constraints"]["stress"]
    assert {key: spec[key] for key in ("method", "relaxation", "penalty", "penalty_factor",
                                       "penalty_max")} == {
        "method": "augmented_lagrangian", "relaxation": "polynomial", "penalty": 10.0,
        "penalty_factor": 1.1, "penalty_max": 10000.0}


@pytest.mark.parametrize("old, new, message", [
    ('type = "mma"', 'type = "oc"', 'optimizer.type = "oc" is not offered with '
                                    r'\[constraints.stress\]'),
    ("limit = 1.0", "limit = 1.0\nstress_exponent = 0.5",
     r'constraints.stress.stress_exponent = 0.5 is read by relaxation = "qp" only'),
    ("limit = 1.0", "limit = 1.0\npenalty_max = 5.0",
     "constraints.stress.penalty_max = 5.0 is below penalty = 10.0"),
    ("limit = 1.0", "limit = 1.0\nmethod = \"clusters\"", "constraints.stress.method"),
    ("limit = 1.0", "limit = -1.0", "constraints.stress.limit"),
    ("limit = 1.0", "limt = 1.0", "limt"),
    ('[objective]\ntype = "volume"', '[objective]\ntype = "volume"\n[projection]\n'
                                     'type = "heaviside"\nrobust = true', "projection.robust"),
    ('[[loads]]\ntype = "point"', '[[load_cases]]\nname = "a"\nloads = ["F"]\n[[loads]]\n'
                                  'name = "F"\ntype = "point"', "load_cases"),
    (LOADS, '[physics]\ntype = "heat"\n' + LOADS.replace("[0.0, -1.0]", "1.0"),
     "heat physics has no stresses"),
    (LOADS + '\n\n[objective]\ntype = "volume"',
     '[objective]\ntype = "eigenvalue"\n[penalization]\ntype = "du-olhoff"',
     "objective.type: not offered"),
])
def test_refusals_name_the_key(old, new, message):
    assert old in TINY
    text = TINY.replace(old, new, 1)
    if "eigenvalue" in text:  # a frequency design: no loads
        text = "loads = []\n" + text
    with pytest.raises(ConfigError, match=message):
        parsed(text)


def test_a_volume_objective_needs_a_constraint():
    with pytest.raises(ConfigError, match=r"or a \[constraints.stress\]"):
        parsed(TINY.replace("[constraints.stress]\nlimit = 1.0\n", ""))

"""What a compliant-mechanism design refuses at check time, naming the key and the fix.

* A mechanism (a displacement objective at a point no load acts on, driven by point loads
  elsewhere) whose output port no ``[[springs]]`` entry holds in the objective's component:
  the design could detach the port. A loaded point's displacement (a stiffness design),
  ``solve`` (no design), and a spring at the port in that component are accepted.
* Sigmund's sensitivity filter with ``[[constraints.extra]]``, from the config and in the
  API (``DesignProblem``): the smoothed objective gradient is of no function, which the
  constraints' gradients cannot share consistently (``benchmarks/bench_mechanism.py``
  measures both ways of trying).
"""

from pathlib import Path

import pytest

from fesens.config import ConfigError, preset_text
from fesens.config.loading import parse_config
from fesens.mesh import rectangle
from fesens.objectives.static import compliance
from fesens.opt import Constraint, DesignProblem, make_filter
from fesens.physics import Elasticity

#: The gripper preset's output spring (k_out at the jaw tip, component y).
OUTPUT_SPRING = '[[springs]]\npoint = [40.0, 4.0]\nstiffness = 0.1\ncomponents = ["y"]\n'


def parsed(text: str, optimize: bool = True):
    return parse_config(text, source="mechanism", base_dir=Path("."), optimize=optimize)


def gripper(spring: str = "") -> str:
    """The gripper preset with ``spring`` in place of its output spring."""
    text = preset_text("gripper")
    assert OUTPUT_SPRING in text
    return text.replace(OUTPUT_SPRING, spring)


def test_a_mechanism_without_an_output_spring_is_refused_naming_the_keys():
    with pytest.raises(ConfigError) as error:
        parsed(gripper())
    message = str(error.value)
    for fragment in ("objective.point = [40.0, 4.0]", "[[springs]]", "output port",
                     'components = ["y"]'):
        assert fragment in message, message
    # a spring at the port that holds the other component leaves it free
    with pytest.raises(ConfigError, match="objective.point"):
        parsed(gripper(OUTPUT_SPRING.replace('["y"]', '["x"]')))


@pytest.mark.parametrize("spring", [
    OUTPUT_SPRING,
    OUTPUT_SPRING.replace('components = ["y"]\n', ""),  # every component
    '[[springs]]\nregion = { min = [40.0, 3.0], max = [40.0, 5.0] }\nstiffness = 0.1\n',
])
def test_a_spring_at_the_output_port_is_accepted(spring):
    assert parsed(gripper(spring)).data["objective"]["point"] == [40.0, 4.0]


def test_what_is_no_mechanism_is_not_refused():
    text = gripper()
    parsed(text, optimize=False)  # solve: no design to detach the port
    # the input port's own displacement: a loaded point, a stiffness design
    loaded = text.replace("point = [40.0, 4.0]\ncomponent", "point = [0.0, 0.0]\ncomponent")
    assert parsed(loaded).data["objective"]["point"] == [0.0, 0.0]


def test_the_sensitivity_filter_with_extra_constraints_is_refused_at_check_time():
    text = preset_text("inverter_oc")
    start, end = text.index("\n[optimizer]\n"), text.index("\n[stop]\n")
    text = (text[:start + 1] + '[optimizer]\ntype = "mma"\nlower = 1e-3\n\n'
            '[[constraints.extra]]\ntype = "compliance"\nlimit = 8.5\n' + text[end:])
    with pytest.raises(ConfigError) as error:
        parsed(text)
    message = str(error.value)
    for fragment in ('filter.type = "sensitivity"', "constraints.extra",
                     'filter.type = "density" or "helmholtz"'):
        assert fragment in message, message
    density = text.replace('type = "sensitivity"\nradius = 1.2', 'type = "density"\nradius = 1.5')
    assert parsed(density).data["constraints"]["extra"][0]["limit"] == 8.5


def test_design_problem_refuses_the_sensitivity_filter_with_constraints():
    mesh = rectangle(8, 4, 8.0, 4.0)
    model = Elasticity(mesh).fix("left")
    model.point_load((8.0, 0.0), (0.0, -1.0))
    stiffness = Constraint("stiffness", lambda state, rho: compliance(state), 10.0)
    with pytest.raises(ValueError, match=r"sensitivity filter .*\(stiffness\).*density"):
        DesignProblem(model, lambda state, rho: compliance(state), volume_fraction=0.5,
                      filter=make_filter("sensitivity", mesh, 1.5), constraints=[stiffness])
    DesignProblem(model, lambda state, rho: compliance(state), volume_fraction=0.5,
                  filter=make_filter("density", mesh, 1.5), constraints=[stiffness])

"""Design problems of time-dependent analyses (fesens/opt/time_design.py), built from the
two presets on coarser meshes: the KS peak over time of a transient run and the dynamic
compliance of a harmonic response pass the Taylor test (remainder of order 2) and central
differences in the design variables, through filter and interpolation; the evaluation's
gradient is the traced one; the state written for the design is the physics' solution."""

import numpy as np
import pytest

from fesens.ad import taylor_test, value_and_grad
from fesens.config import build_problem, parse_config, preset_text
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.opt.time_design import HarmonicDesignProblem, TransientDesignProblem


def _problem(tmp_path, name: str, cells: str, coarse: str, *edits: tuple[str, str]):
    """The preset ``name`` on the mesh ``coarse``, with the text ``edits`` ``(old, new)``."""
    text = preset_text(name).replace(cells, coarse)
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    return build_problem(parse_config(text, source=name, base_dir=tmp_path))


#: heatsink_pulse with k(T) = k₀ s(ρ) (1 + T): every step of the run a Newton solve, the
#: gradient the run's discrete adjoint with each step's converged tangent.
NONLINEAR_PULSE = ("heatsink_pulse", "cells = [30, 30]", "cells = [8, 8]",
                   ('type = "heat"', 'type = "nonlinear_heat"'),
                   ("conductivity = 1.0", "conductivity = 1.0\nbeta = 1.0"))


@pytest.fixture(params=[("heatsink_pulse", "cells = [30, 30]", "cells = [8, 8]"),
                        ("dynamic_compliance", "cells = [40, 20]", "cells = [10, 6]"),
                        NONLINEAR_PULSE],
                ids=["heatsink_pulse", "dynamic_compliance", "nonlinear_pulse"])
def problem(request, tmp_path):
    return _problem(tmp_path, *request.param)


def _objective(problem):
    def f(x):
        rho = problem.evaluated_densities(x)
        return problem.objective(problem.solve(rho), rho)

    return f


def test_the_presets_build_their_time_design_problems(tmp_path):
    assert isinstance(_problem(tmp_path, "heatsink_pulse", "cells = [30, 30]",
                               "cells = [8, 8]"), TransientDesignProblem)
    assert isinstance(_problem(tmp_path, "dynamic_compliance", "cells = [40, 20]",
                               "cells = [10, 6]"), HarmonicDesignProblem)
    nonlinear = _problem(tmp_path, *NONLINEAR_PULSE)
    assert isinstance(nonlinear, TransientDesignProblem)
    assert isinstance(nonlinear.model, NonlinearModel) and nonlinear.run.nonlinear


def test_objective_passes_the_taylor_test_and_central_differences(problem):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.3, 0.8, problem.n_design)
    f = _objective(problem)
    result = taylor_test(f, x, verbose=False)
    assert result.rate == pytest.approx(2.0, abs=0.2), result
    _, gradient = value_and_grad(f)(x)
    h = rng.standard_normal(x.size)
    eps = 1e-6
    central = (float(f(x + eps * h)) - float(f(x - eps * h))) / (2 * eps)
    assert gradient @ h == pytest.approx(central, rel=1e-6)


def test_evaluation_gives_the_traced_gradient_and_the_physics_state(problem):
    x = np.full(problem.n_design, 0.5)
    evaluation = problem.evaluate(x)
    value, gradient = value_and_grad(_objective(problem))(x)
    assert evaluation.objective == pytest.approx(float(value), rel=1e-12)
    np.testing.assert_allclose(evaluation.gradient, problem._filtered_gradient(x, gradient),
                               rtol=1e-10, atol=1e-14)
    state = evaluation.state
    assert isinstance(state, problem.model.solution_class)
    assert problem.model.field_name in state.point_data()


def test_a_time_design_refuses_extra_constraints(tmp_path):
    text = preset_text("heatsink_pulse").replace("cells = [30, 30]", "cells = [8, 8]")
    text = text.replace("volume_fraction = 0.4", "volume_fraction = 0.4\n"
                        "[[constraints.extra]]\ntype = \"temperature\"\n"
                        "point = [1.0, 0.5]\nlimit = 1.0")
    from fesens.config import ConfigError

    with pytest.raises(ConfigError, match="constraints.extra"):
        build_problem(parse_config(text, source="x", base_dir=tmp_path))

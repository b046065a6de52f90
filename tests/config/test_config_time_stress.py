"""Stress aggregates as the objective of a dynamic config, over time: the value at a time
level is the static objective (``fesens.objectives.stress_pnorm``, ``stress_ks``) of the
physics' solution of that level's field, built as a static solve builds it; the time
aggregate's gradient by the run's discrete adjoint passes the Taylor test in the design
densities and in ``E`` (with ``max_states`` checkpointing, the very same bits), and
``fesens sensitivity`` matches central differences of the values it writes; ``fesens
optimize`` runs such a design; the kinds that do not depend on the level's state (volume,
the eigen kinds) are still refused.

Transient heat: no physics with a first time derivative offers a kind that reads more of a
solve than its field and load (heat conduction's ``responses`` are compliance and a
temperature), so only the dynamic (elasticity) case applies."""

import csv
import json

import numpy as np
import pytest

from fesens.ad import taylor_test, value_and_grad
from fesens.config import ConfigError, build_model, build_problem, parse_config
from fesens.config.objectives import objective_kind, response_kind
from fesens.config.time_design import (
    aggregate,
    run_inputs,
    step_objective,
    time_problem,
)
from fesens.config.time_sections import check_step_objective, offered_analyses
from fesens.objectives import stress_ks, stress_pnorm
from fesens.physics import PHYSICS
from tests.cli.cli_helpers import edit, run, write_config

#: A cantilever under a tip load ramped on and held, ringing with mass damping.
BEAM = """
name = "ringing"
[mesh]
type = "rectangle"
size = [2.0, 0.5]
cells = [8, 2]
[physics]
type = "elasticity"
[material]
E = 100.0
nu = 0.3
density = 2.0
[[supports]]
group = "left"
[[loads]]
type = "point"
name = "tip"
point = [2.0, 0.0]
value = [0.0, -1.0]
history = [[0.0, 0.0], [0.3, 1.0]]
[analysis]
type = "dynamic"
[time]
end = 1.5
steps = 30
scheme = "newmark"
[damping]
mass = 0.2
"""

KS = '[objective]\ntype = "stress_ks"\nrho = 8.0\n'
PNORM = '[objective]\ntype = "stress_pnorm"\np = 6.0\nstress_exponent = 2.0\n'
BEAM += KS + 'over_time = "ks"\ntime_rho = 20.0\n'
DESIGN = "[constraints]\nvolume_fraction = 0.5\n[filter]\nradius = 0.4\n"


def _config(tmp_path, text: str = BEAM, optimize: bool = False):
    return parse_config(text, source="beam", base_dir=tmp_path, optimize=optimize)


def _with_objective(objective: str, **time_keys) -> str:
    text = BEAM[:BEAM.index("[objective]")] + objective
    return text + "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in time_keys.items())


def _densities(n: int) -> np.ndarray:
    return np.linspace(0.4, 1.0, n)


def _run_values(config, rho, E=None):
    """The per-level values of the config's objective at densities ``ρ`` (scale ``ρ³``)
    and ``E`` (default the config's), as ``fesens sensitivity`` evaluates them."""
    model = build_model(config)
    problem = time_problem(config, model)
    term = step_objective(config.data["objective"], config, model)
    inputs = {"scale": rho ** 3, **({} if E is None else {"E": E})}
    values = problem.values(term, term_args=term.arguments(None, None, inputs, rho),
                            **{**run_inputs(config, rho), **inputs})
    return values, problem


@pytest.mark.parametrize("objective", [KS, PNORM],
                         ids=["stress_ks", "stress_pnorm"])
def test_the_value_at_a_level_is_the_static_objective_of_its_state(tmp_path, objective):
    config = _config(tmp_path, _with_objective(objective))
    spec = config.data["objective"]
    model = build_model(config)
    rho = _densities(model.mesh.n_cells)
    values, problem = _run_values(config, rho)
    scale = rho ** 3
    F = model.load_vector()
    ramp = np.interp(problem.times, [0.0, 0.3], [0.0, 1.0])
    static = []
    for n, _, u, *_ in problem.states(scale=scale, **run_inputs(config, rho)):
        state = model.solution_class(model, u, ramp[n] * F,
                                     model.coefficients(scale=scale), {"scale": scale})
        if spec["type"] == "stress_ks":
            static.append(float(stress_ks(state, spec["rho"])))
        else:
            static.append(float(stress_pnorm(state, spec["p"], stress_scale=rho ** 2)))
    assert len(static) == problem.n_steps + 1
    np.testing.assert_allclose(values, static, rtol=1e-12, atol=0.0)
    assert np.ptp(static) > 0.5 * np.max(static)  # the stress rings up from rest


def test_no_transient_physics_offers_a_kind_that_reads_the_solution():
    """Why the transient heat case does not apply (see the module docstring)."""
    for physics in PHYSICS:
        if "transient" not in offered_analyses(physics):
            continue
        for type_name in physics.config.responses:
            assert not objective_kind(response_kind(physics.name, type_name)).reads


def _aggregate_of(config, rho, E=None):
    values, problem = _run_values(config, rho, E)
    return aggregate(values, problem.times, config.data["objective"])


@pytest.mark.parametrize("over", ["ks", "integral"])
@pytest.mark.parametrize("wrt", ["density", "E"])
def test_taylor_and_checkpointing(tmp_path, over, wrt):
    text = _with_objective(PNORM, over_time=over)
    config = _config(tmp_path, text)
    kept = _config(tmp_path, edit(text, "steps = 30\n", "steps = 30\nmax_states = 4\n"))
    n = config.mesh.n_cells
    rho = _densities(n)
    if wrt == "density":
        x, step, fun, fun_kept = rho, 1e-3, (lambda r: _aggregate_of(config, r)), (
            lambda r: _aggregate_of(kept, r))
    else:
        x, step = np.full(n, 100.0), 0.1
        fun, fun_kept = (lambda E: _aggregate_of(config, rho, E)), (
            lambda E: _aggregate_of(kept, rho, E))
    # steps of a thousandth of x: the remainders are past their pre-asymptotic range there
    result = taylor_test(fun, x, step=step, verbose=False)
    assert result.rate > 1.9, result
    value, gradient = value_and_grad(fun)(x)
    value_kept, gradient_kept = value_and_grad(fun_kept)(x)
    assert float(value_kept) == float(value)
    np.testing.assert_array_equal(gradient_kept, gradient)


def test_taylor_in_the_node_coordinates_and_the_load(tmp_path):
    """The level's state reads the run's coordinates (shape) and loads as its solve does."""
    config = _config(tmp_path, _with_objective(PNORM, over_time="ks"))
    model = build_model(config)
    problem = time_problem(config, model)
    term = step_objective(config.data["objective"], config, model)
    rho = _densities(model.mesh.n_cells)
    inputs = {"scale": rho ** 3}

    def objective(loads=None, points=None):
        values = problem.values(term, term_args=term.arguments(loads, points, inputs, rho),
                                loads=loads, points=points,
                                **{**run_inputs(config, rho), **inputs})
        return aggregate(values, problem.times, config.data["objective"])

    shape = taylor_test(lambda x: objective(points=x), model.mesh.points.copy(), step=1e-3,
                        verbose=False)
    assert shape.rate > 1.9, shape
    load = taylor_test(lambda x: objective(loads=x), {"tip": 1.3}, step=1e-2, verbose=False)
    assert load.rate > 1.9, load


def test_the_design_problem_passes_the_taylor_test(tmp_path):
    problem = build_problem(_config(tmp_path, BEAM + DESIGN, optimize=True))

    def objective(x):
        rho = problem.evaluated_densities(x)
        return problem.objective(problem.solve(rho), rho)

    x = np.random.default_rng(1).uniform(0.4, 0.9, problem.n_design)
    assert taylor_test(objective, x, verbose=False).rate > 1.9


def _written(tmp_path, text: str, tag: str, wrt: str) -> dict:
    out = tmp_path / tag
    result = run("sensitivity", write_config(tmp_path, text, f"{tag}.toml"), "--wrt", wrt,
                 "--out", out, "--force")
    assert result.exit_code == 0, result.output
    return json.loads((out / "sensitivity.json").read_text())


@pytest.mark.parametrize("objective", [KS, PNORM],
                         ids=["stress_ks", "stress_pnorm"])
def test_sensitivity_matches_central_differences(tmp_path, objective):
    """The sum of the per-cell gradient in ``E`` is the derivative in a uniform change."""
    text = _with_objective(objective, over_time="integral")
    summary = _written(tmp_path, text, "g", "E")
    gradient = summary["gradient"]["sum"]
    h = 1e-4 * 100.0
    up = _written(tmp_path, edit(text, "E = 100.0", f"E = {100.0 + h!r}"), "up", "E")
    down = _written(tmp_path, edit(text, "E = 100.0", f"E = {100.0 - h!r}"), "down", "E")
    assert abs(gradient) > 0
    assert gradient == pytest.approx((up["value"] - down["value"]) / (2 * h), rel=1e-6)


def test_optimize_runs_a_dynamic_stress_design(tmp_path):
    out = tmp_path / "out"
    result = run("optimize", write_config(tmp_path, BEAM + DESIGN), "--max-iter", 3,
                 "--out", out)
    assert result.exit_code == 0, result.output
    with open(out / "history.csv", newline="") as file:
        objective = [float(row["objective"]) for row in csv.DictReader(file)]
    assert len(objective) == 3 and all(np.isfinite(objective)), objective


@pytest.mark.parametrize("objective", [
    '[objective]\ntype = "volume"\n',
    '[objective]\ntype = "frequency"\n',
], ids=["volume", "frequency"])
def test_kinds_without_a_state_per_level_are_refused(tmp_path, objective):
    result = run("solve", write_config(tmp_path, _with_objective(objective)), "--out",
                 tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert "cannot be aggregated over time" in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_a_harmonic_stress_objective_is_refused(tmp_path):
    text = edit(BEAM, "history = [[0.0, 0.0], [0.3, 1.0]]\n", "")
    text = edit(edit(text, '[analysis]\ntype = "dynamic"', '[analysis]\ntype = "harmonic"'),
                '[time]\nend = 1.5\nsteps = 30\nscheme = "newmark"\n',
                "[harmonic]\nfrequencies = [0.1]\n")
    text = text[:text.index("[objective]")] + '[objective]\ntype = "stress_ks"\n'
    result = run("sensitivity", write_config(tmp_path, text), "--wrt", "E", "--out",
                 tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert "linear in the" in result.output, result.output


def test_a_newton_run_refuses_a_kind_that_reads_the_solution():
    """No registered nonlinear physics with a time derivative offers one (a physics
    registered outside fesens might): its levels have no solution of the physics to read."""
    check_step_objective("compliance", "compliance", nonlinear=True)
    with pytest.raises(ConfigError, match="nonlinear physics"):
        check_step_objective("stress_ks", "stress_ks", nonlinear=True)

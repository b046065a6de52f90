"""A support's ``history`` in a config: the prescribed values of a transient heat run and
of a dynamic run (a moving support, starting from rest) follow the support's value times
a factor in time. The runs of ``fesens solve`` equal the Python runs with the same table
(``TransientProblem`` / ``DynamicProblem`` with ``dirichlet_history``); ``fesens
sensitivity`` of such a config matches central differences of the value it writes; bad
input exits 2 naming the key."""

import csv
import json

import numpy as np
import pytest

from fesens.fem.transient import DynamicProblem, TransientProblem
from fesens.mesh import rectangle
from fesens.physics import Elasticity, HeatConduction
from tests.cli.cli_helpers import edit, run, write_config

#: A plate whose left side is raised to 2 (ramped on, then down to a quarter), cooled by
#: nothing else: the heat diffuses in from the moving edge.
HEAT = """
name = "edge"
loads = []
[mesh]
type = "rectangle"
size = [1.0, 0.5]
cells = [6, 3]
[physics]
type = "heat"
[material]
conductivity = 2.0
heat_capacity = 3.0
[[supports]]
group = "left"
value = 2.0
history = [[0.0, 0.0], [0.05, 1.0], [0.1, 0.25]]
[analysis]
type = "transient"
[time]
end = 0.2
steps = 20
scheme = "bdf2"
[[probes]]
point = [1.0, 0.5]
name = "corner"
[[probes]]
point = [0.5, 0.5]
name = "middle"
[objective]
type = "temperature"
point = [1.0, 0.5]
over_time = "integral"
"""
HEAT_TABLE = ([0.0, 0.05, 0.1], [0.0, 1.0, 0.25])

#: A cantilever clamped on the left whose lower right corner is pulled down by 0.1 over
#: half a time unit, from rest.
DYNAMIC = """
name = "pulled"
loads = []
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
[[supports]]
point = [2.0, 0.0]
components = ["y"]
value = -0.1
history = [[0.0, 0.0], [0.5, 1.0]]
[analysis]
type = "dynamic"
[time]
end = 2.0
steps = 40
scheme = "newmark"
[damping]
mass = 0.1
[[probes]]
point = [1.0, 0.0]
component = "y"
name = "middle"
[[probes]]
point = [2.0, 0.5]
component = "x"
name = "top"
[objective]
type = "displacement"
point = [1.0, 0.0]
component = "y"
over_time = "integral"
power = 2.0
"""
DYNAMIC_TABLE = ([0.0, 0.5], [0.0, 1.0])


def _heat_api() -> dict[str, np.ndarray]:
    mesh = rectangle(6, 3, 1.0, 0.5)
    model = HeatConduction(mesh, conductivity=2.0).fix("left", value=2.0)
    problem = TransientProblem(model, t_end=0.2, dt=0.01, scheme="bdf2")
    probes = {"corner": mesh.nearest_node((1.0, 0.5)), "middle": mesh.nearest_node((0.5, 0.5))}
    states = list(problem.states(T0=0.0, heat_capacity=3.0, dirichlet_history=HEAT_TABLE))
    return {name: np.array([s[2][dof] for s in states]) for name, dof in probes.items()}


def _dynamic_api() -> dict[str, np.ndarray]:
    mesh = rectangle(8, 2, 2.0, 0.5)
    model = (Elasticity(mesh, E=100.0, nu=0.3, plane="stress").fix("left")
             .fix((2.0, 0.0), components=[1], value=-0.1))
    problem = DynamicProblem(model, t_end=2.0, dt=0.05, scheme="newmark")
    probes = {"middle": 2 * mesh.nearest_node((1.0, 0.0)) + 1,
              "top": 2 * mesh.nearest_node((2.0, 0.5))}
    states = list(problem.states(density=2.0, damping=(0.1, 0.0),
                                 dirichlet_history=DYNAMIC_TABLE))
    return {name: np.array([s[2][dof] for s in states]) for name, dof in probes.items()}


@pytest.mark.parametrize(("text", "api"), [(HEAT, _heat_api), (DYNAMIC, _dynamic_api)],
                         ids=["transient", "dynamic"])
def test_solve_of_a_moving_support_equals_the_python_run(tmp_path, text, api):
    out = tmp_path / "out"
    result = run("solve", write_config(tmp_path, text), "--out", out)
    assert result.exit_code == 0, result.output
    with open(out / "history.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    expected = api()
    for name, values in expected.items():
        written = np.array([float(row[name]) for row in rows])
        assert np.max(np.abs(values)) > 1e-3  # the support moved the field
        np.testing.assert_allclose(written, values, rtol=0.0,
                                   atol=1e-12 * np.max(np.abs(values)))


def _written(tmp_path, text: str, tag: str, wrt: str) -> dict:
    out = tmp_path / tag
    result = run("sensitivity", write_config(tmp_path, text, f"{tag}.toml"), "--wrt", wrt,
                 "--out", out, "--force")
    assert result.exit_code == 0, result.output
    return json.loads((out / "sensitivity.json").read_text())


@pytest.mark.parametrize(("text", "wrt", "old", "make", "x"), [
    (HEAT, "conductivity", "conductivity = 2.0", lambda k: f"conductivity = {k!r}", 2.0),
    (DYNAMIC, "E", "E = 100.0", lambda e: f"E = {e!r}", 100.0),
], ids=["transient", "dynamic"])
def test_sensitivity_of_a_moving_support_matches_central_differences(tmp_path, text, wrt,
                                                                     old, make, x):
    """The sum of the per-cell gradient is the derivative in a uniform change."""
    gradient = _written(tmp_path, text, "g", wrt)["gradient"]["sum"]
    h = 1e-4 * x
    up = _written(tmp_path, edit(text, old, make(x + h)), "up", wrt)["value"]
    down = _written(tmp_path, edit(text, old, make(x - h)), "down", wrt)["value"]
    assert abs(gradient) > 0
    assert gradient == pytest.approx((up - down) / (2 * h), rel=1e-6)


HARMONIC = edit(edit(DYNAMIC, '[analysis]\ntype = "dynamic"', '[analysis]\ntype = "harmonic"'),
                "[time]\nend = 2.0\nsteps = 40\nscheme = \"newmark\"\n",
                "[harmonic]\nfrequencies = [0.1]\n")
HARMONIC = HARMONIC[:HARMONIC.index("[objective]")]


@pytest.mark.parametrize(("text", "old", "new", "key", "why"), [
    (HEAT, "[0.1, 0.25]]", "[0.05, 0.25]]", "supports[0].history", "times must increase"),
    (HEAT, "history = [[0.0, 0.0],", "history = [[0.0],", "supports[0].history[0]",
     "a list of 2 numbers"),
    (HEAT, '[analysis]\ntype = "transient"', '[analysis]\ntype = "static"',
     "supports[0].history", "applies to a transient or dynamic analysis"),
    (HARMONIC, "", "", "supports[1].history", "applies to a transient or dynamic analysis"),
    (HARMONIC, "history = [[0.0, 0.0], [0.5, 1.0]]\n", "", "supports[1].value",
     "base excitation"),
    (DYNAMIC, 'group = "left"', 'group = "left"\nhistory = [[0.0, 0.0], [1.0, 1.0]]',
     "supports[0].history", "moves nothing"),
    (DYNAMIC, 'group = "left"', 'group = "left"\nvalue = [0.0, 0.1]', "supports[1].history",
     "same history"),
], ids=["decreasing", "short-row", "static", "harmonic", "harmonic-value", "zero-value",
        "two-histories"])
def test_bad_support_histories_exit_2_naming_the_key(tmp_path, text, old, new, key, why):
    if text is HEAT and new.startswith("[analysis]"):
        text = text[:text.index("[time]")] + "[objective]\ntype = \"compliance\"\n"
    text = edit(text, old, new) if old else text
    result = run("solve", write_config(tmp_path, text), "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and key in result.output, result.output
    assert why in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_optimize_runs_the_moving_support(tmp_path):
    """``fesens optimize`` builds its run with the support's history: the first objective
    is below that of the edge held at its value throughout, and OC lowers it (a tenfold
    conductivity, so that the edge's heat reaches the corner within the run)."""
    design = (edit(HEAT, "conductivity = 2.0", "conductivity = 20.0")
              + "[constraints]\nvolume_fraction = 0.5\n[filter]\nradius = 0.3\n")
    held = edit(design, "[[0.0, 0.0], [0.05, 1.0], [0.1, 0.25]]", "[[0.0, 1.0], [1.0, 1.0]]")
    first = {}
    for tag, text in (("moving", design), ("held", held)):
        out = tmp_path / tag
        result = run("optimize", write_config(tmp_path, text, f"{tag}.toml"), "--max-iter", 3,
                     "--out", out)
        assert result.exit_code == 0, result.output
        with open(out / "history.csv", newline="") as file:
            objective = [float(row["objective"]) for row in csv.DictReader(file)]
        first[tag] = objective[0]
        assert objective[-1] < objective[0], objective
    assert first["moving"] < 0.9 * first["held"], first

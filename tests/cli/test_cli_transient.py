"""``fesens solve`` and ``fesens sensitivity`` of time-dependent configs: a slab's written
temperatures against the series solution of Carslaw & Jaeger, *Conduction of Heat in
Solids*, 2nd ed. (1959), §3.3; the PVD time series and the history CSV; a harmonic run at
ω = 0 against the static solve; sensitivities of time aggregates against central
differences of the values the command writes; config errors (exit 2)."""

import csv
import json
import re

import meshio
import numpy as np
import pytest

from tests.cli.cli_helpers import edit, run, write_config
from tests.fem.test_transient_forward import _slab_series

#: Slab 0 < x < 1 at 1, both faces held at 0: κ = 2, ρ c = 4 (diffusivity 1/2).
SLAB = """
name = "slab"
[mesh]
type = "rectangle"
size = [1.0, 0.02]
cells = [60, 1]
[physics]
type = "heat"
[material]
conductivity = 2.0
heat_capacity = 4.0
[[supports]]
group = "left"
[[supports]]
group = "right"
[analysis]
type = "transient"
[time]
end = 0.2
step = 5e-4
scheme = "SCHEME"
output_every = 20
[initial]
temperature = 1.0
[[probes]]
point = [0.5, 0.0]
name = "middle"
"""

#: A plate heated by a pulsed source and a constant flux, cooled through its left side.
PLATE = """
name = "plate"
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
[[loads]]
type = "heat_source"
value = 5.0
history = [[0.0, 0.0], [0.05, 1.0], [0.1, 0.0]]
[[loads]]
type = "flux"
group = "right"
value = 1.0
[analysis]
type = "transient"
[time]
end = 0.2
steps = 20
max_states = 4
[objective]
type = "temperature"
point = [1.0, 0.5]
over_time = "ks"
time_rho = 20.0
"""

#: A cantilever under a tip load.
BEAM = """
name = "beam"
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
point = [2.0, 0.0]
value = [0.0, -1.0]
"""

DYNAMIC = BEAM + """
history = [[0.0, 0.0], [0.5, 1.0]]
[analysis]
type = "dynamic"
[time]
end = 2.0
steps = 40
scheme = "generalized_alpha"
rho_inf = 0.8
output_every = 10
[damping]
stiffness = 0.01
[[probes]]
point = [2.0, 0.0]
component = "y"
[objective]
type = "compliance"
over_time = "integral"
power = 2.0
"""

HARMONIC = BEAM + """
[analysis]
type = "harmonic"
[harmonic]
frequencies = [0.0, 0.05, 0.1]
[damping]
mass = 0.01
[[probes]]
point = [2.0, 0.0]
component = 1
"""

#: PLATE with k(T) = 2 (1 + T / 2): each BDF2 step a Newton solve, the gradient through
#: checkpoints.
NONLINEAR = edit(edit(PLATE, 'type = "heat"\n', 'type = "nonlinear_heat"\n'),
                 "conductivity = 2.0", "conductivity = 2.0\nbeta = 0.5")

#: NONLINEAR as a design: half the plate's area of the conductor, filtered; void keeps a
#: thousandth of the conductivity, so that the run is the same under every scheme (at
#: SIMP's default minimum BDF2 and Crank-Nicolson may overshoot out of k(T) > 0 in void
#: cells, which the source heats too; backward Euler runs there).
NONLINEAR_DESIGN = NONLINEAR + """
[filter]
radius = 0.2
[constraints]
volume_fraction = 0.5
[penalization]
type = "simp"
minimum = 1e-3
"""


def _csv(path) -> list[dict]:
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


@pytest.mark.parametrize("scheme", ["bdf2", "crank_nicolson"])
def test_slab_temperatures_follow_the_series_solution(tmp_path, scheme):
    """Written at t = 0.02, 0.05 and 0.2 (steps 40, 100, 400): within 2.5e-3 of the series,
    as the transient solve itself (tests/fem/test_transient_forward.py)."""
    out = tmp_path / "out"
    result = run("solve", write_config(tmp_path, SLAB.replace("SCHEME", scheme)),
                 "--out", out)
    assert result.exit_code == 0, result.output
    assert "step 400/400" in result.output
    pvd = (out / "solution.pvd").read_text()
    entries = re.findall(r'timestep="([^"]+)" group="" part="0" file="([^"]+)"', pvd)
    assert len(entries) == 21  # every 20th of 400 steps and the first level
    for k, (t, name) in enumerate(entries):
        assert float(t) == pytest.approx(k * 0.01) and name == f"solution_{k:04d}.vtu"
        assert (out / name).is_file()
    for k, t in ((2, 0.02), (5, 0.05), (20, 0.2)):
        mesh = meshio.read(out / f"solution_{k:04d}.vtu")
        x, T = mesh.points[:, 0], mesh.point_data["temperature"]
        assert np.max(np.abs(T - _slab_series(t, x, 0.5))) < 2.5e-3
    rows = _csv(out / "history.csv")
    assert list(rows[0]) == ["time", "middle"] and len(rows) == 401
    for n in (40, 100, 400):
        t = float(rows[n]["time"])
        assert t == pytest.approx(n * 5e-4)
        assert float(rows[n]["middle"]) == pytest.approx(
            _slab_series(t, np.array([0.5]), 0.5)[0], abs=2.5e-3)
    summary = json.loads((out / "solution.json").read_text())
    assert summary["analysis"] == "transient" and summary["steps"] == 400
    assert summary["final"]["middle"] == pytest.approx(float(rows[-1]["middle"]))
    assert (out / "history.png").stat().st_size > 0


def _value(tmp_path, text: str, tag: str, wrt: str = "loads") -> float:
    out = tmp_path / tag
    result = run("sensitivity", write_config(tmp_path, text, f"{tag}.toml"), "--wrt", wrt,
                 "--out", out, "--force")
    assert result.exit_code == 0, result.output
    return json.loads((out / "sensitivity.json").read_text())


def _central(tmp_path, text: str, old: str, make, x: float, h: float) -> float:
    """Central difference of the written value in a config number ``old = make(x)``."""
    up = _value(tmp_path, edit(text, old, make(x + h)), "up")["value"]
    down = _value(tmp_path, edit(text, old, make(x - h)), "down")["value"]
    return (up - down) / (2 * h)


def test_transient_sensitivities_match_central_differences(tmp_path):
    """A KS peak over time of a corner temperature, through BDF2 with checkpointing: the
    load derivatives, the sum of the conductivity gradient (a uniform change of κ) and of
    the density gradient (κ and ρ c scaled together) against central differences."""
    loads = _value(tmp_path, PLATE, "loads")
    derivative = {row["name"]: row["derivative"] for row in loads["loads"]}
    source = _central(tmp_path, PLATE, "value = 5.0", lambda s: f"value = {5.0 * s!r}",
                      1.0, 1e-4)
    assert derivative["heat_source0"] == pytest.approx(source, rel=1e-6)
    flux = _central(tmp_path, PLATE, "value = 1.0", lambda s: f"value = {s!r}", 1.0, 1e-4)
    assert derivative["flux1"] == pytest.approx(flux, rel=1e-6)
    conductivity = _value(tmp_path, PLATE, "k", "conductivity")["gradient"]["sum"]
    assert conductivity == pytest.approx(_central(
        tmp_path, PLATE, "conductivity = 2.0", lambda k: f"conductivity = {k!r}", 2.0, 1e-4),
        rel=1e-6)
    density = _value(tmp_path, PLATE, "rho", "density")["gradient"]["sum"]
    both = PLATE.replace("conductivity = 2.0\nheat_capacity = 3.0", "SCALED")
    assert density == pytest.approx(_central(
        tmp_path, both, "SCALED",
        lambda s: f"conductivity = {2.0 * s!r}\nheat_capacity = {3.0 * s!r}", 1.0, 1e-4),
        rel=1e-6)


def test_integral_and_final_aggregates_match_central_differences(tmp_path):
    """∫ T² dt (trapezoidal) of the corner and the final mean temperature of the right
    side, in the heat source's magnitude."""
    for objective in ('over_time = "integral"\npower = 2.0',
                      'over_time = "final"'):
        text = edit(PLATE, 'over_time = "ks"\ntime_rho = 20.0', objective)
        if "final" in objective:
            text = edit(text, "point = [1.0, 0.5]", 'group = "right"')
        rows = _value(tmp_path, text, "loads")["loads"]
        assert rows[0]["derivative"] == pytest.approx(_central(
            tmp_path, text, "value = 5.0", lambda s: f"value = {5.0 * s!r}", 1.0, 1e-4),
            rel=1e-6)


def test_dynamic_run_writes_its_series_and_its_sensitivity_matches_differences(tmp_path):
    """Generalized-α with stiffness damping under a ramped tip load: the written series,
    the probe starting at rest, and the load derivative of ∫ (f · u)² dt."""
    out = tmp_path / "out"
    result = run("solve", write_config(tmp_path, DYNAMIC), "--out", out)
    assert result.exit_code == 0, result.output
    mesh = meshio.read(out / "solution_0004.vtu")
    assert {"displacement", "velocity", "acceleration"} <= set(mesh.point_data)
    rows = _csv(out / "history.csv")
    assert len(rows) == 41 and float(rows[0]["displacement_y_node8"]) == 0.0
    assert float(rows[-1]["displacement_y_node8"]) < 0  # the tip moves down
    assert len(re.findall("<DataSet", (out / "solution.pvd").read_text())) == 5
    rows = _value(tmp_path, DYNAMIC, "loads")["loads"]
    assert rows[0]["derivative"] == pytest.approx(_central(
        tmp_path, DYNAMIC, "value = [0.0, -1.0]", lambda s: f"value = [0.0, {-s!r}]",
        1.0, 1e-4), rel=1e-6)


@pytest.mark.parametrize(("text", "wrt", "old", "make", "x"), [
    (HARMONIC + '[objective]\ntype = "compliance"\n', "loads", "value = [0.0, -1.0]",
     lambda s: f"value = [0.0, {-s!r}]", 1.0),
    (HARMONIC + '[objective]\ntype = "compliance"\n', "E", "E = 100.0",
     lambda e: f"E = {e!r}", 100.0),
    (NONLINEAR, "loads", "value = 5.0", lambda s: f"value = {5.0 * s!r}", 1.0),
    (NONLINEAR, "beta", "beta = 0.5", lambda b: f"beta = {b!r}", 0.5),
], ids=["harmonic-loads", "harmonic-E", "nonlinear-loads", "nonlinear-beta"])
def test_harmonic_and_nonlinear_sensitivities_match_central_differences(
        tmp_path, text, wrt, old, make, x):
    """The compliance summed over the driving frequencies of a harmonic config, and a KS
    peak of a nonlinear-conduction run (BDF2 by Newton, checkpoints): the first load's
    derivative, or the sum of a material gradient (a uniform change), against central
    differences of the written values."""
    written = _value(tmp_path, text, wrt, wrt)
    derivative = (written["loads"][0]["derivative"] if wrt == "loads"
                  else written["gradient"]["sum"])
    assert derivative == pytest.approx(_central(tmp_path, text, old, make, x, 1e-4 * x),
                                       rel=1e-6)


def test_harmonic_density_sensitivity_is_the_scaling_of_the_response(tmp_path):
    """Stiffness and mass both linear in the density: Z(ρ) = ρ Z, so u = f / ρ and the
    summed compliance c(ρ) = c / ρ, whose derivative at full material is −c."""
    written = _value(tmp_path, HARMONIC + '[objective]\ntype = "compliance"\n', "rho",
                     "density")
    assert written["analysis"] == "harmonic" and written["frequencies"] == [0.0, 0.05, 0.1]
    assert written["gradient"]["sum"] == pytest.approx(-written["value"], rel=1e-10)
    assert (tmp_path / "rho" / "sensitivity.vtu").is_file()


def test_a_nonlinear_transient_run_writes_its_series(tmp_path):
    """nonlinear_heat offers a transient analysis (no dynamic one): the written series, the
    Newton iterations and the tangent's backend (LU: k(T) makes it non-symmetric)."""
    out = tmp_path / "out"
    result = run("solve", write_config(tmp_path, NONLINEAR), "--out", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "solution.json").read_text())
    assert summary["physics"] == "nonlinear_heat" and summary["steps"] == 20
    assert summary["newton_iterations"] >= 20 and summary["solver"] != "cholmod"
    rows = _csv(out / "history.csv")
    assert len(rows) == 21 and float(rows[-1]["temperature_node27"]) > 0  # the objective's point
    refused = run("solve", write_config(tmp_path, edit(NONLINEAR, 'type = "transient"',
                                                       'type = "dynamic"'), "d.toml"),
                  "--out", tmp_path / "d")
    assert refused.exit_code == 2 and "offers static, transient" in refused.output


@pytest.mark.parametrize("optimizer", ["oc", "mma"])
def test_a_nonlinear_transient_design_lowers_its_objective(tmp_path, optimizer):
    """fesens optimize of the nonlinear run: each evaluation a run of Newton steps and its
    discrete adjoint; the KS peak falls over four iterations and the written design holds
    the physics' fields."""
    text = NONLINEAR_DESIGN + f'[optimizer]\ntype = "{optimizer}"\n'
    out = tmp_path / "out"
    result = run("optimize", write_config(tmp_path, text), "--max-iter", 4, "--out", out)
    assert result.exit_code == 0, result.output
    rows = _csv(out / "history.csv")
    objective = [float(row["objective"]) for row in rows]
    assert len(rows) == 4 and objective[-1] < 0.5 * objective[0], objective
    assert all(float(row["volume"]) <= 0.5 + 1e-3 for row in rows)
    design = meshio.read(out / "design.vtu")
    assert "temperature" in design.point_data and "density" in design.cell_data
    # the k(T) tangent is not symmetric: the summary names the LU backend that solved it
    summary = json.loads((out / "summary.json").read_text())
    assert summary["solver"] == "superlu", summary["solver"]


def test_harmonic_response_at_zero_frequency_is_the_static_solve(tmp_path):
    result = run("solve", write_config(tmp_path, HARMONIC), "--out", tmp_path / "h")
    assert result.exit_code == 0, result.output
    rows = _csv(tmp_path / "h" / "frequency_response.csv")
    assert [float(r["frequency"]) for r in rows] == [0.0, 0.05, 0.1]
    assert float(rows[1]["omega"]) == pytest.approx(2 * np.pi * 0.05)
    assert list(rows[0])[-1] == "displacement_y_node8_amplitude"
    static = run("solve", write_config(tmp_path, BEAM, "static.toml"), "--out",
                 tmp_path / "s")
    assert static.exit_code == 0, static.output
    compliance = json.loads((tmp_path / "s" / "solution.json").read_text())["compliance"]
    assert float(rows[0]["compliance"]) == pytest.approx(compliance, rel=1e-10)
    assert float(rows[1]["compliance"]) > float(rows[0]["compliance"])  # toward resonance
    assert (tmp_path / "h" / "frequency_response.png").stat().st_size > 0


@pytest.mark.parametrize("old, new, key", [
    ("step = 5e-4", "step = -5e-4", "time.step"),
    ("step = 5e-4", "step = 0.0", "time.step"),
    ("end = 0.2", "end = 0.2\nstart = 0.3", "time.end"),
    ("output_every = 20", "output_every = 20\nmax_states = 1", "time.max_states"),
    ("temperature = 1.0", "temperature = nan", "initial.temperature"),
    ('type = "transient"', 'type = "dynamic"', "analysis.type"),
    ('[[probes]]', '[[loads]]\ntype = "heat_source"\nvalue = 1.0\n'
                   'history = [[0.0, 1.0], [0.1, 2.0], [0.05, 0.0]]\n[[probes]]',
     "loads[0].history"),
])
def test_config_errors_exit_2_naming_the_key(tmp_path, old, new, key):
    text = edit(SLAB.replace("SCHEME", "bdf2"), old, new)
    result = run("solve", write_config(tmp_path, text), "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and key in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("config", ["heatsink_pulse", "nonlinear"])
def test_an_interrupted_transient_design_resumes_to_the_same_history(tmp_path, monkeypatch,
                                                                     config):
    """The time design is deterministic (a nonlinear run's Newton steps start from the
    level before, never from an earlier evaluation): the checkpoint machinery resumes it
    exactly."""
    from fesens.opt import DesignProblem

    source = (("--preset", "heatsink_pulse") if config == "heatsink_pulse"
              else (write_config(tmp_path, NONLINEAR_DESIGN),))
    name = "heatsink_pulse" if config == "heatsink_pulse" else "plate"
    args = ("optimize", *source, "--max-iter", 6)
    full = run(*args, "--out", tmp_path / "full", "-q")
    assert full.exit_code == 0, full.output
    original, calls = DesignProblem.evaluate, {"n": 0}

    def evaluate(self, x):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return original(self, x)

    with monkeypatch.context() as patch:
        patch.setattr(DesignProblem, "evaluate", evaluate)
        stopped = run(*args, "--out", tmp_path / "parts")
    assert stopped.exit_code == 130, stopped.output
    resumed = run(*args, "--out", tmp_path / "parts", "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert f"resuming {name} from iteration 3" in resumed.output
    assert (tmp_path / "parts" / "history.csv").read_text() == \
        (tmp_path / "full" / "history.csv").read_text()

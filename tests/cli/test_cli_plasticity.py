"""``fesens solve`` and ``fesens sensitivity`` of elastoplastic configs (``[analysis] type =
"incremental"``): the first, elastic increment of a bar in plane strain against the closed
form of a uniform uniaxial stress with ε_zz = 0 (the reaction E' ε A with E' = E / (1 − ν²):
Timoshenko & Goodier, *Theory of Elasticity*, 3rd ed. (1970), §15, plane strain), the files
of every increment and the load–displacement curve; gradients against central differences
of two ``fesens solve`` runs; bad input (exit 2, one line) and a Newton failure inside an
increment (exit 1, the increments that converged written)."""

import csv
import json
import re

import meshio
import numpy as np
import pytest

from fesens.config import build_model, load_config
from fesens.config.increments import increment_run
from tests.cli.cli_helpers import edit, run, write_config

E, NU, SIGMA_Y, L, H = 200e3, 0.3, 250.0, 4.0, 1.0

#: A bar 4 × 1 pulled at its right end: the left end on rollers (x held) with one node held
#: in y, the right end moved in x by 0.01 (strain 2.5e-3, twice the plane-strain yield
#: strain), then back and reversed.
BAR = f"""
name = "bar"
loads = []
[mesh]
type = "rectangle"
size = [{L}, {H}]
cells = [4, 1]
[physics]
type = "elastoplasticity"
[material]
E = {E}
nu = {NU}
yield_stress = {SIGMA_Y}
isotropic_modulus = 2000.0
[[supports]]
group = "left"
components = ["x"]
[[supports]]
point = [0.0, 0.0]
components = ["y"]
[[supports]]
group = "right"
components = ["x"]
value = 0.01
[analysis]
type = "incremental"
factors = [0.0, 0.1, 0.5, 1.0, 0.5, 0.0, -0.5]
[objective]
type = "plastic_work"
"""


def _solve(tmp_path, text, name="bar"):
    out = tmp_path / f"{name}-solve"
    result = run("solve", write_config(tmp_path, text, f"{name}.toml"), "--out", out)
    return result, out


def test_solve_writes_every_increment_and_the_elastic_start_is_the_closed_form(tmp_path):
    result, out = _solve(tmp_path, BAR)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "solution.json").read_text())
    assert summary["increments"] == 6
    for n in range(7):
        written = meshio.read(out / f"solution_{n:04d}.vtu")
        assert written.point_data["displacement"].shape == (10, 3)  # VTU pads 2D vectors
        assert "equivalent_plastic_strain" in written.cell_data
    assert "solution_0001.vtu" in (out / "solution.pvd").read_text()
    with open(out / "load_path.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [float(r["load_factor"]) for r in rows] == [0.0, 0.1, 0.5, 1.0, 0.5, 0.0, -0.5]
    assert (out / "load_path.png").stat().st_size > 0
    # increment 1: strain 2.5e-4 < the plane-strain yield strain, a uniform elastic state
    strain = 0.1 * 0.01 / L
    force = float(rows[1]["force"])
    assert abs(force) == pytest.approx(E / (1 - NU ** 2) * strain * H, rel=1e-8)
    assert float(rows[1]["displacement"]) == pytest.approx(0.001, rel=1e-12)
    # the plastic work is dissipated: it never decreases, and yielding made it positive
    work = np.array(summary["plastic_work"])
    assert work[1] == pytest.approx(0.0, abs=1e-12)
    assert np.all(np.diff(work) >= -1e-12) and work[-1] > 0


def _plastic_work(tmp_path, text, name) -> float:
    result, out = _solve(tmp_path, text, name)
    assert result.exit_code == 0, result.output
    return json.loads((out / "solution.json").read_text())["plastic_work"][-1]


@pytest.mark.parametrize("wrt, key, value", [("yield_stress", "yield_stress", SIGMA_Y),
                                             ("E", "E", E)])
def test_sensitivity_matches_central_differences_of_two_solves(tmp_path, wrt, key, value):
    out = tmp_path / "sens"
    result = run("sensitivity", write_config(tmp_path, BAR), "--wrt", wrt, "--out", out)
    assert result.exit_code == 0, result.output
    written = json.loads((out / "sensitivity.json").read_text())
    h = 1e-4 * value
    plus = _plastic_work(tmp_path, edit(BAR, f"{key} = {value}", f"{key} = {value + h}"),
                         "plus")
    minus = _plastic_work(tmp_path, edit(BAR, f"{key} = {value}", f"{key} = {value - h}"),
                          "minus")
    # a uniform change of the per-cell parameter: the sum of its gradient
    assert written["gradient"]["sum"] == pytest.approx((plus - minus) / (2 * h), rel=1e-5)
    assert written["value"] == pytest.approx(_plastic_work(tmp_path, BAR, "at"), rel=1e-12)


@pytest.mark.parametrize("old, new, message", [
    (f"yield_stress = {SIGMA_Y}", "yield_stress = -1.0", "yield"),
    ("isotropic_modulus = 2000.0", "isotropic_modulus = -2000.0", "isotropic_modulus"),
    # Voce's saturation below the yield stress: σ_y(ᾱ) decreases, a softening law
    ("isotropic_modulus = 2000.0", "saturation_stress = 200.0\nsaturation_rate = 10.0",
     "[material] is refused: softening"),
    ("isotropic_modulus = 2000.0", 'hardening = "linear"', "material.hardening"),
    ("factors = [0.0,", "factors = [0.5,", "must start at 0"),
    ('type = "plastic_work"', 'type = "plastic_work"\nincrement = 7', "increment = 7"),
    ('type = "incremental"', 'type = "transient"', "incremental"),
    ('type = "plastic_work"', 'type = "plastic_work"\nload_factors = [1.0]', "load_factors"),
    ("[analysis]", "[time]\nend = 1.0\nsteps = 2\n[analysis]", "[time]"),
    ('[physics]\ntype = "elastoplasticity"',
     '[physics]\ntype = "elastoplasticity"\n[solver]\nbackend = "gmg"\n'
     '[solver.options]\nmatrix_free = true', "matrix"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, old, new, message):
    result, out = _solve(tmp_path, edit(BAR, old, new))
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    assert message in lines[0]
    assert not out.exists() or not any(out.glob("solution_*.vtu"))


def test_without_an_incremental_analysis_the_physics_is_refused(tmp_path):
    text = BAR[:BAR.index("[analysis]")] + '[objective]\ntype = "plastic_work"\n'
    result, _ = _solve(tmp_path, text)
    assert result.exit_code == 2
    assert 'type = "incremental"' in result.output


def test_a_newton_failure_keeps_the_converged_increments_and_names_the_last(tmp_path):
    # perfect plasticity pulled by a traction above the limit load σ_y · H (the bar's
    # section cannot carry more): the increments below it converge, the next one cannot
    text = edit(BAR, "loads = []\n", "")
    text = edit(text, "isotropic_modulus = 2000.0", "isotropic_modulus = 0.0")
    text = edit(text, '[[supports]]\ngroup = "right"\ncomponents = ["x"]\nvalue = 0.01\n',
                '[[loads]]\ntype = "traction"\ngroup = "right"\nvalue = [400.0, 0.0]\n')
    text = edit(text, "factors = [0.0, 0.1, 0.5, 1.0, 0.5, 0.0, -0.5]",
                "factors = [0.0, 0.25, 0.5, 1.0]")
    text = edit(text, "[analysis]", "[newton]\nmax_cutbacks = 2\nmax_iterations = 20\n"
                                    "[analysis]")
    result, out = _solve(tmp_path, text)
    assert result.exit_code == 1, result.output
    assert "increment" in result.output and "converged" in result.output
    summary = json.loads((out / "solution.json").read_text())
    assert summary["converged"] is False
    last = summary["last_converged"]
    assert last >= 1
    assert (out / f"solution_{last:04d}.vtu").exists()
    assert not (out / f"solution_{last + 1:04d}.vtu").exists()


def test_checkpointed_increments_give_the_same_gradient(tmp_path):
    """Griewank's binomial checkpointing recomputes the increments it does not keep: the
    same bits as keeping them all."""
    gradients = []
    for name, text in (("all", BAR), ("two", edit(BAR, "type = \"incremental\"",
                                                   "type = \"incremental\"\nmax_states = 2"))):
        out = tmp_path / name
        result = run("sensitivity", write_config(tmp_path, text, f"{name}.toml"), "--wrt",
                     "yield_stress", "--out", out)
        assert result.exit_code == 0, result.output
        gradients.append(meshio.read(out / "sensitivity.vtu").cell_data[
            "d_plastic_work_d_yield_stress"][0])
    assert np.array_equal(gradients[0], gradients[1])


#: A cantilever loaded past its first yield (root bending stress about 3 σ_y elastically),
#: designed for its end compliance after the plastic loading.
DESIGN = """
name = "plastic_cantilever"
[mesh]
type = "rectangle"
size = [40.0, 20.0]
cells = [16, 8]
[physics]
type = "elastoplasticity"
[material]
yield_stress = 250.0
isotropic_modulus = 2000.0
[[supports]]
group = "left"
[[loads]]
type = "traction"
group = "right"
value = [0.0, -80.0]
[analysis]
type = "incremental"
factors = [0.0, 0.5, 1.0]
[objective]
type = "compliance"
[constraints]
volume_fraction = 0.5
[penalization]
type = "simp"
penalty = 1.0
[filter]
type = "density"
radius = 3.0
[optimizer]
type = "mma"
[stop]
max_iter = 5
"""


def test_optimize_designs_an_elastoplastic_config(tmp_path):
    out = tmp_path / "design"
    result = run("optimize", write_config(tmp_path, DESIGN, "design.toml"), "--out", out)
    assert result.exit_code in (0, 3), result.output  # 3: not converged in 5 iterations
    with open(out / "history.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    objective = [float(row["objective"]) for row in rows]
    assert len(objective) == 5 and objective[-1] < objective[0]
    assert float(rows[-1]["volume"]) <= 0.5 + 1e-6
    # design.vtu: the last increment's internal variables of the final design, those of a
    # plain run at its densities (SIMP p = 1 above the floor 1e-3: the model's own ρ^penal)
    design = meshio.read(out / "design.vtu")
    config = load_config(out / "config.toml")
    model = build_model(config)
    rho = design.cell_data["density"][0]
    history = increment_run(config, model).solve(scale=1e-3 + rho * (1 - 1e-3))
    for name, values in history.cell_fields(history.n_increments).items():
        assert np.allclose(design.cell_data[name][0], values, rtol=1e-9, atol=0), name
    assert np.max(design.cell_data["equivalent_plastic_strain"][0]) > 0


#: The bar, perfectly plastic, pulled by a traction above its limit load σ_y · H: the
#: increment that crosses it cannot converge.
OVERLOADED = edit(edit(edit(edit(edit(
    BAR, "loads = []\n", ""),
    "isotropic_modulus = 2000.0", "isotropic_modulus = 0.0"),
    '[[supports]]\ngroup = "right"\ncomponents = ["x"]\nvalue = 0.01\n',
    '[[loads]]\ntype = "traction"\ngroup = "right"\nvalue = [400.0, 0.0]\n'),
    "factors = [0.0, 0.1, 0.5, 1.0, 0.5, 0.0, -0.5]", "factors = [0.0, 0.25, 0.5, 1.0]"),
    "[analysis]", "[newton]\nmax_cutbacks = 2\nmax_iterations = 20\n[analysis]")


@pytest.mark.parametrize("command, extra", [
    ("sensitivity", ("--wrt", "yield_stress")),
    ("optimize", ()),
])
def test_a_newton_failure_of_a_gradient_names_the_increment_and_its_keys(tmp_path, command,
                                                                          extra):
    """The advice of an incremental failure: more increments, more cut-backs; not the
    ``[newton] steps`` of a one-shot nonlinear solve, which the analysis refuses."""
    text = OVERLOADED
    if command == "optimize":
        text += ('[constraints]\nvolume_fraction = 0.5\n[filter]\ntype = "density"\n'
                 "radius = 1.0\n[stop]\nmax_iter = 2\n")
    result = run(command, write_config(tmp_path, text), *extra, "--out", tmp_path / "out")
    assert result.exit_code not in (0, 2), result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    assert re.search(r"increment \d+ \(load factor", errors[0])
    assert "analysis.factors" in errors[0] and "max_cutbacks" in errors[0]
    assert "[newton] steps" not in errors[0]


def test_a_design_that_penalizes_the_densities_again_is_refused(tmp_path):
    """``[penalization] penalty = 3`` under the model's own ``ρ^penal``: E ∝ ρ⁹; refused at
    check time, one line naming both."""
    text = edit(DESIGN, "penalty = 1.0", "penalty = 3.0")
    out = tmp_path / "design"
    result = run("optimize", write_config(tmp_path, text, "design.toml"), "--out", out)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    for named in ("[penalization]", "penalty = 3", "[physics] penal and yield_penal",
                  "penalty = 1"):
        assert named in lines[0]
    assert not out.exists() or not any(out.iterdir())

"""``fesens solve`` and ``fesens sensitivity`` of a nonlinear physics (``nonlinear_heat``):
the written temperatures against the Kirchhoff-transform closed form, the load–displacement
curve, a Newton failure (exit 1, the last converged state kept), sensitivities against
central differences of the written values, and config errors (exit 2)."""

import csv
import json

import meshio
import numpy as np
import pytest

from fesens.solvers.policy import tangent_choice
from tests.cli.cli_helpers import edit, run, write_config

K0, BETA, T0, T1, NX = 2.0, 0.5, 1.0, 3.0, 6

ROD = f"""
name = "rod"
[mesh]
type = "rectangle"
size = [1.0, {1.0 / NX!r}]
cells = [{NX}, 1]
[physics]
type = "nonlinear_heat"
[material]
conductivity = {K0}
beta = {BETA}
[[supports]]
group = "left"
value = {T0}
[[supports]]
group = "right"
value = {T1}
[[loads]]
type = "heat_source"
value = 0.0
[newton]
steps = 3
[load_path]
point = [0.5, 0.0]
"""

#: A plate with a heat source and a surface flux, for sensitivities.
PLATE = """
name = "plate"
[mesh]
type = "rectangle"
size = [1.0, 0.6]
cells = [5, 3]
[physics]
type = "nonlinear_heat"
reference_temperature = 0.5
[material]
conductivity = 2.0
beta = 0.4
[[supports]]
group = "left"
value = 1.0
[[loads]]
type = "heat_source"
name = "source"
value = 3.0
[[loads]]
type = "flux"
name = "top"
group = "top"
value = 1.5
"""


def kirchhoff_rod(x, t0=T0, t1=T1, beta=BETA):
    """``(k(T) T')' = 0``, ``T(0) = t0``, ``T(1) = t1``, ``k = k0 (1 + β T)``: the Kirchhoff
    transform ``Θ = k0 (T + β T²/2)`` is linear in x (Carslaw & Jaeger, *Conduction of Heat
    in Solids*, 2nd ed., 1959, §1.15)."""
    def theta(t):
        return K0 * (t + beta * t ** 2 / 2)

    c = theta(t0) + (theta(t1) - theta(t0)) * x
    return (-1.0 + np.sqrt(1.0 + 2.0 * beta * c / K0)) / beta


def test_solve_writes_the_closed_form_and_the_load_path(tmp_path):
    out = tmp_path / "out"
    result = run("solve", write_config(tmp_path, ROD), "--out", out)
    assert result.exit_code == 0, result.output
    written = meshio.read(out / "solution.vtu")
    x = written.points[:, 0]
    # on a strip of quad4 cells the vertex temperatures are exact (Θ is linear)
    assert np.abs(written.point_data["temperature"] - kirchhoff_rod(x)).max() < 1e-8
    summary = json.loads((out / "solution.json").read_text())
    assert summary["solver"] in ("umfpack", "superlu")  # LU: the tangent is not symmetric
    newton = summary["newton"]
    assert newton["converged"] and newton["steps"] == 3 and not newton["cutbacks"]
    assert newton["load_factors"] == pytest.approx([0, 1 / 3, 2 / 3, 1])
    assert all(a["residuals"][-1] < 1e-9 for a in newton["attempts"])
    with open(out / "load_path.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    (column,) = set(rows[0]) - {"load_factor"}
    assert column == "temperature_node3"
    assert [float(r["load_factor"]) for r in rows] == pytest.approx([0, 1 / 3, 2 / 3, 1])
    # every converged step is the rod with the prescribed ends scaled by its load factor
    for row in rows[1:]:
        t = float(row["load_factor"])
        assert float(row[column]) == pytest.approx(kirchhoff_rod(0.5, t * T0, t * T1),
                                                   abs=1e-8)
    assert (out / "load_path.png").stat().st_size > 1000
    assert "load_path.csv" in result.output and "Newton: 3 load step(s)" in result.output


def test_load_path_follows_the_norm_by_default(tmp_path):
    out = tmp_path / "out"
    config = write_config(tmp_path, edit(ROD, "[load_path]\npoint = [0.5, 0.0]\n", ""))
    assert run("solve", config, "--out", out).exit_code == 0
    with open(out / "load_path.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    T = meshio.read(out / "solution.vtu").point_data["temperature"]
    assert float(rows[-1]["temperature_norm"]) == pytest.approx(np.linalg.norm(T))


def test_newton_failure_exits_1_and_keeps_the_last_converged_state(tmp_path):
    """β = −0.5 makes k(T) ≤ 0 where T ≥ 2: the loads cannot be applied in full."""
    out = tmp_path / "out"
    text = edit(edit(ROD, f"beta = {BETA}", "beta = -0.5"), "steps = 3",
                "steps = 4\nmax_cutbacks = 2")
    result = run("solve", write_config(tmp_path, text), "--out", out)
    assert result.exit_code == 1, result.output
    assert "error: numerical failure (NewtonError)" in result.output
    assert "conductivity k(T)" in result.output  # the reason
    summary = json.loads((out / "solution.json").read_text())
    t = summary["newton"]["load_factor"]
    assert not summary["newton"]["converged"] and 0 < t < 1
    assert f"last converged load factor is {t:.6g}" in result.output
    assert str(out / "solution.vtu") in result.output
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == \
        ["solution.json", "solution.vtu"]  # nothing half-written
    written = meshio.read(out / "solution.vtu")
    x, T = written.points[:, 0], written.point_data["temperature"]
    # the state at load factor t: the ends at t T0 and t T1; inside, the closed form (the
    # right end itself is past k = 0, where Θ's root with k > 0 no longer reaches it, but
    # the quadrature points are not)
    assert T[x == 1.0] == pytest.approx(t * T1) and T[x == 0.0] == pytest.approx(t * T0)
    expected = kirchhoff_rod(x[x < 1.0], t * T0, t * T1, beta=-0.5)
    assert np.abs(T[x < 1.0] - expected).max() < 1e-8


def _solved_compliance(tmp_path, text: str, name: str) -> float:
    out = tmp_path / name
    result = run("solve", write_config(tmp_path, text, f"{name}.toml"), "--out", out)
    assert result.exit_code == 0, result.output
    return json.loads((out / "solution.json").read_text())["compliance"]


def test_sensitivity_to_loads_matches_central_differences_of_solve(tmp_path):
    out = tmp_path / "loads"
    result = run("sensitivity", write_config(tmp_path, PLATE), "--wrt", "loads", "--out", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "sensitivity.json").read_text())
    assert summary["solver"] in ("umfpack", "superlu")  # the backend that solved the tangent
    assert summary["value"] == pytest.approx(_solved_compliance(tmp_path, PLATE, "base"),
                                             rel=1e-12)
    h = 1e-5
    for row in summary["loads"]:
        old = "value = 3.0" if row["name"] == "source" else "value = 1.5"
        value = float(old.split("= ")[1])
        up, down = (_solved_compliance(tmp_path, edit(PLATE, old, f"value = {value * s!r}"),
                                       f"{row['name']}{i}")
                    for i, s in enumerate((1 + h, 1 - h)))
        assert row["derivative"] == pytest.approx((up - down) / (2 * h), rel=1e-6)


def test_sensitivity_to_density_sums_to_the_conductivity_scale_derivative(tmp_path):
    """Without [penalization] the density scales k0 cell by cell: the gradient's sum is the
    derivative of the compliance under k0 → (1 + ε) k0, by central differences of
    ``fesens solve``."""
    out = tmp_path / "density"
    result = run("sensitivity", write_config(tmp_path, PLATE), "--wrt", "density",
                 "--out", out)
    assert result.exit_code == 0, result.output
    gradient = meshio.read(out / "sensitivity.vtu").cell_data["d_compliance_d_density"][0]
    assert gradient.shape == (15,) and np.all(np.isfinite(gradient))
    h = 1e-5
    up, down = (_solved_compliance(tmp_path, edit(PLATE, "conductivity = 2.0",
                                                  f"conductivity = {2.0 * s!r}"), f"k{i}")
                for i, s in enumerate((1 + h, 1 - h)))
    assert gradient.sum() == pytest.approx((up - down) / (2 * h), rel=1e-6)
    conductivity = tmp_path / "conductivity"
    assert run("sensitivity", write_config(tmp_path, PLATE), "--wrt", "conductivity",
               "--out", conductivity).exit_code == 0
    per_k0 = meshio.read(conductivity / "sensitivity.vtu").cell_data[
        "d_compliance_d_conductivity"][0]
    assert per_k0 * 2.0 == pytest.approx(gradient, rel=1e-10, abs=1e-14)


@pytest.mark.parametrize(("old", "new", "key"), [
    ("steps = 3", "steps = 0", "newton.steps"),
    ("steps = 3", "steps = 3\nline_search = \"energy\"", "newton.line_search"),
    (f"beta = {BETA}", f"beta = {BETA}\n[solver]\nbackend = \"cholmod\"", "solver.backend"),
    (f"conductivity = {K0}", "conductivity = -1.0", "material.conductivity"),
    ("type = \"nonlinear_heat\"", "type = \"heat\"", "[newton] applies to nonlinear physics"),
])
def test_config_errors_exit_2_naming_the_key(tmp_path, old, new, key):
    text = edit(ROD, old, new)
    if new.startswith("type = \"heat\""):
        text = edit(text, f"beta = {BETA}\n", "")
    result = run("solve", write_config(tmp_path, text), "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and key in result.output
    assert not (tmp_path / "out").exists()


def test_nonlinear_cantilever_preset_solves_with_its_load_path(tmp_path):
    """`fesens solve --preset nonlinear_cantilever`: full material, the tip's vertical
    displacement at each load step, downwards and growing with the load."""
    out = tmp_path / "out"
    result = run("solve", "--preset", "nonlinear_cantilever", "--out", out)
    assert result.exit_code == 0, result.output
    with open(out / "load_path.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert list(rows[0]) == ["load_factor", "displacement_y_node40"]
    tip = np.array([float(r["displacement_y_node40"]) for r in rows])
    assert tip[0] == 0 and np.all(np.diff(tip) < 0)
    summary = json.loads((out / "solution.json").read_text())
    assert summary["newton"]["converged"]
    # the tangent is symmetric but may be indefinite at a Newton iterate: auto is
    # CHOLMOD with an LU fallback (LU without CHOLMOD), and says so
    assert summary["solver"] == str(tangent_choice(True, False))
    assert "may be indefinite" in result.output


HYPER = """
[mesh]
type = "rectangle"
size = [2.0, 1.0]
cells = [4, 2]
[physics]
type = "hyperelasticity"
[material]
E = 1.0
nu = 0.3
[[supports]]
group = "left"
[[loads]]
type = "point"
point = [2.0, 0.5]
value = [0.0, -0.05]
"""


@pytest.mark.parametrize(("old", "new", "key"), [
    ("nu = 0.3", "nu = 0.5", "material.nu"),
    ("E = 1.0", "E = -1.0", "material.E"),
    ("type = \"hyperelasticity\"", "type = \"hyperelasticity\"\nlaw = \"mooney\"",
     "physics.law"),
    ("value = [0.0, -0.05]", "value = [0.0, -0.05]\n[load_path]\npoint = [2.0, 0.5]\n"
     "component = 2", "load_path.component"),
])
def test_hyperelastic_config_errors_exit_2_naming_the_key(tmp_path, old, new, key):
    result = run("solve", write_config(tmp_path, edit(HYPER, old, new)), "--out",
                 tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and key in result.output


@pytest.mark.slow
def test_nonlinear_cantilever_design_differs_from_the_linear_one(tmp_path):
    """The preset at its large load against the same config at a load 50 times smaller
    (the linear regime): about a quarter of the cells change between solid and void
    (measured 23 %), and at the large load the nonlinear design has the lower end
    compliance (measured 0.0021473 against 0.0022032), evaluated by `fesens sensitivity
    --design` of each."""
    text = run("optimize", "--preset", "nonlinear_cantilever", "--dump-config").output
    small = edit(text, "value = [0.0, -0.005]", "value = [0.0, -0.0001]")
    designs, values = {}, {}
    for name, config in (("nonlinear", text), ("linear", small)):
        out = tmp_path / name
        path = write_config(tmp_path, config, f"{name}.toml")
        result = run("optimize", path, "--out", out, "--quiet")
        assert result.exit_code == 0, result.output
        designs[name] = meshio.read(out / "design.vtu").cell_data["density"][0]
        at = tmp_path / f"{name}-at-large-load"
        large = write_config(tmp_path, text, "large.toml")
        assert run("sensitivity", large, "--wrt", "density", "--design", out, "--out", at,
                   "--quiet").exit_code == 0
        values[name] = json.loads((at / "sensitivity.json").read_text())["value"]
    changed = np.mean((designs["linear"] > 0.5) != (designs["nonlinear"] > 0.5))
    assert changed > 0.15, changed
    assert values["nonlinear"] < 0.99 * values["linear"], values


def test_newton_failure_in_optimize_exits_1_naming_the_keys(tmp_path):
    """k(T) = k0 (1 − 0.5 T) reaches 0 where the source heats the plate above T = 2."""
    text = edit(edit(PLATE, "beta = 0.4", "beta = -0.5"), "value = 3.0", "value = 30.0")
    text += ("[constraints]\nvolume_fraction = 0.5\n[filter]\ntype = \"density\"\n"
             "radius = 0.3\n[stop]\nmax_iter = 2\n[newton]\nmax_cutbacks = 2\n")
    result = run("optimize", write_config(tmp_path, text), "--out", tmp_path / "out")
    assert result.exit_code == 1, result.output
    assert "error: numerical failure (NewtonError)" in result.output
    assert "conductivity k(T)" in result.output
    assert "[newton] steps, max_cutbacks, max_iterations" in result.output
    assert "penalization.minimum" in result.output


def test_shape_sensitivity_is_invariant_under_a_rigid_translation(tmp_path):
    """Moving every node by the same vector changes no integral of the plate (the loads
    move with it), so the node-coordinate gradient of the nonlinear solve sums to zero
    per axis; and it is not zero node by node."""
    out = tmp_path / "points"
    result = run("sensitivity", write_config(tmp_path, PLATE), "--wrt", "points", "--out", out)
    assert result.exit_code == 0, result.output
    gradient = meshio.read(out / "sensitivity.vtu").point_data["d_compliance_d_points"]
    scale = np.abs(gradient).max()
    assert scale > 0
    assert np.abs(gradient.sum(axis=0)).max() < 1e-10 * scale * len(gradient)


def test_newton_failure_in_sensitivity_exits_1_naming_the_keys(tmp_path):
    text = edit(edit(ROD, f"beta = {BETA}", "beta = -0.5"), "steps = 3", "max_cutbacks = 2")
    result = run("sensitivity", write_config(tmp_path, text), "--wrt", "density", "--out",
                 tmp_path / "out")
    assert result.exit_code == 1, result.output
    assert "conductivity k(T)" in result.output
    assert "[newton] steps, max_cutbacks, max_iterations" in result.output
    assert not (tmp_path / "out" / "sensitivity.json").exists()

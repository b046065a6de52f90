"""``fesens solve`` and ``fesens sensitivity`` on the same config files; checked numbers."""

import csv
import json

import meshio
import numpy as np
import pytest
from cli_helpers import SMALL_MBB, edit, run, write_config
from PIL import Image


def test_solve_lbracket_preset_balances_the_load(tmp_path):
    """The demo's model: 10 MPa over the 12 mm edge, 10 mm thick → 1200 N at the clamp."""
    out = tmp_path / "solve"
    result = run("solve", "--preset", "lbracket", "--out", out)
    assert result.exit_code == 0, result.output
    assert "reaction on top:" in result.output
    summary = json.loads((out / "solution.json").read_text())
    assert summary["reactions"]["top"] == pytest.approx([0.0, 1200.0], abs=1e-6)
    assert summary["max_von_mises"] > 10.0
    solution = meshio.read(out / "solution.vtu")
    assert "displacement" in solution.point_data and "von_mises" in solution.cell_data
    with Image.open(out / "solution.png") as image:
        assert image.size[0] > 300


@pytest.mark.parametrize(("preset", "field"), [("lbracket", "nodal_von_mises"),
                                             ("heatsink", "temperature")])
def test_solve_draws_the_nodal_field_up_to_the_peak_its_title_names(tmp_path, monkeypatch,
                                                                    preset, field):
    """solution.png shades the nodal field (recovered stress, temperature) between the
    nodes; the title's maximum and the color bar's top are that field's largest value."""
    import fesens.plotting.fields as fields

    drawn = []
    monkeypatch.setattr(fields, "save_figure", lambda figure, path: drawn.append(figure) or path)
    out = tmp_path / "solve"
    assert run("solve", "--preset", preset, "--out", out, "-q").exit_code == 0
    values = meshio.read(out / "solution.vtu").point_data[field]
    (figure,) = drawn
    picture, bar = figure.axes
    (shaded,) = picture.collections
    np.testing.assert_allclose(shaded.get_array(), values)
    assert f"max {values.max():.4g}" in picture.get_title()
    assert max(bar.get_xlim()) == pytest.approx(values.max())


def test_solve_heat_balances_the_heat_source(tmp_path):
    out = tmp_path / "heat"
    result = run("solve", "--preset", "heatsink", "--out", out, "-q")
    assert result.exit_code == 0 and result.output == ""
    summary = json.loads((out / "solution.json").read_text())
    (heat,) = summary["reactions"].values()
    assert heat == pytest.approx([-0.01])           # all of Q = 0.01 leaves through the sink
    assert summary["min_temperature"] == pytest.approx(0.0, abs=1e-12)
    assert "temperature" in meshio.read(out / "solution.vtu").point_data


def test_solve_ignores_the_optimization_sections(tmp_path):
    text = SMALL_MBB.split("[objective]")[0]
    result = run("solve", write_config(tmp_path, text), "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        ".fesens-files", "solution.json", "solution.png", "solution.vtu"]


def test_sensitivity_to_load_magnitudes(tmp_path):
    """Compliance is quadratic in a load's magnitude m: dC/dm = 2 C at m = 1."""
    text = SMALL_MBB + ('\n[[loads]]\ntype = "traction"\nname = "wind"\ngroup = "top"\n'
                        "value = [0.1, 0.0]\n")
    out = tmp_path / "loads"
    result = run("sensitivity", write_config(tmp_path, text), "--wrt", "loads", "--out", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "sensitivity.json").read_text())
    with open(out / "sensitivity.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [r["name"] for r in rows] == ["F", "wind"]
    total = sum(float(r["derivative"]) for r in rows)
    assert total == pytest.approx(2 * summary["value"], rel=1e-10)   # Σ m dC/dm = 2 C
    assert "d_compliance_d_density" not in meshio.read(out / "sensitivity.vtu").cell_data


@pytest.mark.parametrize(("wrt", "preset"), [("density", "mbb"), ("E", "lbracket"),
                                             ("conductivity", "heatsink")])
def test_field_sensitivities_satisfy_homogeneity(wrt, preset, tmp_path):
    """C(α s) = C(s) / α for a stiffness (conductivity) scale: Σ s_e ∂C/∂s_e = −C. The
    density enters through the mbb preset's SIMP s = ρ³ (minimum 1e-9): at ρ = 1,
    Σ ∂C/∂ρ_e = 3 (1 − 1e-9) Σ ∂C/∂s_e = −3 C."""
    out = tmp_path / wrt
    result = run("sensitivity", "--preset", preset, "--wrt", wrt, "--out", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "sensitivity.json").read_text())
    field = meshio.read(out / "sensitivity.vtu").cell_data[summary["gradient"]["field"]][0]
    scale = {"density": 1.0 / 3.0, "E": 210e3, "conductivity": 1.0}[wrt]
    assert np.sum(scale * field) == pytest.approx(-summary["value"], rel=1e-8)
    with Image.open(out / "sensitivity.png") as image:
        assert image.size[0] > 300


@pytest.mark.parametrize(("preset", "objective", "degree"), [("mbb", "compliance", 0),
                                                              ("heatsink", "thermal_compliance",
                                                               4)])
def test_shape_sensitivities_satisfy_translation_and_scaling(preset, objective, degree,
                                                            tmp_path):
    """Moving every node by the same vector changes nothing: Σ_n ∂J/∂X_n = 0. Scaling the
    2D domain by α: the stiffness (conductance) of a plane element is unchanged, a point load
    too, a volume source grows as α² and with it the temperature, so the compliance scales
    as α⁰ (mbb: point load) and the thermal compliance ``f·T`` as α⁴ (heatsink: uniform
    source); Euler's theorem gives Σ_n X_n · ∂J/∂X_n = degree · J."""
    out = tmp_path / preset
    result = run("sensitivity", "--preset", preset, "--wrt", "points", "--objective",
                 objective, "--out", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "sensitivity.json").read_text())
    written = meshio.read(out / "sensitivity.vtu")
    gradient = written.point_data[summary["gradient"]["field"]][:, :2]
    points = written.points[:, :2]
    size = np.abs(gradient).sum(axis=0)
    assert np.all(np.abs(gradient.sum(axis=0)) < 1e-9 * size)
    assert np.sum(points * gradient) == pytest.approx(degree * summary["value"],
                                                      abs=1e-9 * np.sum(np.abs(points
                                                                               * gradient)))
    with Image.open(out / "sensitivity.png") as image:
        assert image.size[0] > 300


def test_sensitivity_of_a_displacement_objective_uses_the_config(tmp_path):
    text = edit(SMALL_MBB, 'type = "compliance"',
                'type = "displacement"\npoint = [0.0, 8.0]\ncomponent = "y"')
    result = run("sensitivity", write_config(tmp_path, text), "--wrt", "nu", "--out",
                 tmp_path / "out", "--objective", "displacement")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "sensitivity.json").read_text())
    assert summary["objective"] == "displacement" and summary["value"] < 0


@pytest.mark.parametrize(("args", "message"), [
    (["--wrt", "conductivity"], "--wrt conductivity does not apply to elasticity"),
    (["--wrt", "E", "--objective", "displacement"], "--objective displacement: missing key "
                                                    "'objective.component'"),
    (["--wrt", "E", "--objective", "volume"], "--objective 'volume' cannot be differentiated"),
])
def test_sensitivity_input_errors(args, message, tmp_path):
    result = run("sensitivity", write_config(tmp_path), *args, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "out").exists()



@pytest.mark.parametrize("command, extra", [("solve", []),
                                            ("sensitivity", ["--wrt", "loads"])])
def test_help_names_the_default_results_folder(command, extra, tmp_path, monkeypatch):
    """The folder ``--help`` gives as the default of --out is the one written without it."""
    compact_help = "".join(run(command, "--help").output.split())
    default = compact_help.split("Resultsfolder[default:", 1)[1].split("]", 1)[0]
    monkeypatch.chdir(tmp_path)
    assert run(command, write_config(tmp_path), *extra, "-q").exit_code == 0
    written = [p.relative_to(tmp_path).as_posix() for p in (tmp_path / "results").iterdir()]
    assert written == [default.replace("NAME", "small")]       # small_mbb.toml: name = "small"

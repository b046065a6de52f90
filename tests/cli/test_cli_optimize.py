"""``fesens optimize``: every preset end to end, the results folder, --dump-config."""

import json
import re
import tomllib

import meshio
import pytest
from cli_helpers import SMALL_MBB, edit, history, run, write_config
from PIL import Image

from fesens.config import load_config, preset_names
from fesens.output.folder import MANIFEST
from fesens.solvers import solver_class
from fesens.solvers.policy import tangent_choice

#: Presets and the point field of their design VTU.
FIELDS = {"mbb": "displacement", "cantilever": "displacement", "lbracket": "displacement",
          "lbracket_stress": "displacement", "cantilever3d": "displacement",
          "cantilever3d_top3d": "displacement", "heatsink3d": "temperature",
          "heatsink": "temperature", "heatsink_pulse": "temperature",
          "dynamic_compliance": "displacement", "frequency": "displacement",
          "inverter": "displacement", "inverter_oc": "displacement",
          "gripper": "displacement", "inverter3d": "displacement", "robust": "displacement",
          "inverter_robust": "displacement", "inverter3d_robust": "displacement",
          "overhang": "displacement", "overhang3d": "displacement",
          "nonlinear_cantilever": "displacement",
          "multimaterial": "displacement", "lbracket_stress_constrained": "displacement",
          "lbracket_stress_local": "displacement",
          "column_buckling": "displacement", "plastic_cantilever": "displacement"}
#: Presets of a frequency design: their displacement is the first mode, without stresses.
MODAL = ("frequency",)
#: Presets of a load history: their design.vtu has the last increment's displacement and
#: internal variables (as `fesens solve` writes each increment's).
HISTORY = ("plastic_cantilever",)


def test_every_preset_is_tested():
    assert set(preset_names()) == set(FIELDS)


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_preset_runs_end_to_end(name, tmp_path):
    out = tmp_path / name
    result = run("optimize", "--preset", name, "--out", out, "--max-iter", 2)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert sum(line.lstrip().startswith(("1 ", "2 ")) for line in lines) == 2
    assert "NOT CONVERGED after 2 iterations (the limit, stop.max_iter = 2)" in result.output

    design = meshio.read(out / "design.vtu")
    assert {"density"} <= set(design.cell_data)
    assert FIELDS[name] in design.point_data
    if FIELDS[name] == "displacement" and name not in MODAL:
        assert "von_mises" in design.cell_data
    if name in HISTORY:
        assert {"equivalent_plastic_strain", "back_stress_norm"} <= set(design.cell_data)
        # the final design's yield: the summary's largest von Mises stress and plastic strain
        summary = json.loads((out / "summary.json").read_text())
        assert summary["max_von_mises"] > 0 and summary["max_equivalent_plastic_strain"] > 0
    for picture in ("design.png", "convergence.png"):
        with Image.open(out / picture) as image:
            assert image.size[0] > 300 and image.size[1] > 200
    summary = json.loads((out / "summary.json").read_text())
    assert summary["iterations"] == 2 and summary["status"] == "max_iter"
    assert summary["converged"] is False
    # the backend that solved: what auto stands for, or for a finite-strain or elastoplastic
    # tangent (which may be indefinite) Cholesky with an LU fallback, as the run's first
    # line says
    indefinite = name in ("nonlinear_cantilever", "plastic_cantilever")
    assert summary["solver"] == (tangent_choice(True, False) if indefinite
                                 else solver_class("auto").name)
    assert summary["constraints"][0]["name"] == "volume_fraction"
    assert summary["config"]["name"] == name
    rows = history(out)
    assert [r["iteration"] for r in rows] == ["1", "2"]
    assert float(rows[-1]["objective"]) == pytest.approx(summary["objective"]["value"])
    resolved = load_config(out / "config.toml")
    assert resolved.data["stop"]["max_iter"] == 2
    # no temporary file left; the hidden manifest names exactly the files the run wrote
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [MANIFEST]
    assert (out / MANIFEST).read_text().split() == sorted(
        p.name for p in out.iterdir() if not p.name.startswith("."))


def test_presets_lists_every_preset_on_one_line():
    result = run("presets")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert [line.split()[0] for line in lines] == preset_names()
    assert all(len(line.split(maxsplit=1)[1]) > 20 for line in lines)


def test_dump_config_runs_to_the_same_result(tmp_path, monkeypatch):
    dumped = run("optimize", "--preset", "lbracket", "--dump-config")
    assert dumped.exit_code == 0
    assert dumped.output.startswith("#")               # the commented, editable file
    (tmp_path / "configs").mkdir()
    config = write_config(tmp_path / "configs", dumped.output, "mine.toml")
    assert tomllib.loads(config.read_text())["mesh"] == {"packaged": "lbracket"}
    monkeypatch.chdir(tmp_path)                        # not the config's folder
    a = run("optimize", config, "--out", tmp_path / "a", "--max-iter", 3, "--quiet")
    b = run("optimize", "--preset", "lbracket", "--out", tmp_path / "b", "--max-iter", 3, "-q")
    assert a.exit_code == b.exit_code == 0
    assert a.output == b.output == ""
    assert (tmp_path / "a" / "history.csv").read_text() == \
        (tmp_path / "b" / "history.csv").read_text()
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in "ab"]
    assert summaries[0]["objective"] == summaries[1]["objective"]


def test_dump_config_of_a_file_fills_in_defaults(tmp_path):
    result = run("optimize", write_config(tmp_path), "--dump-config", "--max-iter", 9)
    assert result.exit_code == 0
    data = tomllib.loads(result.output)
    assert data["stop"]["max_iter"] == 9
    assert data["projection"] == {"type": "none"}
    assert not (tmp_path / "results").exists()


def test_snapshots_every_n_iterations_form_a_paraview_series(tmp_path):
    config = write_config(tmp_path, edit(SMALL_MBB, "every = 0", "every = 2"))
    result = run("optimize", config, "--out", tmp_path / "out", "--max-iter", 5)
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert [n for n in names if re.fullmatch(r"design_\d+\.vtu", n)] == [  # + the final
        "design_0002.vtu", "design_0004.vtu", "design_0005.vtu"]
    series = (tmp_path / "out" / "design.pvd").read_text()
    assert 'timestep="2"' in series and 'file="design_0004.vtu"' in series
    snapshot = meshio.read(tmp_path / "out" / "design_0004.vtu")
    assert snapshot.cell_data["density"][0].shape == (24 * 8,)


def test_stress_constrained_run_with_mma(tmp_path):
    text = edit(SMALL_MBB, 'type = "oc"', 'type = "mma"')
    text += '\n[[constraints.extra]]\ntype = "stress_pnorm"\nname = "stress"\nlimit = 5.0\n'
    result = run("optimize", write_config(tmp_path, text), "--out", tmp_path / "out",
                 "--max-iter", 3)
    assert result.exit_code == 0, result.output
    assert "stress " in result.output.splitlines()[1]
    assert "stress" in history(tmp_path / "out")[0]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [c["name"] for c in summary["constraints"]] == ["volume_fraction", "stress"]
    assert summary["max_von_mises"] > 0


def test_converged_run_reports_convergence(tmp_path):
    config = write_config(tmp_path, edit(SMALL_MBB, "tol_change = 0.01", "tol_change = 0.5"))
    result = run("optimize", config, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["converged"] is True and summary["status"] == "converged"
    assert "converged after" in result.output

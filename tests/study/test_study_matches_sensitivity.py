"""A sample of `fesens study` is `fesens sensitivity` of the base config with the sample's
values, value and gradient, whatever analysis the base declares: static, nonlinear, load
cases, transient heat, dynamic (Newmark), harmonic; what no analysis can evaluate is
refused before any sample runs (exit 2, one line naming the key).

Each base is a preset (or a small config) on a coarse mesh. The study runs through its
command; the reference is `run_sensitivity` of a config file written with the sample's
material value, its gradient of the material summed over the cells (the study's parameter
is one value for all of them) and its derivative of the load's magnitude.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import fesens
from fesens.cli.study import study_command
from fesens.config import dumps, load_config
from fesens.study import read_results
from fesens.workflow import run_sensitivity

PRESETS = Path(fesens.__file__).parent / "config" / "presets"

#: Relative agreement of a study's numbers with `fesens sensitivity`'s.
RTOL = 1e-12


def preset(name: str, cells: list[int]) -> dict:
    data = tomllib.loads((PRESETS / f"{name}.toml").read_text(encoding="utf-8"))
    data["mesh"]["cells"] = cells
    return data


def cantilever_cases() -> dict:
    """The cantilever with a second load and two weighted load cases."""
    data = preset("cantilever", [8, 4])
    data["loads"].append({"type": "point", "name": "side", "point": [2.0, 1.0],
                          "value": [0.5, 0.0]})
    data["load_cases"] = [{"name": "down", "weight": 2.0, "loads": ["tip"]},
                          {"name": "across", "loads": ["side"]}]
    return data


def dynamic_beam() -> dict:
    """The cantilever under a ramped tip load, stepped by generalized-α (Newmark)."""
    data = preset("cantilever", [8, 4])
    data["material"]["density"] = 2.0
    data["loads"][0]["history"] = [[0.0, 0.0], [0.5, 1.0]]
    data["analysis"] = {"type": "dynamic"}
    data["time"] = {"end": 2.0, "steps": 20, "scheme": "generalized_alpha", "rho_inf": 0.8}
    data["damping"] = {"stiffness": 0.01}
    data["objective"] = {"type": "displacement", "point": [2.0, 0.5], "component": "y",
                         "over_time": "integral", "power": 2.0}
    return data


#: analysis: (base config, material key and its two sample values, load, study output).
BASES = {
    "static": (preset("cantilever", [8, 4]), "E", (1.0, 1.5), "tip",
               {"type": "compliance"}),
    "nonlinear": (preset("nonlinear_cantilever", [8, 4]), "E", (1.0, 1.25), "tip",
                  {"type": "compliance"}),
    "load_cases": (cantilever_cases(), "E", (1.0, 1.5), "side", {"type": "compliance"}),
    # the output takes the time aggregate of the base's [objective] (ks, its rho)
    "transient": (preset("heatsink_pulse", [6, 6]), "conductivity", (1.0, 1.5), "Q",
                  {"type": "temperature", "point": [1.0, 0.5]}),
    "dynamic": (dynamic_beam(), "E", (1.0, 1.5), "tip",
                {"type": "displacement", "point": [2.0, 0.5], "component": "y",
                 "over_time": "integral", "power": 2.0}),
    "harmonic": (preset("dynamic_compliance", [8, 4]), "E", (1.0, 1.5), "F",
                 {"type": "compliance"}),
}


def write_toml(path: Path, data: dict) -> Path:
    path.write_text(dumps(data), encoding="utf-8")
    return path


def study_file(folder: Path, key: str, values, load: str, output: dict) -> Path:
    (folder / "samples.csv").write_text(f"{key}\n" + "".join(f"{v!r}\n" for v in values),
                                        encoding="utf-8")
    return write_toml(folder / "study.toml", {
        "base": "base.toml", "design": {"type": "table", "file": "samples.csv"},
        "parameters": [{"target": f"material.{key}", "name": key},
                       {"target": f"loads.{load}.magnitude", "name": "P", "value": 1.0}],
        "outputs": [{**output, "name": "y"}]})


def sensitivity(folder: Path, data: dict, key: str, value: float, load: str):
    """``(value, d/d key, d/d load magnitude)`` by `fesens sensitivity` of ``data`` with
    ``material.key = value``."""
    sample = copy.deepcopy(data)
    sample["material"][key] = value
    config = load_config(write_toml(folder / f"sample-{value!r}.toml", sample),
                         optimize=False)
    quiet = lambda line: None  # noqa: E731
    field = run_sensitivity(config, folder / f"wrt-{key}-{value!r}", wrt=key, echo=quiet)
    loads = run_sensitivity(config, folder / f"wrt-loads-{value!r}", wrt="loads", echo=quiet)
    assert field["value"] == loads["value"]
    derivative = {row["name"]: row["derivative"] for row in loads["loads"]}[load]
    return field["value"], field["gradient"]["sum"], derivative


@pytest.mark.parametrize("analysis", list(BASES))
def test_a_study_sample_is_the_sensitivity_of_its_config(tmp_path, analysis):
    data, key, values, load, output = BASES[analysis]
    write_toml(tmp_path / "base.toml", data)
    study = study_file(tmp_path, key, values, load, output)
    result = CliRunner().invoke(study_command, [str(study), "--out", str(tmp_path / "out"),
                                                "--workers", "0", "-q"])
    assert result.exit_code == 0, result.output
    results = read_results(tmp_path / "out" / "results.json")
    assert list(results.value(key)) == list(values)
    for i, value in enumerate(values):
        expected = sensitivity(tmp_path, data, key, value, load)
        got = (results.value("y")[i], results.gradient("y", key)[i],
               results.gradient("y", "P")[i])
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=0.0,
                                   err_msg=f"{analysis}, {key} = {value}")


def refused(tmp_path: Path, data: dict, study: dict) -> str:
    write_toml(tmp_path / "base.toml", data)
    (tmp_path / "samples.csv").write_text("E\n1.0\n2.0\n", encoding="utf-8")
    path = write_toml(tmp_path / "study.toml", {
        "base": "base.toml", "design": {"type": "table", "file": "samples.csv"}, **study})
    result = CliRunner().invoke(study_command, [str(path), "--out", str(tmp_path / "out"),
                                                "--workers", "0"])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "out").exists()
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


E = [{"target": "material.E", "name": "E"}]


@pytest.mark.parametrize("data, output, words", [
    # a harmonic response's objective is linear in the field: no stress
    (preset("dynamic_compliance", [8, 4]), {"type": "stress_pnorm"},
     ("outputs[0]", "stress_pnorm", 'analysis.type = "dynamic"')),
    # eigen objectives are those of a frequency design (`fesens optimize` only)
    (preset("cantilever", [8, 4]), {"type": "eigenvalue_ks"},
     ("outputs[0]", "eigenvalue_ks")),
    # and so is a base whose objective is one
    (preset("frequency", [16, 2]), {"type": "compliance"},
     ("base.toml", "objective.type", "eigenvalue_ks", "fesens optimize")),
    # a static base has no time levels to aggregate over
    (preset("cantilever", [8, 4]), {"type": "compliance", "over_time": "ks"},
     ("outputs[0]", "over_time")),
], ids=["harmonic-stress", "eigen-output", "eigen-base", "static-over-time"])
def test_an_output_the_analysis_cannot_evaluate_is_refused(tmp_path, data, output, words):
    line = refused(tmp_path, data, {"parameters": E, "outputs": [output]})
    assert all(word in line for word in words), line


def test_the_angle_of_a_load_of_load_cases_is_refused(tmp_path):
    line = refused(tmp_path, cantilever_cases(), {
        "parameters": [*E, {"target": "loads.tip.angle", "name": "angle", "value": 10.0}],
        "outputs": [{"type": "compliance"}]})
    assert "parameters[1].target" in line and "[[load_cases]]" in line, line


def test_a_nonlinear_sample_does_not_depend_on_the_samples_before_it(tmp_path):
    """A worker runs its samples one after another on one model: each Newton solve starts
    from the reference state, so a sample's numbers are the same bits whether it runs
    after others (one worker) or alone (many workers)."""
    data, key, _, load, output = BASES["nonlinear"]
    results = {}
    for name, values in (("after", (1.25, 1.1, 1.0)), ("alone", (1.0,))):
        folder = tmp_path / name
        folder.mkdir()
        write_toml(folder / "base.toml", data)
        study = study_file(folder, key, values, load, output)
        result = CliRunner().invoke(study_command, [str(study), "--out", str(folder / "out"),
                                                    "--workers", "0", "-q"])
        assert result.exit_code == 0, result.output
        read = read_results(folder / "out" / "results.json")
        results[name] = (read.value("y")[-1], read.gradient("y", key)[-1],
                         read.gradient("y", "P")[-1])
    assert results["after"] == results["alone"]

"""Results people can read: sensitivities at a design, sensitivities in ``design.vtu``, the
final design in the ParaView series, a plain "not converged", and the in-memory run."""

import json
import xml.etree.ElementTree as ET

import meshio
import numpy as np
import pytest
from cli_helpers import SMALL_MBB, edit, history, run, write_config

from fesens.config import ConfigError, build_problem, load_config
from fesens.workflow import run_optimization


def cell_field(path, name):
    return np.concatenate(meshio.read(path).cell_data[name])


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """The small MBB beam, 6 OC iterations, snapshots every 4."""
    folder = tmp_path_factory.mktemp("run")
    config = write_config(folder, edit(SMALL_MBB, "every = 0", "every = 4"))
    result = run("optimize", config, "--out", folder / "out")
    assert result.exit_code == 0, result.output
    return folder / "out", result.output


def test_sensitivity_at_a_design_goes_through_the_interpolation(finished_run, tmp_path):
    """At the run's final design, the compliance is the run's last objective, and the
    density gradient obeys Euler's identity for C(s) (homogeneous of degree −1 in the
    stiffness scale s = s_min + ρ³ (1 − s_min)): Σ s_e / s'(ρ_e) ∂C/∂ρ_e = −C."""
    folder, _ = finished_run
    out = tmp_path / "sens"
    result = run("sensitivity", folder / "config.toml", "--wrt", "density", "--design",
                 folder, "--out", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "sensitivity.json").read_text())
    assert summary["value"] == pytest.approx(float(history(folder)[-1]["objective"]),
                                             rel=1e-12)
    assert summary["interpolation"] == "simp 3"
    assert summary["design"] == str(folder / "design.vtu")
    rho = cell_field(out / "sensitivity.vtu", "density")
    np.testing.assert_allclose(rho, cell_field(folder / "design.vtu", "density"), rtol=1e-15)
    gradient = cell_field(out / "sensitivity.vtu", "d_compliance_d_density")
    s_min = 1e-9
    scale, slope = s_min + rho**3 * (1 - s_min), 3 * rho**2 * (1 - s_min)
    assert np.sum(scale / slope * gradient) == pytest.approx(-summary["value"], rel=1e-8)


def test_sensitivity_at_a_checkpoint_is_the_next_iteration(finished_run, tmp_path):
    """The checkpoint's design, evaluated, is what iteration 7 of the resumed run reports."""
    folder, _ = finished_run
    out = tmp_path / "sens"
    result = run("sensitivity", folder / "config.toml", "--wrt", "E", "--design",
                 folder / "checkpoint.npz", "--out", out)
    assert result.exit_code == 0, result.output
    value = json.loads((out / "sensitivity.json").read_text())["value"]
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    for name in ("config.toml", "checkpoint.npz"):
        (resumed / name).write_bytes((folder / name).read_bytes())
    result = run("optimize", resumed / "config.toml", "--out", resumed, "--resume",
                 "--max-iter", 7)
    assert result.exit_code == 0, result.output
    assert float(history(resumed)[-1]["objective"]) == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize(("what", "message"), [
    ("checkpoint with a plain config", "give the run's config.toml as CONFIG"),
    ("another mesh", "belongs to another mesh"),
    ("no density", "has no cell field 'density'"),
    ("density 1.5", "the density must be one value in [0, 1] per cell (found"),
])
def test_sensitivity_design_errors(what, message, finished_run, tmp_path):
    folder, _ = finished_run
    plain = write_config(tmp_path, SMALL_MBB.split("[objective]")[0]
                         + '[objective]\ntype = "compliance"\n')
    if what == "checkpoint with a plain config":
        args = [plain, "--design", folder / "checkpoint.npz"]
    elif what == "another mesh":
        args = [write_config(tmp_path, edit(SMALL_MBB, "cells = [24, 8]", "cells = [12, 4]"),
                             "coarse.toml"), "--design", folder]
    else:
        mesh = meshio.read(folder / "design.vtu")
        fields = {} if what == "no density" else {
            "density": [np.full(len(mesh.cells[0].data), 1.5)]}
        meshio.write(tmp_path / "bare.vtu", meshio.Mesh(mesh.points, mesh.cells,
                                                        cell_data=fields))
        args = [plain, "--design", tmp_path / "bare.vtu"]
    result = run("sensitivity", *args, "--wrt", "density", "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "out").exists()


def test_design_vtu_holds_the_optimizers_sensitivities(tmp_path):
    """After one iteration, design.vtu holds the gradients at the uniform start design; they
    match central finite differences of the design problem."""
    config_path = write_config(tmp_path, edit(SMALL_MBB, "max_iter = 6", "max_iter = 1"))
    assert run("optimize", config_path, "--out", tmp_path / "out").exit_code == 0
    vtu = tmp_path / "out" / "design.vtu"
    problem = build_problem(load_config(config_path))
    x0 = problem.initial_design()
    rng = np.random.default_rng(3)
    for name, response in (("d_compliance_d_design", lambda e: e.objective),
                           ("d_volume_fraction_d_design", lambda e: e.volume_fraction)):
        gradient = cell_field(vtu, name)
        for _ in range(2):
            d = rng.standard_normal(x0.size)
            h = 1e-5
            fd = (response(problem.evaluate(x0 + h * d))
                  - response(problem.evaluate(x0 - h * d))) / (2 * h)
            assert gradient @ d == pytest.approx(fd, rel=1e-6)


def test_the_final_design_ends_the_paraview_series(finished_run):
    folder, _ = finished_run
    steps = [int(e.get("timestep")) for e in ET.parse(folder / "design.pvd").iter("DataSet")]
    assert steps == [4, 6]
    np.testing.assert_array_equal(cell_field(folder / "design_0006.vtu", "density"),
                                  cell_field(folder / "design.vtu", "density"))


def test_a_run_at_its_limit_says_not_converged(finished_run):
    folder, output = finished_run
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["converged"] is False and summary["status"] == "max_iter"
    assert summary["outcome"].startswith("NOT CONVERGED after 6 iterations")
    assert "stop.tol_change = 0.01" in summary["outcome"]
    assert summary["outcome"] in output.splitlines()[-2]


def test_run_optimization_in_memory_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config(write_config(tmp_path))
    before = sorted(tmp_path.rglob("*"))
    result = run_optimization(config, echo=None)
    assert sorted(tmp_path.rglob("*")) == before
    assert result.folder is None and len(result.history) == 6
    assert result.density.shape == (config.mesh.n_cells,)
    assert result.summary["outcome"].startswith("NOT CONVERGED")
    lines = []
    assert run_optimization(config, tmp_path / "out", echo=lines.append).folder == \
        tmp_path / "out"
    assert lines and (tmp_path / "out" / "summary.json").is_file()
    with pytest.raises(ValueError, match="give out=PATH"):
        run_optimization(config, resume=True)


def test_constraint_names_must_be_column_and_field_names(tmp_path):
    text = SMALL_MBB.replace("[constraints]\nvolume_fraction = 0.5", (
        '[constraints]\nvolume_fraction = 0.5\n[[constraints.extra]]\ntype = "compliance"\n'
        'name = "max stress"\nlimit = 10.0'))
    with pytest.raises(ConfigError, match="constraints.extra\\[0\\].name = \"max stress\""):
        load_config(write_config(tmp_path, text))

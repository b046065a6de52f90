"""The ``fesens`` command line, driven through click's CliRunner and as a subprocess."""

import subprocess
import sys
from pathlib import Path

import meshio
import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from fesens.cli import cli


def test_info_lists_solvers_and_blas():
    result = CliRunner().invoke(cli, ["info"])
    assert result.exit_code == 0, result.output
    assert "superlu" in result.output and "BLAS" in result.output


def test_demo_writes_vtu_and_png(tmp_path):
    out = tmp_path / "demo"
    result = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "reaction on 'top'" in result.output
    mesh = meshio.read(out / "lbracket.vtu")
    assert {"displacement"} <= set(mesh.point_data)
    assert {"von_mises"} <= set(mesh.cell_data)
    with Image.open(out / "lbracket_von_mises.png") as image:
        assert image.size[0] > 200


def test_demo_prints_the_displacement_magnitude_and_draws_the_nodal_stress(tmp_path,
                                                                            monkeypatch):
    """``max |u|`` is the largest displacement magnitude (not a component); the picture
    draws the recovered nodal von Mises stress, its color bar ending at the title's peak."""
    import fesens.plotting.fields as fields

    drawn = []
    monkeypatch.setattr(fields, "save_figure", lambda figure, path: drawn.append(figure) or path)
    out = tmp_path / "demo"
    result = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    mesh = meshio.read(out / "lbracket.vtu")
    magnitude = np.linalg.norm(mesh.point_data["displacement"], axis=1).max()
    assert f"max |u| = {magnitude:.4g} mm" in result.output
    (figure,) = drawn
    field, bar = figure.axes
    (shaded,) = field.collections
    stress = mesh.point_data["nodal_von_mises"]
    np.testing.assert_allclose(shaded.get_array(), stress)  # one value per node
    assert f"peak {stress.max():.3g} MPa" in field.get_title()
    assert max(bar.get_xlim()) == pytest.approx(stress.max())
    assert f"max von Mises = {stress.max():.4g} MPa" in result.output


def test_demo_refuses_to_overwrite_without_force(tmp_path):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "keep.txt").write_text("previous results")
    result = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert result.exit_code == 2
    assert "--force" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize("args", [["--version"], ["demo", "--help"]])
def test_console_entry_point_runs(args):
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "cli.py", *args], capture_output=True, text=True,
                            check=False, cwd=root)
    assert result.returncode == 0, result.stderr

"""``[manufacturing]`` and ``[design] initial`` from the command line, grayness in the
history and the summary, and the shape files of the final design."""

import json

import meshio
import numpy as np
import pytest
from cli_helpers import SMALL_MBB, edit, history, run, write_config

from fesens.config import preset_text


def optimize(tmp_path, text: str, *args):
    out = tmp_path / "out"
    result = run("optimize", write_config(tmp_path, text), "--out", out, *args)
    return result, out


#: A cantilever 24 x 8, clamped left, loaded at its right mid-height: symmetric about y = 4.
CANTILEVER = edit(edit(SMALL_MBB, '''[[supports]]
group = "left"
components = ["x"]

[[supports]]
point = [24.0, 0.0]
components = ["y"]
''', '''[[supports]]
group = "left"
'''), "point = [0.0, 8.0]", "point = [24.0, 4.0]")


@pytest.mark.parametrize("table, message", [
    ('symmetry = ["x"]', "manufacturing.symmetry"),  # the load and supports do not matter,
    ('symmetry = ["z"]', "manufacturing.symmetry"),  # but a 2D mesh has no z axis
    ('extrusion = "up"', "manufacturing.extrusion"),
    ('overhang = "+z"', "manufacturing.overhang"),
    ('overhang = "up"', "manufacturing.overhang"),
    ("overhang_p = 20.0", "manufacturing.overhang_p"),
])
def test_a_bad_manufacturing_key_exits_2_naming_it(tmp_path, table, message):
    result, out = optimize(tmp_path, SMALL_MBB + f"\n[manufacturing]\n{table}\n")
    if table == 'symmetry = ["x"]':  # a rectangle is symmetric about x = 12: accepted
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2, result.output
    assert message in result.output and not out.exists()


def test_a_symmetry_plane_that_does_not_map_the_mesh_onto_itself_is_refused(tmp_path):
    leaning = edit(SMALL_MBB, 'cells = [24, 8]', 'cells = [24, 8]\ncell_type = "tri3"')
    result, _ = optimize(tmp_path, leaning + '\n[manufacturing]\nsymmetry = ["x"]\n')
    # tri3 cells of a rectangle lean one way: their centroids have no mirror image
    assert result.exit_code == 2 and "manufacturing.symmetry" in result.output
    assert "no mirror image" in result.output


def test_extrusion_and_overhang_on_an_unstructured_mesh_exit_2(tmp_path):
    tri = edit(SMALL_MBB, 'cells = [24, 8]', 'cells = [24, 8]\ncell_type = "tri3"')
    for table in ('extrusion = "x"', 'overhang = "+y"'):
        result, _ = optimize(tmp_path, tri + f"\n[manufacturing]\n{table}\n")
        assert result.exit_code == 2, result.output
        assert table.split()[0] in result.output and "structured mesh" in result.output


def test_a_design_map_with_the_sensitivity_filter_exits_2(tmp_path):
    text = edit(SMALL_MBB, 'type = "density"', 'type = "sensitivity"')
    result, _ = optimize(tmp_path, text + '\n[manufacturing]\nsymmetry = ["y"]\n')
    assert result.exit_code == 2 and "filter.type" in result.output


def test_a_symmetric_run_is_exactly_symmetric_in_design_vtu(tmp_path):
    result, out = optimize(tmp_path, CANTILEVER + '\n[manufacturing]\nsymmetry = ["y"]\n')
    assert result.exit_code == 0, result.output
    density = meshio.read(out / "design.vtu").cell_data["density"][0].reshape(8, 24)
    # mirrored cells share one design variable, so they are equal to the last bit before
    # the filter; the filter's weighted sums of a cell and of its image add the same
    # terms in another order (measured: up to 2.2e-16 apart)
    np.testing.assert_allclose(density, density[::-1], rtol=0, atol=1e-15)
    assert np.ptp(density) > 0.3  # a design, not a uniform field
    sensitivity = meshio.read(out / "design.vtu").cell_data["d_compliance_d_design"][0]
    assert np.all(sensitivity < 0)  # every cell shows its group's derivative


def test_an_extruded_run_is_constant_along_its_axis(tmp_path):
    result, out = optimize(tmp_path, CANTILEVER + '\n[manufacturing]\nextrusion = "x"\n')
    assert result.exit_code == 0, result.output
    density = meshio.read(out / "design.vtu").cell_data["density"][0].reshape(8, 24)
    # the density filter reaches beyond the ends of a column: the filtered field is
    # constant along x up to the filter's boundary effect only
    np.testing.assert_allclose(density[:, 2:-2], density[:, [2]] * np.ones((1, 20)), atol=1e-12)


def test_grayness_is_100_for_a_uniform_half_and_a_history_column(tmp_path):
    result, out = optimize(tmp_path, SMALL_MBB, "--max-iter", 3)
    assert result.exit_code == 0, result.output
    rows = history(out)
    assert float(rows[0]["grayness"]) == pytest.approx(100.0)  # the start: ρ = 0.5
    summary = json.loads((out / "summary.json").read_text())
    assert 0 < summary["grayness"] < 100
    assert summary["grayness"] == pytest.approx(float(rows[-1]["grayness"]))


def test_an_initial_value_starts_the_run_there(tmp_path):
    text = SMALL_MBB.replace("[objective]", "[design]\ninitial = 1.0\n\n[objective]")
    result, out = optimize(tmp_path, text, "--max-iter", 1)
    assert result.exit_code == 0, result.output
    first = history(out)[0]
    assert float(first["volume"]) == pytest.approx(1.0)
    assert float(first["grayness"]) == pytest.approx(0.0, abs=1e-9)  # a 0/1 design


def test_an_initial_design_from_an_earlier_run_continues_from_its_density(tmp_path):
    result, first = optimize(tmp_path, SMALL_MBB)
    assert result.exit_code == 0
    earlier = meshio.read(first / "design.vtu").cell_data["density"][0]
    text = SMALL_MBB.replace("[objective]", f'[design]\ninitial = "{first}"\n\n[objective]')
    out = tmp_path / "second"
    result = run("optimize", write_config(tmp_path, text, "second.toml"), "--out", out,
                 "--max-iter", 1)
    assert result.exit_code == 0, result.output
    # the run's first design variables are the earlier densities: its volume is theirs
    # filtered once more (the density filter keeps the mean away from the boundary)
    assert float(history(out)[0]["volume"]) == pytest.approx(earlier.mean(), rel=0.02)
    assert float(history(out)[0]["grayness"]) < 90


@pytest.mark.parametrize("value, message", [
    ("1.5", "design.initial = 1.5 is not allowed"),
    ('"missing.vtu"', "no such file"),
    ("true", "design.initial = true is not allowed"),
])
def test_a_bad_initial_design_exits_2(tmp_path, value, message):
    text = SMALL_MBB.replace("[objective]", f"[design]\ninitial = {value}\n\n[objective]")
    result, out = optimize(tmp_path, text)
    assert result.exit_code == 2 and message in result.output and not out.exists()


def test_an_initial_design_of_another_mesh_or_out_of_range_exits_2(tmp_path):
    result, first = optimize(tmp_path, SMALL_MBB, "--max-iter", 1)
    assert result.exit_code == 0
    other = edit(SMALL_MBB, "cells = [24, 8]", "cells = [12, 4]")
    text = other.replace("[objective]", f'[design]\ninitial = "{first}"\n\n[objective]')
    result = run("optimize", write_config(tmp_path, text, "b.toml"), "--out", tmp_path / "b")
    assert result.exit_code == 2 and "design.initial" in result.output
    vtu = meshio.read(first / "design.vtu")
    vtu.cell_data = {"density": [vtu.cell_data["density"][0] * 3.0]}
    meshio.write(tmp_path / "big.vtu", vtu)
    text = SMALL_MBB.replace("[objective]", '[design]\ninitial = "big.vtu"\n\n[objective]')
    result = run("optimize", write_config(tmp_path, text, "c.toml"), "--out", tmp_path / "c")
    assert result.exit_code == 2 and "must be one value in [0, 1]" in result.output


def test_a_2d_run_writes_an_outline_whose_area_is_the_solid_area(tmp_path):
    out = tmp_path / "mbb"
    result = run("optimize", "--preset", "mbb", "--out", out, "--quiet")  # 144 iterations
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    shape = summary["shape"]
    assert shape["file"] == "design_outline.svg" and (out / "design_outline.svg").is_file()
    density = meshio.read(out / "design.vtu").cell_data["density"][0]
    assert summary["grayness"] < 40
    # unit cells: the solid area is the count of cells above 0.5 (measured: 614.4 inside
    # the outline, 612 cells above 0.5, Σ ρ = 600)
    assert shape["area"] == pytest.approx(np.count_nonzero(density > 0.5), rel=0.01)
    assert shape["area"] == pytest.approx(density.sum(), rel=0.05)
    # longer than the beam's outer edges, shorter than one edge per solid cell
    assert 2 * (60 + 20) < shape["length"] < np.count_nonzero(density > 0.5)


def test_a_3d_run_writes_a_watertight_stl_of_the_solid_volume_and_its_picture(tmp_path):
    pytest.importorskip("trimesh")
    pytest.importorskip("skimage")
    import trimesh
    text = preset_text("cantilever3d")
    for old, new in (("size = [30.0, 10.0, 10.0]", "size = [12.0, 4.0, 4.0]"),
                     ("cells = [30, 10, 10]", "cells = [12, 4, 4]"),
                     ("min = [30.0, 0.0, 0.0], max = [30.0, 0.0, 10.0]",
                      "min = [12.0, 0.0, 0.0], max = [12.0, 0.0, 4.0]"),
                     ("volume_fraction = 0.15", "volume_fraction = 0.4")):
        text = edit(text, old, new)
    result, out = optimize(tmp_path, text, "--max-iter", 30)
    assert result.exit_code == 0, result.output
    surface = trimesh.load(out / "design.stl")
    assert surface.is_watertight
    density = meshio.read(out / "design.vtu").cell_data["density"][0]
    solid = float(np.count_nonzero(density > 0.5))  # unit cells
    # the isosurface lies within half a cell of the solid cells' faces
    assert abs(surface.volume - solid) <= 0.5 * surface.area
    summary = json.loads((out / "summary.json").read_text())
    assert summary["shape"]["watertight"] is True
    assert summary["shape"]["volume"] == pytest.approx(surface.volume, rel=1e-6)
    assert (out / "design_stl.png").stat().st_size > 10_000


def test_the_overhang_preset_converges_to_a_self_supporting_design(tmp_path):
    """Langelaar (2017) prints the MBB beam upwards: every cell rests on the layer below."""
    result = run("optimize", "--preset", "overhang", "--out", tmp_path / "o", "--max-iter", 5)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "o" / "design_outline.svg").is_file()


def test_manufacturing_keys_under_mpirun_exit_2_naming_the_key(tmp_path, monkeypatch):
    import fesens.config.manufacturing as manufacturing
    from fesens.mpi import World

    # the config is checked before any rank starts PETSc: a launch of two ranks is enough
    monkeypatch.setattr(manufacturing, "launched", lambda: World(0, 2))
    result, out = optimize(tmp_path, CANTILEVER + '\n[manufacturing]\nsymmetry = ["y"]\n')
    assert result.exit_code == 2, result.output
    assert "manufacturing.symmetry is not available under mpirun" in result.output

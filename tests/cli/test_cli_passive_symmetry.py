"""Passive regions under ``[manufacturing]`` symmetry and extrusion: a passive set the map
takes onto itself (solid onto solid, void onto void) runs and gives a design that keeps the
map; any other is refused at check time (exit 2, one line naming both keys and the fix,
nothing written), since the passive values would break the tie the user asked for."""

import meshio
import numpy as np
import pytest
from cli_helpers import SMALL_MBB, edit, run, write_config

#: The 24 x 8 cantilever of ``small_mbb.toml`` clamped left and loaded at its right
#: mid-height: its data are symmetric about y = 4.
CANTILEVER = edit(edit(SMALL_MBB, '''[[supports]]
group = "left"
components = ["x"]

[[supports]]
point = [24.0, 0.0]
components = ["y"]
''', '''[[supports]]
group = "left"
'''), "point = [0.0, 8.0]", "point = [24.0, 4.0]")


def passive(kind: str, y0: float, y1: float, x0: float = 10.0, x1: float = 14.0) -> str:
    """A ``[[design.passive]]`` box of cells (by their centroids)."""
    return (f'\n[[design.passive]]\ntype = "{kind}"\n'
            f"region = {{ min = [{x0}, {y0}], max = [{x1}, {y1}] }}\n")


def optimize(tmp_path, text: str, *args):
    out = tmp_path / "out"
    result = run("optimize", write_config(tmp_path, text), "--out", out, *args)
    return result, out


def refused(result, out, *fragments: str) -> str:
    """The one error line of a run refused at check time, holding every fragment; nothing
    written."""
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert not out.exists()
    return lines[0]


SYMMETRY = '\n[manufacturing]\nsymmetry = ["y"]\n'


def test_a_one_sided_passive_solid_under_symmetry_is_refused(tmp_path):
    result, out = optimize(tmp_path, CANTILEVER + SYMMETRY + passive("solid", 0.0, 2.0))
    line = refused(result, out, 'manufacturing.symmetry = ["y"]', "design.passive[0]",
                   "passive solid", "mirror the passive region",
                   "or remove manufacturing.symmetry")
    # the image cells of the region's two rows (y = 0.5, 1.5) are at y = 7.5, 6.5
    assert "centroid [10.5, 6.5]" in line and "is designed" in line


def test_opposite_passive_solid_and_void_under_symmetry_are_refused(tmp_path):
    text = CANTILEVER + SYMMETRY + passive("solid", 0.0, 2.0) + passive("void", 6.0, 8.0)
    result, out = optimize(tmp_path, text)
    refused(result, out, "manufacturing.symmetry", "passive solid (design.passive[0])",
            "passive void (design.passive[1])")


def test_a_passive_region_that_is_not_whole_columns_under_extrusion_is_refused(tmp_path):
    text = CANTILEVER + '\n[manufacturing]\nextrusion = "y"\n' + passive("solid", 0.0, 2.0)
    result, out = optimize(tmp_path, text)
    refused(result, out, 'manufacturing.extrusion = "y"', "design.passive[0]",
            "extend the passive region", "or remove manufacturing.extrusion")


def test_a_cell_both_passive_solid_and_void_is_refused_naming_both_regions(tmp_path):
    text = CANTILEVER + passive("solid", 0.0, 2.0) + passive("void", 1.0, 3.0)
    result, out = optimize(tmp_path, text)
    # rows y = 1.5 of x 10..14: 4 cells in both
    refused(result, out, 'design.passive[1] (type = "void")',
            'design.passive[0] (type = "solid")', "share 4 cells")


@pytest.mark.parametrize("kind", ["solid", "void"])
def test_a_mirrored_passive_set_runs_to_a_symmetric_design(tmp_path, kind):
    text = CANTILEVER + SYMMETRY + passive(kind, 0.0, 2.0) + passive(kind, 6.0, 8.0)
    result, out = optimize(tmp_path, text, "--max-iter", 4)
    assert result.exit_code == 0, result.output
    density = meshio.read(out / "design.vtu").cell_data["density"][0].reshape(8, 24)
    np.testing.assert_allclose(density, density[::-1], rtol=0, atol=1e-6)
    held = 1.0 if kind == "solid" else 0.0
    assert np.all(density[[0, 1, 6, 7], 10:14] == held)
    assert np.ptp(density[2:6]) > 0.1  # a design, not a uniform field

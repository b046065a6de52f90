"""Every picture fesens draws, and that drawing them leaves matplotlib's backend alone:
no pyplot, no backend selected, a user's own choice kept (run in a fresh interpreter, as the
test process may have imported pyplot already)."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image

from fesens.mesh import box
from fesens.plotting import new_figure, plot_cell_field, save_figure, solid_surface

DRAW_EVERYTHING = textwrap.dedent("""
    import sys
    import matplotlib
    {choose}
    import numpy as np
    import fesens.plotting as plotting
    from fesens.mesh import box, rectangle

    square, cube = rectangle(4, 3, 4.0, 3.0), box(2, 2, 2, 1.0, 1.0, 1.0)
    out = sys.argv[1]
    plotting.plot_cell_field(square, np.arange(12.0), out + "/field.png",
                             displacement=np.ones((20, 2)))
    plotting.plot_density(square, np.linspace(0, 1, 12), out + "/density2d.png")
    plotting.plot_density(cube, np.linspace(0, 1, 8), out + "/density3d.png")
    plotting.plot_convergence([dict(iteration=i, objective=1.0 / i, volume=0.5, change=0.1)
                               for i in range(1, 4)], out + "/convergence.png")
    print("pyplot" if "matplotlib.pyplot" in sys.modules else "no pyplot",
          matplotlib.rcParams._get_backend_or_none())
""")


def draw_everything(tmp_path, choose: str = "") -> str:
    script = DRAW_EVERYTHING.format(choose=choose)
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    for name in ("field", "density2d", "density3d", "convergence"):
        with Image.open(tmp_path / f"{name}.png") as image:
            assert image.size[0] > 100
    return result.stdout.strip()


def test_drawing_selects_no_backend_and_imports_no_pyplot(tmp_path):
    assert draw_everything(tmp_path) == "no pyplot None"


def test_drawing_keeps_the_users_backend(tmp_path):
    assert draw_everything(tmp_path, 'matplotlib.use("svg")') == "no pyplot svg"


def test_save_figure_writes_atomically(tmp_path):
    figure = new_figure(figsize=(2, 2))
    figure.subplots().plot([0, 1], [1, 0])
    path = save_figure(figure, tmp_path / "sub" / "line.png")
    assert path == tmp_path / "sub" / "line.png"
    assert [p.name for p in path.parent.iterdir()] == ["line.png"]  # no temporary file left


def test_solid_surface_drops_faces_shared_by_solid_cells():
    cube = box(2, 1, 1, 2.0, 1.0, 1.0, cell_type="hex8")
    assert solid_surface(cube, np.array([True, True])).shape == (10, 4, 3)
    assert solid_surface(cube, np.array([True, False])).shape == (6, 4, 3)


def test_cell_field_rejects_3d_meshes(tmp_path):
    cube = box(1, 1, 1, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="2D meshes only"):
        plot_cell_field(cube, np.zeros(cube.n_cells), tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()

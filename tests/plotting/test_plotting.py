"""Every picture fesens draws, and that drawing them leaves matplotlib's backend alone:
no pyplot, no backend selected, a user's own choice kept (run in a fresh interpreter, as the
test process may have imported pyplot already)."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from matplotlib.collections import TriMesh
from matplotlib.colors import Normalize, SymLogNorm
from PIL import Image

from fesens.mesh import box, rectangle
from fesens.physics import Elasticity, HeatConduction
from fesens.plotting import (
    boundary_markers,
    design,
    fields,
    new_figure,
    plot_cell_field,
    plot_convergence,
    plot_density,
    plot_nodal_field,
    plot_truss,
    save_figure,
    scales,
    solid_surface,
)
from fesens.plotting.scales import linear_scale, symmetric_log_scale

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
                            text=True, timeout=600)
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


def drawn_figure(monkeypatch, module, draw, *args, **kwargs):
    """The figure ``draw(*args, **kwargs)`` of ``module`` saves (captured, not written)."""
    figures = []
    monkeypatch.setattr(module, "save_figure", lambda figure, path: figures.append(figure))
    draw(*args, **kwargs)
    (figure,) = figures
    return figure


def bulk_and_two_outliers(sign: float = 0.0) -> np.ndarray:
    """400 values spanning 1e-3..10 (of both signs, or of one ``sign``), two of them 1e6."""
    rng = np.random.default_rng(0)
    values = 10.0 ** rng.uniform(-3.0, 1.0, 400)
    values *= np.sign(sign) if sign else rng.choice([-1.0, 1.0], values.size)
    values[[17, 230]] = 1e6 * (np.sign(sign) if sign else np.array([1.0, -1.0]))
    return values


def test_symmetric_log_scale_is_set_by_the_bulk_not_by_two_outliers():
    values = bulk_and_two_outliers()
    scale = symmetric_log_scale(values)
    assert isinstance(scale.norm, SymLogNorm)
    assert 9.0 < scale.norm.vmax <= 10.0 and scale.norm.vmin == -scale.norm.vmax
    assert scale.norm.linthresh < 0.01  # the small values get colors of their own
    bulk = np.delete(values, [17, 230])
    shades = scale.norm(bulk)
    assert shades.min() < 0.05 and shades.max() > 0.95  # the bulk uses the whole color map
    assert scale.signed and scale.extend == "both"
    assert "symmetric log" in scale.description and "99th percentile" in scale.description


def test_symmetric_log_scale_of_a_negative_field_ends_at_zero():
    scale = symmetric_log_scale(bulk_and_two_outliers(sign=-1.0))
    assert scale.norm.vmax == 0.0 and -10.0 <= scale.norm.vmin < -9.0
    assert not scale.signed and scale.extend == "min"


def test_symmetric_log_scale_of_a_narrow_field_is_linear():
    scale = symmetric_log_scale(np.linspace(1.0, 2.0, 50))
    assert type(scale.norm) is Normalize and scale.description == ""


def test_linear_scale_ends_at_the_peak_and_compresses_what_lies_above_its_percentile():
    values = bulk_and_two_outliers(sign=1.0)
    scale = linear_scale(values, clip_percentile=99.0)
    assert scale.norm.vmax == values.max() and scale.extend == "neither"
    assert scale.ticks[-1] == values.max()  # the color bar's top is labelled with the peak
    assert scale.norm(values.max()) == pytest.approx(1.0)
    knee = np.percentile(values, 99.0)
    assert scale.norm(knee) == pytest.approx(1.0 - scales.COMPRESSED_TOP)
    bulk = scale.norm(values[values <= knee])  # linear, from the smallest value
    np.testing.assert_allclose(bulk, (values[values <= knee] - values.min())
                               * (1.0 - scales.COMPRESSED_TOP) / (knee - values.min()))
    # the compressed part is linear too, and the inverse (the color bar's axis) undoes it
    top = values[values >= knee]
    np.testing.assert_allclose(scale.norm(top), 1.0 - scales.COMPRESSED_TOP + (top - knee)
                               * scales.COMPRESSED_TOP / (values.max() - knee))
    np.testing.assert_allclose(scale.norm.inverse(scale.norm(values)), values, rtol=1e-9)
    assert scale.description.startswith("linear to the 99th percentile")
    assert linear_scale(np.arange(4.0)).description == ""


def colour_bar_of(figure):
    """The color bar's axes and the artist it describes, of a field picture."""
    field, bar = figure.axes
    return field, bar, bar._colorbar.mappable


@pytest.mark.parametrize("cell_type", ["tri3", "tri6", "quad4", "quad8", "quad9"])
def test_nodal_field_is_shaded_between_the_nodes_up_to_its_peak(monkeypatch, cell_type):
    """Every node's value is drawn (Gouraud shading of linear triangles through all the
    cells' nodes), and the color bar reaches the largest value even with a clipped scale."""
    mesh = rectangle(8, 4, 2.0, 1.0, cell_type=cell_type)
    x, y = mesh.points.T
    values = 1.0 + x * y
    values[np.argmax(values)] = 50.0  # a singular peak
    figure = drawn_figure(monkeypatch, fields, plot_nodal_field, mesh, values, "unused.png",
                          label="T [K]", clip_percentile=95.0)
    field, bar, drawn = colour_bar_of(figure)
    assert isinstance(drawn, TriMesh)  # tripcolor(..., shading="gouraud")
    np.testing.assert_array_equal(drawn.get_array(), values)
    triangles = drawn.get_paths()  # one path per triangle
    assert len(triangles) == mesh.n_cells * len(fields.LINEAR_TRIANGLES[cell_type])
    assert np.unique(drawn._triangulation.triangles).size == mesh.n_points
    assert max(bar.get_xlim()) >= values.max() and drawn.norm.vmax == values.max()
    assert bar.get_xlabel() == "T [K]"
    caption = [text.get_text() for text in bar.texts]
    assert caption == ["color scale: linear to the 95th percentile "
                       f"({np.percentile(values, 95.0):.3g}), compressed above it up to "
                       "the largest value"]


def test_nodal_field_refuses_cell_values(tmp_path):
    mesh = rectangle(4, 2)
    with pytest.raises(ValueError, match=r"shape \(15,\) \(one per node\)"):
        plot_nodal_field(mesh, np.zeros(mesh.n_cells), tmp_path / "x.png")


def test_cell_field_on_a_symmetric_log_scale(monkeypatch):
    square = rectangle(20, 20, 1.0, 1.0)
    figure = drawn_figure(monkeypatch, fields, plot_cell_field, square,
                          bulk_and_two_outliers(), "unused.png", label="dJ/drho",
                          color_scale="symlog", clip_percentile=99.0)
    field, colorbar = figure.axes
    (cells,) = field.collections
    assert isinstance(cells.norm, SymLogNorm) and cells.norm.vmax <= 10.0
    assert cells.get_cmap().name == "RdBu_r"  # both signs: diverging, centred on 0
    assert colorbar.get_xlabel() == "dJ/drho"  # short: the scale is in the caption
    (caption,) = colorbar.texts
    assert caption.get_text().startswith("color scale: symmetric log, linear within ±")
    assert (field.get_xlabel(), field.get_ylabel()) == ("x", "y")


def stalled_history(n: int = 20) -> list[dict]:
    """A run whose design change sits at 0.085..0.1 (the move limit) for ``n`` iterations."""
    return [dict(iteration=i, objective=100.0 / i, volume=0.5, change=0.1 - 0.015 * (i % 2))
            for i in range(1, n + 1)]


def test_convergence_of_a_stalled_run_shows_the_tolerance_and_says_not_converged(monkeypatch):
    figure = drawn_figure(monkeypatch, design, plot_convergence, stalled_history(), "unused.png",
                          tol_change=0.01, converged=False, max_iter=20)
    objective_axis, _, change_axis = figure.axes
    assert objective_axis.get_title() == "not converged (iteration limit 20 reached)"
    (tolerance,) = [line for line in change_axis.get_lines()
                    if np.all(np.asarray(line.get_ydata()) == 0.01)]
    assert tolerance.get_label() == "stopping tolerance 0.01"
    low, high = change_axis.get_ylim()
    assert low < 0.01 and high > 0.1 and np.log10(high / low) >= 1.0


def test_convergence_of_a_converged_run_spans_a_decade(monkeypatch):
    history = stalled_history(12)
    history[-1]["change"] = 0.0099
    figure = drawn_figure(monkeypatch, design, plot_convergence, history, "unused.png",
                          tol_change=0.0095, converged=True, max_iter=300)
    assert figure.axes[0].get_title() == "converged at iteration 12"
    low, high = figure.axes[2].get_ylim()
    assert low < 0.0095 and np.log10(high / low) >= 1.0
    plain = drawn_figure(monkeypatch, design, plot_convergence, history, "unused.png")
    assert plain.axes[0].get_title() == ""


def cantilever(mesh):
    """Clamped on the left face, a downward traction on the right face, gravity everywhere."""
    plane = {"plane": "stress"} if mesh.dim == 2 else {}
    model = Elasticity(mesh, E=1.0, nu=0.3, **plane).fix("left")
    model.traction("right", [0.0, -1.0, 0.0][: mesh.dim])
    model.body_force([0.0, -0.1, 0.0][: mesh.dim], name="gravity")  # everywhere: not drawn
    return model


@pytest.mark.parametrize("mesh", [rectangle(6, 3, 2.0, 1.0), box(4, 2, 2, 2.0, 1.0, 1.0)],
                         ids=["2d", "3d"])
def test_boundary_markers_are_the_clamped_and_the_loaded_nodes(mesh):
    markers = boundary_markers(cantilever(mesh))
    supports, (points, vectors) = markers["supports"], markers["loads"]
    assert np.all(supports[:, 0] == 0.0)
    assert len(supports) == np.count_nonzero(mesh.points[:, 0] == 0.0)
    assert np.all(points[:, 0] == 2.0)  # the traction's face only, not the body force
    assert len(points) == np.count_nonzero(mesh.points[:, 0] == 2.0)
    assert vectors.shape == points.shape and np.all(vectors[:, 1] < 0.0)
    assert np.allclose(np.delete(vectors, 1, axis=1), 0.0)
    assert np.isclose(vectors[:, 1].sum(), -1.0)  # the traction on the unit-area face
    assert markers["volume_loads"] == ("gravity",)


def test_boundary_markers_of_a_scalar_field_have_no_direction():
    square = rectangle(4, 4, 1.0, 1.0)
    model = HeatConduction(square, 1.0).fix("left")
    model.point_load([1.0, 1.0], 2.0)
    markers = boundary_markers(model)
    points, vectors = markers["loads"]
    assert vectors is None and np.allclose(points, [[1.0, 1.0]])


def test_3d_design_has_two_labelled_views_with_supports_and_loads(monkeypatch):
    cube = box(4, 2, 2, 2.0, 1.0, 1.0)
    figure = drawn_figure(monkeypatch, design, plot_density, cube, np.ones(cube.n_cells),
                          "unused.png", **boundary_markers(cantilever(cube)))
    views = [ax for ax in figure.axes if ax.name == "3d"]
    assert len(views) == 2
    assert {(ax.elev, ax.azim) for ax in views} == set(design.VIEWS_3D)
    for ax in views:
        # plot coordinates (x, z, y): the mesh's y axis is drawn vertical
        assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_zlabel()) == ("x", "z", "y")
        assert ax._axis3don  # axes drawn (set_axis_off clears it)
        assert {"supports", "loads"} <= {a.get_label() for a in ax.get_children()}


def test_2d_design_has_labelled_axes_supports_and_loads(monkeypatch):
    square = rectangle(6, 3, 2.0, 1.0)
    figure = drawn_figure(monkeypatch, design, plot_density, square,
                          np.ones(square.n_cells), "unused.png",
                          **boundary_markers(cantilever(square)))
    ax = figure.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x", "y")
    (supports,) = [c for c in ax.collections if c.get_label() == "supports"]
    assert np.all(supports.get_offsets()[:, 0] == 0.0)
    (loads,) = [c for c in ax.collections if c.get_label() == "loads"]
    assert np.all(loads.U == 0.0) and np.all(loads.V < 0.0)
    assert ax.get_ylim()[1] > 1.0  # the arrows' tails above the beam are in view
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert legend == ["volume load gravity (everywhere, not drawn)", "supports", "loads"]


def test_volume_axis_does_not_zoom_into_round_off(monkeypatch):
    """A volume held at its limit to 1e-5 draws as a flat line, not as a wild curve."""
    history = stalled_history()
    for i, record in enumerate(history):
        record["volume"] = 0.5 + 1e-5 * (-1) ** i
    figure = drawn_figure(monkeypatch, design, plot_convergence, history, "unused.png",
                          volume_limit=0.5)
    low, high = figure.axes[1].get_ylim()
    assert high - low >= 0.02 * 0.5 and low < 0.5 < high


def test_a_truss_is_drawn_with_bar_widths_proportional_to_area(tmp_path, monkeypatch):
    """2D and 3D; bars under the threshold are left out; bad areas are refused."""
    from matplotlib.collections import LineCollection

    import fesens.plotting.truss as truss_plot
    from fesens.mesh import ground_structure

    mesh = ground_structure((2, 1), (2.0, 1.0), reach=1.5)
    areas = np.zeros(mesh.n_cells)
    areas[:3] = [1.0, 0.5, 1e-4]
    drawn = {}

    def keep(figure, path, **kwargs):
        drawn["lines"] = [c for c in figure.axes[0].collections if isinstance(c, LineCollection)]
        return save_figure(figure, path, **kwargs)

    monkeypatch.setattr(truss_plot, "save_figure", keep)
    path = truss_plot.plot_truss(mesh, areas, tmp_path / "truss.png",
                                 forces=np.linspace(-1, 1, areas.size))
    (bars,) = drawn["lines"]
    np.testing.assert_allclose(bars.get_linewidths(), [8.0, 4.0])   # 1e-4 < 1e-3 x max: out
    with Image.open(path) as image:
        assert image.size[0] > 100
    tripod = ground_structure((1, 1, 1), (1.0, 1.0, 1.0))
    with Image.open(plot_truss(tripod, np.ones(tripod.n_cells), tmp_path / "t3.png")) as image:
        assert image.size[0] > 100
    with pytest.raises(ValueError, match="finite non-negative"):
        plot_truss(mesh, -areas, tmp_path / "bad.png")


def test_a_truss_with_forces_has_a_legend_for_tension_and_compression(monkeypatch):
    import fesens.plotting.truss as truss_plot
    from fesens.mesh import ground_structure

    mesh = ground_structure((2, 1), (2.0, 1.0), reach=1.5)
    forces = np.linspace(-1, 1, mesh.n_cells)
    figure = drawn_figure(monkeypatch, truss_plot, plot_truss, mesh, np.ones(mesh.n_cells),
                          "unused.png", forces=forces)
    legend = figure.axes[0].get_legend()
    entries = {text.get_text(): handle.get_color()
               for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)}
    assert entries == {"bar in tension": truss_plot.TENSION,
                       "bar in compression": truss_plot.COMPRESSION}
    unstressed = drawn_figure(monkeypatch, truss_plot, plot_truss, mesh, np.ones(mesh.n_cells),
                              "unused.png")
    assert unstressed.axes[0].get_legend() is None  # one colour: nothing to explain


def test_a_3d_face_load_is_a_few_arrows_and_dots_not_an_arrow_per_node(monkeypatch):
    """A traction on a face of 9 x 9 nodes: every loaded node a dot, at most MAX_ARROWS_3D
    arrows spread over the face (its corners among them), each showing the direction."""
    from mpl_toolkits.mplot3d.art3d import Line3DCollection

    from fesens.plotting import markers

    cube = box(8, 8, 8, 1.0, 1.0, 1.0)
    model = Elasticity(cube, E=1.0, nu=0.3).fix("left")
    model.traction("right", [0.0, -1.0, 0.0])
    figure = drawn_figure(monkeypatch, design, plot_density, cube, np.ones(cube.n_cells),
                          "unused.png", **boundary_markers(model))
    figure.canvas.draw()  # 3D collections have their segments once projected
    for ax in [ax for ax in figure.axes if ax.name == "3d"]:
        (arrows,) = [c for c in ax.collections if isinstance(c, Line3DCollection)
                     and c.get_label() == "loads"]
        # each arrow is a shaft and two head lines
        assert len(arrows.get_segments()) == 3 * markers.MAX_ARROWS_3D
        (dots,) = [c for c in ax.collections if c.get_label().startswith("loaded nodes")]
        assert len(dots.get_offsets()) == 81
    face = cube.points[cube.points[:, 0] == 1.0]
    chosen = face[markers.spread_points(face, markers.MAX_ARROWS_3D)]
    corners = {(y, z) for y in (0.0, 1.0) for z in (0.0, 1.0)}
    assert corners <= {(y, z) for _, y, z in chosen}


def study_of(inputs: list[tuple[float, float]]):
    """Results of a two-parameter study, ``y = a² b`` with its gradient, at ``inputs``."""
    from fesens.study.results import StudyResults

    records = [{"sample": k, "inputs": {"a": a, "b": b}, "outputs": {"y": a * a * b},
                "gradients": {"y": {"a": 2 * a * b, "b": a * a}}, "wall_time": 0.0,
                "status": "ok", "error": "", "worker": ""} for k, (a, b) in enumerate(inputs)]
    return StudyResults(records, ["a", "b"])


def test_sweeps_say_what_their_lines_join(monkeypatch):
    """A grid's samples are joined along each parameter; a Latin hypercube's are not (lines
    through samples sorted by one parameter would zig-zag), and the title says so."""
    from matplotlib.lines import Line2D

    from fesens.plotting import study

    def joining_lines(figure):  # the tangents are lines of two points
        return [line for ax in figure.axes for line in ax.get_lines()
                if isinstance(line, Line2D) and len(line.get_xdata()) > 2]

    grid = drawn_figure(monkeypatch, study, study.plot_sweeps,
                        study_of([(a, b) for a in (1.0, 2.0, 3.0) for b in (1.0, 2.0, 3.0)]),
                        "unused.png")
    assert len(joining_lines(grid)) == 2 * 3  # per parameter, one line per other value
    assert grid._suptitle.get_text().startswith("sweeps: blue lines join samples whose other")
    rng = np.random.default_rng(1)
    hypercube = drawn_figure(monkeypatch, study, study.plot_sweeps,
                             study_of(list(zip(rng.permutation(8) + rng.uniform(size=8),
                                               rng.permutation(8) + rng.uniform(size=8),
                                               strict=True))), "unused.png")
    assert joining_lines(hypercube) == []
    assert hypercube._suptitle.get_text().startswith("one dot per sample, no lines: no two")

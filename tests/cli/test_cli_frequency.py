"""``fesens optimize`` of a frequency design: the preset's outputs (the first mode in
design.vtu, mode_1.png, the eigenvalues per iteration and before/after), resume, and the
refusal of ``solve``."""

import json

import meshio
import numpy as np
import pytest
from cli_helpers import history, run
from PIL import Image

COUNT = 4  # the preset's modes


@pytest.fixture(scope="module")
def three_iterations(tmp_path_factory):
    out = tmp_path_factory.mktemp("frequency") / "run"
    result = run("optimize", "--preset", "frequency", "--out", out, "--max-iter", 3)
    assert result.exit_code == 0, result.output
    return out, result.output


def test_the_run_says_what_it_maximizes_and_prints_the_first_frequency(three_iterations):
    _, output = three_iterations
    lines = output.splitlines()
    assert "eigenvalue_ks (maximized), volume ≤ 0.5; DU-OLHOFF 3, density filter" in lines[0]
    assert "frequency_1 23.17" in lines[1]      # the uniform design: the example's number


def test_history_has_the_eigenvalues_and_frequencies_of_each_iteration(three_iterations):
    out, _ = three_iterations
    rows = history(out)
    assert [row["iteration"] for row in rows] == ["1", "2", "3"]
    for row in rows:
        values = [float(row[f"eigenvalue_{i}"]) for i in range(1, COUNT + 1)]
        assert values == sorted(values) and values[0] > 0
        frequencies = [float(row[f"frequency_{i}"]) for i in range(1, COUNT + 1)]
        assert frequencies == pytest.approx(np.sqrt(values) / (2 * np.pi))
        assert -float(row["objective"]) <= values[0] * (1 + 1e-9)   # −KS, a lower bound
    assert float(rows[0]["frequency_1"]) == pytest.approx(23.168058, rel=1e-6)
    assert float(rows[-1]["frequency_1"]) > float(rows[0]["frequency_1"])


def test_design_vtu_has_the_density_and_the_modes(three_iterations):
    out, _ = three_iterations
    design = meshio.read(out / "design.vtu")
    assert {"density", "d_eigenvalue_ks_d_design", "d_volume_fraction_d_design"} <= \
        set(design.cell_data)
    modes = [f"mode_{i}" for i in range(1, COUNT + 1)]
    assert {"displacement", *modes} <= set(design.point_data)
    first = design.point_data["mode_1"]
    assert first.shape[1] in (2, 3) and np.abs(first).max() > 0
    np.testing.assert_array_equal(design.point_data["displacement"], first)
    # the objective's sensitivity is that of KS itself: adding material where the first
    # mode strains the beam raises its eigenvalues; the total derivative is positive here
    assert np.sum(design.cell_data["d_eigenvalue_ks_d_design"][0]) > 0


def test_summary_has_the_eigenvalues_before_and_after_and_the_mode_picture(three_iterations):
    out, _ = three_iterations
    summary = json.loads((out / "summary.json").read_text())
    rows = history(out)
    assert summary["eigenvalues"]["initial"] == pytest.approx(
        [float(rows[0][f"eigenvalue_{i}"]) for i in range(1, COUNT + 1)])
    assert len(summary["eigenvalues"]["final"]) == COUNT
    assert summary["frequencies"]["initial"][0] == pytest.approx(23.168058, rel=1e-6)
    assert summary["frequencies"]["final"][0] > summary["frequencies"]["initial"][0]
    assert "max_von_mises" not in summary          # no static solution to report on
    assert {"mode_1.png", "design.png", "convergence.png"} <= set(summary["files"])
    with Image.open(out / "mode_1.png") as image:
        assert image.size[0] > 300 and image.size[1] > 150


def test_resume_continues_a_frequency_run_as_if_it_had_not_stopped(tmp_path):
    first = run("optimize", "--preset", "frequency", "--out", tmp_path / "a", "--max-iter", 2,
                "-q")
    assert first.exit_code == 0, first.output
    more = run("optimize", "--preset", "frequency", "--out", tmp_path / "a", "--resume",
               "--max-iter", 4)
    assert more.exit_code == 0, more.output
    assert more.output.startswith("resuming frequency from iteration 2")
    once = run("optimize", "--preset", "frequency", "--out", tmp_path / "b", "--max-iter", 4,
               "-q")
    assert once.exit_code == 0
    assert (tmp_path / "a" / "history.csv").read_text() == \
        (tmp_path / "b" / "history.csv").read_text()
    resumed, single = (json.loads((tmp_path / name / "summary.json").read_text())
                       for name in ("a", "b"))
    assert resumed["resumed_from_iteration"] == 2
    assert resumed["eigenvalues"] == single["eigenvalues"]
    again = run("optimize", "--preset", "frequency", "--out", tmp_path / "a", "--resume",
                "--max-iter", 4)                 # finished: only its results are rewritten
    assert again.exit_code == 0 and "has already finished at iteration 4" in again.output
    rewritten = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert rewritten["eigenvalues"] == single["eigenvalues"]


def test_solve_refuses_a_frequency_design_with_the_way_out(tmp_path):
    result = run("solve", "--preset", "frequency", "--out", tmp_path / "s")
    assert result.exit_code == 2
    assert ('objective.type = "eigenvalue_ks" (a frequency design) is run by `fesens '
            'optimize` only') in result.output


def test_force_removes_the_mode_picture_of_a_previous_frequency_run(tmp_path):
    out = tmp_path / "run"
    assert run("optimize", "--preset", "frequency", "--out", out, "--max-iter", 1,
               "-q").exit_code == 0
    assert (out / "mode_1.png").is_file()
    static = run("optimize", "--preset", "mbb", "--out", out, "--max-iter", 1, "--force")
    assert static.exit_code == 0, static.output
    assert not (out / "mode_1.png").exists()
    assert "mode_1.png" not in static.output


def test_pictures_show_the_first_frequency_rising_not_the_internal_objective(tmp_path,
                                                                            monkeypatch):
    """design.png's title and convergence.png's first axis give f1 (maximized: it rises),
    not −KS; the final line names f1 too."""
    import fesens.plotting.design as design

    drawn, save = {}, design.save_figure

    def keep(figure, path):
        drawn[path.name] = figure
        return save(figure, path)

    monkeypatch.setattr(design, "save_figure", keep)
    out = tmp_path / "run"
    result = run("optimize", "--preset", "frequency", "--out", out, "--max-iter", 3)
    assert result.exit_code == 0, result.output
    rows = history(out)
    first = [float(row["frequency_1"]) for row in rows]
    final = json.loads((out / "summary.json").read_text())["frequencies"]["final"][0]
    title = drawn["design.png"].axes[0].get_title()
    assert title.startswith(f"frequency: f1 {final:.5g}, volume") and "eigenvalue" not in title
    objective_axis = drawn["convergence.png"].axes[0]
    assert objective_axis.get_ylabel().startswith("f1 = √λ1 / 2π")
    (line,) = objective_axis.get_lines()
    np.testing.assert_allclose(line.get_ydata(), first)
    assert first[-1] > first[0]
    assert f", f1 {final:.5g}, volume" in result.output.splitlines()[-2]

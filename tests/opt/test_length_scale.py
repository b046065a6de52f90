"""Minimum length scales: the measurement by disk openings on synthetic designs of known
sizes, the prescribed size's filter profile against the density filter itself, and the
robust preset's blueprint against the prescribed size (the same design problem without the
robust formulation falls short of it)."""

import re
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate

from fesens.config import build_optimizer, build_problem, load_preset, parse_config, preset_text
from fesens.mesh import rectangle
from fesens.opt import make_filter, optimize
from fesens.opt.length_scale import (
    FeatureSizes,
    disk,
    member_kernel,
    minimum_size,
    minimum_sizes,
    prescribed_size,
    prescribed_sizes,
)


@pytest.mark.parametrize("roughness", [0, 1])
@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 8])
def test_a_bar_measures_its_width_solid_and_void(width, roughness):
    """A straight bar ``w`` cells wide across a 40 × 30 grid of cells 0.5 wide, along either
    axis, measures ``w`` cells; a slot (a void bar in solid) likewise. The phase beside it
    meets the domain's edge, where it is mirrored: 10 cells to the edge measure 20."""
    mesh = rectangle(40, 30, 20.0, 15.0)
    centroids = mesh.cell_centroids() / 0.5
    for axis, cells in ((0, 40), (1, 30)):
        bar = (centroids[:, axis] > 10) & (centroids[:, axis] < 10 + width)
        beside = min(20, 2 * (cells - 10 - width)) * 0.5
        assert minimum_sizes(mesh, bar.astype(float), roughness=roughness) == \
            FeatureSizes(width * 0.5, beside)
        assert minimum_sizes(mesh, (~bar).astype(float), roughness=roughness) == \
            FeatureSizes(beside, width * 0.5)


def test_a_disk_measures_its_diameter_and_a_spike_is_not_forgiven():
    for diameter in (3, 4, 7, 10):
        phase = np.zeros((30, 30), dtype=bool)
        phase[10:10 + diameter, 8:8 + diameter] = disk(diameter)
        assert minimum_size(phase) == diameter
    blob = np.zeros((40, 40), dtype=bool)
    blob[10:30, 10:30] = disk(20)
    assert minimum_size(blob, roughness=1) == 20
    blob[30:36, 20] = True  # a spike one cell wide, six long
    assert minimum_size(blob, roughness=1) == 1
    square = np.zeros((40, 40), dtype=bool)
    square[10:30, 10:30] = True  # a corner cell lies in no disk but the 3 x 3 square
    assert minimum_size(square) == 3
    assert minimum_size(square, roughness=1) == 10
    assert minimum_sizes(rectangle(4, 2, 4.0, 2.0), np.ones(8)) == FeatureSizes(np.inf, np.inf)


def test_member_profile_is_the_density_filters():
    """The profile across a straight member: the cone kernel integrated along it has the
    cone's volume π r³/3, and the density filter of a member of design variables on a grid
    of unit cells matches it to 1 %."""
    radius = 10.0
    area, _ = integrate.quad(lambda s: float(member_kernel(s, radius)), -radius, radius)
    assert area == pytest.approx(np.pi * radius**3 / 3.0, rel=1e-9)
    mesh = rectangle(80, 30, 80.0, 30.0)
    centroids = mesh.cell_centroids()
    middle = np.abs(centroids[:, 1] - 15.5) < 0.6
    filtered_by = make_filter("density", mesh, radius)
    normalised = lambda s: float(member_kernel(s, radius)) / area  # noqa: E731
    for width in (2, 6):
        member = (np.abs(centroids[:, 0] - 40.0) < width / 2).astype(float)
        filtered = filtered_by(member)
        for s in (0.5, 3.5, 7.5):
            exact, _ = integrate.quad(lambda t, s=s: normalised(s - t), -width / 2, width / 2)
            grid = filtered[middle & np.isclose(centroids[:, 0], 40.0 + s)].mean()
            assert grid == pytest.approx(exact, rel=0.01)


def test_prescribed_size_grows_with_delta_eta_and_is_symmetric():
    """Solid and void sizes agree for thresholds symmetric about 0.5, grow with Δη and scale
    with r; for Δη = 0.25 the blueprint's minimum size is 0.94 r."""
    sizes = [prescribed_sizes(3.0, (0.5 + d, 0.5, 0.5 - d)) for d in (0.05, 0.15, 0.25)]
    for size in sizes:
        assert size.solid == pytest.approx(size.void, rel=1e-9)
    assert sizes[0].solid < sizes[1].solid < sizes[2].solid
    assert prescribed_size(6.0, 0.75) == pytest.approx(2.0 * prescribed_size(3.0, 0.75),
                                                       rel=1e-8)
    assert prescribed_size(1.0, 0.75) == pytest.approx(0.9425, abs=1e-3)
    with pytest.raises(ValueError):
        prescribed_size(3.0, 0.4)


def _final_blueprint(config):
    problem = build_problem(config)
    stop = config.data["stop"]
    result = optimize(problem, build_optimizer(config), max_iter=stop["max_iter"],
                      tol_change=stop["tol_change"])
    return problem, result


@pytest.mark.slow
def test_robust_preset_keeps_the_prescribed_length_scale_and_a_plain_projection_does_not():
    """The robust preset's blueprint (radius 3, η = 0.5 ± 0.15): prescribed minimum size 2.2;
    measured 4 (solid) and 4 (void), one cell of staircase forgiven. The same problem with one
    Heaviside projection (β to 64 as well) leaves a void gap two cells wide between two
    members."""
    config = load_preset("robust")
    problem, result = _final_blueprint(config)
    assert result.converged
    prescribed = prescribed_sizes(3.0, problem.projection.thresholds)
    assert prescribed.solid == pytest.approx(2.2056, abs=1e-3)
    measured = minimum_sizes(problem.mesh, result.evaluation.density)
    assert measured == FeatureSizes(4.0, 4.0)
    assert measured.solid >= prescribed.solid and measured.void >= prescribed.void
    plain_text = re.sub(r"^(robust|delta_eta|volume_update_every) = .*$", "",
                        preset_text("robust"), flags=re.MULTILINE)
    plain, plain_result = _final_blueprint(parse_config(plain_text, source="plain",
                                                        base_dir=Path(".")))
    assert type(plain.projection).__name__ == "Heaviside"
    plain_measured = minimum_sizes(plain.mesh, plain_result.evaluation.density)
    assert min(plain_measured.solid, plain_measured.void) < prescribed.solid
    assert plain_measured == FeatureSizes(4.0, 2.0)

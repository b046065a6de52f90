"""examples/nonlinear_cantilever.py: the linear and the finite-strain design of the
nonlinear_cantilever preset side by side."""

import numpy as np
import pytest
from example_helpers import load_example
from matplotlib.image import imread

from fesens.config import build_model
from fesens.physics import Elasticity

example = load_example("nonlinear_cantilever")


def test_the_linear_design_load_is_in_the_linear_regime():
    """The finite-strain end compliance of the uniform start design tends to that of
    linear plane-strain elasticity as the load falls (the small-load limit: Bonet & Wood,
    *Nonlinear Continuum Mechanics for Finite Element Analysis*, 2nd ed., 2008, §6.4.3),
    at first order: the relative difference halves with the load and is 1.9 % at the
    preset's load / 50 (the linear design's), against 47 % at the preset's load (the
    reason the designs differ)."""
    s = 0.01 + 0.99 * 0.4 ** 3  # SIMP 3 with the preset's minimum, at the volume limit
    differences = []
    for factor in (1.0 / example.SMALL_LOAD, 0.5 / example.SMALL_LOAD, 1.0):
        model = build_model(example.config(factor, fast=True))
        solution = model.solve(scale=np.full(model.mesh.n_cells, s), newton={"steps": 4})
        linear = Elasticity(model.mesh, E=1.0, nu=0.3, plane="strain")
        linear.fix("left")
        linear.loads.update(model.loads)
        reference = linear.solve(scale=np.full(model.mesh.n_cells, s))
        differences.append(abs(float(solution.f @ solution.u)
                               / float(reference.f @ reference.u) - 1))
    small, half, large = differences
    assert small < 0.02 and small / half == pytest.approx(2.0, rel=0.02)
    assert large > 0.4


def test_fast_run_draws_both_designs(tmp_path):
    """``--fast`` (20 x 10 cells, the filter still two cells wide, 40 iterations each):
    two different designs at 40 % material, the nonlinear one the stiffer at the large load
    (measured: 12.7 % lower f·u), one picture of two panels."""
    result = example.main(["--fast", "--out", str(tmp_path)])
    for name in ("nonlinear", "linear"):
        assert np.mean(result[name]["density"]) == pytest.approx(0.4, abs=2e-3)
    c = result["compliance"]
    assert c["nonlinear"] < c["linear"]
    assert 0.1 < result["differing"] < 0.4
    pixels = imread(result["picture"])
    assert pixels.shape[1] > 2 * pixels.shape[0]  # two panels side by side

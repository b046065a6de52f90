"""examples/plastic_design.py in quick mode: the cantilever designed for the work it absorbs
under a plastic load history, beside its elastic (stiffest) design.

Checks: both design loops improve their objective from the uniform start and meet the
volume limit; under the same plastic history the elastoplastic design absorbs more work
than the elastic one (what it was designed for: an assertion that fails if the design loop
does not find it); each design's absorbed work exceeds its plastic dissipation, which is
positive (the first and second laws: ``W = ψ + D`` with a stored energy ``ψ ≥ 0`` for
linear hardening, ``D ≥ 0``: Simo & Hughes 1998, *Computational Inelasticity*, §2.2.2);
the two pictures are written.
"""

import numpy as np
import pytest
from example_helpers import load_example
from matplotlib.image import imread

example = load_example("plastic_design")


@pytest.mark.slow
def test_quick_run_designs_for_the_plastic_history(tmp_path):
    numbers = example.main(["--quick", "--out", str(tmp_path)])
    for entry in numbers["designs"].values():
        history = entry["history"]
        assert history[-1]["objective"] < history[0]["objective"]
        assert entry["volume"] <= example.VOLUME_FRACTION + 1e-3
    curves = numbers["curves"]
    assert curves[example.PLASTIC]["work"] > curves[example.ELASTIC]["work"]
    for curve in curves.values():
        assert 0.0 < curve["dissipation"] < curve["work"]
        # the displacement is the prescribed one: the load table times the end value
        np.testing.assert_allclose(curve["displacement"][-1], -example.END_DISPLACEMENT,
                                   rtol=1e-12)
    names = [path.name for path in numbers["pictures"]]
    assert names == ["plastic_design.png", "plastic_design_curves.png"]
    for path in numbers["pictures"]:
        pixels = imread(path)
        assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100, path

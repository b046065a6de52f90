"""examples/user_law.py in fast mode: a user's energy (Demiray's exponential law) solved,
its gradient's Taylor rate, the fitted constants, and the same law from a config through
an entry point."""

import re
import sys

import numpy as np
import pytest
from example_helpers import load_example


def test_user_law_example_solves_differentiates_fits_and_loads_from_a_config(capsys):
    module = load_example("user_law")
    numbers = module.main(["--fast"])
    printed = capsys.readouterr().out
    assert numbers["rate"] == pytest.approx(2.0, abs=0.05)
    assert numbers["small_strain_rate"] == pytest.approx(2.0, abs=0.05)
    np.testing.assert_allclose(numbers["fitted"], [1.3, 0.8], rtol=1e-5)
    assert numbers["config_difference"] == 0.0
    assert "user_law_demo" not in sys.modules
    # μ₀ = a: at a small load the strip's end moves as that of neo-Hookean with μ = a, κ
    small = module.strip(2)
    small_load = small.solve(loads={"end": 1e-3}).displacement
    neo = module.FiniteStrainElasticity(small.mesh, E=9 * 20.0 * 1.0 / (3 * 20.0 + 1.0),
                                        nu=(3 * 20.0 - 2.0) / (2 * (3 * 20.0 + 1.0)))
    neo.fix("left").traction("right", module.LOAD, name="end")
    np.testing.assert_allclose(small_load, neo.solve(loads={"end": 1e-3}).displacement,
                               rtol=0, atol=1e-3 * np.max(np.abs(small_load)))
    rate = re.search(r"convergence rate: ([\d.]+)", printed)
    assert float(rate.group(1)) == pytest.approx(numbers["rate"], abs=1e-3)
    assert f"a = {numbers['fitted'][0]:.6f}" in printed

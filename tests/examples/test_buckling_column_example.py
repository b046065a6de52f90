"""examples/buckling_column.py in fast mode: the printed lowest buckling load factor rises,
the volume constraint holds, the gradient the optimizer used passes a Taylor test, and the
printed numbers are those of an independent buckling analysis of the final design."""

import re

import numpy as np
import pytest
from example_helpers import load_example
from matplotlib.image import imread

from fesens.fem.analysis.buckling import BucklingAnalysis
from fesens.mesh import rectangle
from fesens.physics import Elasticity


def load():
    return load_example("buckling_column")


def test_buckling_column_raises_the_lowest_load_factor(tmp_path, capsys):
    module = load()
    numbers = module.main(["--fast", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    match = re.search(r"lowest load factor before ([\d.e-]+), after ([\d.e-]+) .*volume ([\d.]+);",
                      printed)
    before, after, volume = (float(g) for g in match.groups())
    # The gradient the optimizer gets (with the K_σ(u) adjoint): Taylor remainder of order 2.
    assert numbers["taylor_rate"] == pytest.approx(2.0, abs=0.1)
    assert numbers["gradient_mismatch"] < 1e-10
    # The design: feasible and a much higher buckling load.
    assert volume == pytest.approx(numbers["volume"], abs=1e-4)
    assert numbers["volume"] <= module.VOLUME_FRACTION + 1e-3
    assert after == pytest.approx(numbers["load_factor_after"], rel=1e-4)
    assert before == pytest.approx(numbers["load_factor_before"], rel=1e-4)
    assert after > 2.0 * before
    # The printed load factor is that of the final densities, analysed here from scratch:
    # SIMP ρ³ (floor 1e-6) stiffness, ρ³ prestress, the cell-mean stress written out.
    model = Elasticity(rectangle(16, 32, 1.0, 2.0), E=1.0, nu=0.3, plane="stress")
    model.fix("bottom")
    model.traction("top", (0.0, -1.0))
    rho = numbers["density"]
    s = 1e-6 + rho**3 * (1 - 1e-6)

    def prestress(solution):
        strain = np.asarray(solution.strain())
        trace = strain[:, 0, 0] + strain[:, 1, 1]
        lam, mu = 0.3 / (1 - 0.09), 1 / 2.6  # plane stress, E = 1, ν = 0.3
        return rho[:, None, None] ** 3 * (2 * mu * strain + lam * trace[:, None, None]
                                          * np.eye(2))

    factors = BucklingAnalysis(model, 4, prestress).run(scale=s).load_factors
    assert factors[0] == pytest.approx(after, rel=1e-4)
    for picture in numbers["pictures"]:
        pixels = imread(picture)
        assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100, picture

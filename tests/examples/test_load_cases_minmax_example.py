"""examples/load_cases_minmax.py in fast mode: each design is best by its own measure (the
min–max design has the lower worst case, the weighted one the lower sum), the min–max
design balances the two cases, the per-case gradients pass a Taylor test, and the printed
compliances are those of independent solves of the final densities."""

import re

import pytest
from example_helpers import load_example
from matplotlib.image import imread

from fesens.objectives import compliance
from fesens.opt import SIMP


def load():
    return load_example("load_cases_minmax")


def test_min_max_design_has_the_lower_worst_case(tmp_path, capsys):
    module = load()
    numbers = module.main(["--fast", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert numbers["taylor_rates"] == pytest.approx([2.0, 2.0], abs=0.1)
    weighted, minmax = numbers["designs"]["weighted"], numbers["designs"]["minmax"]
    assert minmax["worst"] < 0.97 * weighted["worst"]
    assert weighted["sum"] < 0.9 * minmax["sum"]
    assert minmax["compliances"]["light"] == pytest.approx(minmax["compliances"]["heavy"],
                                                           rel=1e-3)   # both bounds active
    assert weighted["compliances"]["heavy"] > 2.0 * weighted["compliances"]["light"]
    for design, row in numbers["designs"].items():
        assert row["volume"] <= module.VOLUME_FRACTION + 1e-3
        match = re.search(rf"^{design}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", printed,
                          re.MULTILINE)
        light, heavy, total, worst = (float(g) for g in match.groups())
        # The printed compliances are those of the final densities, solved here again.
        model = module.build_model(30)
        scale = SIMP(3.0, 1e-9)(row["density"])
        for name, value in (("light", light), ("heavy", heavy)):
            solved = float(compliance(model.solve(scale=scale, loads=module.CASES[name])))
            assert value == pytest.approx(solved, abs=1e-3)
        assert (total, worst) == pytest.approx((light + heavy, max(light, heavy)), abs=2e-3)
        pixels = imread(row["picture"])
        assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100
    assert re.search(r"worst case: min-max [\d.]+ < weighted [\d.]+; sum: weighted [\d.]+ < "
                     r"min-max [\d.]+", printed)

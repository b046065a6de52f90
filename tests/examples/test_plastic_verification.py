"""examples/plastic_verification.py in fast mode: its table puts fesens beside the closed
forms it names (Lamé's elastic ring, Hill's partly plastic cylinder, the perforated
strip's net-section limit load), the increment beyond the cylinder's limit pressure fails,
and both pictures are written."""

import numpy as np
import pytest
from example_helpers import load_example
from matplotlib.image import imread


def test_plastic_verification_table_and_pictures(tmp_path, capsys):
    module = load_example("plastic_verification")
    numbers = module.main(["--fast", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    # the references are the closed forms, not fesens: spot-check two against hand values
    assert module.limit_pressure() == pytest.approx(2 * 250 / np.sqrt(3) * np.log(2))
    assert module.strip_limit_load() == pytest.approx(2 * 250 / np.sqrt(3) * 5)
    tolerance = {"Lamé": 1e-4, "Hill 1950 ch. V": 0.006, "net section at 2k": 0.02}
    for row in numbers["rows"]:
        assert abs(row.difference) < tolerance[row.source], row
        assert f"{row.fesens:10.5g}" in printed
    assert numbers["cylinders"]["quad8"].beyond_limit_fails
    assert numbers["strips"]["quad8"].reactions[-1] > module.strip_limit_load()
    for picture in numbers["pictures"]:
        pixels = imread(picture)
        assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100

"""examples/euler_column.py in fast mode: the printed tables converge to Euler's critical
load P_cr = π² E I / (2L)² of the cantilever (Timoshenko & Gere, Theory of Elastic
Stability, §2.1), and the printed ratios are those returned."""

import re

import numpy as np
import pytest
from example_helpers import load_example


def load():
    return load_example("euler_column")


def test_euler_column_tables_converge_to_euler(capsys):
    tables = load().main(["--fast"])
    printed = capsys.readouterr().out
    quad4, quad8, hex8 = (np.array([row[2] for row in rows]) for rows in tables.values())
    # quad4 from above, its excess over quad8's limit falling at rate 2.
    limit = quad8[-1]
    assert np.all(np.diff(quad4) < 0) and quad4[-1] < 1.01
    assert np.log2((quad4[:-1] - limit) / (quad4[1:] - limit)) == pytest.approx(2.0, abs=0.3)
    # quad8 within 0.2% of Euler, a little below (shear deformation of the 2D model).
    assert np.all((quad8 > 0.998) & (quad8 < 1.0))
    # hex8 from above, within 4% on 80 x 4 x 6; the second mode bends about the strong axis.
    assert np.all(np.diff(hex8) < 0) and hex8[-1] < 1.04
    assert tables[list(tables)[2]][-1][3] / hex8[-1] == pytest.approx(2.25, rel=0.03)
    printed_quad4 = [float(v) for v in re.findall(r"x +\d+ +\d+ +([\d.]+)",
                                                  printed.split("quad8")[0])]
    assert printed_quad4 == pytest.approx(quad4, abs=1e-5)

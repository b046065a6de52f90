"""examples/stress_constrained_bracket.py in fast mode: the final design solved again on a
model built here (packaged L-bracket, E = 210 GPa, nu = 0.3, plane stress, 10 mm thick,
top clamped, 10 MPa down on the tip, SIMP p = 3 with void 1e-9), its relaxed cell von Mises
stresses ``rho^0.5 sigma_vm`` recomputed from the nodal displacements with the constant-strain
triangle's B matrix and the plane-stress D matrix written out here, and the volume fraction
from the cell areas: both as printed, the stress on the 100 MPa limit."""

import re

import numpy as np
import pytest
from example_helpers import load_example
from matplotlib.image import imread

from fesens.mesh import packaged_mesh_path, read_mesh
from fesens.physics import Elasticity

E, NU, THICKNESS, TRACTION, E_MIN = 210e3, 0.3, 10.0, 10.0, 1e-9


def cst_von_mises(points: np.ndarray, cells: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Plane-stress von Mises stress of each constant-strain triangle, ``(n_cells,)``."""
    x, y = points[cells, 0], points[cells, 1]                 # (n, 3)
    b = np.stack([y[:, 1] - y[:, 2], y[:, 2] - y[:, 0], y[:, 0] - y[:, 1]], axis=1)
    c = np.stack([x[:, 2] - x[:, 1], x[:, 0] - x[:, 2], x[:, 1] - x[:, 0]], axis=1)
    two_area = x[:, 0] * b[:, 0] + x[:, 1] * b[:, 1] + x[:, 2] * b[:, 2]
    ux, uy = u[cells, 0], u[cells, 1]
    exx = np.sum(b * ux, axis=1) / two_area
    eyy = np.sum(c * uy, axis=1) / two_area
    gxy = np.sum(c * ux + b * uy, axis=1) / two_area
    factor = E / (1 - NU**2)
    sxx, syy = factor * (exx + NU * eyy), factor * (eyy + NU * exx)
    sxy = factor * (1 - NU) / 2 * gxy
    return np.sqrt(sxx**2 + syy**2 - sxx * syy + 3 * sxy**2)


def test_final_design_meets_the_stress_limit(tmp_path, capsys):
    numbers = load_example("stress_constrained_bracket").main(["--fast", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    line = re.search(r"final volume fraction ([\d.]+); max von Mises stress ([\d.]+) MPa "
                     r"\(limit 100 MPa", printed)
    volume, max_stress = float(line.group(1)), float(line.group(2))
    mesh = read_mesh(packaged_mesh_path("lbracket"))
    model = Elasticity(mesh, E=E, nu=NU, plane="stress", thickness=THICKNESS)
    model.fix("top")
    model.traction("load", (0.0, -TRACTION))
    rho = numbers["density"]
    u = np.asarray(model.solve(scale=E_MIN + (1 - E_MIN) * rho**3).displacement)
    von_mises = np.sqrt(rho) * cst_von_mises(mesh.points, mesh.cells, u)
    assert von_mises.max() == pytest.approx(max_stress, abs=0.006)
    assert von_mises == pytest.approx(numbers["von_mises"], rel=1e-6, abs=1e-9)
    assert abs(max_stress / 100.0 - 1) < 0.01      # on the limit, within 1 %
    p = mesh.points[mesh.cells]
    area = 0.5 * np.abs((p[:, 1, 0] - p[:, 0, 0]) * (p[:, 2, 1] - p[:, 0, 1])
                        - (p[:, 2, 0] - p[:, 0, 0]) * (p[:, 1, 1] - p[:, 0, 1]))
    assert float(rho @ area / area.sum()) == pytest.approx(volume, abs=6e-5)
    assert volume < 0.45                            # far below the solid bracket
    pixels = imread(numbers["picture"])
    assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100

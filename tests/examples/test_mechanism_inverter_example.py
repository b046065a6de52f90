"""examples/mechanism_inverter.py in fast mode: each mechanism moves its output port
against (inverter) or across (gripper) the input force, and the printed displacements are
those of a model built here from the problem's statement (Sigmund 1997's half domains:
springs, symmetry, clamp, SIMP 3 with void 1e-3), solved at the example's densities and
at its thresholded design."""

import re

import numpy as np
import pytest
from example_helpers import load_example
from matplotlib.image import imread

from fesens.mesh import rectangle
from fesens.physics import Elasticity

#: The output port and its component of each mechanism (the presets' statement).
PORTS = {"inverter": ((40.0, 0.0), 0), "gripper": ((40.0, 4.0), 1)}


def mechanism(name: str) -> Elasticity:
    """The half domain on its 40 x 20 grid, from the problem statement."""
    model = Elasticity(rectangle(40, 20, 40.0, 20.0, cell_type="quad4"), E=1.0, nu=0.3,
                       plane="stress", thickness=1.0)
    model.fix(lambda p: np.isclose(p[:, 1], 0.0), components=[1])        # symmetry line
    model.fix(lambda p: np.isclose(p[:, 0], 0.0) & (p[:, 1] > 17.9))     # the clamp
    model.point_load((0.0, 0.0), (1.0, 0.0), name="input")
    model.spring((0.0, 0.0), 0.1, components=[0])                       # k_in
    point, axis = PORTS[name]
    model.spring(point, 0.1, components=[axis])                          # k_out
    return model


def test_mechanisms_move_their_ports_and_reproduce(tmp_path, capsys):
    numbers = load_example("mechanism_inverter").main(["--fast", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    for name, (point, axis) in PORTS.items():
        line = re.search(rf"{name}: .*volume ([\d.]+); input u_x ([-\d.]+), .* ([-\d.]+); "
                         rf"thresholded design ([-\d.]+)", printed)
        volume, u_in, u_out, u_black_white = (float(g) for g in line.groups())
        result = numbers[name]
        model = mechanism(name)
        out_node = int(np.argmin(np.linalg.norm(model.mesh.points - point, axis=1)))
        # The optimizer's design, solved here: the same input and output displacements.
        rho = result["density"]
        u = model.solve(scale=1e-3 + (1 - 1e-3) * rho**3).displacement
        assert u[0, 0] == pytest.approx(u_in, abs=1e-5)
        assert u[out_node, axis] == pytest.approx(u_out, abs=1e-5)
        # The input pushes right; the output moves against it (inverter) or closes the jaw
        # towards the symmetry line (gripper), within the volume limit.
        assert u_in > 0 and u_out < -0.3
        assert volume <= 0.3 + 1e-3
        # The thresholded design: 30 % of the cells solid, the rest void, solved here.
        solid = result["thresholded"]
        assert solid.sum() == pytest.approx(0.3 * rho.size, abs=0.5)
        assert rho[solid == 1].min() >= rho[solid == 0].max()
        u = model.solve(scale=1e-3 + (1 - 1e-3) * solid).displacement
        assert u[out_node, axis] == pytest.approx(u_black_white, abs=1e-4)
        assert u_black_white < 0
    for picture in numbers["pictures"]:
        pixels = imread(picture)
        assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100, picture

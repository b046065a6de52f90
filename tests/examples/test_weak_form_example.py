"""examples/weak_form.py in fast mode: the advection–diffusion weak form near its closed
form, its gradient in the Péclet number against the closed form's derivative and a
difference of the discrete solves, the conductivity gradient's Taylor rate, and the printed
numbers are the returned ones."""

import re

import numpy as np
import pytest
from example_helpers import load_example


def test_weak_form_example_solves_and_differentiates_advection_diffusion(capsys):
    module = load_example("weak_form")
    numbers = module.main(["--fast"])
    printed = capsys.readouterr().out
    # 20 cells: second-order close to the closed form (the 80 cells of the full run: 1e-4)
    assert numbers["value"] == pytest.approx(numbers["exact_value"], abs=2e-3)
    assert numbers["slope"] == pytest.approx(numbers["exact_slope"], rel=1e-2)
    model = module.AdvectionDiffusion(module.rectangle(20, 2, 1.0, 0.1))
    model.fix("left", value=0.0)
    model.fix("right", value=1.0)
    middle = int(np.argmin(np.linalg.norm(model.mesh.points - [0.5, 0.0], axis=1)))
    h = 1e-5
    difference = (model.solve(pe=module.PECLET + h).field[middle, 0]
                  - model.solve(pe=module.PECLET - h).field[middle, 0]) / (2 * h)
    assert numbers["slope"] == pytest.approx(difference, rel=1e-7)
    assert numbers["rate"] == pytest.approx(2.0, abs=0.05)
    assert f"fesens {numbers['value']:.6f}" in printed
    assert f"fesens {numbers['slope']:.6f}" in printed
    rate = re.search(r"convergence rate: ([\d.]+)", printed)
    assert float(rate.group(1)) == pytest.approx(numbers["rate"], abs=1e-3)

"""examples/cooks_membrane.py in fast mode: the displacement quad4 locks, the mean
dilatation converges towards the published corner displacement, and the gradient in the
law's constants has Taylor rate 2."""

import numpy as np
import pytest
from example_helpers import load_example


@pytest.mark.slow
def test_cooks_membrane_example_table_and_gradient(capsys):
    module = load_example("cooks_membrane")
    numbers = module.main(["--fast"])
    printed = capsys.readouterr().out
    locked = np.array(numbers["table"][("quad4", "displacement")])
    mean = np.array(numbers["table"][("quad4", "mean_dilatation")])
    assert np.all(locked < 0.4 * module.REFERENCE)
    assert np.all(np.diff(mean) > 0) and mean[-1] == pytest.approx(module.REFERENCE, rel=0.015)
    assert numbers["rate"] == pytest.approx(2.0, abs=0.1)
    assert f"{mean[-1]:.4f}" in printed

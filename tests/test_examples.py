"""Every example runs and reproduces its key numbers (scikit-fem's examples-are-tests)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_root_finding_converges_to_known_roots():
    rows = {row["problem"]: row for row in load("root_finding").run()}
    power = rows["5x^10 - 5120"]
    assert power["halley"] == pytest.approx(2.0, rel=1e-14)
    assert power["halley_iterations"] < power["newton_iterations"]
    for row in rows.values():
        assert row["residual"] < 1e-12
        assert row["newton"] == pytest.approx(row["halley"], rel=1e-12)
    # cos x = 10 x: the non-zero root of g.
    x = rows["3x^3 (cos x - 10x)"]["halley"]
    assert np.cos(x) == pytest.approx(10 * x, rel=1e-13)

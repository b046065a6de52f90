"""The reliability script (benchmarks/reliability.py) with two trials of each kind: every
interrupted optimization and study resumes to the uninterrupted result."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "reliability.py"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["optimize", "study"])
def test_every_interrupted_run_resumes_to_the_reference(kind, capsys):
    spec = importlib.util.spec_from_file_location("reliability", SCRIPT)
    reliability = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reliability)
    code = reliability.main(["--trials", "2", "--seed", "3", "--kind", kind,
                               "--rounds", "1"])
    output = capsys.readouterr().out
    assert code == 0, output
    assert output.rstrip().endswith("0 failed of 2")

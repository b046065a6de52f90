"""Gradients of a design problem split between two MPI ranks (the distributed model): a
Taylor test of the compliance, central differences of single design variables, and the
serial gradient (``distributed_gradient_script.py`` run serially and by ``mpirun -n 2``).
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from mpi_scripts import mpirun_python, needs_mpi, run

SCRIPT = Path(__file__).with_name("distributed_gradient_script.py")

pytestmark = needs_mpi



@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("distributed_gradients")
    for name in ("serial", "two"):
        (root / name).mkdir()
    run([sys.executable, str(SCRIPT), str(root / "serial")], root)
    run(mpirun_python(2, str(SCRIPT), str(root / "two")), root)

    def load(path):
        with np.load(path) as data:
            return {key: data[key] for key in data.files}

    return {"serial": load(root / "serial" / "rank0.npz"),
            "two": [load(root / "two" / f"rank{r}.npz") for r in (0, 1)]}


def test_the_distributed_compliance_passes_the_taylor_test(results):
    for rank in results["two"]:
        remainders, steps = rank["remainders"], rank["steps"]
        rates = np.log(remainders[:-1] / remainders[1:]) / np.log(steps[:-1] / steps[1:])
        assert np.all(rates > 1.9), rates  # second order: the gradient is right


def test_central_differences_match_the_distributed_gradient(results):
    for rank in results["two"]:
        picked, differences = rank["picked"], rank["differences"]
        np.testing.assert_allclose(rank["gradient"][picked], differences[:, 0], rtol=1e-5)
        np.testing.assert_allclose(rank["volume_gradient"][picked], differences[:, 1],
                                   rtol=1e-6)


def test_the_gathered_gradient_is_the_serial_one(results):
    serial = results["serial"]
    assert int(serial["size"]) == 1
    for rank in results["two"]:
        assert int(rank["size"]) == 2
        assert float(rank["objective"]) == pytest.approx(float(serial["objective"]), rel=1e-9)
        np.testing.assert_allclose(rank["gradient"], serial["gradient"], rtol=1e-7,
                                   atol=1e-9 * np.abs(serial["gradient"]).max())
        np.testing.assert_allclose(rank["volume_gradient"], serial["volume_gradient"],
                                   rtol=1e-12)

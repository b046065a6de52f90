"""``device = "gpu"`` with a lattice that the GPU's free memory cannot hold is refused
before the multigrid puts anything there: exit 2 from ``fesens solve``, the message naming
the unknowns, the estimate, the free memory and the choices that fit, and no solution
written. A GPU that holds it solves as before.

No GPU here: the GPU's array library is numpy and its free memory is patched
(``fesens.solvers.devices.gpu_memory``), the same stand-in as the device-choice tests."""

import numpy as np
import pytest

import fesens.solvers.device_multigrid as device_multigrid
import fesens.solvers.devices as devices
from fesens.errors import TooLargeError
from fesens.solvers.devices import DEVICE_BYTES_PER_UNKNOWN, device_bytes, refuse_unless_fits
from tests.config.test_config_device import solve

MiB = 2**20


@pytest.fixture
def gpu_of(monkeypatch):
    """A stand-in GPU (numpy) with the given free bytes."""
    def make(free):
        monkeypatch.setattr(device_multigrid, "array_library", lambda device: np)
        monkeypatch.setattr(devices, "gpu_memory", lambda: free)
    return make


def test_too_large_for_the_gpu_exits_2_before_solving(tmp_path, gpu_of):
    gpu_of(1 * MiB)
    result, solution = solve(tmp_path, {"matrix_free": True, "device": "gpu"}, "small")
    assert result.exit_code == 2, result.output
    assert solution is None
    assert "on the GPU" in result.output and "1 MiB free" in result.output
    assert "device = 'cpu'" in result.output and "coarser lattice" in result.output


def test_a_gpu_that_holds_it_solves_as_the_numpy_device(tmp_path, gpu_of):
    gpu_of(80 * 2**30)
    result, gpu = solve(tmp_path, {"matrix_free": True, "device": "gpu"}, "big")
    assert result.exit_code == 0, result.output
    _, host = solve(tmp_path, {"matrix_free": True, "device": "numpy"}, "numpy")
    assert gpu["compliance"] == pytest.approx(host["compliance"], rel=1e-12)


def test_the_estimate_and_the_other_devices(monkeypatch):
    n = 1_000_000
    needed = device_bytes(n)
    assert needed == DEVICE_BYTES_PER_UNKNOWN * n + devices.DEVICE_FIXED_BYTES
    monkeypatch.setattr(devices, "gpu_memory", lambda: int(needed) - 1)
    with pytest.raises(TooLargeError, match="1,000,000 unknowns"):
        refuse_unless_fits("gpu", n)
    refuse_unless_fits("cpu", n)  # the host's memory is checked elsewhere
    monkeypatch.setattr(devices, "gpu_memory", lambda: int(needed))
    refuse_unless_fits("gpu", n)
    monkeypatch.setattr(devices, "gpu_memory", lambda: None)  # memory not readable: pass
    refuse_unless_fits("gpu", n)

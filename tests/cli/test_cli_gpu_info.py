"""``fesens info`` names the GPU of the matrix-free gmg's ``device = "gpu"``: the first CUDA
device's name and memory as CuPy reports them (``cupy.cuda.runtime``), or "none" with the
reason. A stand-in ``cupy`` module plays the GPU and the failing CUDA runtime here."""

import importlib.util
import sys
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from fesens.cli import cli


def info_gpu_line() -> str:
    result = CliRunner().invoke(cli, ["info"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("GPU: ")]
    assert len(lines) == 1, result.output
    return lines[0]


def fake_cupy(count: int, properties: dict | None = None, error: Exception | None = None):
    def device_count() -> int:
        if error is not None:
            raise error
        return count

    runtime = SimpleNamespace(getDeviceCount=device_count,
                              getDeviceProperties=lambda index: properties)
    return SimpleNamespace(__version__="13.6.0", cuda=SimpleNamespace(runtime=runtime))


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_info_says_no_gpu_without_cupy_and_names_the_extra():
    line = info_gpu_line()
    assert line.startswith("GPU: none") and "pip install fesens[gpu]" in line


def test_info_names_the_gpu_and_its_memory(monkeypatch):
    properties = {"name": b"NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_520_809_984}
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(1, properties))
    assert info_gpu_line() == "GPU: NVIDIA H100 80GB HBM3, 79.6 GiB (CuPy 13.6.0)"


@pytest.mark.parametrize(("count", "error", "reason"), [
    (0, None, "finds no CUDA device"),
    (1, RuntimeError("cudaErrorInsufficientDriver"), "cudaErrorInsufficientDriver")])
def test_info_says_none_when_cupy_finds_no_usable_device(monkeypatch, count, error, reason):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(count, error=error))
    line = info_gpu_line()
    assert line.startswith("GPU: none (CuPy 13.6.0") and reason in line

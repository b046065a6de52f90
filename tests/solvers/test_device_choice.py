"""``auto`` picks the GPU for a matrix-free multigrid solve when CuPy finds a device whose
free memory holds the estimate, says so in its reason, and changes nothing without one.

The detection (``fesens.solvers.policy.gpu_memory``) is patched both ways; without
patching, this machine's answer (no CuPy here) must leave the choice as it was.
"""

from __future__ import annotations

import pytest

from fesens.mesh import box
from fesens.physics import Elasticity
from fesens.solvers import policy
from fesens.solvers.devices import device_bytes, gpu_memory

GiB = 2**30
UNKNOWNS = 3_000_000  # a 3D lattice too large to factorize (above DIRECT_MAX_3D_UNKNOWNS)


def choice(**kwargs):
    return policy.model_choice(UNKNOWNS, 3, 1e9, 64 * GiB, on_lattice=lambda: True,
                               matrix_free_refusal=lambda: None, **kwargs)


def test_without_a_gpu_nothing_changes(monkeypatch):
    monkeypatch.setattr(policy, "gpu_memory", lambda: None)
    picked = choice()
    assert picked == "gmg" and picked.options == {"matrix_free": True}
    assert "GPU" not in picked.reason and "CPU" not in picked.reason


def test_a_gpu_that_holds_the_design_is_picked_and_named(monkeypatch):
    monkeypatch.setattr(policy, "gpu_memory", lambda: 79 * GiB)
    picked = choice()
    assert picked.options == {"matrix_free": True, "device": "gpu"}
    assert "on the GPU" in picked.reason and "79 GiB free" in picked.reason
    assert "device=gpu" in picked.line()


def test_a_gpu_too_small_leaves_the_cpu_and_says_why(monkeypatch):
    needed = device_bytes(UNKNOWNS)
    monkeypatch.setattr(policy, "gpu_memory", lambda: int(needed / 2))
    picked = choice()
    assert picked.options == {"matrix_free": True}
    assert "on the CPU: the GPU has" in picked.reason and "less than" in picked.reason


def test_direct_and_assembled_choices_never_ask_for_the_gpu(monkeypatch):
    monkeypatch.setattr(policy, "gpu_memory", lambda: 79 * GiB)
    direct = policy.model_choice(1000, 3, 1e6, 64 * GiB, on_lattice=lambda: True,
                                 matrix_free_refusal=lambda: None)
    assert "device" not in direct.options
    assembled = policy.model_choice(UNKNOWNS, 3, 1e9, 64 * GiB, on_lattice=lambda: True,
                                    matrix_free_refusal=lambda: "quadratic cells")
    assert "device" not in assembled.options


@pytest.mark.parametrize("free", [None, 79 * GiB])
def test_a_model_reports_the_choice(monkeypatch, free):
    """A model's ``auto`` (its run line) names the GPU when one holds the design."""
    monkeypatch.setattr(policy, "DIRECT_MAX_3D_UNKNOWNS", 100)
    monkeypatch.setattr(policy, "gpu_memory", lambda: free)
    model = Elasticity(box(6, 3, 3), E=1.0, nu=0.3).fix("left")
    picked = model.auto_solver()
    assert picked == "gmg"
    assert (picked.options.get("device") == "gpu") is (free is not None)
    assert ("on the GPU" in picked.line()) is (free is not None)


def test_this_machine_detection_is_consistent():
    """``gpu_memory`` gives a positive byte count or None (no CuPy or no device)."""
    free = gpu_memory()
    assert free is None or free > 0

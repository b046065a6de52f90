"""Gmsh must not change how the test process (or a user's program) handles signals.

``gmsh.initialize()`` reset SIGPIPE to "terminate": a later test that wrote to a closed socket
(the Dask scheduler that answers garbage) killed the whole pytest run with exit 141."""

import ctypes
import signal
import sys

import pytest

from fesens.mesh.gmsh_session import initialize_gmsh


class _SigAction(ctypes.Structure):  # glibc's struct sigaction on Linux
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]


def kernel_handler(signum: int) -> int:
    """The disposition the kernel holds (Python's ``getsignal`` may not know of a change
    made in C): 0 default, 1 ignore, else a handler's address."""
    action = _SigAction()
    assert ctypes.CDLL(None).sigaction(signum, None, ctypes.byref(action)) == 0
    return action.handler or 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads glibc's sigaction")
def test_starting_gmsh_keeps_sigpipe_ignored_and_ctrl_c_raising():
    gmsh = pytest.importorskip("gmsh")
    assert kernel_handler(signal.SIGPIPE) == 1      # as Python starts
    interrupt = signal.getsignal(signal.SIGINT)
    initialize_gmsh(["-noenv"])
    try:
        assert kernel_handler(signal.SIGPIPE) == 1
        assert signal.getsignal(signal.SIGINT) is interrupt
    finally:
        gmsh.finalize()
    assert kernel_handler(signal.SIGPIPE) == 1

"""Where the matrix-free multigrid runs: the array library of a ``device`` and, for
``auto``, whether a GPU is there and how much a design resident on it needs.

:func:`array_library` gives numpy for ``"cpu"`` and CuPy for ``"gpu"`` (refusing, with the
install command, a missing CuPy or CUDA device); :func:`gpu_memory` asks CuPy for the free
bytes of its device without raising; :func:`device_bytes` estimates the peak of a
compliance design resident on a device (:mod:`fesens.opt.resident`), what
:func:`fesens.solvers.policy.model_choice` compares with it, and
:func:`refuse_unless_fits` refuses a lattice the GPU cannot hold before anything is
allocated there.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from fesens.errors import SolverError, TooLargeError
from fesens.sysinfo import GPU_INSTALL

#: Peak bytes per free unknown of a compliance design resident in one library
#: (:func:`device_bytes`): tracemalloc's peak over three resident OC iterations on numpy
#: (the arrays a GPU holds) of a cantilever grew by 378 B per unknown in 2D (240x120 to
#: 600x300 quad4) and 252 B in 3D (32x16x16 to 64x32x32 hex8); half again for a memory
#: pool's spare blocks, and scalar fields, whose cells carry one unknown each.
DEVICE_BYTES_PER_UNKNOWN = 600
#: What the estimate adds whatever the size: the dense coarsest level (up to
#: ``coarse_size`` = 3000 dofs: its matrix, Cholesky factor and inverse, 72 MB each).
DEVICE_FIXED_BYTES = 256 * 2**20


def array_library(device: str) -> ModuleType:
    """The array library of ``device``: numpy for ``"cpu"``, CuPy for ``"gpu"``.

    Raises
    ------
    SolverError
        For ``"gpu"`` without an importable CuPy or without a CUDA device, naming the
        install command; for an unknown device.
    """
    if device == "cpu":
        return np
    if device != "gpu":
        raise SolverError(f"device {device!r} is unknown; choose 'cpu' or 'gpu'")
    try:
        import cupy
    except ImportError as error:
        raise SolverError(f"device = 'gpu' needs CuPy, which is not importable ({error}); "
                          f"install it: {GPU_INSTALL}, or use device = 'cpu'") from error
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as error:  # CuPy raises its own CUDA runtime errors
        raise SolverError(f"device = 'gpu': CuPy finds no usable CUDA device ({error}); "
                          "check the driver (nvidia-smi) and that the CuPy package matches "
                          f"its CUDA version ({GPU_INSTALL}), or use device = 'cpu'") from error
    if count == 0:
        raise SolverError("device = 'gpu': CuPy finds no CUDA device on this machine; "
                          "use device = 'cpu'")
    return cupy


def gpu_memory() -> int | None:
    """The free bytes of the CUDA device CuPy would use, or None when there is none (no
    CuPy, no device, a driver CuPy cannot use): what ``auto`` asks before it picks the
    GPU."""
    try:
        xp = array_library("gpu")
        return int(xp.cuda.runtime.memGetInfo()[0])
    except Exception:  # SolverError without CuPy or a device, or CuPy's own CUDA errors
        return None


def device_bytes(n: int) -> float:
    """The estimated peak bytes on a device of a compliance design of ``n`` free unknowns
    resident there (:mod:`fesens.opt.resident`): the multigrid's levels and CG vectors,
    the design, its filtered densities and gradients, and the dense coarsest level."""
    return DEVICE_BYTES_PER_UNKNOWN * n + DEVICE_FIXED_BYTES


def size_text(n_bytes: float) -> str:
    """``"12 MiB"`` below a GiB, ``"3.5 GiB"`` above."""
    return f"{n_bytes / 2**20:.0f} MiB" if n_bytes < 2**30 else f"{n_bytes / 2**30:.3g} GiB"


def refuse_unless_fits(device: str, n: int) -> None:
    """Refuse a lattice of ``n`` free unknowns on ``device = "gpu"`` whose estimate
    (:func:`device_bytes`) is more than the GPU's free memory, before the multigrid puts
    anything there (a CUDA allocation failure halfway through a hierarchy leaves no clear
    message). Other devices, and a GPU whose memory CuPy cannot read, pass.

    Raises
    ------
    TooLargeError
        Naming the unknowns, the estimate, the free memory and the choices that fit.
    """
    if device != "gpu":
        return
    free, needed = gpu_memory(), device_bytes(n)
    if free is not None and needed > free:
        raise TooLargeError(
            f"a lattice of {n:,} unknowns needs about {size_text(needed)} on the GPU "
            f"({DEVICE_BYTES_PER_UNKNOWN} bytes per unknown and {size_text(DEVICE_FIXED_BYTES)}), "
            f"which has {size_text(free)} free: use device = 'cpu' (the matrix-free multigrid "
            "on the host) or a coarser lattice")

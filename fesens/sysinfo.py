"""Facts about the numerical libraries in use (for benchmarks and ``fesens info``)."""

from __future__ import annotations

import os
from pathlib import Path

from fesens.openmp import (
    PARALLEL_MIN_FLOPS,
    PARALLEL_MIN_FRONT,
    SINGLE_THREAD_MAX_ROWS,
    THREAD_LIMIT_VARIABLE,
    THREAD_RULE,
    FactorWork,
    blas_threads,
    usable_cores,
)


def blas_description() -> str:
    """Which BLAS the system SuiteSparse (CHOLMOD) in this process runs on, as one line.

    Debian's SuiteSparse links ``libblas.so.3``, an alternative that resolves to the
    reference BLAS (``.../blas/libblas.so.3``) or to OpenBLAS
    (``.../openblas-pthread/libblas.so.3``); ``/proc/self/maps`` shows the resolved file
    after CHOLMOD is loaded. numpy's own bundled OpenBLAS is not what CHOLMOD uses and is
    ignored.
    """
    try:
        import sksparse.cholmod  # noqa: F401
    except ImportError:
        return "CHOLMOD not installed"
    maps = Path("/proc/self/maps")
    if not maps.exists():
        return "unknown (no /proc/self/maps)"
    paths = {line.split()[-1] for line in maps.read_text().splitlines()
             if "libblas.so" in line or "libmkl_rt" in line}
    if not paths:
        return "unknown (no libblas.so loaded)"
    path = sorted(paths)[0]
    kind = ("OpenBLAS" if "openblas" in path else "MKL" if "mkl" in path
            else "reference BLAS (slow: install libopenblas0)")
    return f"{kind}: {path}"


def thread_lines() -> list[str]:
    """How many threads fesens gives the solvers (``fesens info``, benchmark headers):
    the rule, what it picks for a small and a large problem, the OpenMP limit."""
    # a direct solve's count follows its factorization's work, not its rows
    small, _ = blas_threads(0, 0, True, FactorWork(PARALLEL_MIN_FLOPS / 10,
                                                   PARALLEL_MIN_FRONT // 2, 0))
    large, _ = blas_threads(0, 0, True, FactorWork(PARALLEL_MIN_FLOPS * 10,
                                                   PARALLEL_MIN_FRONT * 2, 0))
    iterative, _ = blas_threads(10 * SINGLE_THREAD_MAX_ROWS, 0, False)
    limit = os.environ.get(THREAD_LIMIT_VARIABLE, "unset (set when CHOLMOD loads)")
    return [f"threads: {usable_cores()} usable cores; BLAS threads per solve: {THREAD_RULE}",
            f"threads chosen: small direct solve {small}, large 3D direct solve {large}, "
            f"iterative solve {iterative}; OpenMP ({THREAD_LIMIT_VARIABLE}): {limit}"]


#: What to install for the GPU path (``device = "gpu"`` of the matrix-free ``gmg``).
GPU_INSTALL = "pip install fesens[gpu] (CuPy for CUDA 12: cupy-cuda12x)"


def gpu_description() -> str:
    """The GPU that ``device = "gpu"`` would run on, as one line: the first CUDA device's
    name and memory as CuPy sees them, or ``"none"`` with the reason (no CuPy, no device,
    a CUDA error)."""
    try:
        import cupy
    except ImportError:
        return f"none (CuPy is not installed: {GPU_INSTALL})"
    version = getattr(cupy, "__version__", "?")
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
        if count == 0:
            return f"none (CuPy {version} finds no CUDA device)"
        properties = cupy.cuda.runtime.getDeviceProperties(0)
    except Exception as error:  # CuPy raises its own CUDA runtime errors
        return f"none (CuPy {version}: {error})"
    name = properties.get("name", b"?")
    name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
    memory = properties.get("totalGlobalMem", 0) / 2**30
    more = f", {count} devices" if count > 1 else ""
    return f"{name}, {memory:.1f} GiB (CuPy {version}{more})"

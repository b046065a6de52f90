"""Facts about the numerical libraries in use (for benchmarks and ``fesens info``)."""

from __future__ import annotations

from pathlib import Path


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

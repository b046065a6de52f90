"""Limit OpenMP's threads before a native library loads OpenMP.

SuiteSparse 5.x CHOLMOD (Debian's ``libcholmod3``) runs the scatter and gather loops of
its supernodal factorization with a compile-time ``num_threads(4)`` clause, which
``OMP_NUM_THREADS`` and ``threadpoolctl`` do not override. Those loops move memory; the
floating-point work runs in BLAS, which has its own threads (OpenBLAS ``pthread`` builds).
Measured on 2 cores, re-factorizing the 161 202-dof 400x200 plane-stress problem
(``OMP_THREAD_LIMIT=N``; the libraries' default BLAS threads)::

    no limit (4 threads)   517 ms      limit 2   658 ms (OpenMP workers spin while
    limit 1                301 ms                         the BLAS threads compute)

``OMP_THREAD_LIMIT`` caps every parallel region, ``num_threads`` clauses included; libgomp
reads it once, when it is loaded, so :mod:`fesens.solvers.cholmod` sets it right before it
imports scikit-sparse (the one call of :func:`cap_openmp_threads`). The limit is 1 unless
CHOLMOD's BLAS is itself an OpenMP build (Debian's ``openblas-openmp`` alternative), whose
threads it would serialise; then it is the number of usable cores. A value the user has set
is kept.
"""

from __future__ import annotations

import glob
import os

#: The OpenMP variable that caps the threads of every parallel region of the process.
THREAD_LIMIT_VARIABLE = "OMP_THREAD_LIMIT"

#: Where Debian's SuiteSparse finds its BLAS: symbolic links to the selected alternative.
_SYSTEM_BLAS_PATTERNS = ("/usr/lib/*/libblas.so.3", "/usr/lib/libblas.so.3")


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def system_blas_uses_openmp() -> bool | None:
    """Whether the system BLAS (``libblas.so.3``) resolves to an OpenMP build; None when
    there is no system BLAS to inspect."""
    links = [path for pattern in _SYSTEM_BLAS_PATTERNS for path in glob.glob(pattern)]
    if not links:
        return None
    return any("openmp" in os.path.realpath(path) for path in links)


def default_thread_limit(blas_uses_openmp: bool | None) -> int:
    """1, or the usable cores when the BLAS is (or may be) an OpenMP build."""
    return 1 if blas_uses_openmp is False else usable_cores()


def cap_openmp_threads() -> None:
    """Set ``OMP_THREAD_LIMIT`` to :func:`default_thread_limit` unless it is set already."""
    if THREAD_LIMIT_VARIABLE not in os.environ:
        limit = default_thread_limit(system_blas_uses_openmp())
        os.environ[THREAD_LIMIT_VARIABLE] = str(limit)

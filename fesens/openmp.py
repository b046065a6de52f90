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

The BLAS threads of each solve are chosen too, not inherited from the library default of
all cores: :func:`blas_threads` is the rule (:data:`THREAD_RULE`), measured on a 2-core
machine, and :class:`BlasThreadLimit` sets it for a solve
(threadpoolctl) and leaves it set; ``FESENS_THREADS`` overrides it.
"""

from __future__ import annotations

import glob
import os

from fesens.errors import FesensError

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


# ------------------------------------------------------------------ BLAS threads
class ThreadSettingError(FesensError, ValueError):
    """``FESENS_THREADS`` is set to something that is not a positive integer."""


#: Environment variable that fixes the BLAS threads of every solve (a positive integer).
THREADS_VARIABLE = "FESENS_THREADS"
#: Variables a user sets to cap the BLAS threads; the rule never exceeds them.
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")
#: A direct factorization of fewer rows than this runs on one BLAS thread (measured up to
#: 29k 3D unknowns: one thread was faster; see :func:`blas_threads`).
SINGLE_THREAD_MAX_ROWS = 100_000
#: ... and so does one whose matrix has fewer stored entries per row than this (2D-like
#: sparsity: small supernodes, where BLAS threads only add synchronisation).
SINGLE_THREAD_MAX_ROW_NNZ = 30

#: The rule of :func:`blas_threads`, as ``fesens info`` and the benchmark headers print it.
THREAD_RULE = (
    f"direct solvers: 1 BLAS thread below {SINGLE_THREAD_MAX_ROWS} unknowns or below "
    f"{SINGLE_THREAD_MAX_ROW_NNZ} nonzeros per row (2D), else all usable cores; iterative "
    f"solvers: all usable cores; capped by {'/'.join(BLAS_VARIABLES)}; "
    f"{THREADS_VARIABLE}=N overrides")


def thread_override() -> int | None:
    """The thread count ``FESENS_THREADS`` fixes, or None when it is unset.

    Raises
    ------
    ThreadSettingError
        If it is set to anything but a positive integer.
    """
    text = os.environ.get(THREADS_VARIABLE, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ThreadSettingError(f"environment variable {THREADS_VARIABLE}={text!r} is not a "
                          "positive integer: set it to e.g. 1, or unset it to let fesens "
                          "choose")
    return int(text)


def user_thread_cap() -> int | None:
    """The smallest positive thread count among :data:`BLAS_VARIABLES` the user set."""
    values = [os.environ.get(name, "").strip() for name in BLAS_VARIABLES]
    counts = [int(v) for v in values if v.isdigit() and int(v) > 0]
    return min(counts) if counts else None


def blas_threads(n_rows: int, nnz: int, direct: bool) -> tuple[int, str]:
    """The BLAS threads for solving an ``n_rows``-row matrix with ``nnz`` stored entries,
    and why (:data:`THREAD_RULE`).

    Measured on a shared 2-core machine (CHOLMOD, a forward and a
    ``value_and_grad`` evaluation alternating, minimum of 7; ``FESENS_THREADS=1`` vs 2):
    2D 200x100 (40k unknowns, 18 entries per row) forward 71 vs 127 ms, gradient 79 vs
    100 ms; 2D 400x200 (161k) gradient 424 vs 490 ms; 3D 16x8x8 (3.5k, 81 per row)
    forward 21 vs 122 ms; 24x8x8 (6k) 37 vs 139 ms; 32x16x16 (29k) 442 vs 559 ms. Where
    more threads start to pay (large 3D fronts, an unloaded machine) was not measured:
    above :data:`SINGLE_THREAD_MAX_ROWS` 3D-like problems get all usable cores.
    """
    override = thread_override()
    if override is not None:
        return override, f"{THREADS_VARIABLE}={override}"
    cores = usable_cores()
    if direct and n_rows < SINGLE_THREAD_MAX_ROWS:
        count, reason = 1, f"direct solve of {n_rows} < {SINGLE_THREAD_MAX_ROWS} unknowns"
    elif direct and nnz < SINGLE_THREAD_MAX_ROW_NNZ * n_rows:
        count, reason = 1, (f"direct solve with {nnz / max(n_rows, 1):.0f} < "
                            f"{SINGLE_THREAD_MAX_ROW_NNZ} nonzeros per row")
    else:
        count, reason = cores, f"{'direct' if direct else 'iterative'} solve: all usable cores"
    cap = user_thread_cap()
    if cap is not None and cap < count:
        count, reason = cap, f"{reason}, capped by the environment at {cap}"
    return count, reason


class BlasThreadLimit:
    """A reusable context that sets every BLAS library of the process to ``count``
    threads (threadpoolctl; without it, a no-op) and leaves them so.

    Not restored on exit, on purpose: idle OpenBLAS workers spin for a while after a
    product, and on few cores they slow the next single-threaded factorization. Measured
    (2 cores, 200x100, forward and value_and_grad alternating): restoring 2 threads after
    each solve 127 ms per forward, keeping 1 thread 68 ms. The libraries are inspected
    once, on first use.
    """

    def __init__(self, count: int):
        self.count = count
        self._libraries = None

    def __enter__(self) -> BlasThreadLimit:
        if self._libraries is None:
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:  # pragma: no cover - threadpoolctl is a dependency
                self._libraries = []
            else:
                self._libraries = ThreadpoolController().select(user_api="blas").lib_controllers
        for library in self._libraries:
            if library.num_threads != self.count:
                library.set_num_threads(self.count)
        return self

    def __exit__(self, *exc) -> None:
        return None


# ------------------------------------------------------------------ kernel threads
def kernel_threads() -> int:
    """The threads of fesens's own slab kernels (:mod:`fesens.solvers.parallel`): the
    usable cores, or ``FESENS_THREADS`` when it is set (:func:`thread_override`).

    The kernels run one BLAS thread each inside a parallel region: their products are
    small (a ``(24, 24)`` cell matrix times a slab of cells), and BLAS threads on top of
    them only contend for the same cores (measured, 96x48x48 hex8 apply on 2 cores:
    17 ms with 1 BLAS thread, 190-220 ms with 2).
    """
    override = thread_override()
    return usable_cores() if override is None else override

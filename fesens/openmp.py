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
machine. A direct solve's count follows the work of its factorization
(:class:`FactorWork`: the flops and the largest front, from the backend's symbolic
analysis), not its number of unknowns; :class:`BlasThreadLimit` sets it for a solve
(threadpoolctl) and leaves it set; ``FESENS_THREADS`` overrides it.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

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
@dataclass(frozen=True)
class FactorWork:
    """The work of one sparse Cholesky factorization, read from its symbolic analysis.

    Attributes
    ----------
    flops : float
        ``Σ_j c_j²`` over the column counts ``c_j`` of the factor ``L`` (entries of column
        ``j``, diagonal included): the multiply-adds of the factorization up to a constant.
    largest_front : int
        ``max_j c_j``: the order of the largest dense front (a supernode with the rows it
        updates), the biggest block that BLAS-3 threads share.
    factor_entries : int
        ``Σ_j c_j = nnz(L)`` without the zeros a supernodal factor pads in.
    """

    flops: float
    largest_front: int
    factor_entries: int


#: A direct factorization of at least this many flops (:attr:`FactorWork.flops`) runs on all usable
#: cores; below it on one BLAS thread (see :func:`blas_threads`). Set above the largest
#: factorization measured (7.2e11 flops), because on the 2-vCPU AMD EPYC machine two BLAS threads
#: did not pay in 3D: its two vCPUs share one core's floating-point throughput (two single-thread
#: 2500x2500 products run together in 2.14 s each, one alone in 1.02 s). Measured there, CHOLMOD re-
#: factorization and one solve, 1 and 2 BLAS threads alternating, minimum of 5, the process at
#: raised priority (``nice -n -10``) so that other jobs (load 4 to 5) did not take its cores; time
#: on 2 threads / on 1 (flops, largest front): 2D quad4 200x100 1.05 (4.1e8, 400), 400x200 1.06
#: (3.6e9, 936), 800x400 1.06 (3.0e10, 2004); 3D hex8 16x8x8 0.98 (3.7e8, 711), 24x12x12 0.92
#: (2.3e9, 975), 32x16x16 2.0 (1.2e10, 1683), 40x20x20 1.76 (4.5e10, 2583), 48x24x24 1.35 (1.3e11,
#: 3675), 64x32x32 1.58 (7.2e11, 6435; minimum of 2). The gradient agrees (``value_and_grad`` of the
#: compliance, same priority): 48x24x24 3.11 s on 1 thread, 3.58 s on 2; 800x400 2.97 s and 3.71 s.
#: The one exception, not resolved: in ``benchmarks/bench_threads_direct.py`` (same priority, fresh
#: processes) 2D 800x400 took 1.41 s on 1 thread and 1.14 s on 2 (3D 48x24x24 3.04 s and 3.19 s). At
#: normal priority on the loaded machine (load 5 to 9) the same ratios scatter from 0.48 to 2.3: a
#: process with two threads takes a larger share of a contended machine, which is no faster
#: factorization. Where each core has its own floating-point units, two threads pay sooner: lower
#: it, or set ``FESENS_THREADS``.
PARALLEL_MIN_FLOPS = 1e12
#: ... provided its largest front has at least this order: a factorization made of many
#: small fronts gains nothing from BLAS threads, whatever its total (not measured apart
#: from the flops: it keeps one thread where no dense block is large enough to share).
PARALLEL_MIN_FRONT = 1000
#: For a direct backend that reports no work (SuperLU, UMFPACK; CHOLMOD before its first
#: analysis): fewer rows than this run on one BLAS thread (measured up to 29k 3D unknowns:
#: one thread was faster) ...
SINGLE_THREAD_MAX_ROWS = 100_000
#: ... and so does a matrix with fewer stored entries per row than this (2D-like sparsity:
#: small supernodes, where BLAS threads only add synchronisation).
SINGLE_THREAD_MAX_ROW_NNZ = 30

#: The rule of :func:`blas_threads`, as ``fesens info`` and the benchmark headers print it.
THREAD_RULE = (
    f"direct solvers: all usable cores from {PARALLEL_MIN_FLOPS:.0e} factorization flops "
    f"(sum of squared column counts of L, from the symbolic analysis) with a front of "
    f"order {PARALLEL_MIN_FRONT} or more, else 1 BLAS thread (a backend that reports no "
    f"work: 1 below {SINGLE_THREAD_MAX_ROWS} unknowns or below "
    f"{SINGLE_THREAD_MAX_ROW_NNZ} nonzeros per row); iterative solvers: all usable cores; "
    f"capped by {'/'.join(BLAS_VARIABLES)}; {THREADS_VARIABLE}=N overrides")


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


def blas_threads(n_rows: int, nnz: int, direct: bool, work: FactorWork | None = None
                 ) -> tuple[int, str]:
    """The BLAS threads for solving an ``n_rows``-row matrix with ``nnz`` stored entries,
    and why (:data:`THREAD_RULE`).

    A direct solve decides from ``work``, its factorization's :class:`FactorWork`, which
    depends on the matrix pattern only, so the choice is made once per structure: all
    usable cores from :data:`PARALLEL_MIN_FLOPS` with a front of order
    :data:`PARALLEL_MIN_FRONT` or more, else one thread (measured: see
    :data:`PARALLEL_MIN_FLOPS`).
    Without ``work`` (a backend whose analysis reports none) the count follows the rows
    and the nonzeros per row (:data:`SINGLE_THREAD_MAX_ROWS`).
    """
    override = thread_override()
    if override is not None:
        return override, f"{THREADS_VARIABLE}={override}"
    cores = usable_cores()
    if not direct:
        count, reason = cores, "iterative solve: all usable cores"
    elif work is not None:
        count, reason = _direct_threads(work, cores)
    elif n_rows < SINGLE_THREAD_MAX_ROWS:
        count, reason = 1, (f"direct solve of {n_rows} < {SINGLE_THREAD_MAX_ROWS} unknowns "
                            "(no factorization work known)")
    elif nnz < SINGLE_THREAD_MAX_ROW_NNZ * n_rows:
        count, reason = 1, (f"direct solve with {nnz / max(n_rows, 1):.0f} < "
                            f"{SINGLE_THREAD_MAX_ROW_NNZ} nonzeros per row (no factorization "
                            "work known)")
    else:
        count, reason = cores, "direct solve (no factorization work known): all usable cores"
    cap = user_thread_cap()
    if cap is not None and cap < count:
        count, reason = cap, f"{reason}, capped by the environment at {cap}"
    return count, reason


def _direct_threads(work: FactorWork, cores: int) -> tuple[int, str]:
    """The threads of a direct solve from its factorization's work, and why."""
    size = f"direct solve of {work.flops:.2e} flops, largest front {work.largest_front}"
    if work.flops < PARALLEL_MIN_FLOPS:
        return 1, f"{size}: below {PARALLEL_MIN_FLOPS:.0e} flops, 1 thread"
    if work.largest_front < PARALLEL_MIN_FRONT:
        return 1, f"{size}: fronts below order {PARALLEL_MIN_FRONT}, 1 thread"
    return cores, f"{size}: all usable cores"


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
    """The threads of fesens's own slab kernels (:mod:`fesens.solvers.parallel`):
    ``FESENS_THREADS`` when it is set (:func:`thread_override`), else the usable cores
    less the other tasks running on the machine right now (:func:`other_runnable`), at
    least 1.

    The kernels run one BLAS thread each inside a parallel region: their products are
    small (a ``(24, 24)`` cell matrix times a slab of cells), and BLAS threads on top of
    them only contend for the same cores (measured, 96x48x48 hex8 apply on 2 cores:
    17 ms with 1 BLAS thread, 190-220 ms with 2).

    The count backs off when other work runs because a colour of slabs ends at a barrier:
    a kernel thread the scheduler sets aside holds up the others (and the GIL between
    numpy calls). Measured on 2 cores at 64x32x32 with one competing CPU-bound process,
    2 threads ran a V-cycle at 0.80x the speed of 1. The kernels' results do
    not depend on the thread count, so the count may change at every call.
    """
    override = thread_override()
    if override is not None:
        return override
    cores = usable_cores()
    others = other_runnable()
    return cores if not others else max(1, cores - others)


def other_runnable() -> int | None:
    """The tasks other than the caller that are running or ready to run on the machine
    now (the first number of the fourth field of ``/proc/loadavg``, less the caller), or
    None where that file is missing or unreadable.

    The instantaneous count rather than :func:`os.getloadavg`: the load averages trail by
    a minute and count the kernels' own threads, so a run on all cores would back off from
    itself.
    """
    try:
        with open("/proc/loadavg") as file:
            running = int(file.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0, running - 1)

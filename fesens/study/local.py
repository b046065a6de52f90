"""Run samples on this machine: in worker processes (the default) or in this process.

:func:`run_processes` uses a :class:`~concurrent.futures.ProcessPoolExecutor` whose workers
install the model once (the pool's initializer) and run its setup on their first sample.
At most ``2 × workers`` samples are in flight. A worker that dies (killed, out of memory, a
crash in native code) breaks the pool, and the samples in flight are lost: the pool is
restarted and those *suspects* run again one at a time, so that a sample that kills its
worker while alone is known to be the cause. Such a sample is retried up to
``max_attempts`` times, then recorded as an error; the others run normally.

The workers die with this process, even when it is killed by ``kill -9``
(:func:`~fesens.study.worker.die_with_parent`), and they leave Ctrl-C to it: they start with
SIGINT blocked and then ignore it. On Ctrl-C (or any other exception) the workers are killed
at once instead of finishing the samples in flight, whose records would be lost anyway: the
wait for them looks for a pending Ctrl-C (:func:`~fesens.interrupts.interruption_point`)
several times a second.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager

from fesens.interrupts import interruption_point
from fesens.study.parametric import ParametricModel
from fesens.study.results import error_record
from fesens.study.worker import InstalledModel, run_sample, start_local_worker

Sample = tuple[int, dict[str, float]]
#: How long the wait for a finished sample lasts before it looks for a pending Ctrl-C.
_POLL_SECONDS = 0.2


def run_in_process(model: ParametricModel, samples: Sequence[Sample]) -> Iterator[dict]:
    """Evaluate the samples one after the other in this process (setup runs once)."""
    installed = InstalledModel(model=model)
    for sample, inputs in samples:
        yield installed.run(sample, inputs)


def _died(sample: int, inputs: dict, attempts: int) -> dict:
    return error_record(sample, inputs, f"the worker process died while running this sample, "
                                        f"{attempts} time{'s' * (attempts != 1)}")


def run_processes(token: str, payload: bytes, samples: Sequence[Sample], workers: int, *,
                  max_attempts: int = 3, blas_threads: int | None = 1,
                  start_method: str = "spawn") -> Iterator[dict]:
    """Evaluate the samples in ``workers`` processes; yields records as they finish.

    Parameters
    ----------
    token, payload
        The model as :func:`~fesens.study.worker.dumps_model` returns it.
    samples : sequence of (int, dict)
        ``(sample id, parameter values)``.
    workers : int
        Worker processes.
    max_attempts : int
        How often a sample may kill its worker before it is recorded as an error.
    blas_threads : int, optional
        BLAS/OpenMP threads per worker (see :mod:`fesens.study.worker`).
    start_method : str
        :mod:`multiprocessing` start method; ``"spawn"`` (default) is safe when this
        process runs threads (a dask client, a GUI).
    """
    context = multiprocessing.get_context(start_method)
    queue: deque[Sample] = deque(samples)
    suspects: deque[Sample] = deque()
    attempts: dict[int, int] = {}
    while queue or suspects:
        executor = ProcessPoolExecutor(workers, mp_context=context,
                                       initializer=start_local_worker,
                                       initargs=(os.getpid(), token, payload, blas_threads))
        try:
            lost = yield from _run_pool(executor, suspects, 1, token)
            if lost:  # the one suspect in flight killed its worker
                (sample, inputs), = lost
                attempts[sample] = attempts.get(sample, 0) + 1
                if attempts[sample] >= max_attempts:
                    yield _died(sample, inputs, attempts[sample])
                else:
                    suspects.appendleft((sample, inputs))
                continue
            suspects.extend((yield from _run_pool(executor, queue, 2 * workers, token)))
        except BaseException:  # Ctrl-C, the caller stopped iterating: stop the workers now
            _kill_workers(executor)
            raise
        finally:
            executor.shutdown(wait=True, cancel_futures=True)


def _run_pool(executor, queue: deque, limit: int, token: str):
    """Run queued samples (at most ``limit`` in flight) until the queue is empty or the pool
    breaks. Yields the records; returns the samples lost with the pool."""
    in_flight: dict = {}
    lost: list[Sample] = []
    while (queue or in_flight) and not lost:
        if _fill(executor, queue, in_flight, limit, token):
            break
        # in slices: a Ctrl-C only records a request, which is honoured between them
        done, _ = wait(in_flight, timeout=_POLL_SECONDS, return_when=FIRST_COMPLETED)
        interruption_point()
        for future in done:
            sample, inputs = in_flight.pop(future)
            record = _outcome(future, sample, inputs)
            if record is None:
                lost.append((sample, inputs))
            else:
                yield record
    wait(in_flight)
    for future, (sample, inputs) in in_flight.items():
        record = _outcome(future, sample, inputs)
        if record is None:
            lost.append((sample, inputs))
        else:
            yield record
    return lost


def _kill_workers(executor: ProcessPoolExecutor) -> None:
    """SIGKILL the pool's worker processes (the pool then shuts down without waiting for
    the samples in flight)."""
    processes = getattr(executor, "_processes", None) or {}
    for process in list(processes.values()):
        if process.is_alive():
            process.kill()


@contextmanager
def _sigint_blocked():
    """Block SIGINT in this thread while worker processes are started, so that they start
    with it blocked (a process inherits the signal mask of the thread that starts it); a
    Ctrl-C meanwhile is delivered to this process when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _fill(executor, queue: deque, in_flight: dict, limit: int, token: str) -> bool:
    """Submit queued samples up to ``limit`` in flight; True if the pool is broken."""
    while queue and len(in_flight) < limit:
        sample, inputs = queue[0]
        try:
            with _sigint_blocked():  # submit starts the worker processes
                future = executor.submit(run_sample, token, sample, inputs)
        except BrokenProcessPool:
            return True
        queue.popleft()
        in_flight[future] = (sample, inputs)
    return False


def _outcome(future, sample: int, inputs: dict) -> dict | None:
    """The record of a finished future, or None if its worker died (pool broken)."""
    try:
        return future.result()
    except BrokenProcessPool:
        return None
    except Exception as exc:  # e.g. the inputs could not be pickled
        return error_record(sample, inputs, f"{type(exc).__name__}: {exc}")

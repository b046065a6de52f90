"""Run samples on a Dask cluster (``dask.distributed``).

The model reaches the workers as a worker plugin: the scheduler keeps it and gives it to
every worker, including workers that join or are restarted during the study, and each
worker process runs the model's setup once, on its first sample. Samples are submitted as
tasks; when a worker dies, the scheduler runs its tasks again elsewhere (up to its
``distributed.scheduler.allowed-failures``, then the sample is recorded as an error), and
``retries`` re-runs a task whose function raised outside the sample's own error handling.
A task that comes back neither finished nor failed (its result was lost with a worker that
died after computing it, or it was cancelled by the cluster) is submitted again, up to
``_MAX_RESUBMITS`` times, so every sample still yields exactly one record.
"""

from __future__ import annotations

import gc
import sys
import uuid
from collections.abc import Iterator, Sequence

from distributed import Client, Future, WorkerPlugin, as_completed

from fesens.study.errors import SchedulerError
from fesens.study.results import error_record
from fesens.study.worker import install, run_sample, uninstall

Sample = tuple[int, dict[str, float]]

# Resubmissions of a sample whose task was lost or cancelled (not failed) by the cluster.
_MAX_RESUBMITS = 3


class StudyModelPlugin(WorkerPlugin):
    """Installs a study's model in each worker process under ``key`` (and removes it
    afterwards)."""

    def __init__(self, key: str, payload: bytes, blas_threads: int | None):
        self.key = key
        self.payload = payload
        self.blas_threads = blas_threads

    def setup(self, worker) -> None:
        install(self.key, self.payload, self.blas_threads)

    def teardown(self, worker) -> None:
        uninstall(self.key)


def connect(scheduler, timeout: float = 10.0) -> tuple[Client, bool]:
    """``(client, owned)`` for a scheduler address or an existing client; ``owned`` tells
    whether the caller must close it.

    Raises
    ------
    SchedulerError
        The scheduler did not answer within ``timeout`` seconds.
    """
    if isinstance(scheduler, Client):
        return scheduler, False
    if not isinstance(scheduler, str):
        raise TypeError(f"scheduler must be an address like 'tcp://host:8786' or a "
                        f"dask.distributed.Client, got {type(scheduler).__name__}")
    previous = sys.unraisablehook
    sys.unraisablehook = _quiet_client_close(previous)
    try:
        client, reason = _start_client(scheduler, timeout)
        gc.collect()  # a half-started client closes here, quietly
    finally:
        sys.unraisablehook = previous
    if client is None:
        raise SchedulerError(f"the Dask scheduler at {scheduler} did not answer within "
                             f"{timeout:g} s ({reason}); check the address and that the "
                             "scheduler runs, or wait longer (--scheduler-timeout)")
    return client, True


def _start_client(scheduler: str, timeout: float) -> tuple[Client | None, str]:
    """``(client, "")``, or ``(None, why)`` if no scheduler answered in time."""
    try:
        return Client(scheduler, set_as_default=False, timeout=timeout), ""
    except Exception as exc:  # noqa: BLE001 - refused, timed out, or not a Dask scheduler
        reason = f"{type(exc).__name__}: {exc}".strip()
        if not isinstance(exc, OSError | TimeoutError):
            reason = f"what answered there is not a Dask scheduler, {reason}"
        return None, reason[:300]


def _quiet_client_close(hook):
    """``sys.unraisablehook`` that drops the errors of a half-started client's ``__del__``
    (it cannot close a connection that never opened) and passes on the others."""
    def quiet(unraisable) -> None:
        if getattr(unraisable.object, "__qualname__", "") != "Client.__del__":
            hook(unraisable)
    return quiet


def _failure(future, sample: int, inputs: dict) -> dict:
    if future.status != "error":
        return error_record(sample, inputs, f"the cluster lost this sample {_MAX_RESUBMITS + 1} "
                                            f"times (task status {future.status!r})")
    exc = future.exception()
    name = type(exc).__name__
    if name == "KilledWorker":
        message = f"workers died while running this sample ({exc})"
    else:
        message = f"{name}: {exc}"
    return error_record(sample, inputs, message)


def run_dask(client: Client, token: str, payload: bytes, samples: Sequence[Sample], *,
             retries: int = 2, blas_threads: int | None = 1) -> Iterator[dict]:
    """Evaluate the samples on ``client``'s cluster; yields records as they finish."""
    name = f"fesens-study-{token[:12]}-{uuid.uuid4().hex[:8]}"  # this run's model key
    client.register_plugin(StudyModelPlugin(name, payload, blas_threads), name=name)
    futures = {}

    def submit(sample: int, inputs: dict, attempt: int) -> Future:
        key = f"{name}-{sample}" if attempt == 0 else f"{name}-{sample}-resubmit{attempt}"
        future = client.submit(run_sample, name, sample, inputs, key=key, retries=retries,
                               pure=False)
        futures[future] = (sample, inputs, attempt)
        return future

    try:
        for sample, inputs in samples:
            submit(sample, inputs, 0)
        finished = as_completed(list(futures), loop=client.loop)
        for future in finished:
            sample, inputs, attempt = futures.pop(future)
            if future.status == "finished":
                yield future.result()
            elif future.status != "error" and attempt < _MAX_RESUBMITS:
                finished.add(submit(sample, inputs, attempt + 1))
            else:
                yield _failure(future, sample, inputs)
            future.release()
    finally:
        if futures:
            client.cancel(list(futures))
        client.unregister_worker_plugin(name)

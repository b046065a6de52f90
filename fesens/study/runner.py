"""Run a study: every sample of a design through a parametric model, wherever it runs.

>>> results = run_study(model, design, out="results/bracket")          # doctest: +SKIP
>>> results = run_study(model, design, scheduler="tcp://10.0.0.5:8786")  # doctest: +SKIP

Where: local worker processes by default (one per core), this process (``workers=0``), or a
Dask cluster (``scheduler=`` an address or a ``dask.distributed.Client``); the results are
the same. With ``out``, each finished sample is appended to ``out/results.jsonl`` at once
(see :mod:`fesens.study.journal`), ``resume=True`` skips the samples found there, and the
table is written to ``results.csv`` (and ``results.parquet`` when pyarrow is installed) at
the end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from fesens.interrupts import interruption_point
from fesens.study.designs import Design
from fesens.study.journal import JOURNAL, Journal, JournalError
from fesens.study.parametric import ParametricModel
from fesens.study.progress import Progress
from fesens.study.results import StudyResults
from fesens.study.tablefiles import parquet_available
from fesens.study.worker import dumps_model


def default_workers() -> int:
    """Cores this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _check_resumed(records: list[dict], design: Design, journal: Journal) -> None:
    expected = dict(design.samples())
    for record in records:
        sample = record["sample"]
        if sample not in expected:
            raise JournalError(f"{journal.path} holds sample {sample}, which the design does "
                               f"not have: it was made by another study; use another folder")
        if record["inputs"] != expected[sample]:
            raise JournalError(f"{journal.path}: sample {sample} was run with "
                               f"{record['inputs']}, but the design now gives "
                               f"{expected[sample]}: it was made by another study; use "
                               "another folder")


def _records(model: ParametricModel, pending: list, workers: int | None, scheduler,
             options: dict) -> Iterator[dict]:
    if scheduler is not None:
        from fesens.study.dask_cluster import connect, run_dask

        client, owned = connect(scheduler, options["scheduler_timeout"])
        try:
            token, payload = dumps_model(model)
            yield from run_dask(client, token, payload, pending, retries=options["retries"],
                                blas_threads=options["blas_threads"])
        finally:
            if owned:
                client.close()
        return
    if workers == 0:
        from fesens.study.local import run_in_process

        yield from run_in_process(model, pending)
        return
    from fesens.study.local import run_processes

    token, payload = dumps_model(model)
    count = min(workers or default_workers(), len(pending))
    yield from run_processes(token, payload, pending, count,
                             max_attempts=options["max_attempts"],
                             blas_threads=options["blas_threads"])


def run_study(model: ParametricModel, design: Design, *, out: str | os.PathLike | None = None,
              workers: int | None = None, scheduler=None, resume: bool = False,
              progress: bool = True, retries: int = 2, max_attempts: int = 3,
              blas_threads: int | None = 1, scheduler_timeout: float = 10.0,
              fingerprint: str | None = None) -> StudyResults:
    """Evaluate ``model`` with gradients at every sample of ``design``.

    Parameters
    ----------
    model : ParametricModel
    design : Design
        Its parameter names are the keys of ``params`` in ``model.evaluate``.
    out : path, optional
        Results folder: ``results.jsonl`` (appended as samples finish), then
        ``results.csv`` and ``results.parquet``. Without it nothing is written.
    workers : int, optional
        Local worker processes (default: one per core); 0 runs in this process.
    scheduler : str or dask.distributed.Client, optional
        Run on a Dask cluster instead: a scheduler address (``"tcp://host:8786"``) or a
        client (left open).
    resume : bool
        Continue the study in ``out``: samples found in its journal are not run again.
    progress : bool
        Show a progress bar (tqdm when installed) on stderr.
    retries : int
        Dask: re-runs of a task that raised outside the sample's error handling.
    max_attempts : int
        Local processes: how often a sample may be in flight when a worker dies before it is
        recorded as an error.
    blas_threads : int, optional
        BLAS/OpenMP threads of each worker process (local or Dask; with ``threadpoolctl``):
        the same count everywhere gives bit-identical results on every backend. None
        leaves the libraries' defaults. In-process runs are not limited.
    scheduler_timeout : float
        Seconds to wait for the scheduler at a ``scheduler`` address to answer.
    fingerprint : str, optional
        What the study computes (:attr:`fesens.study.config.StudySpec.fingerprint`): stored
        with each journal line; a resume refuses lines of another one.

    Returns
    -------
    StudyResults
        One record per sample of the design (errors included), sorted by sample id.

    Raises
    ------
    JournalError
        ``out`` holds another run's results and ``resume`` is False, or they were made
        with a different design or ``fingerprint``.
    SchedulerError
        The scheduler did not answer within ``scheduler_timeout`` seconds.
    WriteError
        A file of ``out`` could not be written (the message names it).
    """
    if not isinstance(model, ParametricModel):
        raise TypeError(f"model must be a ParametricModel, got {type(model).__name__}")
    if not isinstance(design, Design):
        raise TypeError(f"design must be a Design, got {type(design).__name__}")
    if workers is not None and scheduler is not None:
        raise ValueError("give workers (local processes) or scheduler (Dask), not both")
    if workers is not None and (isinstance(workers, bool) or workers < 0):
        raise ValueError(f"workers must be an integer ≥ 0, got {workers!r}")
    if resume and out is None:
        raise ValueError("resume needs the results folder (out=) of the study to continue")
    journal = None if out is None else Journal(Path(out) / JOURNAL, fingerprint)
    finished: list[dict] = []
    if journal is not None:
        finished = journal.open(resume=resume)
        try:
            _check_resumed(finished, design, journal)
        except JournalError:
            journal.close()
            raise
    done = {r["sample"] for r in finished}
    pending = [(sample, inputs) for sample, inputs in design.samples() if sample not in done]
    bar = Progress(len(design), len(finished), enabled=progress)
    records = list(finished)
    stream = None
    try:
        if pending:
            options = {"retries": retries, "max_attempts": max_attempts,
                       "blas_threads": blas_threads, "scheduler_timeout": scheduler_timeout}
            stream = _records(model, pending, workers, scheduler, options)
            for record in stream:
                if record["sample"] in done:  # exactly once, whatever the backend delivers
                    continue
                done.add(record["sample"])
                if journal is not None:
                    journal.append(record)
                records.append(record)
                bar.update(record["status"])
                interruption_point()  # a Ctrl-C ends the study here, this record journaled
    finally:
        if stream is not None:
            stream.close()  # at once, not when garbage-collected: stops the workers
        bar.close()
        if journal is not None:
            journal.close()
    results = StudyResults(records, design.names, model.outputs)
    if out is not None:
        results.write(Path(out) / "results.csv")
        if parquet_available():
            results.write(Path(out) / "results.parquet")
    return results


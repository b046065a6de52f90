"""``fesens study``: run the parameter study of a study file (see :mod:`fesens.study.config`).

Exit codes as for every fesens command: 0 success, 1 every sample failed, 2 bad input
(study file, base config, options, results folder), 130 interrupted (the samples finished
so far are saved; ``--resume`` continues). The results folder (what ``--force`` replaces,
what ``--resume`` checks) is the command's business; :mod:`fesens.study` runs the samples.
"""

from __future__ import annotations

import json
import re
import time
import warnings
from pathlib import Path

import click

from fesens import __version__
from fesens.cli.errors import FesensCliError
from fesens.cli.options import echo_warnings

#: Files a study writes in its folder (``--force`` removes these and nothing else).
STUDY_FILES = ("results.jsonl", "results.csv", "results.json", "results.parquet",
               "sensitivities.csv", "tornado.png", "sweeps.png", "scatter.png", "study.json",
               "summary.json")
ADDRESS = re.compile(r"^[a-z][a-z0-9+.-]*://\S+$")


def _normalised(data) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def _prepare_folder(folder, study_data: dict, *, resume: bool, force: bool,
                    command: str) -> None:
    """Check the results folder (held locked by this run), then clear it (``force``) and
    remove the temporary files a killed run left; write ``study.json``."""
    from fesens.output.folder import LOCK, atomic_write_text
    from fesens.study.journal import JOURNAL

    out = folder.path
    saved = out / "study.json"
    if resume:
        if not (out / JOURNAL).is_file():
            raise FesensCliError(f"cannot resume: no {JOURNAL} in {out}; run without --resume "
                                "to start the study")
        if saved.is_file() and _normalised(json.loads(saved.read_text(encoding="utf-8"))) \
                != _normalised(study_data):
            raise FesensCliError(f"cannot resume: the study file changed since the run in {out} "
                                "started (its study.json differs); use another --out")
        folder.remove_temporaries()
        return
    if any(p.name != LOCK for p in out.iterdir()):
        if not force:
            raise FesensCliError(f"results folder {out} exists and is not empty; nothing was "
                                "written. Pass --resume to continue its study, --force to start "
                                f"over, or choose another --out ({command} --out OTHER)")
        for name in STUDY_FILES:
            (out / name).unlink(missing_ok=True)
        folder.remove_temporaries()
    atomic_write_text(saved, json.dumps(study_data, indent=2, ensure_ascii=False) + "\n")


def _where(workers: int | None, client) -> str:
    from fesens.study.runner import default_workers

    if client is not None:
        return f"the Dask cluster at {client.scheduler.address}"
    if workers == 0:
        return "this process"
    count = workers or default_workers()
    return f"{count} local worker process{'es' * (count != 1)}"


def _sensitivity_lines(results) -> list[str]:
    lines = []
    sensitivities = results.sensitivities()
    for output in results.outputs:
        ranked = ", ".join(f"{row['parameter']} {row['mean']:+.3g}"
                           for row in sensitivities.for_output(output))
        lines.append(f"  {output}: {ranked}")
    return lines


@click.command("study")
@click.argument("study_path", metavar="STUDY.toml",
                type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out_dir", metavar="DIR", type=click.Path(file_okay=False, path_type=Path),
              help="Results folder [default: results/NAME].")
@click.option("--workers", type=click.IntRange(min=0), metavar="N",
              help="Local worker processes [default: one per core; 0: in this process].")
@click.option("--scheduler", metavar="ADDRESS",
              help="Run on the Dask cluster of this scheduler (e.g. tcp://10.0.0.5:8786).")
@click.option("--scheduler-timeout", type=click.FloatRange(min=0, min_open=True),
              default=10.0, show_default=True, metavar="SECONDS",
              help="How long to wait for the --scheduler to answer.")
@click.option("--resume", is_flag=True, help="Continue the study saved in DIR.")
@click.option("--force", is_flag=True, help="Replace the results of a previous study in DIR.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors (no progress bar).")
def study_command(study_path: Path, out_dir: Path | None, workers: int | None,
                  scheduler: str | None, scheduler_timeout: float, resume: bool, force: bool,
                  quiet: bool) -> None:
    """Run the parameter study of STUDY.toml: its base config (the format of `fesens solve`)
    evaluated with exact gradients at every sample of its design (see `fesens docs study`).

    Writes to DIR: results.jsonl (one line per sample as it finishes; --resume continues
    from it), results.csv / .json / .parquet (sample, inputs, outputs, d(output)/d(param),
    wall_time, status, error, worker), sensitivities.csv (normalised sensitivities),
    tornado.png, sweeps.png, scatter.png, study.json and summary.json. A second study on
    DIR while one runs there is refused (exit 2); Ctrl-C saves the finished samples (exit
    130).
    """
    from fesens.config import ConfigError, ConfigWarning
    from fesens.errors import WriteError
    from fesens.output.folder import ResultsFolder, ResultsFolderError
    from fesens.study.config import load_study
    from fesens.study.errors import SchedulerError
    from fesens.study.journal import JournalError

    if workers is not None and scheduler is not None:
        raise click.UsageError("give --workers (local processes) or --scheduler (Dask), "
                               "not both")
    if resume and force:
        raise click.UsageError("--resume continues a study and --force starts over; pick one")
    if scheduler is not None and not ADDRESS.match(scheduler):
        raise click.BadParameter(f"{scheduler!r} is not a scheduler address; expected e.g. "
                                 "tcp://10.0.0.5:8786", param_hint="--scheduler")
    echo = (lambda line: None) if quiet else click.echo
    command = f"fesens study {study_path}"
    out = out_dir
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConfigWarning)
            spec = load_study(study_path)
        echo_warnings(caught)
        out = out_dir or Path("results") / spec.name
        if out.exists() and not out.is_dir():
            raise FesensCliError(f"results folder {out} is a file, not a folder")
        client = _connect(scheduler, scheduler_timeout)  # before anything is written
        try:
            with ResultsFolder(out).locked():
                _study(spec, ResultsFolder(out), client, workers, resume=resume, force=force,
                       quiet=quiet, echo=echo, command=command)
        finally:
            if client is not None:
                client.close()
    except KeyboardInterrupt:
        raise FesensCliError(_interrupted(out, command), 130) from None
    except (ConfigError, JournalError, ResultsFolderError, WriteError, SchedulerError) as err:
        raise FesensCliError(str(err)) from None


def _connect(scheduler: str | None, timeout: float):
    """A client of the Dask scheduler at ``scheduler`` (None without one)."""
    if scheduler is None:
        return None
    try:
        from fesens.study.dask_cluster import connect
    except ImportError as err:
        raise FesensCliError(f"--scheduler needs dask.distributed (pip install "
                             f"'dask[distributed]'): {err}") from None
    return connect(scheduler, timeout)[0]


def _interrupted(out: Path | None, command: str) -> str:
    """The message of a Ctrl-C: how to resume, if anything was saved."""
    from fesens.output.folder import ResultsFolder
    from fesens.study.journal import JOURNAL

    if out is None or not (out / JOURNAL).is_file():
        return "interrupted before the study started; nothing was saved"
    ResultsFolder(out).remove_temporaries()
    return (f"interrupted; the finished samples are saved in {out / JOURNAL}. Resume with: "
            f"{command} --out {out} --resume")


def _study(spec, folder, client, workers: int | None, *, resume: bool, force: bool,
           quiet: bool, echo, command: str) -> None:
    """Run the study in ``folder`` (whose lock this process holds) and write its report."""
    from fesens.errors import WriteError
    from fesens.study.runner import run_study

    _prepare_folder(folder, spec.data, resume=resume, force=force, command=command)
    where = _where(workers, client)
    echo(f"{spec.name}: {len(spec.design)} samples ({spec.design.kind}), parameters "
         f"{', '.join(spec.design.names)}; outputs {', '.join(spec.model.outputs)}; "
         f"on {where}")
    start = time.perf_counter()
    try:
        results = run_study(spec.model, spec.design, out=folder.path, workers=workers,
                            scheduler=client, resume=resume, progress=not quiet,
                            fingerprint=spec.fingerprint)
    except WriteError:
        raise
    except OSError as err:
        raise FesensCliError(f"cannot run the study: {err}") from None
    _finish(spec, results, folder.path, time.perf_counter() - start, where, echo)


def _finish(spec, results, out: Path, seconds: float, where: str, echo) -> None:
    from fesens.output.folder import atomic_write_text
    from fesens.study.report import write_report

    written = write_report(results, out, title=spec.name)
    summary = {"name": spec.name, "samples": len(results), "errors": results.n_errors,
               "seconds": seconds, "where": where, "parameters": list(results.parameters),
               "outputs": list(results.outputs), "fesens_version": __version__}
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    echo(f"{len(results)} samples, {results.n_errors} error(s), {seconds:.3g} s")
    if results.ok().any():
        echo("normalised sensitivities (∂y/∂p)·(p/y), mean over samples:")
        for line in _sensitivity_lines(results):
            echo(line)
    echo(f"results in {out}: {', '.join(p.name for p in written)}, results.jsonl")
    if len(results) and not results.ok().any():
        first = results.errors[0]["error"]
        raise FesensCliError(f"every sample failed; the first error: {first}", 1)


# Every rank of an MPI launch would run the whole study into one folder; a study spreads
# its samples over its own worker processes instead.
study_command.mpi_refusal = (
    "fesens study does not run under mpirun (every rank would run the whole study): a study "
    "runs its samples in parallel itself; run fesens study without mpirun and use "
    "--workers N (local processes) or --scheduler ADDRESS (a Dask cluster)")

"""The summary files of a finished study: the table in every format, the normalised
sensitivities, and the pictures.
"""

from __future__ import annotations

import os
from pathlib import Path

from fesens.study.journal import JOURNAL
from fesens.study.results import StudyResults
from fesens.study.tablefiles import parquet_available


def write_report(results: StudyResults, out: str | os.PathLike, *, title: str = "") -> list[Path]:
    """Write ``results.csv``, ``results.json`` (and ``results.parquet`` with pyarrow),
    ``sensitivities.csv``, ``tornado.png``, ``sweeps.png`` and ``scatter.png`` to ``out``.

    The pictures need at least one successful sample and one varied parameter; without
    them only the tables are written. Returns the paths written.
    """
    from fesens.plotting.study import plot_scatter, plot_sweeps, plot_tornado

    out = Path(out)
    current = _current_report(out)
    if current is not None:
        return current
    written = [results.write(out / "results.csv"), results.write(out / "results.json")]
    if parquet_available():
        written.append(results.write(out / "results.parquet"))
    sensitivities = results.sensitivities()
    written.append(sensitivities.write(out / "sensitivities.csv"))
    varied = any(len(set(results.value(p))) > 1 for p in results.parameters)
    if results.ok().any() and results.outputs and varied:
        prefix = f"{title}: " if title else ""
        written.append(plot_tornado(sensitivities, out / "tornado.png",
                                    title=f"{prefix}normalised sensitivities"))
        written.append(plot_sweeps(results, out / "sweeps.png"))
        written.append(plot_scatter(results, out / "scatter.png"))
    return written


#: Files of a report, in the order :func:`write_report` writes them.
REPORT_FILES = ("results.csv", "results.json", "results.parquet", "sensitivities.csv",
                "tornado.png", "sweeps.png", "scatter.png")


def _current_report(out: Path) -> list[Path] | None:
    """The report files in ``out`` when every one of them was written after the last
    change of the sample journal (a resumed study that ran no new sample), else None."""
    journal = out / JOURNAL
    expected = [out / name for name in REPORT_FILES
                if name != "results.parquet" or parquet_available()]
    if not journal.is_file() or not all(p.is_file() for p in expected):
        return None
    changed = journal.stat().st_mtime_ns
    return expected if all(p.stat().st_mtime_ns > changed for p in expected) else None

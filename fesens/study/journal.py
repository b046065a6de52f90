"""The study journal: one JSON line per finished sample, appended and flushed to disk as
soon as the sample finishes, so nothing is lost when the study stops.

A resumed study reads the journal back and skips the samples it holds. A last line cut
short by a crash is dropped (and truncated before anything new is appended). Each line
carries the study's fingerprint, when it has one (``StudySpec.fingerprint``): a resume
refuses lines of another study even when ``study.json`` was deleted. Each sample id
is written at most once. An ``OSError`` while writing (a full disk) becomes a
:class:`~fesens.errors.WriteError` naming the journal.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from fesens.errors import FesensError, writing

JOURNAL = "results.jsonl"


class JournalError(FesensError, ValueError):
    """The journal cannot be used as asked (exists without resume, different design)."""


def _clean(value):
    """NaN and infinities as None (strict JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def _restore(value):
    if value is None:
        return math.nan
    if isinstance(value, dict):
        return {k: _restore(v) for k, v in value.items()}
    return value


def _load_record(line: str) -> dict:
    record = json.loads(line)
    for key in ("inputs", "outputs", "gradients"):
        record[key] = _restore(record[key])
    record["wall_time"] = _restore(record["wall_time"])
    return record


class Journal:
    """Append-only JSON-lines file of sample records.

    Parameters
    ----------
    path : Path
        The ``results.jsonl`` file.
    fingerprint : str, optional
        What the samples are computed for: written with each record, and a record read
        back with another one is refused.
    """

    def __init__(self, path: str | os.PathLike, fingerprint: str | None = None):
        self.path = Path(path)
        self.fingerprint = fingerprint
        self._handle = None
        self._written: set[int] = set()

    def exists(self) -> bool:
        return self.path.is_file() and self.path.stat().st_size > 0

    def read(self) -> list[dict]:
        """The complete records in the file (a truncated last line is ignored)."""
        if not self.path.is_file():
            return []
        records, seen = [], set()
        text = self.path.read_text(encoding="utf-8")
        lines = text.split("\n")
        complete = lines if text.endswith("\n") else lines[:-1]
        for number, line in enumerate(complete, start=1):
            if not line.strip():
                continue
            try:
                record = _load_record(line)
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise JournalError(f"{self.path}:{number}: not a study record ({err})") from None
            stamp = record.pop("fingerprint", None)
            if self.fingerprint is not None and stamp != self.fingerprint:
                raise JournalError(
                    f"{self.path}:{number}: this sample was computed for another study (its "
                    "fingerprint of the base config, mesh, parameters and outputs differs); "
                    "start over with --force or use another --out")
            if record["sample"] not in seen:
                seen.add(record["sample"])
                records.append(record)
        return records

    def open(self, *, resume: bool) -> list[dict]:
        """Open for appending; returns the records already there (resume) or starts empty.

        Raises
        ------
        JournalError
            The journal holds records and ``resume`` is False.
        """
        records: list[dict] = []
        if resume:
            records = self.read()
        elif self.exists():
            raise JournalError(f"{self.path} holds results of an earlier run; resume it "
                               "(resume=True, --resume) or choose another output folder")
        with writing(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if resume:
                self._drop_partial_line()
            self._handle = self.path.open("a", encoding="utf-8")
        self._written = {r["sample"] for r in records}
        return records

    def _drop_partial_line(self) -> None:
        if not self.path.is_file():
            return
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end != len(data):
            with self.path.open("r+b") as handle:
                handle.truncate(end)

    def append(self, record: dict) -> bool:
        """Write one record and flush it to disk; False (nothing written) if its sample is
        in the journal already."""
        if self._handle is None:
            raise JournalError("the journal is not open")
        if record["sample"] in self._written:
            return False
        stamped = record if self.fingerprint is None else {**record,
                                                           "fingerprint": self.fingerprint}
        line = json.dumps(_clean(stamped), ensure_ascii=False, allow_nan=False)
        with writing(self.path):
            self._handle.write(line + "\n")
            self._handle.flush()
            os.fsync(self._handle.fileno())
        self._written.add(record["sample"])
        return True

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

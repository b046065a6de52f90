"""The results of a study: one record per sample, shown as a tidy table.

Columns, in order::

    sample | <parameters> | <outputs> | d(<output>)/d(<parameter>) ...
           | wall_time | status | error | worker

``status`` is ``"ok"`` or ``"error"`` (then ``error`` holds the message and the outputs may be
NaN); ``wall_time`` is the seconds one evaluation with its gradients took on its worker
(the per-worker setup excluded); ``worker`` is ``host:pid`` of the process that ran it.
Rows are sorted by sample id. The table is a pandas DataFrame with
:meth:`StudyResults.to_dataframe` and is written to CSV, JSON or Parquet by
:meth:`StudyResults.write` (read back with :func:`read_results`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from fesens.study.sensitivity import normalized_sensitivities
from fesens.study.tablefiles import read_table, write_table

#: Columns after the gradients.
TRAILING = ("wall_time", "status", "error", "worker")
#: Columns that differ between runs of the same study (timing, placement).
RUN_DEPENDENT = ("wall_time", "worker")
_GRADIENT = re.compile(r"^d\((?P<output>.+)\)/d\((?P<parameter>.+)\)$")


def gradient_column(output: str, parameter: str) -> str:
    """``"d(compliance)/d(E)"``."""
    return f"d({output})/d({parameter})"


def parse_gradient_column(name: str) -> tuple[str, str] | None:
    """``(output, parameter)`` of a gradient column name, or None."""
    match = _GRADIENT.match(name)
    return (match["output"], match["parameter"]) if match else None


def error_record(sample: int, inputs: dict, message: str, worker: str = "",
                 wall_time: float = 0.0) -> dict:
    """The record of a sample that failed."""
    return {"sample": sample, "inputs": inputs, "outputs": {}, "gradients": {},
            "wall_time": wall_time, "status": "error", "error": message, "worker": worker}


class StudyResults:
    """Records of the samples of a study.

    Parameters
    ----------
    records : iterable of dict
        ``{"sample", "inputs", "outputs", "gradients", "wall_time", "status", "error",
        "worker"}`` (as the journal stores them).
    parameters : sequence of str
    outputs : sequence of str, optional
        Default: the outputs of the first successful record.
    """

    def __init__(self, records: Iterable[dict], parameters: Sequence[str],
                 outputs: Sequence[str] | None = None):
        self.records = sorted(records, key=lambda r: r["sample"])
        self.parameters = tuple(parameters)
        if outputs is None:
            first = next((r for r in self.records if r["outputs"]), None)
            outputs = list(first["outputs"]) if first else []
        self.outputs = tuple(outputs)
        self._columns: dict[str, list] | None = None

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return (f"StudyResults({len(self)} samples, {self.n_errors} errors, parameters "
                f"{list(self.parameters)}, outputs {list(self.outputs)})")

    @property
    def n_errors(self) -> int:
        return sum(r["status"] != "ok" for r in self.records)

    @property
    def errors(self) -> list[dict]:
        """Records of the samples that failed."""
        return [r for r in self.records if r["status"] != "ok"]

    # ------------------------------------------------------------ columns
    def column_names(self) -> list[str]:
        gradients = [gradient_column(o, p) for o in self.outputs for p in self.parameters]
        return ["sample", *self.parameters, *self.outputs, *gradients, *TRAILING]

    def column_types(self) -> dict[str, str]:
        types = dict.fromkeys(self.column_names(), "float")
        types.update(sample="int", status="str", error="str", worker="str")
        return types

    def columns(self) -> dict[str, list]:
        """The table as ``{column: list}`` (works without pandas)."""
        if self._columns is None:
            self._columns = self._build_columns()
        return {name: list(values) for name, values in self._columns.items()}

    def _build_columns(self) -> dict[str, list]:
        nan = math.nan
        table: dict[str, list] = {"sample": [int(r["sample"]) for r in self.records]}
        for p in self.parameters:
            table[p] = [float(r["inputs"].get(p, nan)) for r in self.records]
        for o in self.outputs:
            table[o] = [float(r["outputs"].get(o, nan)) for r in self.records]
        for o in self.outputs:
            for p in self.parameters:
                table[gradient_column(o, p)] = [
                    float(r["gradients"].get(o, {}).get(p, nan)) for r in self.records]
        table["wall_time"] = [float(r["wall_time"]) for r in self.records]
        for key in ("status", "error", "worker"):
            table[key] = [str(r[key]) for r in self.records]
        return table

    def to_dataframe(self):
        """The table as a :class:`pandas.DataFrame` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("StudyResults.to_dataframe needs pandas (pip install pandas); "
                              "columns() gives the same table as a dict of lists") from None
        return pd.DataFrame(self.columns())

    def value(self, name: str) -> np.ndarray:
        """A parameter or output over all samples, ``(n_samples,)`` (NaN where failed)."""
        if name not in self.parameters and name not in self.outputs:
            raise KeyError(f"no parameter or output {name!r}; parameters "
                           f"{list(self.parameters)}, outputs {list(self.outputs)}")
        self.columns()
        return np.array(self._columns[name], dtype=float)

    def gradient(self, output: str, parameter: str) -> np.ndarray:
        """``∂ output / ∂ parameter`` over all samples, ``(n_samples,)``."""
        name = gradient_column(output, parameter)
        self.columns()
        if name not in self._columns:
            raise KeyError(f"no gradient column {name!r}")
        return np.array(self._columns[name], dtype=float)

    def ok(self) -> np.ndarray:
        """Mask of the samples that succeeded, ``(n_samples,)``."""
        return np.array([r["status"] == "ok" for r in self.records], dtype=bool)

    def same_values(self, other: StudyResults) -> bool:
        """Whether both tables are equal in every column but timing and placement
        (:data:`RUN_DEPENDENT`), bit for bit (NaN equal to NaN)."""
        mine, theirs = self.columns(), other.columns()
        if list(mine) != list(theirs) or len(self) != len(other):
            return False
        for name in mine:
            if name in RUN_DEPENDENT:
                continue
            for a, b in zip(mine[name], theirs[name], strict=True):
                both_nan = isinstance(a, float) and isinstance(b, float) and a != a and b != b
                if a != b and not both_nan:
                    return False
        return True

    # ------------------------------------------------------------ files
    def write(self, path: str | os.PathLike) -> Path:
        """Write the table to a ``.csv``, ``.json`` or ``.parquet`` file (atomically)."""
        return write_table(path, self.columns(), self.column_types())

    def sensitivities(self):
        """Normalised sensitivities
        (:func:`~fesens.study.sensitivity.normalized_sensitivities`)."""
        return normalized_sensitivities(self)


def read_results(path: str | os.PathLike) -> StudyResults:
    """Read a table written by :meth:`StudyResults.write` (CSV, JSON or Parquet)."""
    columns = read_table(path)
    return from_columns(columns)


def from_columns(columns: dict[str, list]) -> StudyResults:
    """Rebuild :class:`StudyResults` from its table; parameters and outputs are read from
    the gradient columns' names, values are typed by the schema."""
    missing = [c for c in ("sample", *TRAILING) if c not in columns]
    if missing:
        raise ValueError(f"not a study results table: no column(s) {missing}")
    outputs: list[str] = []
    parameters: list[str] = []
    for name in columns:
        parsed = parse_gradient_column(name)
        if parsed:
            outputs += [parsed[0]] if parsed[0] not in outputs else []
            parameters += [parsed[1]] if parsed[1] not in parameters else []
    if not outputs:
        parameters = [c for c in columns if c not in ("sample", *TRAILING)]

    def number(value) -> float:
        return math.nan if value is None or value == "" else float(value)

    records = []
    for i, sample in enumerate(columns["sample"]):
        records.append({
            "sample": int(sample),
            "inputs": {p: number(columns[p][i]) for p in parameters},
            "outputs": {o: number(columns[o][i]) for o in outputs},
            "gradients": {o: {p: number(columns[gradient_column(o, p)][i]) for p in parameters}
                          for o in outputs},
            "wall_time": number(columns["wall_time"][i]),
            **{key: "" if columns[key][i] is None else str(columns[key][i])
               for key in ("status", "error", "worker")},
        })
    return StudyResults(records, parameters, outputs)

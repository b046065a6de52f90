"""Normalised (logarithmic) sensitivities from the gradients of a study.

For output ``y`` and parameter ``p`` at one sample, ``S = (∂y/∂p) · p / y`` is the relative
change of ``y`` per relative change of ``p`` (``y ∝ p^a`` gives ``S = a`` everywhere). It is
averaged over the samples that succeeded and have ``y ≠ 0``; the spread over the design
(standard deviation, min, max) shows how much it depends on where one is in the design.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from fesens.study.tablefiles import write_table

COLUMNS = ("output", "parameter", "mean", "std", "min", "max", "samples")


class SampledGradients(Protocol):
    """What the sensitivities read of a study's results (a
    :class:`~fesens.study.results.StudyResults`, whose :meth:`sensitivities` calls
    :func:`normalized_sensitivities`)."""

    outputs: Sequence[str]
    parameters: Sequence[str]

    def value(self, name: str) -> np.ndarray:
        """An input's or output's value per sample ``(n_samples,)``."""

    def gradient(self, output: str, parameter: str) -> np.ndarray:
        """``∂output/∂parameter`` per sample ``(n_samples,)``."""

    def ok(self) -> np.ndarray:
        """Whether each sample succeeded ``(n_samples,)``."""


def normalized_coefficients(results: SampledGradients, output: str, parameter: str
                            ) -> np.ndarray:
    """``S`` at every usable sample: succeeded, finite, ``y ≠ 0``; ``(n_usable,)``."""
    y = results.value(output)
    p = results.value(parameter)
    dy = results.gradient(output, parameter)
    usable = results.ok() & np.isfinite(y) & np.isfinite(dy) & (y != 0)
    return dy[usable] * p[usable] / y[usable]


class Sensitivities:
    """Normalised sensitivity of every output to every parameter, summarised over samples.

    Attributes
    ----------
    rows : list of dict
        One per (output, parameter): ``mean``, ``std``, ``min``, ``max`` of ``S`` and the
        number of ``samples`` used (NaN statistics when none is usable).
    """

    def __init__(self, rows: list[dict]):
        self.rows = rows

    def __repr__(self) -> str:
        return f"Sensitivities({len(self.rows)} rows)"

    def mean(self, output: str, parameter: str) -> float:
        """The sample mean of ``S`` for one output and parameter."""
        for row in self.rows:
            if row["output"] == output and row["parameter"] == parameter:
                return row["mean"]
        raise KeyError(f"no sensitivity of {output!r} to {parameter!r}")

    def outputs(self) -> list[str]:
        return list(dict.fromkeys(row["output"] for row in self.rows))

    def for_output(self, output: str) -> list[dict]:
        """The rows of one output, largest ``|mean|`` first (a tornado chart's order)."""
        rows = [row for row in self.rows if row["output"] == output]
        return sorted(rows, key=lambda r: -abs(r["mean"]) if np.isfinite(r["mean"]) else 0.0)

    def columns(self) -> dict[str, list]:
        return {name: [row[name] for row in self.rows] for name in COLUMNS}

    def to_dataframe(self):
        """The table as a :class:`pandas.DataFrame` (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.columns())

    def write(self, path: str | os.PathLike) -> Path:
        """Write the table to a ``.csv``, ``.json`` or ``.parquet`` file (atomically)."""
        types = {name: "float" for name in COLUMNS}
        types.update(output="str", parameter="str", samples="int")
        return write_table(path, self.columns(), types)


def normalized_sensitivities(results: SampledGradients) -> Sensitivities:
    """Mean, spread and count of ``S = (∂y/∂p) p / y`` for every output and parameter."""
    rows = []
    for output in results.outputs:
        for parameter in results.parameters:
            s = normalized_coefficients(results, output, parameter)
            stats = ((float(s.mean()), float(s.std()), float(s.min()), float(s.max()))
                     if s.size else (np.nan,) * 4)
            rows.append({"output": output, "parameter": parameter,
                         **dict(zip(("mean", "std", "min", "max"), stats, strict=True)),
                         "samples": int(s.size)})
    return Sensitivities(rows)

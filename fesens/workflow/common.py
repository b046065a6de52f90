"""What the workflows share: the interruption signal (defined in :mod:`fesens.errors`), the
numbers a physics reports, the files a run reads, the silent echo."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from fesens.errors import Interrupted
from fesens.physics.spec import PhysicsConfig

__all__ = ["Interrupted", "input_files", "reported_values", "silent"]


def reported_values(fragment: PhysicsConfig, point_data: Mapping,
                    cell_data: Mapping) -> dict[str, float]:
    """The numbers a physics reports after a solve (:class:`~fesens.physics.spec.Reported`),
    from its output fields (cell data first), e.g. ``{"max_von_mises": 231.0}``."""
    values = {}
    for item in fragment.reported:
        field = np.asarray(cell_data[item.field] if item.field in cell_data
                           else point_data[item.field])
        if item.reduce == "max_norm":
            field = np.linalg.norm(np.reshape(field, (len(field), -1)), axis=1)
        values[item.key] = float(np.min(field) if item.reduce == "min" else np.max(field))
    return values


def input_files(config, *extra: str | Path | None) -> tuple[Path, ...]:
    """The files a run of ``config`` reads: the config file itself, every file a key names
    (resolved configs hold absolute paths: a mesh file, ``design.initial``, a field read
    from a file) and ``extra`` (a ``--design``; None is skipped), for the results folder to
    keep (:class:`~fesens.output.ResultsFolder` ``inputs``)."""

    def strings(value) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from strings(item)
        elif isinstance(value, list):
            for item in value:
                yield from strings(item)

    named = [config.source, *strings(config.data), *(e for e in extra if e is not None)]
    return tuple(Path(name) for name in named if Path(name).is_absolute() or
                 Path(name).is_file())


def silent(line: str) -> None:
    """An echo that prints nothing (a run without progress lines, the ranks other than 0)."""

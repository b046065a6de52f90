"""What the workflows share: the interruption signal (defined in :mod:`fesens.errors`), the
numbers a physics reports, the silent echo."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fesens.errors import Interrupted
from fesens.physics.spec import PhysicsConfig

__all__ = ["Interrupted", "reported_values", "silent"]


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


def silent(line: str) -> None:
    """An echo that prints nothing (a run without progress lines, the ranks other than 0)."""

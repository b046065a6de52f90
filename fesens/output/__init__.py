"""Results folders: atomic files and history tables; the names of the fields written
(:mod:`fesens.output.names`). Pictures: :mod:`fesens.plotting`."""

from fesens.output.folder import (
    ResultsFolder,
    ResultsFolderError,
    atomic_write_text,
    history_csv,
)
from fesens.output.names import (
    of_design,
    per_volume,
    relative_sensitivity_name,
    sensitivity_name,
)

__all__ = [
    "ResultsFolder",
    "ResultsFolderError",
    "atomic_write_text",
    "history_csv",
    "of_design",
    "per_volume",
    "relative_sensitivity_name",
    "sensitivity_name",
]

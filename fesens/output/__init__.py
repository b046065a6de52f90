"""Results folders: atomic files and history tables (pictures: :mod:`fesens.plotting`)."""

from fesens.output.folder import (
    ResultsFolder,
    ResultsFolderError,
    atomic_write_text,
    history_csv,
)

__all__ = ["ResultsFolder", "ResultsFolderError", "atomic_write_text", "history_csv"]

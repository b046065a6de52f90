"""Results folders: atomic files, history tables, pictures of designs and convergence."""

from fesens.output.folder import (
    ResultsFolder,
    ResultsFolderError,
    atomic_write_text,
    history_csv,
)

__all__ = ["ResultsFolder", "ResultsFolderError", "atomic_write_text", "history_csv"]

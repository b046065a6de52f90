"""The error of a study's cluster, in its own module so that the runner and the Dask
cluster (:mod:`fesens.study.dask_cluster`, imported only when a study runs there) both raise
it without importing each other."""

from __future__ import annotations

from fesens.errors import FesensError


class SchedulerError(FesensError, ConnectionError):
    """The Dask scheduler of a study cannot be reached (the message names its address)."""

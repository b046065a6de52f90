"""Parameter studies: sweeps and samples of a parametric model, with gradients, run in
local processes or on a Dask cluster.

>>> from fesens.study import ParametricModel, Parameter, latin_hypercube, run_study
>>> model = ParametricModel(setup, evaluate)                       # doctest: +SKIP
>>> design = latin_hypercube([Parameter("E", range=(60e3, 80e3)),
...                           Parameter("P", range=(1.0, 2.0))], 64, seed=1)
>>> results = run_study(model, design, out="results/study")       # doctest: +SKIP
>>> results.to_dataframe()                                         # doctest: +SKIP
>>> plot_tornado(results.sensitivities(), "tornado.png")           # doctest: +SKIP

Modules: :mod:`~fesens.study.parametric` (the model), :mod:`~fesens.study.designs`,
:mod:`~fesens.study.runner` (:func:`run_study`), :mod:`~fesens.study.local` and
:mod:`~fesens.study.dask_cluster` (where samples run), :mod:`~fesens.study.worker` (what a
worker process does), :mod:`~fesens.study.journal` (results on disk as they come),
:mod:`~fesens.study.results` and :mod:`~fesens.study.tablefiles` (the table),
:mod:`~fesens.study.sensitivity`, :mod:`~fesens.study.report`, and for study files
:mod:`~fesens.study.config`, :mod:`~fesens.study.config_model`. The pictures are drawn by
:mod:`fesens.plotting.study` (``plot_tornado`` and the others are re-exported here), the
``fesens study`` command lives in :mod:`fesens.cli.study`; this package needs neither click
nor, until a picture is drawn, matplotlib.
"""

from fesens.study.designs import (
    Design,
    DesignError,
    Parameter,
    from_table,
    full_factorial,
    latin_hypercube,
    sobol,
)
from fesens.study.errors import SchedulerError
from fesens.study.journal import JournalError
from fesens.study.parametric import Evaluation, OutputError, ParametricModel
from fesens.study.results import StudyResults, gradient_column, read_results
from fesens.study.runner import run_study
from fesens.study.sensitivity import Sensitivities, normalized_sensitivities

#: Plot functions of :mod:`fesens.plotting.study`, imported on first use: worker processes
#: import this package and need no matplotlib.
_PLOTS = ("plot_scatter", "plot_sweeps", "plot_tornado")

__all__ = [
    "Design",
    "DesignError",
    "Evaluation",
    "JournalError",
    "OutputError",
    "ParametricModel",
    "Parameter",
    "SchedulerError",
    "Sensitivities",
    "StudyResults",
    "from_table",
    "full_factorial",
    "gradient_column",
    "latin_hypercube",
    "normalized_sensitivities",
    "plot_scatter",
    "plot_sweeps",
    "plot_tornado",
    "read_results",
    "run_study",
    "sobol",
]


def __getattr__(name: str):
    if name in _PLOTS:
        from fesens.plotting import study as plots

        return getattr(plots, name)
    raise AttributeError(f"module 'fesens.study' has no attribute {name!r}")

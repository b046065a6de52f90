"""Figures outside pyplot, and writing them.

fesens draws on :class:`matplotlib.figure.Figure` objects attached to the Agg canvas
(:class:`~matplotlib.backends.backend_agg.FigureCanvasAgg`) and never imports
:mod:`matplotlib.pyplot`. So importing fesens selects no matplotlib backend: a user's own
choice (``matplotlib.use``, ``MPLBACKEND``, a notebook's inline backend) is left as it
was, fesens's figures open no window and never join pyplot's global list of figures
(nothing to close, safe in threads and worker processes).
"""

from __future__ import annotations

import os
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fesens.errors import writing


def new_figure(**kwargs) -> Figure:
    """A :class:`~matplotlib.figure.Figure` drawn by the Agg canvas; ``kwargs`` as for
    ``Figure`` (``figsize``, ``layout``, ...). Add axes with ``fig.subplots(...)`` or
    ``fig.add_subplot(...)``."""
    figure = Figure(**kwargs)
    FigureCanvasAgg(figure)
    return figure


def save_figure(figure: Figure, path: str | os.PathLike, *, dpi: int = 120) -> Path:
    """Save ``figure`` to ``path`` atomically (a temporary file, then a rename).

    A figure made with pyplot is saved too, and stays open: closing it is up to pyplot.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{path.suffix}")
    with writing(path, tmp):
        figure.savefig(tmp, dpi=dpi, bbox_inches="tight")
        tmp.replace(path)
    return path

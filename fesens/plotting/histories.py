"""Curves against time or frequency: the probes of a transient or dynamic run, the
frequency response of a harmonic one."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from fesens.plotting.figure import new_figure, save_figure


def plot_histories(abscissa: np.ndarray, curves: Mapping[str, np.ndarray], path: str | Path,
                   *, xlabel: str, ylabel: str, title: str = "", log_y: bool = False
                   ) -> Path:
    """Each curve of ``curves`` against ``abscissa``, one line each with its name.

    Parameters
    ----------
    abscissa : numpy.ndarray
        ``(n,)``: the time levels or the driving frequencies.
    curves : mapping of str to numpy.ndarray
        ``{name: (n,) values}``.
    path : str or Path
        Output PNG file (written atomically).
    xlabel, ylabel, title : str
    log_y : bool
        Logarithmic vertical axis (a frequency response's amplitudes).
    """
    fig = new_figure(figsize=(6.0, 4.0))
    ax = fig.add_subplot()
    for name, values in curves.items():
        ax.plot(abscissa, values, label=name, linewidth=1.2)
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if len(curves) > 1:
        ax.legend(fontsize="small")
    if title:
        ax.set_title(title)
    return save_figure(fig, path)

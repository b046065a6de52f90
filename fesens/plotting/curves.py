"""Curves of one quantity against another: the load–displacement curve of a nonlinear
solve."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fesens.plotting.figure import new_figure, save_figure


def plot_load_path(load_factors: np.ndarray, values: np.ndarray, path: str | Path, *,
                   label: str, title: str = "") -> Path:
    """The load factor against the monitored value at every converged load step.

    Parameters
    ----------
    load_factors : numpy.ndarray
        ``(n_steps + 1,)``, from 0 to 1.
    values : numpy.ndarray
        ``(n_steps + 1,)``: the monitored quantity (a dof's value or the state's norm).
    path : str or Path
        Output PNG file (written atomically).
    label : str
        What ``values`` is (the horizontal axis).
    title : str
    """
    fig = new_figure(figsize=(5.5, 4.0))
    ax = fig.add_subplot()
    ax.plot(values, load_factors, marker="o", markersize=3, color="tab:blue")
    ax.set_xlabel(label)
    ax.set_ylabel("load factor")
    ax.set_ylim(0.0, 1.05 * max(float(np.max(load_factors)), 1e-12))
    ax.grid(True, alpha=0.3)
    if title:
        ax.set_title(title)
    return save_figure(fig, path)

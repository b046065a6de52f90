"""Pictures of a parameter study (PNG files written atomically).

* :func:`plot_tornado`: the normalised sensitivity of each output to each parameter, bars
  sorted by size (sample mean; whiskers from the smallest to the largest sample value);
* :func:`plot_sweeps`: each output against each parameter, joining samples that share the
  other parameters' values (the lines of a grid design; a space-filling design has none, and
  the title says so), with the local gradient drawn as a short tangent through every sample;
* :func:`plot_scatter`: each output against each parameter, one dot per sample.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from fesens.plotting.figure import new_figure, save_figure

if TYPE_CHECKING:  # the study package draws with these functions, not the other way round
    from fesens.study.results import StudyResults
    from fesens.study.sensitivity import Sensitivities

#: Half-length of a tangent as a fraction of the parameter's range in the design.
TANGENT = 0.06


def plot_tornado(sensitivities: Sensitivities, path: str | os.PathLike, *,
                 outputs: Sequence[str] | None = None, title: str = "") -> Path:
    """Tornado chart of the normalised sensitivities ``S = (∂y/∂p) p / y``, one panel per
    output."""
    outputs = list(outputs or sensitivities.outputs())
    if not outputs:
        raise ValueError("no outputs to plot")
    n_params = max(len(sensitivities.for_output(o)) for o in outputs)
    fig = new_figure(figsize=(7.0, 0.9 + len(outputs) * (0.6 + 0.35 * n_params)))
    axes = fig.subplots(len(outputs), 1, squeeze=False)
    for ax, output in zip(axes[:, 0], outputs, strict=True):
        rows = sensitivities.for_output(output)[::-1]  # largest on top
        means = np.array([r["mean"] for r in rows])
        low = means - np.array([r["min"] for r in rows])
        high = np.array([r["max"] for r in rows]) - means
        y = np.arange(len(rows))
        colors = np.where(means >= 0, "tab:blue", "tab:red")
        ax.barh(y, np.nan_to_num(means), color=colors, height=0.6,
                xerr=np.nan_to_num([low, high]), error_kw={"ecolor": "0.3", "capsize": 3})
        ax.set_yticks(y, [r["parameter"] for r in rows])
        ax.axvline(0.0, color="0.2", linewidth=0.8)
        ax.set_title(output, fontsize=10, loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("normalised sensitivity (∂y/∂p)·(p/y), mean over samples "
                           "(whiskers: min to max)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path)


def _panels(results: StudyResults, outputs, parameters):
    outputs = list(outputs or results.outputs)
    parameters = [p for p in (parameters or results.parameters)
                  if np.ptp(results.value(p)) > 0]  # fixed parameters have nothing to show
    if not outputs or not parameters:
        raise ValueError("nothing to plot: the study needs outputs and a varied parameter")
    fig = new_figure(figsize=(2.8 * len(parameters) + 0.6, 2.3 * len(outputs) + 0.6))
    axes = fig.subplots(len(outputs), len(parameters), squeeze=False)
    for i, output in enumerate(outputs):
        axes[i, 0].set_ylabel(output)
    for j, parameter in enumerate(parameters):
        axes[-1, j].set_xlabel(parameter)
    return fig, axes, outputs, parameters


def plot_scatter(results: StudyResults, path: str | os.PathLike, *,
                 outputs: Sequence[str] | None = None,
                 parameters: Sequence[str] | None = None, title: str = "") -> Path:
    """Each output against each varied parameter, one dot per successful sample."""
    fig, axes, outputs, parameters = _panels(results, outputs, parameters)
    ok = results.ok()
    for i, output in enumerate(outputs):
        y = results.value(output)
        for j, parameter in enumerate(parameters):
            axes[i, j].scatter(results.value(parameter)[ok], y[ok], s=8, alpha=0.7)
            axes[i, j].grid(alpha=0.3)
    fig.suptitle(title or f"outputs against inputs ({ok.sum()} samples)")
    fig.tight_layout()
    return save_figure(fig, path)


def _groups(results: StudyResults, parameter: str, ok: np.ndarray) -> list[np.ndarray]:
    """Sample indices that share every other parameter's value, each sorted by ``parameter``."""
    x = results.value(parameter)
    others = [results.value(p) for p in results.parameters if p != parameter]
    groups = defaultdict(list)
    for k in np.flatnonzero(ok):
        groups[tuple(o[k] for o in others)].append(k)
    return [np.array(sorted(g, key=lambda k: x[k])) for g in groups.values()]


def plot_sweeps(results: StudyResults, path: str | os.PathLike, *,
                outputs: Sequence[str] | None = None,
                parameters: Sequence[str] | None = None, title: str = "") -> Path:
    """Sweep curves: each output against each varied parameter, lines through samples whose
    other parameters are equal, and the gradient ``∂y/∂p`` as a tangent at every sample."""
    fig, axes, outputs, parameters = _panels(results, outputs, parameters)
    ok = results.ok()
    joined = False
    for j, parameter in enumerate(parameters):
        x = results.value(parameter)
        half = TANGENT * np.ptp(x[ok]) if ok.any() else 0.0
        groups = _groups(results, parameter, ok)
        joined |= any(len(group) > 1 for group in groups)
        for i, output in enumerate(outputs):
            ax = axes[i, j]
            y, dy = results.value(output), results.gradient(output, parameter)
            for group in groups:
                if len(group) > 1:
                    ax.plot(x[group], y[group], color="tab:blue", linewidth=0.9, alpha=0.6)
            segments_x = np.stack([x[ok] - half, x[ok] + half])
            segments_y = np.stack([y[ok] - half * dy[ok], y[ok] + half * dy[ok]])
            ax.plot(segments_x, segments_y, color="tab:orange", linewidth=1.2)
            ax.scatter(x[ok], y[ok], s=8, color="tab:blue", zorder=3)
            ax.grid(alpha=0.3)
    fig.suptitle(title or _sweeps_title(joined))
    fig.tight_layout()
    return save_figure(fig, path)


def _sweeps_title(joined: bool) -> str:
    """What the sweep picture's lines are: a grid's samples with the other parameters equal,
    or none at all in a space-filling design (Latin hypercube, Sobol), where lines through
    samples sorted by one parameter would zig-zag over the others' changes."""
    gradient = "orange: the local gradient ∂y/∂p at each sample"
    if joined:
        return f"sweeps: blue lines join samples whose other parameters are equal\n{gradient}"
    return ("one dot per sample, no lines: no two samples share the other parameters "
            f"(a space-filling design)\n{gradient}")

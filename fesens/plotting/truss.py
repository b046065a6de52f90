"""Pictures of trusses: each bar a line whose width is proportional to its area."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.collections import LineCollection
from mpl_toolkits.mplot3d.art3d import Line3DCollection

from fesens.mesh.mesh import Mesh
from fesens.plotting.figure import new_figure, save_figure
from fesens.plotting.markers import Loads, draw_markers

#: Line width (points) of the bar with the largest area.
MAX_WIDTH = 8.0
#: Colours of bars in tension, in compression, and without a force given.
TENSION, COMPRESSION, UNSTRESSED = "#c0392b", "#2e5e9e", "#333333"


def plot_truss(mesh: Mesh, areas: np.ndarray, path: str | Path, *, forces=None,
               threshold: float = 1e-3, title: str = "", supports: np.ndarray | None = None,
               loads: Loads | None = None, volume_loads: Sequence[str] = ()) -> Path:
    """Save a picture of a truss: bars with line widths proportional to their areas.

    Parameters
    ----------
    mesh : Mesh
        ``line2`` cells (bars) in 2D or 3D space.
    areas : numpy.ndarray
        ``(n_bars,)`` cross-section areas (or densities); bars below ``threshold`` times
        the largest are left out.
    path : str or Path
        Output PNG file (written atomically).
    forces : numpy.ndarray, optional
        ``(n_bars,)`` axial forces: bars in tension red, in compression blue, as the legend
        says (default: all dark grey).
    threshold : float
        Relative area below which a bar is not drawn.
    title : str
    supports, loads, volume_loads
        Markers, as for :func:`~fesens.plotting.design.plot_density` (see
        :func:`~fesens.plotting.markers.boundary_markers`).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ValueError
        ``areas`` (or ``forces``) not of shape ``(n_bars,)``, negative or NaN areas.
    """
    areas = np.asarray(areas, dtype=float)
    if areas.shape != (mesh.n_cells,) or not np.all(np.isfinite(areas)) or np.any(areas < 0):
        raise ValueError(f"areas must be {mesh.n_cells} finite non-negative numbers (one per "
                         f"bar), got shape {areas.shape}")
    colours = np.full(mesh.n_cells, UNSTRESSED, dtype=object)
    if forces is not None:
        forces = np.asarray(forces, dtype=float)
        if forces.shape != areas.shape:
            raise ValueError(f"forces must have shape {areas.shape}, got {forces.shape}")
        colours = np.where(forces >= 0, TENSION, COMPRESSION)
    largest = areas.max() if areas.size and areas.max() > 0 else 1.0
    shown = np.flatnonzero(areas >= threshold * largest)
    segments = mesh.points[mesh.cells[shown]]
    widths = MAX_WIDTH * areas[shown] / largest
    extent = np.ptp(mesh.points, axis=0)
    width = 8.0
    height = float(np.clip(width * extent[1] / max(extent[0], 1e-12), 2.0, 10.0))
    figure = new_figure(figsize=(width, height + 0.6))
    if mesh.dim == 2:
        ax = figure.add_subplot()
        ax.add_collection(LineCollection(segments, linewidths=widths,
                                         colors=list(colours[shown]), capstyle="round"))
        ax.set_aspect("equal")
    else:
        ax = figure.add_subplot(projection="3d")
        ax.add_collection3d(Line3DCollection(segments, linewidths=widths,
                                             colors=list(colours[shown])))
        ax.set_box_aspect(np.maximum(extent, 1e-3 * extent.max()))
        ax.set_zlim(mesh.points[:, 2].min(), mesh.points[:, 2].max())
    margin = 0.05 * max(extent.max(), 1e-12)
    ax.set_xlim(mesh.points[:, 0].min() - margin, mesh.points[:, 0].max() + margin)
    ax.set_ylim(mesh.points[:, 1].min() - margin, mesh.points[:, 1].max() + margin)
    ax.plot(*mesh.points.T, ".", color="0.75", markersize=2, zorder=0)
    draw_markers(ax, supports, loads, length=0.08 * extent.max(), volume_loads=volume_loads)
    if forces is not None:  # what the bar colours mean, next to the markers' entries
        for colour, name in ((TENSION, "tension"), (COMPRESSION, "compression")):
            ax.plot([], [], color=colour, linewidth=3.0, label=f"bar in {name}")
    if ax.get_legend_handles_labels()[1]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(title or f"{shown.size} of {mesh.n_cells} bars (width ∝ area)")
    return save_figure(figure, path)

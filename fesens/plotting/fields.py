"""A PNG picture of a per-cell field on a 2D mesh, optionally on the deformed shape."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.collections import PolyCollection

from fesens.mesh.mesh import Mesh
from fesens.plotting.figure import new_figure, save_figure
from fesens.plotting.scales import DIVERGING_CMAP, linear_scale, symmetric_log_scale

#: Color scales of :func:`plot_cell_field`.
COLOR_SCALES = ("linear", "symlog")


def plot_cell_field(
    mesh: Mesh,
    values: np.ndarray,
    path: str | Path,
    *,
    displacement: np.ndarray | None = None,
    scale: float = 0.0,
    title: str = "",
    label: str = "",
    cmap: str = "viridis",
    clip_percentile: float = 100.0,
    color_scale: str = "linear",
) -> Path:
    """Save a PNG of a per-cell field on a 2D mesh, optionally on the deformed shape.

    Parameters
    ----------
    mesh : Mesh
        A 2D mesh.
    values : numpy.ndarray
        ``(n_cells,)`` values to colour the cells with.
    path : str or Path
        Output PNG file (written atomically).
    displacement : numpy.ndarray, optional
        ``(n_points, 2)`` nodal displacement to draw the deformed mesh.
    scale : float
        Displacement magnification; 0 chooses one so the largest displacement is 10% of
        the mesh size.
    clip_percentile : float
        Color scale upper limit as a percentile of ``values`` (``"symlog"``: of
        ``|values|``); below 100 keeps a stress singularity from washing out the rest of
        the picture (the color bar's label says so).
    color_scale : {"linear", "symlog"}
        ``"symlog"``: a symmetric-log scale set by the bulk of the cells
        (:func:`~fesens.plotting.scales.symmetric_log_scale`), for fields spanning decades
        such as sensitivities; a field with both signs is drawn centred on 0 in a
        diverging color map instead of ``cmap``.
    """
    if mesh.dim != 2:
        raise ValueError("plot_cell_field draws 2D meshes only")
    if color_scale not in COLOR_SCALES:
        raise ValueError(f"color_scale must be one of {COLOR_SCALES}, not {color_scale!r}")
    points = mesh.points
    if displacement is not None:
        if scale == 0.0:
            size = np.ptp(points, axis=0).max()
            peak = np.abs(displacement).max()
            scale = 0.1 * size / peak if peak > 0 else 0.0
        points = points + scale * displacement
    corners = mesh.cells[:, : mesh.type_info.n_corners]
    polygons = points[corners]
    aspect = np.ptp(points[:, 1]) / max(np.ptp(points[:, 0]), 1e-12)
    fig = new_figure(figsize=(8, float(np.clip(8 * aspect, 2.0, 10.0)) + 1.2))
    ax = fig.subplots()
    values = np.asarray(values, dtype=float)
    if color_scale == "symlog":
        colors = symmetric_log_scale(values, clip_percentile=clip_percentile)
    else:
        colors = linear_scale(values, clip_percentile=clip_percentile)
    collection = PolyCollection(polygons, array=values, norm=colors.norm,
                                cmap=DIVERGING_CMAP if colors.signed and color_scale == "symlog"
                                else cmap, edgecolors="face", linewidths=0.2)
    ax.add_collection(collection)
    ax.autoscale_view()
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    if title:
        ax.set_title(title + (f" (deformation x{scale:.3g})" if displacement is not None else ""))
    fig.colorbar(collection, ax=ax, label=colors.label(label), shrink=0.8,
                 orientation="horizontal", extend=colors.extend, ticks=colors.ticks)
    return save_figure(fig, path)


"""PNG pictures of a scalar field on a 2D mesh, optionally on the deformed shape.

:func:`plot_cell_field` draws one value per cell, each cell one flat color (a density, a
sensitivity); :func:`plot_nodal_field` draws one value per node with smooth (Gouraud)
shading, quadratic cells split into linear triangles through their mid-side nodes (a
temperature, a recovered stress). Both write the color scale's description, if any, as a
caption under the color bar, so that the bar's label stays the field's name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.tri import Triangulation

from fesens.mesh.mesh import Mesh
from fesens.plotting.figure import new_figure, save_figure
from fesens.plotting.scales import (
    DIVERGING_CMAP,
    ColorScale,
    linear_scale,
    symmetric_log_scale,
)

#: Color scales of :func:`plot_cell_field` and :func:`plot_nodal_field`.
COLOR_SCALES = ("linear", "symlog")

#: Linear triangles of each 2D cell type, as local node indices (VTK node order): the
#: triangles Gouraud shading interpolates nodal values on, every node of the cell a vertex.
LINEAR_TRIANGLES: dict[str, tuple[tuple[int, int, int], ...]] = {
    "tri3": ((0, 1, 2),),
    "tri6": ((0, 3, 5), (3, 1, 4), (5, 4, 2), (3, 4, 5)),
    "quad4": ((0, 1, 2), (0, 2, 3)),
    "quad8": ((0, 4, 7), (4, 1, 5), (5, 2, 6), (6, 3, 7), (4, 5, 6), (4, 6, 7)),
    "quad9": ((0, 4, 8), (4, 1, 8), (1, 5, 8), (5, 2, 8), (2, 6, 8), (6, 3, 8), (3, 7, 8),
              (7, 0, 8)),
}


def linear_triangles(mesh: Mesh) -> np.ndarray:
    """The mesh's cells split into linear triangles through all their nodes,
    ``(n_cells * n_triangles_per_cell, 3)`` node indices.

    Raises
    ------
    ValueError
        A cell type that is not 2D.
    """
    if mesh.cell_type not in LINEAR_TRIANGLES:
        raise ValueError(f"no triangles for {mesh.cell_type} cells: a 2D mesh is needed")
    local = np.asarray(LINEAR_TRIANGLES[mesh.cell_type])
    return mesh.cells[:, local].reshape(-1, 3)


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
    """Save a PNG of a per-cell field on a 2D mesh, each cell one flat color.

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
    title, label : str
        Title (the magnification is added to it) and the color bar's label (the field's
        name and unit).
    cmap : str
        Color map.
    clip_percentile : float
        ``"linear"``: the color scale is linear up to this percentile of ``values`` and
        compressed above it, up to the largest value
        (:func:`~fesens.plotting.scales.linear_scale`); ``"symlog"``: the percentile of
        ``|values|`` where the scale ends. Below 100 keeps a stress singularity from
        washing out the rest of the picture (the caption says so).
    color_scale : {"linear", "symlog"}
        ``"symlog"``: a symmetric-log scale set by the bulk of the cells
        (:func:`~fesens.plotting.scales.symmetric_log_scale`), for fields spanning decades
        such as sensitivities; a field with both signs is drawn centred on 0 in a
        diverging color map instead of ``cmap``.

    Returns
    -------
    Path
        ``path``.
    """
    values = np.asarray(values, dtype=float)
    if values.shape != (mesh.n_cells,):
        raise ValueError(f"values must have shape ({mesh.n_cells},) (one per cell), "
                         f"got {values.shape}")
    return _plot_field(mesh, values, path, nodal=False, displacement=displacement,
                       scale=scale, title=title, label=label, cmap=cmap,
                       clip_percentile=clip_percentile, color_scale=color_scale)


def plot_nodal_field(
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
    """Save a PNG of a nodal field on a 2D mesh, smoothly shaded between the nodes.

    The cells are split into linear triangles through all their nodes
    (:data:`LINEAR_TRIANGLES`) and colored by Gouraud shading of the nodal values. The
    color bar ends at the largest value (whatever ``clip_percentile``), so a title naming
    the field's peak and the bar agree.

    Parameters
    ----------
    values : numpy.ndarray
        ``(n_points,)`` nodal values (e.g. a temperature, a recovered von Mises stress).
    mesh, path, displacement, scale, title, label, cmap, clip_percentile, color_scale
        As for :func:`plot_cell_field`.

    Returns
    -------
    Path
        ``path``.
    """
    values = np.asarray(values, dtype=float)
    if values.shape != (mesh.n_points,):
        raise ValueError(f"values must have shape ({mesh.n_points},) (one per node), "
                         f"got {values.shape}")
    return _plot_field(mesh, values, path, nodal=True, displacement=displacement,
                       scale=scale, title=title, label=label, cmap=cmap,
                       clip_percentile=clip_percentile, color_scale=color_scale)


def _plot_field(mesh: Mesh, values: np.ndarray, path, *, nodal: bool, displacement,
                scale: float, title: str, label: str, cmap: str, clip_percentile: float,
                color_scale: str) -> Path:
    if mesh.dim != 2:
        raise ValueError("plot_cell_field and plot_nodal_field draw 2D meshes only")
    if color_scale not in COLOR_SCALES:
        raise ValueError(f"color_scale must be one of {COLOR_SCALES}, not {color_scale!r}")
    points = mesh.points
    if displacement is not None:
        if scale == 0.0:
            size = np.ptp(points, axis=0).max()
            peak = np.abs(displacement).max()
            scale = 0.1 * size / peak if peak > 0 else 0.0
        points = points + scale * displacement
    aspect = np.ptp(points[:, 1]) / max(np.ptp(points[:, 0]), 1e-12)
    fig = new_figure(figsize=(8, float(np.clip(8 * aspect, 2.0, 10.0)) + 1.6),
                     layout="constrained")
    ax = fig.subplots()
    if color_scale == "symlog":
        colors = symmetric_log_scale(values, clip_percentile=clip_percentile)
    else:
        colors = linear_scale(values, clip_percentile=clip_percentile)
    cmap = DIVERGING_CMAP if colors.signed and color_scale == "symlog" else cmap
    if nodal:
        drawn = ax.tripcolor(Triangulation(points[:, 0], points[:, 1], linear_triangles(mesh)),
                             values, shading="gouraud", norm=colors.norm, cmap=cmap)
    else:
        drawn = PolyCollection(points[mesh.cells[:, : mesh.type_info.n_corners]],
                               array=values, norm=colors.norm, cmap=cmap, edgecolors="face",
                               linewidths=0.2)
        ax.add_collection(drawn)
        ax.autoscale_view()
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    if title:
        ax.set_title(title + (f" (deformation x{scale:.3g})" if displacement is not None else ""))
    _colorbar(fig, ax, drawn, colors, label)
    return save_figure(fig, path)


def _colorbar(fig, ax, drawn, colors: ColorScale, label: str) -> None:
    """A horizontal color bar labelled ``label``, the scale's description as a caption
    under it."""
    bar = fig.colorbar(drawn, ax=ax, label=label, shrink=0.8, orientation="horizontal",
                       extend=colors.extend, ticks=colors.ticks, format=colors.tick_format,
                       pad=0.04)
    if colors.description:
        bar.ax.annotate(f"color scale: {colors.description}", xy=(0.5, 0.0),
                        xycoords=bar.ax.xaxis.label, xytext=(0.0, -4.0),
                        textcoords="offset points", ha="center", va="top",
                        fontsize="small", color="0.35")

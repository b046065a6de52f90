"""A triangulated surface (a design's STL) in the two views of a 3D design picture."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fesens.plotting.design import VIEWS_3D, _bounding_box
from fesens.plotting.figure import new_figure, save_figure


def plot_surface(vertices: np.ndarray, faces: np.ndarray, path: str | Path, *,
                 low: np.ndarray, high: np.ndarray, title: str = "") -> Path:
    """Save a shaded picture of a triangulated surface, in the views of a 3D design
    (:func:`~fesens.plotting.plot_density`; the mesh's y axis drawn vertical).

    Parameters
    ----------
    vertices : numpy.ndarray
        ``(n_vertices, 3)`` coordinates.
    faces : numpy.ndarray
        ``(n_faces, 3)`` vertex indices of each triangle.
    path : str or Path
        Output PNG file (written atomically).
    low, high : numpy.ndarray
        ``(3,)`` corners of the design domain, drawn as a thin box.
    title : str
    """
    order = [0, 2, 1]  # plot coordinates (x, z, y), as the density picture
    points = np.asarray(vertices, dtype=float)[:, order]
    low, high = np.asarray(low, dtype=float)[order], np.asarray(high, dtype=float)[order]
    fig = new_figure(figsize=(13, 6))
    for index, (elevation, azimuth) in enumerate(VIEWS_3D):
        ax = fig.add_subplot(1, 2, index + 1, projection="3d", computed_zorder=False)
        if len(faces):
            ax.plot_trisurf(points[:, 0], points[:, 1], points[:, 2],
                            triangles=np.asarray(faces), color=(0.50, 0.60, 0.78),
                            edgecolor=(0, 0, 0, 0.08), linewidth=0.1, shade=True)
        _bounding_box(ax, low, high)
        ax.set_xlim(low[0], high[0])
        ax.set_ylim(low[1], high[1])
        ax.set_zlim(low[2], high[2])
        ax.set_box_aspect(np.maximum(high - low, 1e-12))
        ax.view_init(elev=elevation, azim=azimuth)
        ax.set_xlabel("x")
        ax.set_ylabel("z")
        ax.set_zlabel("y")
    fig.suptitle(title)
    fig.subplots_adjust(left=0.02, right=0.98, wspace=0.1)
    return save_figure(fig, path)

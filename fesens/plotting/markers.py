"""Supports and loads of a model as markers on a picture: where the model is held and where
it is loaded (triangles at the fixed nodes, arrows at the loaded nodes, dots where a scalar
load such as a source acts).

:func:`boundary_markers` reads them from any :class:`~fesens.fem.model.linear.LinearModel` (its
Dirichlet dofs and its load terms); :func:`draw_markers` draws them on 2D or 3D axes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: At most this many markers of each kind are drawn (evenly thinned beyond).
MAX_MARKERS = 150

#: At most this many load arrows are drawn in 3D, spread over the loaded nodes: an arrow
#: at every node of a loaded face or edge merges into a slab that hides the structure.
MAX_ARROWS_3D = 9

#: Colors of the support and load markers.
SUPPORT_COLOR, LOAD_COLOR = "tab:green", "tab:red"

Loads = tuple[np.ndarray, np.ndarray | None]


def boundary_markers(model) -> dict:
    """The supports and the loads of a model, node by node, as the keyword arguments
    ``supports``, ``loads`` and ``volume_loads`` of
    :func:`~fesens.plotting.design.plot_density`.

    Parameters
    ----------
    model : LinearModel
        Uses its ``mesh``, ``constrained_dofs``, ``n_components`` and the load terms in
        ``loads`` (each ``(n_dofs,)``).

    Returns
    -------
    dict
        ``supports``: ``(n_fixed_nodes, dim)`` coordinates of the nodes with at least one
        fixed component; ``loads``: ``(points, vectors)``, the ``(n_loaded_nodes, dim)``
        coordinates of the nodes where the sum of the load terms is nonzero and their
        nodal load vectors ``(n_loaded_nodes, dim)``, or None if the field has one
        component per node (a scalar field: the loads are sources, drawn without a
        direction). Load terms that act on more than one
        interior node (volume loads) are left out: they act everywhere and their markers
        would hide the design; ``volume_loads`` names them.
    """
    mesh, n_components = model.mesh, model.n_components
    fixed = np.unique(np.asarray(model.constrained_dofs, dtype=np.int64) // n_components)
    interior = np.ones(mesh.n_points, dtype=bool)
    interior[mesh.boundary_facets().nodes] = False
    total, volume_loads = np.zeros((mesh.n_points, n_components)), []
    for name, vector in model.loads.items():
        per_node = np.reshape(np.asarray(vector, dtype=float), (mesh.n_points, n_components))
        if np.count_nonzero(_nonzero_rows(per_node) & interior) > 1:
            volume_loads.append(name)
        else:
            total += per_node
    loaded = _nonzero_rows(total)
    vectors = total[loaded] if n_components == mesh.dim else None
    return {"supports": mesh.points[fixed], "loads": (mesh.points[loaded], vectors),
            "volume_loads": tuple(volume_loads)}


def _nonzero_rows(per_node: np.ndarray) -> np.ndarray:
    """Rows of ``(n_points, n_components)`` with a nonzero entry (relative to the largest)."""
    size = np.abs(per_node).max(axis=1)
    return size > 1e-12 * size.max() if size.size and size.max() > 0 else size > 0


def _thinned(count: int) -> slice:
    return slice(None, None, max(1, -(-count // MAX_MARKERS)))


def spread_points(points: np.ndarray, count: int) -> np.ndarray:
    """Indices of at most ``count`` of ``points`` ``(n, dim)`` spread over them (farthest-point
    sampling from the point nearest their centroid), in increasing order."""
    points = np.asarray(points, dtype=float)
    if len(points) <= count:
        return np.arange(len(points))
    chosen = [int(np.argmin(np.linalg.norm(points - points.mean(axis=0), axis=1)))]
    distance = np.linalg.norm(points - points[chosen[0]], axis=1)
    while len(chosen) < count:
        chosen.append(int(np.argmax(distance)))
        distance = np.minimum(distance, np.linalg.norm(points - points[chosen[-1]], axis=1))
    return np.sort(chosen)


def draw_markers(ax, supports: np.ndarray | None, loads: Loads | None, *,
                 length: float, volume_loads: Sequence[str] = ()) -> np.ndarray:
    """Draw supports (triangles) and loads (arrows, or dots without ``vectors``) on ``ax``.

    Parameters
    ----------
    ax : matplotlib Axes or Axes3D
        2D axes for points ``(n, 2)``, 3D axes for ``(n, 3)`` (in the axes' coordinate
        order: permute before calling if the picture swaps axes).
    supports : numpy.ndarray or None
        ``(n, dim)`` support points.
    loads : tuple or None
        ``(points (m, dim), vectors (m, dim) or None)``; each arrow ends at its node and
        points along its load, the largest ``length`` long. In 3D, beyond
        :data:`MAX_ARROWS_3D` loaded nodes (a load on a face or an edge), every loaded node
        is a small dot and that many arrows spread over them (:func:`spread_points`), each
        ``length`` long, show the load's direction.
    length : float
        Length of the largest load arrow (plot units).
    volume_loads : sequence of str
        Names of loads not drawn (they act everywhere), listed in the legend.

    Returns
    -------
    numpy.ndarray
        ``(k, dim)`` every point drawn (markers and arrow tails), for the axes' limits.
    """
    dim = 3 if ax.name == "3d" else 2
    drawn = [np.empty((0, dim))]
    if volume_loads:
        ax.plot(*np.empty((dim, 0)), " ", label=f"volume load{'s' * (len(volume_loads) > 1)} "
                f"{', '.join(volume_loads)} (everywhere, not drawn)")
    if supports is not None and len(supports):
        points = np.asarray(supports)[_thinned(len(supports))]
        ax.scatter(*points.T, marker="^", s=30, color=SUPPORT_COLOR, edgecolors="black",
                   linewidths=0.4, label="supports", zorder=5)
        drawn.append(points)
    if loads is None or not len(loads[0]):
        return np.concatenate(drawn)
    points, vectors = loads
    keep = _thinned(len(points))
    points = np.asarray(points)[keep]
    if vectors is None:
        ax.scatter(*points.T, marker="o", s=24, color=LOAD_COLOR, edgecolors="black",
                   linewidths=0.4, label="loads", zorder=5)
        return np.concatenate([*drawn, points])
    vectors = np.asarray(vectors)[keep]
    arrows = vectors * (length / max(float(np.linalg.norm(vectors, axis=1).max()), 1e-300))
    if points.shape[1] == 3:
        arrowed = spread_points(points, MAX_ARROWS_3D)
        if arrowed.size < len(points):
            # a distributed load: its nodal shares differ between corner, edge and inner
            # nodes, so the few arrows show its direction (full length), the dots its extent
            ax.scatter(*points.T, marker=".", s=6, color=LOAD_COLOR, depthshade=False,
                       label=f"loaded nodes ({arrowed.size} arrows show the direction)",
                       zorder=5)
            norms = np.linalg.norm(vectors[arrowed], axis=1, keepdims=True)
            arrows[arrowed] = length * vectors[arrowed] / np.maximum(norms, 1e-300)
        tails = points[arrowed] - arrows[arrowed]
        ax.quiver(*tails.T, *arrows[arrowed].T, color=LOAD_COLOR, linewidth=1.4,
                  arrow_length_ratio=0.25, label="loads")
        return np.concatenate([*drawn, points, tails])
    tails = points - arrows
    ax.quiver(*tails.T, *arrows.T, color=LOAD_COLOR, angles="xy", scale_units="xy",
              scale=1.0, width=0.004, label="loads", zorder=6)
    return np.concatenate([*drawn, points, tails])

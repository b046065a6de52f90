"""Pictures of a design run: the density (2D image or 3D rendering) and the convergence
history. Files are written atomically.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator
from mpl_toolkits.mplot3d.art3d import Poly3DCollection

from fesens.mesh.cell_types import cell_type
from fesens.mesh.mesh import Mesh
from fesens.plotting.figure import new_figure, save_figure
from fesens.plotting.markers import Loads, draw_markers

#: Cells with a density above this are drawn as solid in 3D.
SOLID_THRESHOLD = 0.5


#: Colours of the solid phases of a multi-material design, the densest last (black) and the
#: lighter ones before it (void white); red is the loads' colour.
PHASE_COLORS = ("tab:orange", "tab:blue", "black")


def plot_density(mesh: Mesh, density: np.ndarray, path: str | Path, *, title: str = "",
                 supports: np.ndarray | None = None, loads: Loads | None = None,
                 volume_loads: Sequence[str] = (),
                 phases: tuple[np.ndarray, Sequence[str]] | None = None) -> Path:
    """Save a picture of a density field: 2D cells in grey levels (black = solid, white =
    void), or with ``phases`` each cell in the colour of its phase; 3D the shaded outer
    surface of the solid cells in two views.

    Parameters
    ----------
    mesh : Mesh
    density : numpy.ndarray
        ``(n_cells,)`` densities in [0, 1].
    path : str or Path
        Output PNG file (written atomically).
    title : str
    supports : numpy.ndarray, optional
        ``(n, dim)`` coordinates of the fixed nodes, drawn as triangles.
    loads : tuple, optional
        ``(points (m, dim), vectors (m, dim) or None)`` of the loaded nodes, drawn as
        arrows (dots without vectors); see
        :func:`~fesens.plotting.markers.boundary_markers`.
    volume_loads : sequence of str
        Names of the loads that act everywhere, not drawn (the legend lists them).
    phases : tuple, optional
        ``(phase (n_cells,) ints, labels (m,))`` of a multi-material design: 0 void
        (white), ``i`` the ``i``-th solid phase, drawn in the last ``m`` of
        :data:`PHASE_COLORS` with its
        label in the legend (2D; a 3D design is drawn by its density).

    The axes are labelled x, y (z) without a unit: the mesh's coordinates are in the
    config's length unit, which fesens does not know.
    """
    markers = {"supports": supports, "loads": loads, "volume_loads": volume_loads}
    if mesh.dim == 2:
        return _density_2d(mesh, np.asarray(density), path, title, markers, phases)
    return _density_3d(mesh, np.asarray(density), path, title, markers)


def _density_2d(mesh: Mesh, density: np.ndarray, path, title: str, markers: dict,
                phases: tuple[np.ndarray, Sequence[str]] | None = None) -> Path:
    extent = np.ptp(mesh.points, axis=0)
    width = 8.0
    height = float(np.clip(width * extent[1] / max(extent[0], 1e-12), 1.5, 10.0))
    fig = new_figure(figsize=(width, height + 1.6), layout="constrained")
    ax = fig.subplots()
    cells = _draw_density_2d(ax, mesh, density, title, markers, phases)
    if phases is None:
        fig.colorbar(cells, ax=ax, label="density", shrink=0.6, orientation="horizontal")
    return save_figure(fig, path)


def plot_density_panels(mesh: Mesh, densities: Mapping[str, np.ndarray], path: str | Path,
                        *, supports: np.ndarray | None = None, loads: Loads | None = None,
                        volume_loads: Sequence[str] = ()) -> Path:
    """Save 2D density fields of one mesh side by side, one panel each titled by its key,
    with one colour bar (grey levels as :func:`plot_density`), e.g. two designs to compare.

    Parameters
    ----------
    mesh : Mesh
        A 2D mesh.
    densities : mapping of str to numpy.ndarray
        Panel title to ``(n_cells,)`` densities in [0, 1], drawn left to right.
    path : str or Path
        Output PNG file (written atomically).
    supports, loads, volume_loads
        As for :func:`plot_density`, drawn on every panel.
    """
    if mesh.dim != 2:
        raise ValueError(f"plot_density_panels draws 2D meshes only; got a {mesh.dim}D mesh "
                         "(draw each 3D design with plot_density)")
    markers = {"supports": supports, "loads": loads, "volume_loads": volume_loads}
    extent = np.ptp(mesh.points, axis=0)
    width = 6.0
    height = float(np.clip(width * extent[1] / max(extent[0], 1e-12), 1.5, 10.0))
    fig = new_figure(figsize=(width * len(densities), height + 1.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(densities)))
    for ax, (title, density) in zip(axes, densities.items(), strict=True):
        cells = _draw_density_2d(ax, mesh, np.asarray(density), title, markers)
    fig.colorbar(cells, ax=list(axes), label="density", shrink=0.4,
                 orientation="horizontal")
    return save_figure(fig, path)


def _draw_density_2d(ax, mesh: Mesh, density: np.ndarray, title: str, markers: dict,
                     phases: tuple[np.ndarray, Sequence[str]] | None = None):
    """Draw a 2D density (or its phases) with the outline and markers on ``ax``; returns
    the cells' collection."""
    polygons = mesh.points[mesh.cells[:, : mesh.type_info.n_corners]]
    extent = np.ptp(mesh.points, axis=0)
    if phases is None:
        cells = PolyCollection(polygons, array=density, cmap="gray_r", edgecolors="face",
                               linewidths=0.1)
        cells.set_clim(0.0, 1.0)
    else:
        phase, labels = phases
        colors = ["white", *PHASE_COLORS[len(PHASE_COLORS) - len(labels):]]
        cells = PolyCollection(polygons, facecolors=[colors[i] for i in phase],
                               edgecolors="face", linewidths=0.1)
        for color, label in zip(colors[1:], labels, strict=True):
            ax.add_patch(Rectangle((0.0, 0.0), 0.0, 0.0, facecolor=color, label=label))
    ax.add_collection(cells)
    outline = mesh.points[mesh.boundary_facets().facets[:, :2]]
    ax.add_collection(LineCollection(outline, colors="0.55", linewidths=0.6))
    drawn = draw_markers(ax, **markers, length=0.12 * float(extent.max()))
    low, high = _limits(np.concatenate([mesh.points[:, :2], drawn]))
    ax.set_xlim(low[0], high[0])
    ax.set_ylim(low[1], high[1])
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    if ax.get_legend_handles_labels()[1]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    if title:
        ax.set_title(title)
    return cells


def _limits(points: np.ndarray, margin: float = 0.03) -> tuple[np.ndarray, np.ndarray]:
    """Axes limits around ``points`` ``(n, dim)``, a ``margin`` of the largest extent added."""
    low, high = points.min(axis=0), points.max(axis=0)
    pad = margin * float(np.max(high - low))
    return low - pad, high + pad


def solid_surface(mesh: Mesh, solid: np.ndarray) -> np.ndarray:
    """Corner coordinates of the outer faces of the cells marked ``solid``,
    ``(n_faces, n_face_corners, 3)`` (faces shared by two solid cells are dropped)."""
    local = np.asarray(mesh.type_info.local_facets)
    n_corners = cell_type(mesh.type_info.facet_type).n_corners
    faces = mesh.cells[solid][:, local][:, :, :n_corners].reshape(-1, n_corners)
    _, inverse, counts = np.unique(np.sort(faces, axis=1), axis=0, return_inverse=True,
                                   return_counts=True)
    outer = faces[counts[inverse.ravel()] == 1]
    return mesh.points[outer]


#: The two views of a 3D design, ``(elevation, azimuth)`` in degrees.
VIEWS_3D = ((25.0, -60.0), (20.0, 150.0))


def _density_3d(mesh: Mesh, density: np.ndarray, path, title: str, markers: dict) -> Path:
    threshold = SOLID_THRESHOLD
    if np.count_nonzero(density > threshold) < max(1, density.size // 100):
        # An early design has few cells above 1/2: draw its densest tenth instead.
        threshold = float(np.quantile(density, 0.9))
    solid = density > threshold if np.any(density > threshold) else density >= threshold
    # Plot coordinates (x, z, y): the mesh's y axis (up in the presets) is drawn vertical.
    order = [0, 2, 1]
    faces = solid_surface(mesh, solid)[:, :, order]
    normals = np.cross(faces[:, 1] - faces[:, 0], faces[:, 2] - faces[:, 0])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-300)
    light = np.array([0.3, -0.6, 0.75]) / np.linalg.norm([0.3, -0.6, 0.75])
    shade = 0.3 + 0.7 * np.abs(normals @ light)
    colors = np.column_stack([0.50 * shade, 0.60 * shade, 0.78 * shade, np.ones_like(shade)])
    low, high = mesh.bounding_box()
    low, high = low[order], high[order]
    supports, loads = markers["supports"], markers["loads"]
    supports = None if supports is None else np.asarray(supports)[:, order]
    if loads is not None:
        loads = (np.asarray(loads[0])[:, order],
                 None if loads[1] is None else np.asarray(loads[1])[:, order])
    fig = new_figure(figsize=(13, 6))
    for index, (elevation, azimuth) in enumerate(VIEWS_3D):
        ax = fig.add_subplot(1, 2, index + 1, projection="3d", computed_zorder=False)
        ax.add_collection3d(Poly3DCollection(faces, facecolors=colors,
                                             edgecolors=(0, 0, 0, 0.15), linewidths=0.2))
        _bounding_box(ax, low, high)
        drawn = draw_markers(ax, supports, loads, volume_loads=markers["volume_loads"],
                             length=0.15 * float(np.max(high - low)))
        box_low, box_high = _limits(np.concatenate([[low, high], drawn]), margin=0.0)
        ax.set_xlim(box_low[0], box_high[0])
        ax.set_ylim(box_low[1], box_high[1])
        ax.set_zlim(box_low[2], box_high[2])
        ax.set_box_aspect(np.maximum(box_high - box_low, 1e-12))
        ax.view_init(elev=elevation, azim=azimuth)
        ax.set_xlabel("x")
        ax.set_ylabel("z")
        ax.set_zlabel("y")
        ax.set_title(f"view from elevation {elevation:g}°, azimuth {azimuth:g}°",
                     fontsize="small")
        if index == 0 and ax.get_legend_handles_labels()[1]:
            ax.legend(loc="upper left", fontsize="small")
    label = f"cells with density > {threshold:.2g}"
    fig.suptitle(f"{title}\n{label}" if title else label)
    fig.subplots_adjust(left=0.02, right=0.98, wspace=0.1)
    return save_figure(fig, path)


def _bounding_box(ax, low: np.ndarray, high: np.ndarray) -> None:
    """The 12 edges of the box from ``low`` to ``high`` (3,), as thin grey lines."""
    corners = np.array([[(low, high)[(k >> axis) & 1][axis] for axis in range(3)]
                        for k in range(8)])
    edges = [(i, j) for i in range(8) for j in range(i + 1, 8) if bin(i ^ j).count("1") == 1]
    for edge in edges:
        ax.plot(*corners[list(edge)].T, color="0.7", linewidth=0.6)


def plot_convergence(history: Sequence[dict], path: str | Path, *,
                     volume_limit: float | None = None, objective: str = "objective",
                     quantity: str = "objective", constraints: Sequence[str] = (),
                     tol_change: float | None = None, converged: bool | None = None,
                     max_iter: int | None = None, status: str | None = None) -> Path:
    """Objective, volume fraction (and extra constraints) and design change per iteration.

    Parameters
    ----------
    history : sequence of dict
        One record per iteration with ``iteration``, ``objective``, ``volume``, ``change``
        (and the ``constraints`` by name).
    path : str or Path
        Output PNG file (written atomically).
    volume_limit : float, optional
        Drawn as a dashed line on the volume axis.
    objective : str
        Label of the first axis.
    quantity : str
        The history column drawn on the first axis: the objective, or the quantity a user
        reads where the objective is an internal stand-in for it (the first frequency of a
        frequency design, whose objective is the negative of an eigenvalue bound).
    tol_change : float, optional
        The stopping tolerance of the design change, drawn as a dashed line on the change
        axis (its range always includes it and spans at least a decade, so a run that
        stalls above it does not look like a dip).
    converged : bool, optional
        Whether the run stopped on ``tol_change``; the title says "converged at iteration
        N" or "not converged (iteration limit N reached)".
    max_iter : int, optional
        The iteration limit, for that title.
    status : str, optional
        How a run that ended neither converged nor at its iteration limit ended
        (``infeasible``, ``degenerate``): the title says "<status> at iteration N".
    """
    iterations = [r["iteration"] for r in history]
    panels = 3 + bool(constraints)
    fig = new_figure(figsize=(7, 2.2 * panels + 0.5))
    axes = fig.subplots(panels, 1, sharex=True)
    axes[0].plot(iterations, [r.get(quantity, np.nan) for r in history], color="tab:blue")
    axes[0].set_ylabel(objective)
    axes[1].plot(iterations, [r["volume"] for r in history], color="tab:green")
    if volume_limit is not None:
        axes[1].axhline(volume_limit, color="gray", linestyle="--", linewidth=1)
    axes[1].set_ylabel("volume fraction")
    volumes = [r["volume"] for r in history] + ([volume_limit] if volume_limit else [])
    low, high = min(volumes), max(volumes)
    margin = max(0.05 * (high - low), 0.02 * max(abs(high), 1e-12))  # no zoom into noise
    axes[1].set_ylim(low - margin, high + margin)
    change = np.maximum([r["change"] for r in history], 1e-16)
    axes[2].semilogy(iterations, change, color="tab:red")
    axes[2].set_ylabel("max design change")
    if tol_change is not None:
        axes[2].axhline(tol_change, color="gray", linestyle="--", linewidth=1,
                        label=f"stopping tolerance {tol_change:g}")
        axes[2].text(0.01, tol_change, f"stopping tolerance {tol_change:g}", color="0.35",
                     va="bottom", transform=axes[2].get_yaxis_transform())
    axes[2].set_ylim(*_decade_limits([*change, *([tol_change] if tol_change else [])]))
    status = (f"{status} at iteration {history[-1]['iteration'] if history else 0}"
              if status else _status(history, converged, max_iter))
    if status:
        axes[0].set_title(status)
    if constraints:
        for name in constraints:
            axes[3].plot(iterations, [r.get(name, np.nan) for r in history], label=name)
        axes[3].legend(loc="upper right")
        axes[3].set_ylabel("constraints")
    axes[-1].set_xlabel("iteration")
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in axes:
        ax.grid(True, alpha=0.3)
    fig.subplots_adjust(left=0.15, right=0.97, top=0.94 if status else 0.98, bottom=0.08,
                        hspace=0.1)
    return save_figure(fig, path)


def _decade_limits(values: Sequence[float]) -> tuple[float, float]:
    """Limits of a log axis showing ``values`` (positive) with a margin, at least a decade."""
    low, high = np.log10(min(values)), np.log10(max(values))
    margin = max(0.1 * (high - low), 0.5 * (1.0 - (high - low)), 0.05)
    return 10.0 ** (low - margin), 10.0 ** (high + margin)


def _status(history: Sequence[dict], converged: bool | None, max_iter: int | None) -> str:
    """The run's end in words, for the title of the convergence picture."""
    if converged is None:
        return ""
    if converged:
        return f"converged at iteration {history[-1]['iteration']}" if history else "converged"
    return ("not converged" if max_iter is None
            else f"not converged (iteration limit {max_iter} reached)")

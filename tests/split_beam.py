"""A mesh file whose two halves were meshed apart and never merged, for the tests of
coincident nodes (the mesh reader's warning, the command line's one warning line)."""

from pathlib import Path

import meshio
import numpy as np

from fesens.mesh import rectangle


def split_beam(folder: Path) -> Path:
    """``folder/split.vtu``: a 20 x 4 beam on [0, 100] x [0, 20] whose 5 nodes at x = 50
    are there twice, once for each half."""
    mesh = rectangle(20, 4, 100.0, 20.0)
    points, cells = mesh.points.copy(), mesh.cells.copy()
    on = np.flatnonzero(np.isclose(points[:, 0], 50.0))
    renumbered = np.arange(len(points))
    renumbered[on] = np.arange(len(points), len(points) + len(on))
    right = mesh.cell_centroids()[:, 0] > 50.0
    cells[right] = renumbered[cells[right]]
    path = folder / "split.vtu"
    meshio.write(path, meshio.Mesh(np.pad(np.vstack([points, points[on]]), ((0, 0), (0, 1))),
                                   [("quad", cells)]))
    return path

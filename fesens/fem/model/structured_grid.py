"""The structured grid of a model's free dofs, for geometric multigrid.

:func:`structured_grid` places the rows of ``K_ff`` on the lattice of the mesh's points
(:func:`fesens.mesh.structured.lattice_of`), so the solver layer, which knows no mesh,
can build its prolongations (:class:`fesens.solvers.grid_hierarchy.StructuredGrid`).
"""

from __future__ import annotations

import numpy as np

from fesens.mesh.mesh import Mesh
from fesens.mesh.structured import require_lattice
from fesens.solvers.grid_hierarchy import StructuredGrid


def structured_grid(mesh: Mesh, n_components: int, free: np.ndarray) -> StructuredGrid:
    """Where each free dof (row of ``K_ff``) sits on the lattice of ``mesh``.

    Parameters
    ----------
    mesh : Mesh
        A structured mesh (its points a full tensor lattice).
    n_components : int
        Unknowns per node (dof ``node * n_components + component``).
    free : numpy.ndarray
        Global ids of the free dofs, ``(n_free,)``, increasing: row ``i`` of ``K_ff`` is
        dof ``free[i]``.

    Returns
    -------
    StructuredGrid

    Raises
    ------
    MeshError
        If the mesh is not structured (the message suggests algebraic multigrid).
    """
    lattice = require_lattice(mesh, "geometric multigrid (solver 'gmg')")
    # int32 where the rows fit: 4 bytes per lattice dof less than int64 on every grid
    row_of_dof = np.full(mesh.n_points * n_components, -1,
                         dtype=np.int32 if free.size < 2**31 - 1 else np.int64)
    row_of_dof[free] = np.arange(free.size)
    rows = row_of_dof.reshape(mesh.n_points, n_components)[lattice.point_ids]
    return StructuredGrid(lattice.shape, rows)

"""Degree-of-freedom numbering: ``dof = node * n_components + component`` (interleaved)."""

from __future__ import annotations

import numpy as np

from fesens.errors import BoundaryConditionError
from fesens.mesh.mesh import Mesh


class DofMap:
    """Interleaved numbering of ``n_components`` unknowns per node.

    Parameters
    ----------
    mesh : Mesh
    n_components : int
        1 for heat conduction, ``mesh.dim`` for elasticity.

    Attributes
    ----------
    cell_dofs : numpy.ndarray
        Global dofs of each cell, ``(n_cells, n_nodes_per_cell * n_components)``, ordered
        node-major: ``[n0c0, n0c1, ..., n1c0, ...]``.
    n_dofs : int
    """

    def __init__(self, mesh: Mesh, n_components: int):
        self.n_components = n_components
        self.n_nodes = mesh.n_points
        self.n_dofs = mesh.n_points * n_components
        self.cell_dofs = (
            mesh.cells[:, :, None] * n_components + np.arange(n_components)
        ).reshape(mesh.n_cells, -1)

    def components(self, components: int | list[int] | None) -> np.ndarray:
        """Validated component indices (``None`` means all)."""
        if components is None:
            return np.arange(self.n_components)
        comps = np.atleast_1d(np.asarray(components, dtype=np.int64))
        bad = comps[(comps < 0) | (comps >= self.n_components)]
        if bad.size:
            raise BoundaryConditionError(
                f"component {int(bad[0])} does not exist: this problem has "
                f"{self.n_components} component(s) per node (0..{self.n_components - 1})"
            )
        return comps

    def node_dofs(self, nodes: np.ndarray, components: int | list[int] | None = None) -> np.ndarray:
        """Dofs of ``nodes`` for the given components, shape ``(n_nodes, n_comps)``."""
        comps = self.components(components)
        return np.asarray(nodes, dtype=np.int64)[:, None] * self.n_components + comps

"""Degree-of-freedom numbering: ``dof = node * n_components + component`` (interleaved)."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from fesens.errors import BoundaryConditionError
from fesens.mesh.mesh import Mesh

#: Axis names of vector components: ``"x"`` is component 0 (as in config files).
AXES = ("x", "y", "z")


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
        self._cells = mesh.cells

    @cached_property
    def cell_dofs(self) -> np.ndarray:
        """Global dofs of each cell, ``(n_cells, n_nodes_per_cell * n_components)``.

        Formed on first read, since a matrix-free solve never reads it (192 bytes per hex8
        elasticity cell).
        """
        nc = self.n_components
        return (self._cells[:, :, None] * nc + np.arange(nc)).reshape(len(self._cells), -1)

    def components(self, components: int | str | list[int | str] | None) -> np.ndarray:
        """Validated component indices, ``(n_comps,)``.

        Parameters
        ----------
        components : int, str, list of int or str, or None
            Indices ``0..n_components-1`` or axis names (:data:`AXES`: ``"x"`` is 0);
            ``None`` means all.

        Raises
        ------
        BoundaryConditionError
            An entry that is neither an index nor an axis name, or one this problem lacks.
        """
        if components is None:
            return np.arange(self.n_components)
        entries = [components] if isinstance(components, str) else np.ravel(
            np.asarray(components, dtype=object)).tolist()
        return np.array([self._component(entry) for entry in entries], dtype=np.int64)

    def _component(self, entry) -> int:
        names = ", ".join(repr(axis) for axis in AXES[:self.n_components])
        if isinstance(entry, str) and entry in AXES:
            index = AXES.index(entry)
        elif isinstance(entry, int | np.integer) and not isinstance(entry, bool | np.bool_):
            index = int(entry)
        else:
            raise BoundaryConditionError(
                f"component {entry!r} is not a component: give 0..{self.n_components - 1} "
                f"or {names}")
        if not 0 <= index < self.n_components:
            raise BoundaryConditionError(
                f"component {entry!r} does not exist: this problem has "
                f"{self.n_components} component(s) per node (0..{self.n_components - 1}"
                f"{' or ' + names if self.n_components > 1 else ''})")
        return index

    def node_dofs(self, nodes: np.ndarray, components: int | list[int] | None = None) -> np.ndarray:
        """Dofs of ``nodes`` for the given components, shape ``(n_nodes, n_comps)``."""
        comps = self.components(components)
        return np.asarray(nodes, dtype=np.int64)[:, None] * self.n_components + comps

"""Named load terms of a model: point, surface and volume loads, and their sum.

:class:`LoadTerms` is the part of :class:`~fesens.fem.model.linear.LinearModel` that keeps the load
terms: each is a global vector ``(n_dofs,)`` for the mesh's coordinates, plus (for surface and
volume loads) how to rebuild it for moved nodes, so that the load vector is traced in the
node coordinates as well as in the magnitudes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens.errors import BoundaryConditionError, NonFiniteError
from fesens.fem.integrals.loads import (
    FieldSpec,
    point_load_vector,
    surface_load_vector,
    volume_load_vector,
)
from fesens.fem.post.probe import node_at
from fesens.mesh.mesh import Predicate

Where = str | Predicate


class LoadTerms:
    """Mixin of :class:`~fesens.fem.model.linear.LinearModel`: the named load terms.

    Uses the model's ``mesh``, ``dofmap`` and ``_thickness()``; keeps ``loads`` (name →
    ``(n_dofs,)``), their rebuilders and the stacked load matrix.
    """

    def _init_loads(self) -> None:
        self.loads: dict[str, np.ndarray] = {}
        self._load_builders: dict[str, Callable | None] = {}
        self._load_matrix: np.ndarray | None = None

    def _add_load(self, name: str | None, kind: str, vector: np.ndarray,
                  builder: Callable | None = None) -> str:
        """Register a load term; ``builder(points)`` recomputes it for moved nodes."""
        name = self._load_name(name, kind)
        if name in self.loads:
            raise BoundaryConditionError(f"a load named {name!r} exists already")
        if not np.all(np.isfinite(vector)):
            raise NonFiniteError(f"load {name!r} contains NaN or infinity")
        self.loads[name] = vector
        self._load_builders[name] = builder
        self._load_matrix = None
        return name

    def _load_name(self, name: str | None, kind: str) -> str:
        """``name``, or the name a new load term of ``kind`` gets (``point2``)."""
        return name or f"{kind}{len(self.loads)}"

    def point_load(self, at, value: FieldSpec, *, name: str | None = None) -> str:
        """Concentrated load(s).

        Parameters
        ----------
        at : str, callable or coordinates
            A node-set name or predicate (``value`` is applied at *each* selected node), or
            the coordinates of a point (applied at the nearest node; an
            :class:`~fesens.fem.post.probe.OffNodeWarning` gives the distance when the point
            misses it, and a point outside the mesh's bounding box is refused,
            :class:`~fesens.errors.PointOutsideMeshError`).
        value : float, sequence or callable
            Force vector (elasticity) or heat input (conduction) per node.
        name : str, optional
            Name of the load term (default: generated); returned.
        """
        if isinstance(at, str) or callable(at):
            nodes = self.mesh.nodes(at)
        else:
            what = f"point load {self._load_name(name, 'point')!r}"
            nodes = np.array([node_at(self.mesh, at, what)])
        vector = point_load_vector(self.mesh, self.dofmap, nodes, value)
        return self._add_load(name, "point", vector)

    def surface_load(self, where: Where, value: FieldSpec | None = None, *,
                     pressure: FieldSpec | None = None, name: str | None = None,
                     kind: str = "surface") -> str:
        """Distributed load per unit area (2D: per unit length, times thickness) on facets.

        ``pressure`` instead of ``value`` acts against the outward normal (``t = −p n``).
        """
        facets = self.mesh.facets(where)

        def build(points=None):
            return surface_load_vector(self.mesh, self.dofmap, facets, value, pressure=pressure,
                                       thickness=self._thickness(), points=points)

        return self._add_load(name, kind, build(), build)

    def volume_load(self, value: FieldSpec, *, cells: Where | None = None,
                    name: str | None = None) -> str:
        """Load per unit volume over all cells or a named/predicate cell subset."""
        cell_ids = None if cells is None else self.mesh.cell_ids(cells)

        def build(points=None):
            return volume_load_vector(self.mesh, self.dofmap, value, cells=cell_ids,
                                      thickness=self._thickness(), points=points)

        return self._add_load(name, "volume", build(), build)

    def load_vector(self, magnitudes: dict | None = None, points=None):
        """``f = Σ_L m_L f_L`` over the load terms, ``(n_dofs,)`` (magnitudes default to 1).

        Traced in the magnitudes and in ``points`` (the load terms that depend on the
        geometry, surface and volume loads, are rebuilt for them).
        """
        magnitudes = magnitudes or {}
        unknown = set(magnitudes) - set(self.loads)
        if unknown:
            raise BoundaryConditionError(
                f"unknown load name(s) {sorted(unknown)}; loads: {sorted(self.loads)}"
            )
        if points is None:
            matrix = self._stacked_loads()
        elif self.loads:
            matrix = np.stack([self.loads[name] if build is None else build(points)
                               for name, build in self._load_builders.items()], axis=1)
        else:
            matrix = self._stacked_loads()
        if not magnitudes:
            return np.sum(matrix, axis=1)
        return matrix @ np.stack([magnitudes.get(name, 1.0) for name in self.loads])

    def _stacked_loads(self) -> np.ndarray:
        """The load terms as columns, ``(n_dofs, n_loads)`` (kept until a load is added)."""
        if self._load_matrix is None:
            self._load_matrix = (np.stack(list(self.loads.values()), axis=1) if self.loads
                                 else np.zeros((self.dofmap.n_dofs, 0)))
        return self._load_matrix

"""Dirichlet conditions of a model: which dofs are prescribed, to what, and which are free.

:class:`DirichletConditions` is the part of :class:`~fesens.fem.model.linear.LinearModel` that
holds them. The free/constrained split is kept here, apart from the assembler, so a
matrix-free solve (:mod:`fesens.fem.model.matrix_free`) never builds a sparsity pattern.
"""

from __future__ import annotations

from typing import Self

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.errors import BoundaryConditionError, NonFiniteError
from fesens.fem.integrals.loads import FieldSpec, evaluate_field
from fesens.fem.model.load_terms import Where
from fesens.fem.post.probe import node_at


def selected_nodes(mesh, where: Where, purpose: str) -> np.ndarray:
    """The nodes a condition acts on: those of a named set or predicate, or the node nearest
    to the coordinates ``(dim,)`` of a point (an
    :class:`~fesens.fem.post.probe.OffNodeWarning` names ``purpose`` and the distance when
    the point misses it); ``(n_nodes,)``, possibly empty."""
    if isinstance(where, str) or callable(where):
        return mesh.nodes(where)
    return np.array([node_at(mesh, where, purpose)])


class DirichletConditions:
    """Mixin of :class:`~fesens.fem.model.linear.LinearModel`: its Dirichlet conditions.

    Uses the model's ``mesh`` and ``dofmap``; the model sets ``_dirichlet`` (dof ->
    value) in its constructor.
    """

    _dirichlet: dict[int, float]

    @property
    def n_components(self) -> int:
        return self.dofmap.n_components

    def fix(self, where: Where, components=None, value: FieldSpec = 0.0) -> Self:
        """Prescribe values on the nodes of a named set or a coordinate predicate.

        Parameters
        ----------
        where : str, callable or coordinates
            Node-set / facet-set name, predicate ``f(points) -> bool mask``, or the
            coordinates ``(dim,)`` of a point (the nearest node; an
            :class:`~fesens.fem.post.probe.OffNodeWarning` gives the distance when it misses).
        components : int, str or list of int or str, optional
            Components to fix, as indices or axis names (``"x"``, ``"y"``, ``"z"``, as in
            config files); default: all.
        value : float, sequence or callable
            Prescribed value(s): a scalar for every fixed component, one value per fixed
            component, or ``f(points (n, dim)) -> (n, n_fixed_components)`` (evaluated at
            the mesh's coordinates).

        Returns
        -------
        LinearModel
            The model itself, so calls can be chained.
        """
        nodes = selected_nodes(self.mesh, where, "fixed point")
        if nodes.size == 0:
            raise BoundaryConditionError(f"Dirichlet condition on {where!r} selects no node")
        comps = self.dofmap.components(components)
        if np.ndim(value) == 0 and not callable(value):
            value = np.full(comps.size, float(value))
        values = evaluate_field(value, self.mesh.points[nodes], comps.size, "prescribed value")
        if not np.all(np.isfinite(values)):
            raise NonFiniteError(f"prescribed values on {where!r} contain NaN or infinity")
        dofs = self.dofmap.node_dofs(nodes, comps)
        self._dirichlet.update(zip(dofs.ravel().tolist(), values.ravel().tolist(), strict=True))
        return self

    @property
    def constrained_dofs(self) -> np.ndarray:
        """Sorted global ids of the Dirichlet dofs."""
        return np.array(sorted(self._dirichlet), dtype=np.int64)

    def prescribed_values(self) -> np.ndarray:
        """Prescribed values ``g``, ordered like :attr:`constrained_dofs`."""
        return np.array([self._dirichlet[d] for d in sorted(self._dirichlet)], dtype=float)

    def dirichlet_values(self, dirichlet=None):
        """The prescribed values a solve or a run uses: ``dirichlet`` (possibly traced,
        ordered like :attr:`constrained_dofs`) when given, else :meth:`prescribed_values`.

        Raises
        ------
        ValueError
            If ``dirichlet`` does not hold one value per constrained dof.
        NonFiniteError
            If it holds NaN or infinity.
        """
        g = self.prescribed_values() if dirichlet is None else dirichlet
        shape = self.constrained_dofs.shape
        if np.shape(getval(g)) != shape:
            raise ValueError(f"dirichlet values must have shape {shape} (one per "
                             f"constrained dof), got {np.shape(getval(g))}")
        if not np.all(np.isfinite(getval(g))):
            raise NonFiniteError("dirichlet values contain NaN or infinity")
        return g

    @property
    def free_dofs(self) -> np.ndarray:
        """Increasing global ids of the free dofs (the rows of ``K_ff``), ``(n_free,)``;
        kept while the set of Dirichlet dofs stays the same."""
        constrained = self.constrained_dofs
        kept = self.__dict__.get("_free_split")
        if kept is None or not np.array_equal(kept[0], constrained):
            is_constrained = np.zeros(self.dofmap.n_dofs, dtype=bool)
            is_constrained[constrained] = True
            kept = self.__dict__["_free_split"] = (constrained,
                                                   np.flatnonzero(~is_constrained))
        return kept[1]

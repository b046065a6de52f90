"""Spring supports of a model: a stiffness ``k`` between chosen dofs and the ground.

A spring at dof ``i`` adds ``k`` to ``K_ii``. :class:`SpringSupports` is the part of
:class:`~fesens.fem.model.linear.LinearModel` that keeps them; the model adds them to
``K_ff`` through :func:`add_diagonal`, on the assembler's cached pattern (every diagonal
entry of ``K_ff`` is in it: each dof couples with itself through its cells). The springs
are constant: nothing is differentiated with respect to ``k``, and a solve's cotangent
``K̄`` reaches the assembly unchanged, so the adjoint is the one of the model without
springs with the springs' stiffness in the factorized matrix.

Compliant mechanisms (Sigmund 1997; Bendsøe & Sigmund, *Topology Optimization*, 2003,
§2.6) model the workpiece at the output port and the actuator at the input port by such
springs.
"""

from __future__ import annotations

from typing import Self

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.ad.registry import defvjp
from fesens.ad.sparse import PatternMatrix, SparsePattern
from fesens.ad.tracer import primitive
from fesens.errors import BoundaryConditionError, NonFiniteError
from fesens.fem.model.dirichlet import selected_nodes
from fesens.fem.model.load_terms import Where
from fesens.readonly import freeze


@primitive
def add_diagonal(K: PatternMatrix, positions: np.ndarray, values: np.ndarray
                 ) -> PatternMatrix:
    """``K + Σ_i v_i e_i e_iᵀ``: constant ``values`` ``(n,)`` added at the stored entries
    ``positions`` ``(n,)`` (indices into ``K.data``) of the same pattern.

    Differentiable in ``K`` only, whose cotangent is the result's (any form: values on the
    pattern or outer factors).
    """
    data = np.array(K.data, dtype=float)
    data[positions] += values
    return PatternMatrix(K.pattern, freeze(data))


defvjp(add_diagonal, lambda ans, K, positions, values: lambda g: g, uses_ans=False)


def diagonal_positions(pattern: SparsePattern, rows: np.ndarray) -> np.ndarray:
    """Where the diagonal entries ``(r, r)`` of ``rows`` ``(n,)`` are stored in a square
    pattern's values, ``(n,)``.

    Raises
    ------
    BoundaryConditionError
        A row whose diagonal entry is not in the pattern (a dof of no cell).
    """
    stored = pattern.rows == pattern.cols
    where = np.full(pattern.shape[0], -1, dtype=np.int64)
    where[pattern.rows[stored]] = np.flatnonzero(stored)
    positions = where[rows]
    if np.any(positions < 0):
        raise BoundaryConditionError(f"rows {rows[positions < 0][:10].tolist()} of K_ff have "
                                     "no diagonal entry: springs on nodes of no cell; put "
                                     "the springs on nodes of the mesh's cells")
    return positions


class SpringSupports:
    """Mixin of :class:`~fesens.fem.model.linear.LinearModel`: its spring supports.

    Uses the model's ``mesh``, ``dofmap`` and ``constrained_dofs``; the model sets
    ``_springs`` (dof -> stiffness) in its constructor.
    """

    _springs: dict[int, float]

    def spring(self, where: Where, stiffness, components=None) -> Self:
        """Ground the selected nodes by springs: ``k`` added to ``K_ii`` of each dof.

        Parameters
        ----------
        where : str, callable or coordinates
            Node-set / facet-set name, predicate ``f(points) -> bool mask``, or the
            coordinates ``(dim,)`` of a point (the nearest node), as in :meth:`fix`. A
            spring acts at *each* selected node.
        stiffness : float or sequence of float
            ``k > 0``: one value for every component, or one per component in
            ``components``.
        components : int, str or list of int or str, optional
            Components held by the springs, as indices or axis names; default: all.

        Returns
        -------
        LinearModel
            The model itself, so calls can be chained. Springs added twice at a dof act in
            parallel: their stiffnesses add up.

        Raises
        ------
        BoundaryConditionError
            No node selected, a stiffness count that matches no component count, ``k <= 0``,
            or a dof that a Dirichlet condition prescribes (a spring there does nothing).
        NonFiniteError
            A stiffness of NaN or infinity.
        """
        nodes = selected_nodes(self.mesh, where, "spring")
        if nodes.size == 0:
            raise BoundaryConditionError(f"spring on {where!r} selects no node")
        comps = self.dofmap.components(components)
        k = np.atleast_1d(np.asarray(stiffness, dtype=float))
        if k.ndim != 1 or k.size not in (1, comps.size):
            raise BoundaryConditionError(
                f"spring stiffness: give one number or {comps.size} (one per component), "
                f"got {np.shape(stiffness)}")
        if not np.all(np.isfinite(k)):
            raise NonFiniteError(f"spring stiffness on {where!r} is {k.tolist()}; give "
                                 "finite numbers")
        if np.any(k <= 0):
            raise BoundaryConditionError(f"spring stiffness on {where!r} must be > 0, got "
                                         f"{k.tolist()}")
        dofs = self.dofmap.node_dofs(nodes, comps)
        self._check_springs_free(dofs.ravel())
        for dof, value in zip(dofs.ravel().tolist(),
                              np.broadcast_to(k, dofs.shape).ravel().tolist(), strict=True):
            self._springs[dof] = self._springs.get(dof, 0.0) + value
        return self

    @property
    def springs(self) -> dict[int, float]:
        """The spring stiffness at each grounded dof (a copy): global dof -> ``k``."""
        return dict(self._springs)

    def _check_springs_free(self, dofs: np.ndarray) -> None:
        fixed = np.intersect1d(dofs, self.constrained_dofs)
        if fixed.size:
            nc = self.n_components
            where = ", ".join(f"node {d // nc} component {d % nc}" for d in fixed[:5].tolist())
            raise BoundaryConditionError(
                f"springs on {fixed.size} dof(s) that Dirichlet conditions prescribe ({where}"
                f"{', ...' if fixed.size > 5 else ''}); a spring there holds nothing: remove "
                "the spring or the support there")

    def _with_springs(self, K):
        """``K_ff`` plus the springs' stiffness on its diagonal (``K`` itself without
        springs)."""
        if not self._springs:
            return K
        dofs = np.fromiter(self._springs, dtype=np.int64, count=len(self._springs))
        self._check_springs_free(dofs)
        pattern = getval(K).pattern
        kept = self.__dict__.get("_spring_positions")
        # kept while the pattern (the set of Dirichlet dofs) and the sprung dofs stay
        if kept is None or kept[0] is not pattern or not np.array_equal(kept[1], dofs):
            rows = np.searchsorted(self.free_dofs, dofs)
            kept = self.__dict__["_spring_positions"] = (
                pattern, dofs, diagonal_positions(pattern, rows))
        values = np.fromiter(self._springs.values(), dtype=float, count=dofs.size)
        return add_diagonal(K, kept[2], values)

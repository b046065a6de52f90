"""Follower pressures of a nonlinear model: loads on the deformed boundary along its
current normal, which depend on the state and so belong to the internal forces.

A mixin of :class:`~fesens.fem.model.nonlinear.NonlinearModel`
(:meth:`FollowerLoads.follower_surface_load`); the forces on the deformed facets and their
load stiffness are :mod:`fesens.fem.integrals.follower`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fesens.ad.numpy_wrapper import untake
from fesens.errors import BoundaryConditionError, NonFiniteError
from fesens.fem.integrals.follower import (
    FollowerFacets,
    follower_facets,
    follower_forces,
    follower_stiffness,
)
from fesens.fem.model.load_terms import Where
from fesens.fem.nonlinear.implicit_solve import along

#: The key of a follower load's pressure among the fields of a solve.
_FOLLOWER_FIELD = "follower:{}"


@dataclass(frozen=True)
class FollowerLoad:
    """A follower pressure of a model: its facets, pressure and dofs.

    Attributes
    ----------
    facets : FollowerFacets
    pressure : numpy.ndarray
        Pressure per facet at magnitude 1, ``(n_facets,)``.
    dofs : numpy.ndarray
        Global dofs of the facets' nodes, ``(n_facets, n_facet_nodes, n_comp)``.
    cell_dofs : numpy.ndarray
        The same dofs' places among their owner cell's dofs, ``(n_facets, n_facet_nodes ·
        n_comp)``.
    """

    facets: FollowerFacets
    pressure: np.ndarray
    dofs: np.ndarray
    cell_dofs: np.ndarray


class FollowerLoads:
    """Follower pressures of a :class:`~fesens.fem.model.nonlinear.NonlinearModel`, kept
    by name in its ``followers`` (``dict[str, FollowerLoad]``).

    Follower loads depend on the state, so they are part of the internal forces: their
    pressures ride among the fields of a solve (traced, so a gradient reaches the pressure
    and the load magnitude through the one traced residual of the adjoint), their load
    stiffness joins the tangent on the owner cells' pattern, and the tangent of the model is
    no longer symmetric (``symmetric_tangent`` becomes False on the instance: ``auto`` is
    then LU). The load factor ramps a follower pressure as it ramps the load vector and the
    prescribed values (:meth:`fields_at`: in the load steps, their cut-backs,
    ``at_load_factors`` and the adjoint of each state), and it has no potential in general,
    so a line search on the energy is done on the residual instead.
    """

    def follower_surface_load(self, where: Where, pressure, *, name: str | None = None,
                              kind: str = "follower") -> str:
        """A pressure on the deformed boundary along its current outward normal, ``f_a =
        −∫_γ p N_a n da`` (:mod:`fesens.fem.integrals.follower`), for a displacement field.

        Parameters
        ----------
        where : str or callable
            A facet-set name or a predicate of the boundary facets' nodes.
        pressure : float or array_like
            Per unit current area (2D: per unit length, times the thickness), positive
            pushes into the body; a number or one per facet ``(n_facets,)``. The load
            magnitude of :meth:`solve` (``loads={name: m}``) multiplies it.
        name : str, optional
            Name of the load (default: generated); returned.

        Raises
        ------
        BoundaryConditionError
            The unknowns are not displacements (``n_components != dim``), the facets are not
            on the boundary, or a pressure of the wrong shape.
        NonFiniteError
            A pressure that is NaN or infinite.
        """
        mesh, n_comp = self.mesh, self.n_components
        if n_comp != mesh.dim:
            raise BoundaryConditionError(
                f"a follower pressure moves with the deformed boundary, so it needs a "
                f"displacement field ({mesh.dim} components); {type(self).__name__} has "
                f"{n_comp}")
        facets = follower_facets(mesh, mesh.facets(where), f"follower pressure {where!r}")
        n_facets = len(facets.nodes)
        values = np.asarray(pressure, dtype=float)
        if values.shape not in ((), (n_facets,)):
            raise BoundaryConditionError(
                f"follower pressure {where!r}: one number or one per facet ({n_facets}), "
                f"got shape {values.shape}")
        if not np.all(np.isfinite(values)):
            raise NonFiniteError(f"follower pressure {where!r} contains NaN or infinity")
        # a zero load vector keeps the name among the load terms, so that solve(loads=...)
        # takes its magnitude and names stay unique
        name = self._add_load(name, kind, np.zeros(self.dofmap.n_dofs))
        owners, local = facets.owned.facets.cells, facets.owned.local
        nodal = np.reshape(self.dofmap.cell_dofs[owners], (n_facets, -1, n_comp))
        places = (local[..., None] * n_comp + np.arange(n_comp)).reshape(n_facets, -1)
        self.followers[name] = FollowerLoad(
            facets, np.broadcast_to(values, (n_facets,)).copy(),
            np.take_along_axis(nodal, local[..., None], axis=1), places)
        # the load stiffness is not symmetric (an open surface): auto becomes LU and a
        # symmetric backend is refused, for this instance only
        self.symmetric_tangent = False
        return name

    def follower_fields(self, magnitudes: dict | None = None) -> dict:
        """The pressures of the follower loads times their magnitudes (``loads`` of
        :meth:`solve`, default 1), ``(n_facets,)`` each (traced when a magnitude is), by
        their field names: with :meth:`material_fields`, the fields of
        :meth:`internal_forces` and :meth:`tangent`."""
        magnitudes = magnitudes or {}
        return {_FOLLOWER_FIELD.format(name): magnitudes.get(name, 1.0) * load.pressure
                for name, load in self.followers.items()}

    def fields_at(self, fields: dict, start: dict | None, t: float) -> dict:
        """The fields of a solve at load factor ``t`` of a load path from the fields
        ``start`` (at ``t = 0``; None: the unloaded reference state) to ``fields`` (at
        ``t = 1``): the loads among them, the follower pressures, at ``start + t (end −
        start)`` like the load vector (traced when ``fields`` are, exactly ``fields`` at
        ``t = 1``); the material fields as given.

        Parameters
        ----------
        fields : dict
            The fields at ``t = 1`` (:meth:`material_fields` and :meth:`follower_fields`),
            per-cell ``(n_cells,)`` or per-facet ``(n_facets,)`` arrays.
        start : dict or None
            The fields at ``t = 0`` (a previous solve's, for a warm start), or None.
        t : float
            The load factor, in ``[0, 1]``.

        Returns
        -------
        dict
            The same keys as ``fields``.
        """
        out = dict(fields)
        for name in self.followers:
            key = _FOLLOWER_FIELD.format(name)
            if key in fields:
                out[key] = along(t, 0.0 if start is None else start[key], fields[key])
        return out

    def _acting_followers(self, fields: dict) -> list[tuple[FollowerLoad, object]]:
        """``(load, pressure)`` of every follower load, its pressure read from ``fields``.

        Raises
        ------
        BoundaryConditionError
            A follower load whose pressure is not among ``fields``: its forces would be
            left out silently.
        """
        missing = [name for name in self.followers
                   if _FOLLOWER_FIELD.format(name) not in fields]
        if missing:
            raise BoundaryConditionError(
                f"the follower load(s) {missing} depend on the state, but their pressures "
                f"are not among the fields given ({sorted(fields)}); solve() adds them "
                "(follower_fields(loads)); a run that builds its fields from "
                "material_fields alone, such as a transient run, does not support follower "
                "loads: give the pressure as a dead load there")
        return [(load, fields[_FOLLOWER_FIELD.format(name)])
                for name, load in self.followers.items()]

    def _follower_positions(self, load: FollowerLoad, u, points):
        """Current positions ``X + u`` of a follower load's facet nodes, ``(n_facets,
        n_facet_nodes, dim)`` (traced when ``u`` or ``points`` is)."""
        reference = self.mesh.points if points is None else points
        return reference[load.facets.nodes] + np.reshape(u[np.ravel(load.dofs)],
                                                         np.shape(load.dofs))

    def _follower_matrices(self, u, fields: dict, points) -> list[tuple]:
        """``(owners, cell dof places, −∂f/∂x)`` of each acting follower load, the last
        ``(n_facets, m, m)`` with ``m = n_facet_nodes · n_comp`` (plain arrays)."""
        out = []
        for load, p in self._acting_followers(fields):
            x = self._follower_positions(load, u, points)
            K = -follower_stiffness(load.facets, x, np.asarray(p), self._thickness())
            m = load.cell_dofs.shape[1]
            out.append((load.facets.owned.facets.cells, load.cell_dofs,
                        np.reshape(K, (-1, m, m))))
        return out

    def _subtract_follower_forces(self, forces, u, fields: dict, points):
        """``forces`` ``(n_dofs,)`` minus the forces of every acting follower load (traced
        in ``forces``, ``u``, the fields and ``points``)."""
        for load, p in self._acting_followers(fields):
            # a follower load depends on the state: R = F_int − f_follower(u) − f
            external = follower_forces(load.facets, self._follower_positions(load, u, points),
                                       p, self._thickness())
            forces = forces - untake(np.ravel(external), np.ravel(load.dofs),
                                     (self.dofmap.n_dofs,))
        return forces

    def _add_follower_stiffness(self, K: np.ndarray, u, fields: dict, points) -> None:
        """Add the load stiffness of every acting follower load to the cell matrices ``K``
        ``(n_cells, nd, nd)`` in place (plain arrays)."""
        # the load stiffness of a follower load joins its facets' owner cells: the pattern
        # stays that of the cells
        for owners, places, K_load in self._follower_matrices(u, fields, points):
            np.add.at(K, (owners[:, None, None], places[:, :, None], places[:, None, :]),
                      K_load)

    def _with_follower_stiffness(self, action: Callable, u, fields: dict,
                                 points) -> Callable:
        """The transposed action ``v ↦ Kᵀ v`` on cell vectors ``v`` ``(n_cells, n_nodes,
        n_comp)`` plus the transposed load stiffness of every acting follower load
        (``action`` itself when there is none; plain arrays)."""
        loads = self._follower_matrices(u, fields, points)
        if not loads:
            return action
        nd = self.dofmap.cell_dofs.shape[1]

        def with_load_stiffness(v: np.ndarray) -> np.ndarray:
            flat_v = np.reshape(v, (-1, nd))
            extra = np.zeros(flat_v.shape)
            for owners, places, K_load in loads:
                np.add.at(extra, (owners[:, None], places),
                          np.einsum("fab,fa->fb", K_load, flat_v[owners[:, None], places]))
            return action(v) + np.reshape(extra, np.shape(v))

        return with_load_stiffness

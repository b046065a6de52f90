"""A design problem split among MPI ranks: each rank holds its cells and their design
variables (a distributed model, :mod:`fesens.fem.partition.model_part`).

Every rank evaluates the same program as a serial :class:`~fesens.opt.DesignProblem` on its
part: the filter is a distributed matrix (:mod:`fesens.opt.rank_filters`), the solve
adds the ranks' matrices in PETSc (:mod:`fesens.solvers.petsc_distributed`), and the responses
are sums over the ranks (:func:`fesens.ad.rank_primitives.total`: compliance ``Σ_r f_r·u_r``,
volume ``Σ_r Σ_e ρ_e |Ω_e|``), so the objective, the constraints and their values are the
same numbers on every rank, and each rank's gradient is the part of the serial gradient for
its design variables. The optimizers reduce over the ranks through
:attr:`Evaluation.collective`; checkpoints and outputs hold the whole vectors
(:meth:`gather_design`, :meth:`whole_cells`, :meth:`whole_points`).

Only additive responses are offered (compliance; the volume constraint): a response such as
a stress p-norm or a value at a point is not a sum of per-rank terms.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.rank_primitives import total
from fesens.fem.model.linear import LinearModel
from fesens.fem.partition.mesh_part import MeshPart
from fesens.mpi import Collective
from fesens.objectives.differentiable import State
from fesens.objectives.static import volume
from fesens.opt.minmax import MinMaxProblem
from fesens.opt.problem import DesignProblem, Response


class DistributedDesignProblem(DesignProblem):
    """:class:`~fesens.opt.DesignProblem` on one rank's part of a distributed model.

    Parameters
    ----------
    model : LinearModel
        The rank's model (:func:`fesens.fem.partition.model_part.adopt`).
    objective : callable
        ``f(state, ρ)`` whose value is a sum over the cells and dofs of the rank (e.g.
        ``compliance``): the ranks' values are added.
    part : MeshPart
        The rank's cells and nodes.
    whole_model : LinearModel
        The model of the whole mesh (supports and loads), for :meth:`whole_state`.
    collective : Collective
        The reductions over the ranks (:func:`fesens.mpi.collective`).
    passive_solid, passive_void : numpy.ndarray, optional
        GLOBAL cell ids held at 1 and 0 (each rank keeps its own).
    **options
        The other arguments of :class:`~fesens.opt.DesignProblem` (``filter``: a
        distributed one).
    """

    def __init__(self, model: LinearModel, objective: Response, *, part: MeshPart,
                 whole_model: LinearModel, collective: Collective, passive_solid=None,
                 passive_void=None, **options) -> None:
        for name in ("design_map", "overhang"):
            if options.get(name) is not None:
                # Both work on the whole mesh (mirror images, columns, layers below) while a
                # rank holds only its part: applied per part they would be silently wrong.
                raise ValueError(f"{name} is not available for a design split among MPI "
                                 "ranks: run the optimization without mpirun")
        self.part, self._collective, self.whole_model = part, collective, whole_model
        super().__init__(model, objective, passive_solid=_local(part, passive_solid),
                         passive_void=_local(part, passive_void), **options)
        self._volume_total = collective.sum(float(volume(model, 1.0)))
        design_ids = part.cells[self.design]
        every = collective.allgather(design_ids)
        self._design_order = np.argsort(every, kind="stable")
        self._design_positions = np.searchsorted(every[self._design_order], design_ids)
        self._cell_order = np.argsort(collective.allgather(part.cells), kind="stable")
        self._point_order = np.argsort(collective.allgather(part.nodes[part.owned]),
                                       kind="stable")

    @property
    def collective(self) -> Collective:
        """The reductions over the ranks."""
        return self._collective

    def _total(self, value):
        """The sum over the ranks of a rank's ``value`` (traced)."""
        return total(value, self._collective)

    def _volume_fraction(self, rho):
        """``Σ_r Σ_e ρ_e |Ω_e| / V_Ω`` (traced)."""
        return self._total(volume(self.model, rho)) / self._volume_total

    # ------------------------------------------------------------ whole vectors
    def gather_design(self, x: np.ndarray) -> np.ndarray:
        """The whole design vector (the serial problem's order), on every rank."""
        return self._collective.allgather(np.asarray(x, dtype=float))[self._design_order]

    def design_part(self, x_whole: np.ndarray) -> np.ndarray:
        """This rank's design variables of a whole design vector."""
        return np.asarray(x_whole, dtype=float)[self._design_positions]

    def whole_cells(self, values: np.ndarray, *, root: bool = False) -> np.ndarray | None:
        """Per-cell values of the whole mesh ``(n_cells, ...)`` from every rank's
        ``(n_local_cells, ...)``, on every rank (``root``: on rank 0 only, None on the
        others)."""
        if root:
            whole = self._collective.gather(np.asarray(values))
            return None if whole is None else whole[self._cell_order]
        return self._collective.allgather(np.asarray(values))[self._cell_order]

    def whole_points(self, values: np.ndarray, *, root: bool = False) -> np.ndarray | None:
        """Per-node values of the whole mesh ``(n_points, ...)`` from every rank's
        ``(n_local_nodes, ...)`` (each node's owner's value), on every rank (``root``: on
        rank 0 only, None on the others)."""
        owned = np.asarray(values)[self.part.owned]
        if root:
            whole = self._collective.gather(owned)
            return None if whole is None else whole[self._point_order]
        return self._collective.allgather(owned)[self._point_order]


    def whole_state(self, state: State) -> State | None:
        """The solution on the whole mesh (:attr:`whole_model`) on rank 0, None on the other
        ranks: the field from each node's owner, per-cell coefficients and parameters from
        each cell's rank. What rank 0 computes the outputs from (a nodal recovery of
        stresses needs the cells around a node, which may lie on several ranks); the other
        ranks skip that post-processing (and its memory, several kB per cell)."""
        state = state.detached()
        model, n = self.whole_model, state.model.n_components
        root = self._collective.rank == 0

        def nodal(values):
            shape = np.shape(values)[1:]
            local = np.reshape(values, (self.part.mesh.n_points, n, *shape))
            whole = self.whole_points(local, root=True)
            return None if whole is None else np.reshape(whole, (model.dofmap.n_dofs, *shape))

        def per_cell(value):
            return self.whole_cells(value, root=True) if np.ndim(value) else value

        u, f = nodal(state.u), nodal(state.f)
        coefficients = [per_cell(c) for c in state.coefficients]
        parameters = {key: per_cell(value) for key, value in state.parameters.items()}
        if not root:
            return None
        return type(state)(model, u, f, coefficients, parameters, state.load_magnitudes)


class DistributedMinMaxProblem(DistributedDesignProblem, MinMaxProblem):
    """:class:`~fesens.opt.minmax.MinMaxProblem` on one rank's part: the worst of the load
    cases' objectives, each summed over the ranks (the arguments of
    :class:`DistributedDesignProblem`, with ``load_cases``)."""


def _local(part: MeshPart, cells) -> np.ndarray | None:
    """The rank's local ids of the global cell ids ``cells`` (None stays None)."""
    return None if cells is None else part.local_cells(np.asarray(cells, dtype=np.int64))

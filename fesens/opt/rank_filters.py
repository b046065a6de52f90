"""The filters of :mod:`fesens.opt.filters` with the design vector split over MPI ranks.
The Helmholtz filter (:class:`DistributedHelmholtzFilter`) is its PDE assembled per rank
and solved across the ranks; the density and sensitivity filters are described here.

Every rank holds the whole mesh and its own cells (a
:class:`~fesens.fem.partition.mesh_part.MeshPart`)
and builds only the rows of the filter for them: the neighbours of its cells' centroids
within the radius, found in a :class:`scipy.spatial.cKDTree` over all centroids, with the
cone weights ``H_ei = max(0, r − |c_e − c_i|)`` of :func:`~fesens.opt.filters.cone_values`.
The normalisation of the density filter (:func:`~fesens.opt.filters.volume_weighted`), the
sensitivity quotient (:func:`~fesens.opt.filters.filtered_sensitivity`) and the radius check
are the serial filters' own functions; each distributed filter is a
:class:`~fesens.opt.filters.Filter` with its serial counterpart's name and attributes.
Its columns are renumbered to the rank-ordered cell numbering (rank 0's cells in increasing
global id, then rank 1's, ...: rank ``r``'s cell ``part.cells[i]`` is
``part.cell_start + i``), and the rows become a
:class:`~fesens.solvers.petsc_operator.DistributedOperator` applied with
:func:`~fesens.ad.rank_primitives.apply_operator` (traced: the VJP is the transposed product).

The map from global cell id to rank-ordered id needs every rank's cells: the constructor
gathers ``part.cells`` from all ranks (one ``allgather`` of ``n_cells`` integers, a
collective call: every rank builds its filter at the same point of the program). The
numbers are those of the serial filters on the whole mesh, to round-off (the serial stencil
form on structured grids sums in another order).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from fesens.ad.rank_primitives import apply_operator
from fesens.errors import MeshError
from fesens.fem.integrals.geometry import cell_geometry
from fesens.mesh.mesh import Mesh
from fesens.mpi import SERIAL, Collective, collective
from fesens.opt.filters import (
    DensityFilter,
    Filter,
    HelmholtzFilter,
    NoFilter,
    SensitivityFilter,
    check_radius,
    cone_values,
    filtered_sensitivity,
    volume_weighted,
)
from fesens.solvers import make_solver
from fesens.solvers.petsc_distributed import DofLayout
from fesens.solvers.petsc_operator import DistributedOperator
from fesens.solvers.policy import distributed_choice


class DistributedDensityFilter(Filter):
    """This rank's rows of the volume-weighted cone filter ``x̃ = W x`` of
    :class:`~fesens.opt.filters.DensityFilter`:
    ``x̃_e = Σ_i H_ei v_i x_i / Σ_i H_ei v_i`` over all neighbours ``i`` (any rank's).

    Parameters
    ----------
    mesh : Mesh
        The whole mesh (every rank's copy).
    part : MeshPart
        This rank's part (``cells``, ``cell_counts``, ``size``).
    radius : float
        Filter radius in mesh units.
    reductions : Collective, optional
        The ranks' reductions; default :func:`fesens.mpi.collective` (``SERIAL`` when
        ``part.size`` is 1).

    Raises
    ------
    ValueError
        If ``radius`` is not a finite number > 0.
    MeshError
        If ``part`` does not fit ``mesh`` or the launch (see :func:`rank_ordered_ids`).
    """

    name = DensityFilter.name
    takes_radius = DensityFilter.takes_radius
    needs_solid_cells = DensityFilter.needs_solid_cells

    def __init__(self, mesh: Mesh, part, radius: float,
                 reductions: Collective | None = None) -> None:
        check_radius(radius)
        self.radius = float(radius)
        H, neighbours, ranked = cone_rows(mesh, part, self.radius, reductions)
        W = volume_weighted(H, cell_volumes(mesh, neighbours))
        #: This rank's rows of ``W`` ``(n_local_cells, n_cells)``, rank-ordered columns.
        self.rows = _to_global_columns(W, ranked, mesh.n_cells)
        self.operator = DistributedOperator(self.rows, part.cell_counts)

    def __call__(self, x):
        """``x̃`` of this rank's cells ``(n_local_cells,)`` from their ``x``
        ``(n_local_cells,)`` (traced; collective)."""
        return apply_operator(self.operator, x)


class DistributedHelmholtzFilter(HelmholtzFilter):
    """The Helmholtz (PDE) filter of :class:`~fesens.opt.filters.HelmholtzFilter` on one
    rank's part: ``(r_h² K + M) x̃ = Tᵀ x`` assembled over the rank's cells, solved across
    the ranks by PETSc (the ranks' matrices and right-hand sides added, the nodal solution
    scattered back to each rank's nodes: :mod:`fesens.solvers.petsc_distributed`), then
    averaged back to the rank's cells. The map is symmetric, so the serial filter's VJP (a
    solve with the same matrix) holds on each rank.

    Parameters
    ----------
    mesh : Mesh
        The whole mesh (unused: the part holds what the filter needs; the argument keeps
        the distributed filters' signature).
    part : MeshPart
    radius : float
    rtol : float
        Relative residual of PETSc's CG (with GAMG) on the filter's equation.
    """

    def __init__(self, mesh: Mesh, part, radius: float, rtol: float = 1e-10) -> None:
        solver = "auto"
        if part.size > 1:  # one unknown per node: where each of the rank's nodes sits
            choice = distributed_choice(part.size)  # auto's choice across the ranks
            solver = make_solver(choice, **choice.options, rtol=rtol)
            solver.layout = DofLayout(ids=np.asarray(part.node_order, dtype=np.int64),
                                      owned=np.asarray(part.owned, dtype=bool))
        super().__init__(part.mesh, radius, solver=solver)


class DistributedSensitivityFilter(Filter):
    """Sigmund's sensitivity filter (:class:`~fesens.opt.filters.SensitivityFilter`) on
    this rank's cells: the densities are unfiltered and
    ``∂̃c/∂x_e = Σ_i H_ei x_i ∂c/∂x_i / (max(γ, x_e) Σ_i H_ei)``, where ``H (x ∂c/∂x)``
    needs the neighbours' products (a distributed product).

    Parameters
    ----------
    mesh, part, radius, reductions
        As for :class:`DistributedDensityFilter`.
    gamma : float
        ``γ``, the floor of the density in the denominator.
    """

    name = SensitivityFilter.name
    takes_radius = SensitivityFilter.takes_radius
    needs_solid_cells = SensitivityFilter.needs_solid_cells

    def __init__(self, mesh: Mesh, part, radius: float, gamma: float = 1e-3,
                 reductions: Collective | None = None) -> None:
        check_radius(radius)
        self.radius = float(radius)
        self.gamma = gamma
        H, _, ranked = cone_rows(mesh, part, self.radius, reductions)
        #: ``Σ_i H_ei`` over every neighbour of this rank's cells ``(n_local_cells,)``.
        self.Hs = np.asarray(H.sum(axis=1)).ravel()
        #: This rank's rows of ``H`` ``(n_local_cells, n_cells)``, rank-ordered columns.
        self.rows = _to_global_columns(H, ranked, mesh.n_cells)
        self.operator = DistributedOperator(self.rows, part.cell_counts)

    def __call__(self, x):
        """The design variables themselves: this filter changes the gradient only."""
        return x

    def filter_gradient(self, x: np.ndarray, gradient: np.ndarray) -> np.ndarray:
        """The filtered gradient of this rank's cells ``(n_local_cells,)`` from their ``x``
        and ``gradient`` (collective)."""
        smoothed = self.operator.apply(np.asarray(x) * np.asarray(gradient))
        return filtered_sensitivity(smoothed, self.Hs, x, self.gamma)


#: The distributed counterpart of each filter of :data:`fesens.opt.filters.FILTERS` that
#: has one, by its name (the identity, ``none``, needs none).
COUNTERPARTS: dict[str, type[Filter]] = {
    DensityFilter.name: DistributedDensityFilter,
    SensitivityFilter.name: DistributedSensitivityFilter,
    HelmholtzFilter.name: DistributedHelmholtzFilter}


def make_distributed_filter(kind: str, mesh: Mesh, part, radius: float | None = None
                            ) -> Filter:
    """The filter ``kind`` (a name of :data:`~fesens.opt.filters.FILTERS`) on one rank's
    part of ``mesh``: its counterpart of :data:`COUNTERPARTS`, or the identity for ``none``.

    Raises
    ------
    ValueError
        ``kind`` has no distributed counterpart.
    """
    if kind == NoFilter.name:
        return NoFilter()
    if kind not in COUNTERPARTS:
        raise ValueError(f"the {kind} filter has no distributed form; choose one of "
                         f"{', '.join([*COUNTERPARTS, NoFilter.name])}")
    return COUNTERPARTS[kind](mesh, part, radius)


def rank_ordered_ids(mesh: Mesh, part, reductions: Collective | None = None) -> np.ndarray:
    """``(n_cells,)``: the rank-ordered id of every global cell, from every rank's
    ``part.cells`` (gathered: collective).

    Raises
    ------
    MeshError
        If ``reductions`` has another number of ranks than ``part``, or the gathered cells
        are not each of ``mesh``'s cells once.
    """
    if reductions is None:
        reductions = SERIAL if part.size == 1 else collective()
    if reductions.size != part.size:
        raise MeshError(f"the mesh part is one of {part.size} but the launch has "
                        f"{reductions.size} ranks: partition the mesh for this launch")
    order = np.asarray(reductions.allgather(np.asarray(part.cells, dtype=np.int64)))
    if len(order) != mesh.n_cells or not np.array_equal(np.sort(order),
                                                        np.arange(mesh.n_cells)):
        raise MeshError(f"the ranks' mesh parts hold {len(order)} cells that are not each of "
                        f"the mesh's {mesh.n_cells} cells once: partition this mesh")
    ids = np.empty(mesh.n_cells, dtype=np.int64)
    ids[order] = np.arange(mesh.n_cells)
    return ids


def cone_rows(mesh: Mesh, part, radius: float, reductions: Collective | None = None
              ) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """The cone weights ``H`` of this rank's cells (rows) and their neighbours (columns).

    Returns
    -------
    H : scipy.sparse.csr_matrix
        ``(n_local_cells, n_neighbours)``, ``H_ei = r − |c_e − c_i|`` within the radius
        (:func:`~fesens.opt.filters.cone_values`, as the serial
        :func:`~fesens.opt.filters.cone_weights`).
    neighbours : numpy.ndarray
        ``(n_neighbours,)`` global ids of the columns' cells, increasing.
    ranked : numpy.ndarray
        ``(n_neighbours,)`` their rank-ordered ids.
    """
    ranked = rank_ordered_ids(mesh, part, reductions)  # checks the part first
    centroids = mesh.cell_centroids()
    cells = np.asarray(part.cells, dtype=np.int64)
    found = cKDTree(centroids).query_ball_point(centroids[cells], radius)
    counts = np.fromiter(map(len, found), dtype=np.int64, count=len(found))
    columns = np.concatenate(found).astype(np.int64)
    rows = np.repeat(np.arange(len(cells)), counts)
    weights = cone_values(centroids[cells[rows]], centroids[columns], radius)
    neighbours, local_columns = np.unique(columns, return_inverse=True)
    H = sp.csr_matrix((weights, (rows, local_columns)), shape=(len(cells), len(neighbours)))
    return H, neighbours, ranked[neighbours]


def cell_volumes(mesh: Mesh, cells: np.ndarray) -> np.ndarray:
    """``(len(cells),)`` volumes of the global cells ``cells`` (computed for those only)."""
    some = Mesh(mesh.points, mesh.cells[cells], mesh.cell_type)
    return np.broadcast_to(cell_geometry(some).volumes, (len(cells),))


def _to_global_columns(rows: sp.csr_matrix, ranked: np.ndarray, n_cells: int
                       ) -> sp.csr_matrix:
    """``rows`` ``(n, len(ranked))`` with column ``j`` moved to the rank-ordered id
    ``ranked[j]``, ``(n, n_cells)``."""
    matrix = sp.csr_matrix((rows.data, ranked[rows.indices], rows.indptr),
                           shape=(rows.shape[0], n_cells))
    matrix.sort_indices()
    return matrix

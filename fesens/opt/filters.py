"""Filters that regularise a density field, for unstructured meshes too.

* :class:`DensityFilter` (Bruns & Tortorelli 2001; Bourdin 2001):
  ``x̃_e = Σ_i H_ei v_i x_i / Σ_i H_ei v_i`` with the cone weights
  ``H_ei = max(0, r − |c_e − c_i|)`` between cell centroids and cell volumes ``v_i``
  (uniform meshes: the classic ``H x / Hs`` of top88). Linear with a constant matrix,
  so its VJP is ``x̄ = Wᵀ x̃̄``. When the centroids form a regular lattice
  (structured grids) it is a stencil correlation (:mod:`fesens.opt.grid_filter`) and no
  neighbour list is stored.
* :class:`SensitivityFilter` (Sigmund 1997), the classic heuristic: densities are used
  as they are, and the objective's gradient is replaced by
  ``∂̃c/∂x_e = Σ_i H_ei x_i ∂c/∂x_i / (max(γ, x_e) Σ_i H_ei)`` with ``γ = 10⁻³``.
* :class:`HelmholtzFilter` (Lazarov & Sigmund 2011): solve ``−r_h² ∇² x̃ + x̃ = x`` with
  ``r_h = r / (2√3)``; a solve with a constant, pre-factored matrix.
* :class:`NoFilter`.

Every filter is a :class:`Filter`: it maps design variables to filtered densities with
:meth:`~Filter.__call__` (traced) and may post-process the gradient with
:meth:`~Filter.filter_gradient` (only the sensitivity filter). The cone weights
(:func:`cone_values`), the volume-weighted normalisation (:func:`volume_weighted`) and the
sensitivity quotient (:func:`filtered_sensitivity`) are functions of their own, so the
filters split over MPI ranks (:mod:`fesens.opt.rank_filters`) compute the same numbers
with the same operations.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from fesens.ad.numpy_wrapper import matmul
from fesens.ad.sparse import PatternMatrix, SparsePattern, solve
from fesens.errors import TooLargeError
from fesens.fem.assembly.assembler import Assembler
from fesens.fem.elements import reference_element
from fesens.fem.integrals.geometry import cell_geometry
from fesens.fem.integrals.kernels import gradient_matrices, mass_matrices
from fesens.fem.model.structured_grid import structured_grid
from fesens.mesh.cell_types import cell_type
from fesens.mesh.mesh import Mesh
from fesens.mesh.structured import lattice_of
from fesens.opt.grid_filter import CentroidLattice, ConeStencil, apply_cone_stencil
from fesens.solvers import solver_class
from fesens.solvers.base import LinearSolver
from fesens.solvers.memory import available_bytes
from fesens.solvers.policy import filter_choice, is_auto

#: Peak bytes per weight of the cone filter's matrix form while it is built (the pairs,
#: their distances, the COO and CSR copies: 48 measured with tracemalloc), rounded up.
CONE_WEIGHT_BYTES = 64
#: Most multiply-adds one stencil correlation may cost: :func:`scipy.ndimage.correlate`
#: does a few 10⁷ a second, so this is already minutes per filter application.
STENCIL_WORK_LIMIT = 1e10
#: Largest condition number ``(r_h / h)²`` of the Helmholtz filter's matrix: a direct
#: solve's residual grows as the condition number times the machine epsilon.
HELMHOLTZ_CONDITION_LIMIT = 1e9
#: Centroids whose neighbours are counted to estimate the number of cone weights.
_SAMPLED_CENTROIDS = 1000


def cone_weights(centroids: np.ndarray, radius: float) -> sp.csr_matrix:
    """``H_ei = max(0, r − |c_e − c_i|)`` for all pairs closer than ``r``, ``(n, n)`` CSR.

    Raises
    ------
    TooLargeError
        When the weights would not fit in the available memory (:func:`check_cone_size`).
    """
    check_radius(radius)
    tree = cKDTree(centroids)
    check_cone_size(centroids, radius, None, tree)
    pairs = tree.query_pairs(radius, output_type="ndarray")
    weights = cone_values(centroids[pairs[:, 0]], centroids[pairs[:, 1]], radius)
    n = len(centroids)
    rows = np.concatenate([pairs[:, 0], pairs[:, 1], np.arange(n)])
    cols = np.concatenate([pairs[:, 1], pairs[:, 0], np.arange(n)])
    values = np.concatenate([weights, weights, np.full(n, radius)])
    return sp.csr_matrix((values, (rows, cols)), shape=(n, n))


def cone_values(centres: np.ndarray, neighbours: np.ndarray, radius: float) -> np.ndarray:
    """``r − |c_e − c_i|`` for each pair of a centroid ``centres[k]`` and a neighbour
    ``neighbours[k]`` within the radius, both ``(n_pairs, dim)``; ``(n_pairs,)``."""
    return radius - np.linalg.norm(centres - neighbours, axis=1)


def volume_weighted(H: sp.spmatrix, volumes: np.ndarray) -> sp.csr_matrix:
    """The density filter's rows ``W_ei = H_ei v_i / Σ_j H_ej v_j`` from the cone weights
    ``H`` ``(n_rows, n_columns)`` and the volumes ``v`` of the columns' cells
    ``(n_columns,)``."""
    Hv = H @ sp.diags(volumes)
    return sp.csr_matrix(sp.diags(1.0 / np.asarray(Hv.sum(axis=1)).ravel()) @ Hv)


def filtered_sensitivity(smoothed: np.ndarray, Hs: np.ndarray, x: np.ndarray,
                         gamma: float) -> np.ndarray:
    """Sigmund's filtered gradient ``Σ_i H_ei x_i ∂c/∂x_i / (max(γ, x_e) Σ_i H_ei)`` from
    ``smoothed`` ``= H (x ∂c/∂x)``, the row sums ``Hs`` ``= Σ_i H_ei`` and ``x``, all
    ``(n_cells,)``."""
    return smoothed / Hs / np.maximum(gamma, x)


def check_cone_size(centroids: np.ndarray, radius: float, lattice: CentroidLattice | None,
                    tree: cKDTree | None = None) -> None:
    """Refuse a cone filter of ``radius`` that would not fit: its matrix form (``lattice``
    None) estimated from the neighbours of sampled ``centroids`` ``(n_cells, dim)``, more
    than the available memory; its stencil form on ``lattice``, a correlation of more
    than :data:`STENCIL_WORK_LIMIT` multiply-adds.

    Raises
    ------
    TooLargeError
        Naming the radius, the estimate and a radius of 1.5 to 3 cell sizes.
    """
    n_cells = len(centroids)
    if lattice is not None:
        stencil = lattice.stencil_shape(radius)
        work = float(np.prod(lattice.shape, dtype=float) * np.prod(stencil, dtype=float))
        if work > STENCIL_WORK_LIMIT:
            raise TooLargeError(
                f"a cone filter of radius {radius:g} on the {'×'.join(map(str, lattice.shape))}"
                f" grid of cells is a {'×'.join(map(str, stencil))} stencil: {work:.3g} "
                f"multiply-adds per application, more than {STENCIL_WORK_LIMIT:.0e}; "
                f"{_suggested_radius(centroids)}")
        return
    tree = cKDTree(centroids) if tree is None else tree
    sample = centroids[np.linspace(0, n_cells - 1, min(n_cells, _SAMPLED_CENTROIDS)).astype(int)]
    weights = tree.count_neighbors(cKDTree(sample), radius) * (n_cells / len(sample))
    needed, available = weights * CONE_WEIGHT_BYTES, available_bytes()
    if available is not None and needed > available:
        raise TooLargeError(
            f"a cone filter of radius {radius:g} on {n_cells:,} cells has about {weights:.3g} "
            f"weights: {needed / 1e9:.3g} GB, more than the {available / 1e9:.3g} GB of memory"
            f" available; {_suggested_radius(centroids)}")


def _suggested_radius(centroids: np.ndarray) -> str:
    """``use a radius of 1.5 to 3 cell sizes (about a to b here)``, the cell size from the
    centroids' bounding box and count."""
    extent = np.ptp(centroids, axis=0)
    extent = extent[extent > 0]
    size = (float(np.prod(extent)) / len(centroids)) ** (1.0 / max(len(extent), 1))
    return f"use a radius of 1.5 to 3 cell sizes (about {1.5 * size:.3g} to {3 * size:.3g} here)"


def check_radius(radius: float) -> None:
    """Refuse a radius that is not a finite number > 0 (ValueError)."""
    if not (radius > 0 and np.isfinite(radius)):
        raise ValueError(f"filter radius must be > 0 and finite, got {radius!r}")


def fits_mesh(cls: type[Filter], mesh: Mesh) -> bool:
    """Whether the filter class ``cls`` can work on ``mesh``: a filter that
    :attr:`~Filter.needs_solid_cells` needs cells of the mesh's dimension (not bars)."""
    return not cls.needs_solid_cells or cell_type(mesh.cell_type).dim == mesh.dim


def _check_fits(cls: type[Filter], mesh: Mesh) -> None:
    """Refuse a mesh the filter cannot work on (ValueError naming the filters that can)."""
    if not fits_mesh(cls, mesh):
        fitting = [name for name, other in FILTERS.items() if fits_mesh(other, mesh)]
        raise ValueError(f"the {cls.name} filter needs cells that fill the domain; this "
                         f"mesh has {mesh.cell_type} cells (bars) in {mesh.dim}D space: use "
                         f"{' or '.join(map(repr, fitting))} instead")


class Filter(ABC):
    """What every filter is: a map from design variables to filtered densities, and an
    optional post-processing of the gradient (identity here)."""

    #: The filter's name in :data:`FILTERS` (the config's ``[filter] type``).
    name: str
    #: The map from design variables to filtered densities is linear (all filters here).
    linear = True
    #: The constructor takes ``(mesh, radius)``; False: no arguments.
    takes_radius = False
    #: The filter needs cells that fill the domain (cell dimension = space dimension): it
    #: weighs by cell volumes or solves a PDE on the domain, neither of which bars in 2D or
    #: 3D space have (:func:`fits_mesh`).
    needs_solid_cells = False

    @abstractmethod
    def __call__(self, x):
        """The filtered densities ``(n_cells,)`` of the design ``x`` ``(n_cells,)`` (traced)."""

    def filter_gradient(self, x: np.ndarray, gradient: np.ndarray) -> np.ndarray:
        """The gradient the optimizer uses, from ``x`` and the objective's ``gradient``
        ``(n_cells,)``: the gradient itself, unless the filter replaces it."""
        return gradient

    def solver_system(self) -> tuple[LinearSolver, int] | None:
        """The solver instance of the linear system the filter solves and that system's
        number of unknowns (an optimization's checkpoint keeps the solver's state); None:
        the filter solves no system (all but the Helmholtz filter)."""
        return None


class NoFilter(Filter):
    """Identity: the design variables are the densities."""

    name = "none"

    def __call__(self, x):
        return x


class DensityFilter(Filter):
    """Volume-weighted cone filter ``x̃ = W x`` (see the module docstring).

    Parameters
    ----------
    mesh : Mesh
    radius : float
        Filter radius in mesh units (top88's ``rmin`` on a unit grid).
    """

    name = "density"
    takes_radius = True
    needs_solid_cells = True

    def __init__(self, mesh: Mesh, radius: float):
        check_radius(radius)
        _check_fits(type(self), mesh)
        self.radius = float(radius)
        self._centroids = mesh.cell_centroids()
        self._volumes = np.broadcast_to(cell_geometry(mesh).volumes, (mesh.n_cells,))
        lattice = CentroidLattice.of(self._centroids)
        check_cone_size(self._centroids, self.radius, lattice)
        #: The stencil form on a lattice of centroids (structured grids), else None.
        self.stencil = (None if lattice is None
                        else ConeStencil(lattice, self.radius, self._volumes))

    @cached_property
    def matrix(self) -> sp.csr_matrix:
        """``W`` as a sparse matrix ``(n_cells, n_cells)`` (built on first use; on a
        structured grid the filter itself never builds it)."""
        return volume_weighted(cone_weights(self._centroids, self.radius), self._volumes)

    def __call__(self, x):
        if self.stencil is not None and np.ndim(x) == 1:
            return apply_cone_stencil(self.stencil, x)
        return matmul(self.matrix, x)


class SensitivityFilter(Filter):
    """Sigmund's sensitivity filter (see the module docstring); densities unfiltered."""

    name = "sensitivity"
    takes_radius = True

    def __init__(self, mesh: Mesh, radius: float, gamma: float = 1e-3):
        check_radius(radius)
        self.radius = float(radius)
        self.gamma = gamma
        self._centroids = mesh.cell_centroids()
        lattice = CentroidLattice.of(self._centroids)
        check_cone_size(self._centroids, self.radius, lattice)
        #: ``H`` as a stencil on a lattice of centroids (structured grids), else None.
        self.stencil = (None if lattice is None
                        else ConeStencil(lattice, self.radius, np.ones(mesh.n_cells)))
        self.Hs = (self.stencil.normaliser if self.stencil is not None
                   else np.asarray(self.H.sum(axis=1)).ravel())

    def __call__(self, x):
        """The design variables themselves: this filter changes the gradient only."""
        return x

    @cached_property
    def H(self) -> sp.csr_matrix:
        """The cone weights as a sparse matrix (built on first use; on a structured grid
        the filter itself never builds it)."""
        return cone_weights(self._centroids, self.radius)

    def filter_gradient(self, x: np.ndarray, gradient: np.ndarray) -> np.ndarray:
        """The filtered gradient ``(n_cells,)`` from ``x`` and ``gradient`` of every cell
        ``(n_cells,)`` (a design problem with passive cells gives their ``x`` and a zero
        gradient: :meth:`~fesens.opt.DesignProblem.evaluate`)."""
        weighted = x * gradient
        smoothed = (self.stencil.correlate(weighted) if self.stencil is not None
                    else self.H @ weighted)
        return filtered_sensitivity(smoothed, self.Hs, x, self.gamma)


class HelmholtzFilter(Filter):
    """PDE filter ``(r_h² K + M) x̃_nodes = Tᵀ x``, cell values averaged back from nodes.

    ``K``, ``M``: conduction and mass matrices of the mesh (linear in the nodes), ``T``:
    the cell-to-node load operator ``T_ea = ∫_Ωe N_a``; the output is the cell mean
    ``x̃_e = (T x̃_nodes)_e / |Ω_e|``. The matrix is constant and factorized once; the VJP
    is a solve with the same factor.

    ``solver`` (a name, with options, or an instance) may be ``"gmg"`` on a structured mesh
    (the unknowns are the mesh's points, so the lattice is the mesh's); ``"auto"`` picks it
    for a structured 3D mesh of more points than
    :data:`~fesens.solvers.policy.DIRECT_MAX_3D_UNKNOWNS`, like a model's ``auto``.
    """

    name = "helmholtz"
    takes_radius = True
    needs_solid_cells = True

    def __init__(self, mesh: Mesh, radius: float, solver="auto"):
        check_radius(radius)
        _check_fits(type(self), mesh)
        self.radius = float(radius)
        self.solver = _helmholtz_solver(mesh, solver)
        r_h = self.radius / (2.0 * np.sqrt(3.0))
        element = reference_element(mesh.cell_type)
        stiffness_geometry = cell_geometry(mesh)
        _check_helmholtz_radius(self.radius, mesh, stiffness_geometry.volumes)
        mass_geometry = cell_geometry(mesh, order=element.mass_order)
        assembler = Assembler(mesh.cells, mesh.n_points, np.array([], dtype=np.int64),
                              [gradient_matrices(stiffness_geometry),
                               mass_matrices(mass_geometry)])
        ones = np.ones(mesh.n_cells)
        matrix = assembler.stiffness([r_h**2 * ones, ones])
        self._matrix = PatternMatrix(
            SparsePattern(matrix.indptr, matrix.indices, matrix.shape), matrix.data)
        # T (n_cells x n_points): ∫ N_a over each cell, scattered to its nodes.
        weights = np.broadcast_to(np.einsum("eq,qa->ea", mass_geometry.dx, mass_geometry.N),
                                  mesh.cells.shape)
        self._to_nodes = sp.csr_matrix(
            (weights.ravel(), (np.repeat(np.arange(mesh.n_cells), mesh.cells.shape[1]),
                               mesh.cells.ravel())), shape=(mesh.n_cells, mesh.n_points))
        self._volumes = np.asarray(self._to_nodes.sum(axis=1)).ravel()
        name = self.solver if isinstance(self.solver, str) else None
        if isinstance(self.solver, tuple):
            name = self.solver[0]
        if name is not None and solver_class(name).needs_grid:
            # the pattern keeps this instance: every solve of the filter (and its VJP) uses
            # it; an unstructured mesh is refused here (MeshError suggesting AMG)
            grid = structured_grid(mesh, 1, np.arange(mesh.n_points))
            self._matrix.pattern.solver(self.solver,
                                        configure=lambda backend: setattr(backend, "grid", grid))

    def solver_system(self) -> tuple[LinearSolver, int]:
        """The instance that solves ``(r_h² K + M) x̃_nodes = Tᵀ x`` (the one
        :meth:`__call__` uses, kept by the matrix's pattern) and the number of mesh points."""
        return self._matrix.pattern.solver(self.solver), self._matrix.shape[0]

    def __call__(self, x):
        nodal = solve(self._matrix, matmul(self._to_nodes.T.tocsr(), x), solver=self.solver)
        return matmul(self._to_nodes, nodal) / self._volumes


def _check_helmholtz_radius(radius: float, mesh: Mesh, volumes: np.ndarray) -> None:
    """Refuse a radius whose ``r_h² K + M`` cannot be solved accurately: its condition
    number grows as ``(r_h / h)²`` for the smallest cell size ``h``, and beyond
    :data:`HELMHOLTZ_CONDITION_LIMIT` a direct solve loses the residual it is checked to.

    Raises
    ------
    TooLargeError
        Naming the radius, the condition estimate and a radius of 1.5 to 3 cell sizes.
    """
    smallest = float(np.min(volumes)) ** (1.0 / mesh.dim)
    ratio = radius / (2.0 * math.sqrt(3.0)) / smallest
    if ratio > math.sqrt(HELMHOLTZ_CONDITION_LIMIT):
        raise TooLargeError(
            f"a Helmholtz filter of radius {radius:g} has r_h / h = {ratio:.3g} (r_h = r / 2√3,"
            f" h = {smallest:.3g} the smallest cell size): its matrix's condition number, "
            f"about (r_h / h)², exceeds {HELMHOLTZ_CONDITION_LIMIT:.0e} and it cannot be "
            "solved accurately (a radius beyond the domain averages the whole design); "
            f"{_suggested_radius(mesh.cell_centroids())}")


def _helmholtz_solver(mesh: Mesh, solver):
    """``solver``, with ``auto`` resolved to ``gmg`` on a large structured 3D mesh
    (:func:`fesens.solvers.policy.filter_choice`)."""
    if is_auto(solver):
        return filter_choice(mesh.n_points, mesh.dim, lambda: lattice_of(mesh) is not None) \
            or solver
    return solver


#: Filters by name (:func:`make_filter`, the config's ``[filter] type``).
FILTERS: dict[str, type[Filter]] = {
    cls.name: cls for cls in (DensityFilter, SensitivityFilter, HelmholtzFilter, NoFilter)}


def make_filter(kind: str, mesh: Mesh, radius: float | None = None) -> Filter:
    """A filter by name (a key of :data:`FILTERS`).

    Raises
    ------
    ValueError
        If ``kind`` is unknown (the message lists :data:`FILTERS`), or the filter takes a
        radius and none is given.
    """
    if kind not in FILTERS:
        raise ValueError(f"unknown filter {kind!r}; choose one of {', '.join(FILTERS)}")
    cls = FILTERS[kind]
    if not cls.takes_radius:
        return cls()
    if radius is None:
        raise ValueError(f"the {kind} filter needs a radius")
    return cls(mesh, radius)

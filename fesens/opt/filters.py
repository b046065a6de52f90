"""Filters that regularise a density field, for unstructured meshes too.

* :class:`DensityFilter` (Bruns & Tortorelli 2001; Bourdin 2001):
  ``x̃_e = Σ_i H_ei v_i x_i / Σ_i H_ei v_i`` with the cone weights
  ``H_ei = max(0, r − |c_e − c_i|)`` between cell centroids and cell volumes ``v_i``
  (uniform meshes: the classic ``H x / Hs`` of top88). Linear with a constant matrix,
  so its VJP is ``x̄ = Wᵀ x̃̄`` (DESIGN.md). When the centroids form a regular lattice
  (structured grids) it is a stencil correlation (:mod:`fesens.opt.grid_filter`) and no
  neighbour list is stored.
* :class:`SensitivityFilter` (Sigmund 1997), the classic heuristic: densities are used
  as they are, and the objective's gradient is replaced by
  ``∂̃c/∂x_e = Σ_i H_ei x_i ∂c/∂x_i / (max(γ, x_e) Σ_i H_ei)`` with ``γ = 10⁻³``.
* :class:`HelmholtzFilter` (Lazarov & Sigmund 2011): solve ``−r_h² ∇² x̃ + x̃ = x`` with
  ``r_h = r / (2√3)``; a solve with a constant, pre-factored matrix.
* :class:`NoFilter`.

A filter maps design variables to filtered densities with :meth:`__call__` (traced) and
may post-process the gradient with :meth:`filter_gradient` (only the sensitivity filter).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from fesens.ad.numpy_wrapper import matmul
from fesens.ad.sparse import PatternMatrix, SparsePattern, solve
from fesens.fem.assembler import Assembler
from fesens.fem.elements import reference_element
from fesens.fem.geometry import cell_geometry
from fesens.fem.kernels import gradient_matrices, mass_matrices
from fesens.fem.model_solvers import AUTO_DIRECT_MAX_3D_UNKNOWNS
from fesens.fem.structured_grid import structured_grid
from fesens.mesh.mesh import Mesh
from fesens.mesh.structured import lattice_of
from fesens.opt.grid_filter import CentroidLattice, ConeStencil, apply_cone_stencil
from fesens.solvers import solver_class


def cone_weights(centroids: np.ndarray, radius: float) -> sp.csr_matrix:
    """``H_ei = max(0, r − |c_e − c_i|)`` for all pairs closer than ``r``, ``(n, n)`` CSR."""
    if not radius > 0:
        raise ValueError(f"filter radius must be > 0, got {radius!r}")
    tree = cKDTree(centroids)
    pairs = tree.query_pairs(radius, output_type="ndarray")
    distance = np.linalg.norm(centroids[pairs[:, 0]] - centroids[pairs[:, 1]], axis=1)
    n = len(centroids)
    rows = np.concatenate([pairs[:, 0], pairs[:, 1], np.arange(n)])
    cols = np.concatenate([pairs[:, 1], pairs[:, 0], np.arange(n)])
    values = np.concatenate([radius - distance, radius - distance, np.full(n, radius)])
    return sp.csr_matrix((values, (rows, cols)), shape=(n, n))


class NoFilter:
    """Identity: the design variables are the densities."""

    name = "none"
    #: The map from design variables to filtered densities is linear (all filters here).
    linear = True
    #: The constructor takes ``(mesh, radius)``; False: no arguments.
    takes_radius = False

    def __call__(self, x):
        return x

    def filter_gradient(self, x: np.ndarray, gradient: np.ndarray) -> np.ndarray:
        return gradient


class DensityFilter(NoFilter):
    """Volume-weighted cone filter ``x̃ = W x`` (see the module docstring).

    Parameters
    ----------
    mesh : Mesh
    radius : float
        Filter radius in mesh units (top88's ``rmin`` on a unit grid).
    """

    name = "density"
    takes_radius = True

    def __init__(self, mesh: Mesh, radius: float):
        self.radius = float(radius)
        if not self.radius > 0:
            raise ValueError(f"filter radius must be > 0, got {radius!r}")
        self._centroids = mesh.cell_centroids()
        self._volumes = np.broadcast_to(cell_geometry(mesh).volumes, (mesh.n_cells,))
        lattice = CentroidLattice.of(self._centroids)
        #: The stencil form on a lattice of centroids (structured grids), else None.
        self.stencil = (None if lattice is None
                        else ConeStencil(lattice, self.radius, self._volumes))

    @cached_property
    def matrix(self) -> sp.csr_matrix:
        """``W`` as a sparse matrix ``(n_cells, n_cells)`` (built on first use; on a
        structured grid the filter itself never builds it)."""
        H = cone_weights(self._centroids, self.radius)
        Hv = H @ sp.diags(self._volumes)
        return sp.csr_matrix(sp.diags(1.0 / np.asarray(Hv.sum(axis=1)).ravel()) @ Hv)

    def __call__(self, x):
        if self.stencil is not None and np.ndim(x) == 1:
            return apply_cone_stencil(self.stencil, x)
        return matmul(self.matrix, x)


class SensitivityFilter(NoFilter):
    """Sigmund's sensitivity filter (see the module docstring); densities unfiltered."""

    name = "sensitivity"
    takes_radius = True

    def __init__(self, mesh: Mesh, radius: float, gamma: float = 1e-3):
        self.radius = float(radius)
        if not self.radius > 0:
            raise ValueError(f"filter radius must be > 0, got {radius!r}")
        self.gamma = gamma
        self._centroids = mesh.cell_centroids()
        lattice = CentroidLattice.of(self._centroids)
        #: ``H`` as a stencil on a lattice of centroids (structured grids), else None.
        self.stencil = (None if lattice is None
                        else ConeStencil(lattice, self.radius, np.ones(mesh.n_cells)))
        self.Hs = (self.stencil.normaliser if self.stencil is not None
                   else np.asarray(self.H.sum(axis=1)).ravel())

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
        return smoothed / self.Hs / np.maximum(self.gamma, x)


class HelmholtzFilter(NoFilter):
    """PDE filter ``(r_h² K + M) x̃_nodes = Tᵀ x``, cell values averaged back from nodes.

    ``K``, ``M``: conduction and mass matrices of the mesh (linear in the nodes), ``T``:
    the cell-to-node load operator ``T_ea = ∫_Ωe N_a``; the output is the cell mean
    ``x̃_e = (T x̃_nodes)_e / |Ω_e|``. The matrix is constant and factorized once; the VJP
    is a solve with the same factor.

    ``solver`` (a name, with options, or an instance) may be ``"gmg"`` on a structured mesh
    (the unknowns are the mesh's points, so the lattice is the mesh's); ``"auto"`` picks it
    for a structured 3D mesh of more points than
    :data:`~fesens.fem.model_solvers.AUTO_DIRECT_MAX_3D_UNKNOWNS`, like a model's ``auto``.
    """

    name = "helmholtz"
    takes_radius = True

    def __init__(self, mesh: Mesh, radius: float, solver="auto"):
        if not radius > 0:
            raise ValueError(f"filter radius must be > 0, got {radius!r}")
        self.radius = float(radius)
        self.solver = _helmholtz_solver(mesh, solver)
        r_h = self.radius / (2.0 * np.sqrt(3.0))
        element = reference_element(mesh.cell_type)
        stiffness_geometry = cell_geometry(mesh)
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
        if name is not None and getattr(solver_class(name), "needs_grid", False):
            # the pattern keeps this instance: every solve of the filter (and its VJP) uses
            # it; an unstructured mesh is refused here (MeshError suggesting AMG)
            grid = structured_grid(mesh, 1, np.arange(mesh.n_points))
            self._matrix.pattern.solver(self.solver,
                                        configure=lambda backend: setattr(backend, "grid", grid))

    def __call__(self, x):
        nodal = solve(self._matrix, matmul(self._to_nodes.T.tocsr(), x), solver=self.solver)
        return matmul(self._to_nodes, nodal) / self._volumes


def _helmholtz_solver(mesh: Mesh, solver):
    """``solver``, with ``auto`` resolved to ``gmg`` on a large structured 3D mesh."""
    if (isinstance(solver, str) and solver == "auto" and mesh.dim == 3
            and mesh.n_points > AUTO_DIRECT_MAX_3D_UNKNOWNS and lattice_of(mesh) is not None
            and solver_class("gmg").available()):
        return "gmg"
    return solver


#: Filters by name (:func:`make_filter`, the config's ``[filter] type``).
FILTERS: dict[str, type[NoFilter]] = {
    cls.name: cls for cls in (DensityFilter, SensitivityFilter, HelmholtzFilter, NoFilter)}


def make_filter(kind: str, mesh: Mesh, radius: float | None = None) -> NoFilter:
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

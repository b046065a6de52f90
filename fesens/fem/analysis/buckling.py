"""Linear buckling of a model: the geometric stiffness of a prestress and the load factors of
``(K + μ K_σ) φ = 0``, traced like the static solve.

The geometric (stress) stiffness of a prestress ``σ`` couples equal components (Bathe,
*Finite Element Procedures*, 1996, §6.3; Cook et al., *Concepts and Applications of FEA*,
2002, §18.3)::

    K_σ,e = t Σ_kl σ_(e,kl) ∫ ∂_k N_a ∂_l N_b dΩ ⊗ I_(n_c)

with one stress tensor per cell, ``σ_e`` ``(dim, dim)``: the cell-mean stress, as Ferrari,
Sigmund & Guest ("Topology optimization with linearized buckling criteria in 250 lines of
Matlab", Struct. Multidisc. Optim. 63, 2021) take the element-centre stress of their Q4
cells. It is exact for a constant stress in each cell (an axially loaded column) and
converges with the mesh otherwise. So ``K_σ`` is linear in the ``dim(dim+1)/2`` stress
components, each a per-cell coefficient of a constant component matrix: it is assembled
(and differentiated, per cell) by the stiffness's primitives on the free–free pattern
(:class:`PrestressForm`; the quadrature is the stiffness's).

:class:`BucklingAnalysis` (the shape of :mod:`fesens.fem.analysis.base`) runs the traced
program::

    u = model.solve(θ)                       static solve under the reference load
    σ = prestress(u, θ)                      per-cell stress (the physics'; traced in u)
    G = assemble(−t σ)                       G = −K_σ (positive along compressive modes)
    μ, Φ = load_factors(K_ff, G, k)          K φ = μ G φ, with the static factorization

and :func:`fesens.ad.grad` of a function of ``μ`` gives ``θ̄`` through both paths: the
explicit ``dK/dθ − μ dG/dθ`` and, because ``σ`` is traced in ``u``, the adjoint of the
static solve for ``dK_σ/du`` (:mod:`fesens.ad.buckling_factors`).

:func:`buckling`, the function this analysis was, stays for one release and warns.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fesens.ad.buckling_factors import load_factors
from fesens.ad.numpy_wrapper import getval
from fesens.errors import NoBucklingError
from fesens.fem.analysis.base import Analysis
from fesens.fem.analysis.modal import clusters_of
from fesens.fem.assembly.assembler import Assembler
from fesens.fem.assembly.primitives import BlockOperator, assemble, assemble_at_points
from fesens.fem.integrals.mass import expand_components


def tensor_components(dim: int) -> tuple:
    """The independent ``(k, l)`` of a symmetric ``dim x dim`` tensor: diagonal first."""
    diagonal = tuple((i, i) for i in range(dim))
    return diagonal + tuple((i, j) for i in range(dim) for j in range(i + 1, dim))


def prestress_matrices(geometry, n_components: int) -> list:
    """``∫ (∂_k N_a ∂_l N_b + ∂_l N_a ∂_k N_b) dΩ ⊗ I`` (once for ``k = l``) per
    :func:`tensor_components`, each ``(n_geom, nd, nd)`` (traced with the geometry)."""
    G, dx = geometry.dNdx, geometry.dx  # (n_geom, n_qp, n_nodes, dim), (n_geom, n_qp)
    matrices = []
    for k, l in tensor_components(np.shape(G)[-1]):
        scalar = np.einsum("eq,eqa,eqb->eab", dx, G[..., k], G[..., l])
        if k != l:
            scalar = scalar + np.transpose(scalar, (0, 2, 1))
        matrices.append(expand_components(scalar, n_components))
    return matrices


class PrestressForm:
    """The geometric stiffness of a model, shaped like a model for the assembly primitives
    (as :class:`~fesens.fem.integrals.mass.MassForm`)."""

    def __init__(self, model):
        self.model = model
        self.mesh = model.mesh
        self._reference: list | None = None

    def has_integrand(self) -> bool:
        """False: shape gradients trace :meth:`cell_bilinear`."""
        return False

    def cell_matrices(self, points=None) -> list:
        """The component matrices of :func:`prestress_matrices` for ``points`` (default:
        the mesh's, computed once)."""
        if points is None and self._reference is not None:
            return self._reference
        matrices = prestress_matrices(self.model.geometry(points), self.model.n_components)
        if points is None:
            self._reference = [np.asarray(m) for m in matrices]
            return self._reference
        return matrices

    def cell_bilinear(self, points, a_cells, b_cells) -> list:
        """``a_eᵀ H_e b_e`` per component matrix and cell, each ``(n_cells,)``."""
        spec = "eic,eij,ejc->e" if np.ndim(a_cells) == 3 else "ei,eij,ej->e"
        return [np.einsum(spec, a_cells, H, b_cells) for H in self.cell_matrices(points)]

    def coefficients(self, stress) -> list:
        """``−t σ_kl`` per component, each ``(n_cells,)``, for a stress ``(n_cells, dim,
        dim)``: the coefficients of ``G = −K_σ``."""
        factor = -self.model._thickness()
        return [factor * stress[:, k, l] for k, l in tensor_components(self.mesh.dim)]


def prestress_operator(model) -> tuple[BlockOperator, PrestressForm]:
    """The free–free operator of the geometric stiffness and its form, kept on the model
    until the set of Dirichlet dofs changes."""
    dofs = model.constrained_dofs
    entry = model.__dict__.get("_prestress_operator")
    if entry is None or not np.array_equal(entry[0], dofs):
        form = PrestressForm(model)
        assembler = Assembler(model.dofmap.cell_dofs, model.dofmap.n_dofs, dofs,
                              form.cell_matrices())
        entry = model.__dict__["_prestress_operator"] = (dofs, BlockOperator(assembler, "ff"),
                                                         form)
    return entry[1], entry[2]


def negative_geometric_stiffness(model, stress, points=None):
    """``G = −K_σ`` on the free dofs as a :class:`~fesens.ad.sparse.PatternMatrix`, for a
    per-cell stress ``(n_cells, dim, dim)`` (traced in ``stress`` and ``points``)."""
    expected = (model.mesh.n_cells, model.mesh.dim, model.mesh.dim)
    if np.shape(getval(stress)) != expected:
        raise ValueError(f"the prestress must have shape {expected} (one stress tensor per "
                         f"cell), got {np.shape(getval(stress))}")
    operator, form = prestress_operator(model)
    coefficients = form.coefficients(stress)
    if points is None:
        return assemble(operator, *coefficients)
    return assemble_at_points(operator, form, None, points, *coefficients)


def _principal_range(stress: np.ndarray) -> tuple[float, float]:
    """The lowest principal stress of all cells and the largest stress magnitude; raises
    :class:`NoBucklingError` when no cell is in compression (then ``K_σ`` is positive
    semi-definite and no load factor is positive)."""
    smallest = float(np.linalg.eigvalsh(np.asarray(stress, dtype=float))[:, 0].min())
    largest = float(np.abs(stress).max(initial=0.0))
    if largest == 0.0 or smallest >= -1e-12 * largest:
        raise NoBucklingError(
            f"no compressive prestress: the smallest principal stress of every cell is >= 0 "
            f"(lowest {smallest:.4g}, largest stress magnitude {largest:.4g}), so no "
            "positive load factor exists (a structure in pure tension does not buckle); "
            "reverse or change the load")
    return smallest, largest


@dataclass(frozen=True)
class Buckling:
    """The lowest load factors of ``(K + μ K_σ) φ = 0`` and their modes.

    Attributes
    ----------
    load_factors : array
        ``μ``, ``(k,)`` ascending and positive: the load that buckles is ``μ`` times the
        static solve's; traced when an input of :meth:`BucklingAnalysis.run` is.
    vectors : numpy.ndarray
        Buckling modes on all dofs, ``(n_dofs, k)``, ``φᵀ (−K_σ) φ = 1`` (zero at Dirichlet
        dofs; constants).
    clusters : tuple of tuple of int
        Indices of repeated load factors (as :attr:`fesens.fem.analysis.modal.Modes.clusters`).
    solution : Solution
        The static solution under the reference load (traced like ``load_factors``).

    The eigenvalue objectives (:func:`fesens.objectives.eigenvalue`, ``eigenvalue_sum``,
    ``eigenvalue_ks``) accept it: :attr:`values` are the load factors.
    """

    load_factors: object
    vectors: np.ndarray
    clusters: tuple
    solution: object

    @property
    def values(self):
        """The load factors (the name the eigenvalue objectives read)."""
        return self.load_factors

    def critical_load(self, reference: float):
        """``μ₁ · reference``: the buckling load of a reference load's magnitude."""
        return self.load_factors[0] * reference

    def detached(self) -> Buckling:
        """The same result with plain values in place of traced ones."""
        return Buckling(getval(self.load_factors), self.vectors, self.clusters,
                        self.solution.detached())


class BucklingAnalysis(Analysis):
    """The ``k`` lowest buckling load factors of a model under its loads.

    Parameters
    ----------
    model : LinearModel
        With Dirichlet conditions and the reference load (volume cells).
    k : int
        Number of load factors, ``1 <= k <=`` the number of free dofs.
    prestress : callable
        ``solution ↦ σ``, the per-cell stress ``(n_cells, dim, dim)`` of the static
        solution, in the traced numpy subset (the physics'; see
        :class:`fesens.physics.geometric_stiffness.ElasticBuckling`).
    solver, solver_options
        A direct backend (see :meth:`LinearModel.solver`): its factorization of ``K``
        serves the static solve, its adjoint and the eigen solve.

    Raises
    ------
    ValueError
        A model of bars.
    """

    def __init__(self, model, k: int, prestress: Callable, *, solver=None,
                 solver_options: dict | None = None):
        if model.bars:
            raise ValueError(f"buckling needs volume cells; {type(model).__name__} has bars")
        super().__init__(model)
        self.k = k
        self.prestress = prestress
        self.solver = solver
        self.solver_options = solver_options

    def run(self, *, loads: dict | None = None, points=None, **parameters) -> Buckling:
        """The load factors for these inputs (traced when one is).

        Parameters
        ----------
        loads : dict, optional
            Load magnitudes of the static solve (as :meth:`LinearModel.solve`).
        points : array_like, optional
            Node coordinates ``(n_points, dim)`` (shape sensitivities).
        **parameters
            The physics' stiffness parameters (``scale``, E, ...).

        Returns
        -------
        Buckling

        Raises
        ------
        ValueError
            A matrix-free or iterative backend.
        NoBucklingError
            No cell in compression (every principal stress >= 0), or fewer than ``k``
            positive load factors.
        ModeCountError, NonFiniteError
            See :func:`fesens.solvers.buckling_eigen.lowest_load_factors`.
        """
        return self._run(self.prestress, loads, points, parameters)

    def _run(self, prestress: Callable, loads, points, parameters) -> Buckling:
        model = self.model
        model.check_parameters(parameters)
        points = model.checked_points(points)
        backend = model.solver(self.solver, **(self.solver_options or {}))
        if backend.matrix_free or not backend.is_direct:
            raise ValueError(f"buckling needs a direct solver (its factorization of K serves "
                             f"the eigen solve), not {backend.name!r}: give solver='cholmod' "
                             "or 'superlu'")
        solution = model.solve(solver=backend, loads=loads, points=points, **parameters)
        stress = prestress(solution)
        smallest, largest = _principal_range(getval(stress))
        G = negative_geometric_stiffness(model, stress, points)
        K = model.stiffness("ff", points=points, **parameters)  # the solve's values: no new factor
        try:
            values, modes = load_factors(K, G, self.k, solver=backend)
        except NoBucklingError as exc:
            exc.args = (f"{exc} (prestress: lowest principal stress {smallest:.4g}, largest "
                        f"stress magnitude {largest:.4g})", *exc.args[1:])
            raise
        vectors = np.zeros((model.dofmap.n_dofs, modes.shape[1]))
        vectors[model.free_dofs] = modes
        return Buckling(values, vectors, clusters_of(getval(values)), solution)


def buckling(model, k: int, prestress: Callable, *, loads: dict | None = None,
             solver=None, solver_options: dict | None = None, points=None,
             **parameters) -> Buckling:
    """Deprecated: ``BucklingAnalysis(model, k, prestress, solver=...).run(loads=...,
    points=..., **parameters)`` (:class:`BucklingAnalysis`)."""
    warnings.warn("buckling(model, k, prestress, ...) is deprecated: use "
                  "fesens.fem.analysis.BucklingAnalysis(model, k, prestress, solver=).run("
                  "loads=, points=, **parameters)", DeprecationWarning, stacklevel=2)
    return BucklingAnalysis(model, k, prestress, solver=solver,
                            solver_options=solver_options).run(loads=loads, points=points,
                                                               **parameters)

"""Free vibration of a model: the mass matrix and the eigen solve, traced like the solve.

A mixin of :class:`~fesens.fem.model.linear.LinearModel`. :meth:`ModalAnalysis.modes` is the
traced program::

    K_ff = assemble(c_k(θ), X)               as in LinearModel.solve
    M_ff = assemble(ρ t, X)                  mass cell matrices (fesens.fem.integrals.mass)
    λ, Φ = eigenpairs(K_ff, M_ff, k)         shift-invert Lanczos or LOBPCG + AMG

and :func:`fesens.ad.grad` of a function of ``λ`` gives, per cell,
``θ̄_e = Σ_i λ̄_i φ_(i,e)ᵀ (∂K_e/∂θ_e − λ_i ∂M_e/∂θ_e) φ_(i,e)`` through the assembly
primitives (no matrix cotangent is formed): densities, E, ν, any per-cell parameter and the node
coordinates (``points=``).

For a repeated eigenvalue only symmetric functions of its cluster have a gradient (see
:mod:`fesens.ad.eigen`; :func:`fesens.objectives.eigen.eigenvalue_sum` and
:func:`~fesens.objectives.eigen.eigenvalue_ks`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fesens.ad.eigen import eigenpairs
from fesens.ad.numpy_wrapper import getval
from fesens.fem.assembly.assembler import Assembler
from fesens.fem.assembly.primitives import BlockOperator, assemble, assemble_at_points
from fesens.fem.integrals.mass import MassForm
from fesens.fem.model.parameters import Parameter

#: The density of :meth:`ModalAnalysis.modes` (for conduction: the heat capacity ``ρ c``).
DENSITY = Parameter("density", "the mass", lower=0.0, lower_open=False)
#: Eigenvalues closer than this (relative) form a cluster of repeated eigenvalues.
CLUSTER_RTOL = 1e-6


@dataclass(frozen=True)
class Modes:
    """The lowest eigenpairs of ``K φ = λ M φ`` of a model.

    Attributes
    ----------
    values : array
        Eigenvalues ``λ = ω²``, ``(k,)`` ascending; traced when an input of
        :meth:`ModalAnalysis.modes` is.
    vectors : numpy.ndarray
        Mass-normalized modes on all dofs, ``(n_dofs, k)`` (zero at Dirichlet dofs;
        constants, not differentiated).
    clusters : tuple of tuple of int
        Indices of the eigenvalues that are repeated (relative gap < :data:`CLUSTER_RTOL`);
        an individual one of these has no derivative, a symmetric function of the whole
        cluster has (:mod:`fesens.ad.eigen`).
    """

    values: object
    vectors: np.ndarray
    clusters: tuple

    @property
    def omega(self):
        """Angular frequencies ``ω = √λ``, ``(k,)`` (traced like :attr:`values`)."""
        return np.sqrt(self.values)

    @property
    def frequencies(self):
        """Frequencies ``f = ω / 2π``, ``(k,)`` (traced like :attr:`values`)."""
        return np.sqrt(self.values) / (2 * np.pi)

    def detached(self) -> Modes:
        """The same modes with the eigenvalues' values in place of traced ones."""
        return Modes(getval(self.values), self.vectors, self.clusters)


def clusters_of(values: np.ndarray, rtol: float = CLUSTER_RTOL) -> tuple:
    """Groups of indices of (nearly) equal values in an ascending array, singletons left out."""
    groups, current = [], [0]
    for i in range(1, len(values)):
        if values[i] - values[i - 1] <= rtol * max(abs(values[i]), 1e-300):
            current.append(i)
        else:
            groups.append(current)
            current = [i]
    groups.append(current)
    return tuple(tuple(group) for group in groups if len(group) > 1)


class ModalAnalysis:
    """Mass matrices and eigen solves of a :class:`~fesens.fem.model.linear.LinearModel`."""

    def mass_operator(self, lumped: bool = False) -> tuple[BlockOperator, MassForm]:
        """The free–free mass operator for the current Dirichlet dofs, and its form (kept
        until the set of Dirichlet dofs changes)."""
        dofs = self.constrained_dofs
        kept = self.__dict__.setdefault("_mass_operators", {})
        entry = kept.get(bool(lumped))
        if entry is None or not np.array_equal(entry[0], dofs):
            form = MassForm(self, lumped)
            assembler = Assembler(self.dofmap.cell_dofs, self.dofmap.n_dofs, dofs,
                                  form.cell_matrices())
            entry = kept[bool(lumped)] = (dofs, BlockOperator(assembler, "ff"), form)
        return entry[1], entry[2]

    def mass(self, density=1.0, *, lumped: bool = False, points=None):
        """The free–free mass matrix ``M_ff`` as a :class:`~fesens.ad.sparse.PatternMatrix`
        (traced in ``density`` ``()`` or ``(n_cells,)`` and ``points``)."""
        DENSITY.check(density, self.mesh.n_cells)
        operator, form = self.mass_operator(lumped)
        coefficient = form.coefficient(density)
        if points is None:
            return assemble(operator, coefficient)
        return assemble_at_points(operator, form, None, points, coefficient)

    def modes(self, k: int, *, density=1.0, lumped: bool = False, method: str = "auto",
              solver=None, solver_options: dict | None = None, points=None,
              **parameters) -> Modes:
        """The ``k`` lowest eigenpairs of ``K_ff φ = λ M_ff φ`` (traced when an input is).

        Parameters
        ----------
        k : int
            Number of modes, ``1 <= k <=`` the number of free dofs.
        density : float or array_like
            Mass density ``ρ``, ``()`` or per cell ``(n_cells,)``, ``>= 0`` (conduction: the
            heat capacity ``ρ c``); differentiable.
        lumped : bool
            HRZ-lumped mass instead of consistent (:mod:`fesens.fem.integrals.mass`).
        method : {"auto", "shift-invert", "lobpcg"}
            ``auto``: shift-invert Lanczos with the factorization of a direct backend,
            LOBPCG with AMG when the model's backend is iterative (large 3D problems).
        solver, solver_options
            The backend factorizing ``K + τ M`` (see :meth:`solver`).
        points : array_like, optional
            Node coordinates ``(n_points, dim)`` (shape sensitivities).
        **parameters
            The physics' stiffness parameters (E, nu, scale, ...).

        Returns
        -------
        Modes

        Raises
        ------
        ModeCountError, SingularMassError, ZeroModeError, NonFiniteError
            See :func:`fesens.solvers.eigen.smallest_eigenpairs`.
        """
        self.check_parameters(parameters)
        points = self.checked_points(points)
        K = self.stiffness("ff", points=points, **parameters)
        M = self.mass(density, lumped=lumped, points=points)
        backend = self.solver(solver, **(solver_options or {}))
        if backend.matrix_free:
            raise ValueError("modes needs an assembled stiffness: give solver='cholmod' "
                             "or method='lobpcg' with solver='cg'")
        if method == "auto":
            method = "shift-invert" if backend.is_direct else "lobpcg"
        near_nullspace = self.near_nullspace() if method == "lobpcg" else None
        values, modes = eigenpairs(K, M, k, method=method, solver=backend,
                                   near_nullspace=near_nullspace)
        vectors = np.zeros((self.dofmap.n_dofs, modes.shape[1]))
        vectors[self.free_dofs] = modes
        return Modes(values, vectors, clusters_of(getval(values)))

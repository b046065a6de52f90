"""Free vibration of a model: the eigen solve ``K φ = λ M φ``, traced like the solve.

:class:`ModalAnalysis` (the shape of :mod:`fesens.fem.analysis.base`) runs the traced
program::

    K_ff = assemble(c_k(θ), X)               as in LinearModel.solve
    M_ff = assemble(ρ t, X)                  LinearModel.mass (fesens.fem.model.mass)
    λ, Φ = eigenpairs(K_ff, M_ff, k)         shift-invert Lanczos or LOBPCG + AMG

and :func:`fesens.ad.grad` of a function of ``λ`` gives, per cell,
``θ̄_e = Σ_i λ̄_i φ_(i,e)ᵀ (∂K_e/∂θ_e − λ_i ∂M_e/∂θ_e) φ_(i,e)`` through the assembly
primitives (no matrix cotangent is formed): densities, E, ν, any per-cell parameter and the node
coordinates (``points=``).

For a repeated eigenvalue only symmetric functions of its cluster have a gradient (see
:mod:`fesens.ad.eigen`; :func:`fesens.objectives.eigen.eigenvalue_sum` and
:func:`~fesens.objectives.eigen.eigenvalue_ks`).

``model.modes(k, ...)``, the method this analysis was, stays for one release: this module
attaches it to :class:`~fesens.fem.model.linear.LinearModel` (the model does not import its
analyses) and it warns, naming :class:`ModalAnalysis`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from fesens.ad.eigen import eigenpairs
from fesens.ad.numpy_wrapper import getval
from fesens.fem.analysis.base import Analysis
from fesens.fem.model.linear import LinearModel

#: Eigenvalues closer than this (relative) form a cluster of repeated eigenvalues.
CLUSTER_RTOL = 1e-6


@dataclass(frozen=True)
class Modes:
    """The lowest eigenpairs of ``K φ = λ M φ`` of a model.

    Attributes
    ----------
    values : array
        Eigenvalues ``λ = ω²``, ``(k,)`` ascending; traced when an input of
        :meth:`ModalAnalysis.run` is.
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


class ModalAnalysis(Analysis):
    """The ``k`` lowest eigenpairs of ``K_ff φ = λ M_ff φ`` of a linear model.

    Parameters
    ----------
    model : LinearModel
        With its Dirichlet conditions (no loads needed).
    k : int
        Number of modes, ``1 <= k <=`` the number of free dofs.
    lumped : bool
        HRZ-lumped mass instead of consistent (:mod:`fesens.fem.integrals.mass`).
    method : {"auto", "shift-invert", "lobpcg"}
        ``auto``: shift-invert Lanczos with the factorization of a direct backend,
        LOBPCG with AMG when the model's backend is iterative (large 3D problems).
    solver, solver_options
        The backend factorizing ``K + τ M`` (see :meth:`LinearModel.solver`).

    Examples
    --------
    >>> from fesens.mesh import rectangle
    >>> from fesens.physics import Elasticity
    >>> model = Elasticity(rectangle(20, 2, 10.0, 1.0), E=1.0, nu=0.3, plane="stress")
    >>> _ = model.fix("left")
    >>> modes = ModalAnalysis(model, 3).run(density=2.0)
    >>> modes.values.shape
    (3,)
    """

    def __init__(self, model, k: int, *, lumped: bool = False, method: str = "auto",
                 solver=None, solver_options: dict | None = None):
        super().__init__(model)
        self.k = k
        self.lumped = lumped
        self.method = method
        self.solver = solver
        self.solver_options = solver_options

    def run(self, *, density=1.0, points=None, **parameters) -> Modes:
        """The eigenpairs for these inputs (traced when one is).

        Parameters
        ----------
        density : float or array_like
            Mass density ``ρ``, ``()`` or per cell ``(n_cells,)``, ``>= 0`` (conduction: the
            heat capacity ``ρ c``); differentiable.
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
        model = self.model
        model.check_parameters(parameters)
        points = model.checked_points(points)
        K = model.stiffness("ff", points=points, **parameters)
        M = model.mass(density, lumped=self.lumped, points=points)
        backend = model.solver(self.solver, **(self.solver_options or {}))
        method = self.method
        if backend.matrix_free:
            raise ValueError("a modal analysis needs an assembled stiffness: give "
                             "solver='cholmod' or method='lobpcg' with solver='cg'")
        if method == "auto":
            method = "shift-invert" if backend.is_direct else "lobpcg"
        near_nullspace = model.near_nullspace() if method == "lobpcg" else None
        values, modes = eigenpairs(K, M, self.k, method=method, solver=backend,
                                   near_nullspace=near_nullspace)
        vectors = np.zeros((model.dofmap.n_dofs, modes.shape[1]))
        vectors[model.free_dofs] = modes
        return Modes(values, vectors, clusters_of(getval(values)))


def _deprecated_modes(self, k: int, *, density=1.0, lumped: bool = False,
                      method: str = "auto", solver=None, solver_options: dict | None = None,
                      points=None, **parameters) -> Modes:
    """Deprecated: ``ModalAnalysis(model, k, lumped=..., method=..., solver=...).run(
    density=..., points=..., **parameters)`` (:class:`ModalAnalysis`)."""
    warnings.warn("model.modes(k, ...) is deprecated: use fesens.fem.analysis.ModalAnalysis("
                  "model, k, lumped=, method=, solver=).run(density=, points=, **parameters)",
                  DeprecationWarning, stacklevel=2)
    return ModalAnalysis(self, k, lumped=lumped, method=method, solver=solver,
                         solver_options=solver_options).run(density=density, points=points,
                                                            **parameters)


LinearModel.modes = _deprecated_modes

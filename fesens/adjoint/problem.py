"""Differentiable solves of a :class:`~fesens.fem.model.LinearModel`.

:class:`Differentiable` replays ``model.solve`` with traced operations, so that
:func:`fesens.ad.grad` can differentiate any objective of the solution with respect to

* per-cell density scale ``scale``, Young's modulus ``E`` and Poisson's ratio ``nu``
  (scalars or per-cell fields), conductivity ``conductivity``;
* the magnitude of every named load term (point loads, tractions, pressure, body forces,
  heat sources and fluxes);
* the prescribed Dirichlet values ``g``.

The traced program is (DESIGN.md)::

    c_k = coefficients(θ)                    per-cell, elementwise
    data(K_ff) = Σ_k G_k c_k                 cached gather matrices (rule 1)
    rhs = f_f(m) − K_fc(c) g                 Dirichlet lift
    u_f = solve(K_ff, rhs)                   factor once; adjoint reuses it (rule 2)
    u = P_fᵀ u_f + P_cᵀ g

and its backward pass is: ``λ = K_ff⁻ᵀ ū_f`` (one pair of triangular solves),
``data(K̄) = −λ u_fᵀ`` on the pattern (rule 3), ``c̄_k = G_kᵀ data(K̄)``.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.numpy_wrapper import getval, untake
from fesens.ad.sparse import PatternMatrix, matvec, solve
from fesens.adjoint.assembly import BlockOperator, assemble
from fesens.errors import BoundaryConditionError, NonFiniteError
from fesens.fem.conduction import HeatConduction
from fesens.fem.elasticity import Elasticity
from fesens.fem.materials import check_elastic_constants, lame_parameters, lame_weights
from fesens.fem.model import LinearModel


class State:
    """A traced solution: everything an objective may need.

    Attributes
    ----------
    problem : Differentiable
    u : array or Box
        Global dof vector ``(n_dofs,)``, or ``(n_dofs, n_cases)`` for several load cases.
    f : array or Box
        The applied load vector(s), same shape as ``u``.
    coefficients : list
        Per-cell coefficients ``c_k`` used for ``K``.
    parameters : dict
        The parameters of the solve (traced values included).
    """

    def __init__(self, problem, u, f, coefficients, parameters):
        self.problem = problem
        self.u = u
        self.f = f
        self.coefficients = coefficients
        self.parameters = parameters

    @property
    def model(self) -> LinearModel:
        return self.problem.model


class Differentiable:
    """Traced solves of ``model`` on its cached pattern.

    Parameters
    ----------
    model : Elasticity or HeatConduction
        Dirichlet conditions and named loads must be set before wrapping; the Dirichlet
        *set* fixes the pattern, their values stay differentiable (``dirichlet=``).
    solver : str, (str, dict) or LinearSolver
        Backend for the forward and the adjoint solves (``"auto"``: CHOLMOD when
        installed). One instance per pattern: the symbolic analysis is done once. A
        Krylov backend with AMG gets the rigid-body modes of an elasticity model as its
        near-null space (see :meth:`LinearModel.with_near_nullspace`).

    Examples
    --------
    >>> problem = Differentiable(model)                          # doctest: +SKIP
    >>> J = lambda x: compliance(problem.solve(scale=x ** 3))    # doctest: +SKIP
    >>> dJ = fesens.ad.grad(J)(x)                                # doctest: +SKIP
    """

    def __init__(self, model: LinearModel, solver="auto"):
        if not isinstance(model, Elasticity | HeatConduction):
            raise TypeError(f"cannot differentiate a {type(model).__name__}")
        self.model = model
        self.solver = model.with_near_nullspace(solver)
        self.assembler = model.assembler
        self.ff = BlockOperator(self.assembler, "ff")
        self.fc = None if self.assembler.fc is None else BlockOperator(self.assembler, "fc")
        self.free = self.assembler.free
        self.constrained = self.assembler.constrained
        self.load_names = tuple(model.loads)
        self._load_matrix = (np.stack([model.loads[n] for n in self.load_names], axis=1)
                             if self.load_names else np.zeros((model.dofmap.n_dofs, 0)))

    # ------------------------------------------------------------ coefficients
    def _cell_field(self, value, name: str):
        raw = np.asarray(getval(value), dtype=float)
        if raw.ndim > 1 or (raw.ndim == 1 and raw.shape[0] != self.model.mesh.n_cells):
            raise ValueError(
                f"parameter {name!r} must be a scalar or have one value per cell "
                f"({self.model.mesh.n_cells}), got shape {raw.shape}"
            )
        if not np.all(np.isfinite(raw)):
            raise NonFiniteError(f"parameter {name!r} contains NaN or infinity")
        return value, raw

    def coefficients(self, **parameters) -> list:
        """Traced per-cell coefficients ``c_k`` (each ``(n_cells,)``) of the stiffness.

        Elasticity: ``[s t λ(E, ν), s t μ(E, ν)]``; conduction: ``[s t κ]``.
        """
        return _unfolded(*self._stiffness_fields(parameters))

    def _stiffness_fields(self, parameters) -> tuple[tuple[float, ...] | None, list]:
        """``(w, [s])`` when ``c_k = w_k s`` with constant weights, else ``(None, [c_k])``.

        The traced twin of :meth:`~fesens.fem.elasticity.Elasticity.stiffness_fields`: with
        the model's ``ν`` (not a parameter), the same in every cell, ``w = (λ, μ)(E=1, ν)``
        and ``s = s t E`` (:func:`~fesens.fem.materials.lame_weights`): one gather.
        """
        self.model.check_parameters(parameters)
        model = self.model
        ones = np.ones(model.mesh.n_cells)
        scale, _ = self._cell_field(parameters.get("scale", 1.0), "scale")
        factor = scale * model._thickness()
        if isinstance(model, Elasticity):
            E, E_raw = self._cell_field(parameters.get("E", model.E), "E")
            nu, nu_raw = self._cell_field(parameters.get("nu", model.nu), "nu")
            check_elastic_constants(E_raw, nu_raw)
            weights = None if "nu" in parameters else lame_weights(model.nu, model.plane)
            if weights is not None:
                return weights, [factor * E * ones]
            lam, mu = lame_parameters(E, nu, model.plane)
            return None, [factor * lam * ones, factor * mu * ones]
        kappa, kappa_raw = self._cell_field(
            parameters.get("conductivity", model.conductivity), "conductivity")
        if np.any(kappa_raw <= 0):
            raise ValueError(f"conductivity must be > 0; got min = {kappa_raw.min():g}")
        return None, [factor * kappa * ones]

    # ------------------------------------------------------------ operators
    def stiffness(self, coefficients, weights=None) -> PatternMatrix:
        """Traced ``K_ff`` on the cached pattern: ``data = Σ_k G_k c_k``.

        With ``weights``, ``coefficients`` is ``[s]`` for ``c_k = w_k s`` (one gather).
        """
        return assemble(self._operator("ff", weights), *coefficients)

    def coupling(self, coefficients, weights=None) -> PatternMatrix | None:
        """Traced ``K_fc`` (free rows, constrained columns), or None without Dirichlet dofs.

        ``weights``: see :meth:`stiffness`.
        """
        return None if self.fc is None else assemble(self._operator("fc", weights),
                                                     *coefficients)

    def _operator(self, block: str, weights) -> BlockOperator:
        """The block's operator, folded for ``weights`` (see :meth:`BlockOperator.folded`)."""
        operator = self.ff if block == "ff" else self.fc
        return operator if weights is None else operator.folded(weights)

    def load_vector(self, loads: dict | None = None):
        """Traced ``f = Σ_L m_L f_L`` (magnitudes default to 1), ``(n_dofs,)``."""
        loads = loads or {}
        unknown = set(loads) - set(self.load_names)
        if unknown:
            raise BoundaryConditionError(f"unknown load name(s) {sorted(unknown)}; loads: "
                                         f"{sorted(self.load_names)}")
        if not loads:
            return self._load_matrix.sum(axis=1)
        magnitudes = np.stack([loads.get(name, 1.0) for name in self.load_names])
        return self._load_matrix @ magnitudes

    # ------------------------------------------------------------ solve
    def solve(self, *, loads=None, load_cases=None, dirichlet=None, **parameters) -> State:
        """Traced solve; see the module docstring for the differentiable inputs.

        Parameters
        ----------
        loads : dict, optional
            Magnitude of each named load (default 1 each).
        load_cases : list of dict, optional
            Several load cases (each a ``loads`` dict) solved with one factorization;
            ``state.u`` is then ``(n_dofs, n_cases)``.
        dirichlet : array, optional
            Prescribed values ``g`` ordered like ``model.constrained_dofs``
            (default: the model's values).
        **parameters
            ``scale``, ``E``, ``nu`` (elasticity) or ``scale``, ``conductivity``.
        """
        if loads is not None and load_cases is not None:
            raise TypeError("give either loads or load_cases, not both")
        weights, fields = self._stiffness_fields(parameters)
        K = self.stiffness(fields, weights)
        if load_cases is None:
            f = self.load_vector(loads)
        else:
            f = np.stack([self.load_vector(case) for case in load_cases], axis=1)
        g = self.model.prescribed_values() if dirichlet is None else dirichlet
        if np.shape(getval(g)) != self.constrained.shape:
            raise ValueError(f"dirichlet values must have shape {self.constrained.shape}, "
                             f"got {np.shape(getval(g))}")
        rhs = f[self.free]
        # Given (possibly traced) or non-zero Dirichlet values only: for the usual
        # homogeneous supports K_fc is not even assembled, and u is zero there already.
        prescribed = self.fc is not None and (dirichlet is not None or np.any(g))
        if prescribed:
            lift = matvec(self.coupling(fields, weights), g)
            rhs = rhs - (lift if load_cases is None else lift[:, None])
        u_free = solve(K, rhs, solver=self.solver)
        n = self.model.dofmap.n_dofs
        if load_cases is None:
            u = untake(u_free, self.free, (n,), unique=True)
            if prescribed:
                u = u + untake(g, self.constrained, (n,), unique=True)
        else:
            cols = u_free.shape[1]
            u = untake(u_free, self.free, (n, cols), unique=True)
            if prescribed:
                u = u + untake(g, self.constrained, (n,), unique=True)[:, None]
        return State(self, u, f, _unfolded(weights, fields), parameters)


def _unfolded(weights, fields) -> list:
    """The coefficients ``c_k`` of :meth:`Differentiable._stiffness_fields`' result."""
    return fields if weights is None else [w * fields[0] for w in weights]

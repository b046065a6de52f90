"""Buckling topology optimization: the design problem of a linear buckling analysis.

:class:`BucklingProblem` is a :class:`~fesens.opt.problem.DesignProblem` whose traced
"solve" is :class:`~fesens.physics.geometric_stiffness.ElasticBuckling` with stiffness scale
``s(ρ)`` (SIMP or RAMP, with its floor ``s_min``) and stress scale ``s(ρ)`` *without* the
floor: as Ferrari, Sigmund & Guest ("Topology optimization with linearized buckling
criteria in 250 lines of Matlab", Struct. Multidisc. Optim. 63, 2021; after Gao & Ma,
2015), void cells then carry no prestress and give no spurious (pseudo) buckling modes,
which would otherwise appear where soft material is strained as much as its solid
neighbours. The objective and constraints receive the
:class:`~fesens.fem.analysis.buckling.Buckling` (``f(result, ρ)``): its ``load_factors``, and its
static ``solution`` for compliance; the same loop, filters and optimizers run it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens.fem.analysis.buckling import Buckling
from fesens.opt.problem import DesignProblem, Evaluation
from fesens.physics.geometric_stiffness import ElasticBuckling


class BucklingProblem(DesignProblem):
    """Density-based design of the buckling load factors of ``(K(ρ) + μ K_σ(ρ, u)) φ = 0``.

    Parameters
    ----------
    model : Elasticity
        With its supports and the reference load.
    objective : callable
        ``f(result, ρ)`` of the :class:`~fesens.fem.analysis.buckling.Buckling`, minimized; e.g. to
        maximize a KS bound of the lowest three load factors
        ``lambda result, rho: -eigenvalue_ks(result, count=3)``, or the compliance
        ``lambda result, rho: compliance(result.solution)`` with a buckling
        :class:`~fesens.opt.problem.Constraint`.
    n_modes : int
        Load factors computed per evaluation (at least one more than an aggregate such as
        :func:`~fesens.objectives.eigen.eigenvalue_ks` uses).
    static_state : bool
        Give the static solution (``result.solution``, untraced) as
        :attr:`~fesens.opt.problem.Evaluation.state` instead of the whole
        :class:`~fesens.fem.analysis.buckling.Buckling`, for writers of a static design's
        fields (a compliance design with a buckling constraint); the load factors are then
        in the ``reports`` the caller gives.
    **options
        As :class:`~fesens.opt.problem.DesignProblem` (``volume_fraction``,
        ``interpolation``, ``filter``, ``projection``, passive cells, ``constraints``,
        ``solver``: a direct backend).
    """

    def __init__(self, model, objective, *, n_modes: int = 4, static_state: bool = False,
                 **options):
        if options.get("load_cases") is not None:
            raise ValueError("a buckling problem has one reference load: drop load_cases")
        super().__init__(model, objective, **options)
        if not self.differentiable.solver.is_direct:
            raise ValueError(f"a buckling problem needs a direct solver, not "
                             f"{self.differentiable.solver.name!r}: give solver='cholmod'")
        self.n_modes = int(n_modes)
        self.static_state = bool(static_state)

    def stress_scale(self, rho):
        """``(s(ρ) − s_min) / (1 − s_min)``: the interpolation without its floor (SIMP:
        ``ρ^p``), ``(n_cells,)`` (traced)."""
        floor = self.interpolation.minimum
        return (self.interpolation(rho) - floor) / (1.0 - floor)

    def solve(self, rho) -> Buckling:
        """The lowest :attr:`n_modes` load factors at densities ``ρ`` (traced)."""
        analysis = ElasticBuckling(self.model, self.n_modes, solver=self.differentiable.solver)
        return analysis.run(scale=self.interpolation(rho), stress_scale=self.stress_scale(rho))

    def evaluate(self, x: np.ndarray) -> Evaluation:
        """As :meth:`DesignProblem.evaluate`; with :attr:`static_state` the evaluation's
        state is the static solution."""
        evaluation = super().evaluate(x)
        if self.static_state:
            evaluation.state = evaluation.state.solution
        return evaluation


def load_factor_reports(n_modes: int) -> dict[str, Callable]:
    """History columns ``load_factor_<i>`` (``i`` from 1) of the lowest ``n_modes`` load
    factors, reports ``f(result, ρ)`` of a :class:`BucklingProblem`."""
    return {f"load_factor_{i + 1}": lambda result, rho, i=i: result.load_factors[i]
            for i in range(n_modes)}

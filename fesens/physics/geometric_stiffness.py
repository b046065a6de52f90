"""Linear buckling of elastic structures: the prestress of elasticity for
:class:`fesens.fem.analysis.buckling.BucklingAnalysis`.

The geometric stiffness of a static solution ``u`` is that of its Cauchy stress,
``σ_e = s_σ,e (λ_e tr ε_e I + 2 μ_e ε_e)`` from the cell-mean strain
(:meth:`~fesens.physics.elasticity.ElasticSolution.stress`, the one place stresses are
computed; 2D: the in-plane stress times the thickness), and the load factors solve
``(K + μ K_σ(u)) φ = 0``. The stress scale ``s_σ`` defaults to the stiffness scale. For
density-based design, Ferrari, Sigmund & Guest (2021, after Gao & Ma 2015) interpolate the
stress without the SIMP floor (``s_σ = ρ^p``, where ``s = s_min + ρ^p (1 − s_min)``), so
that void cells carry no prestress and give no spurious buckling modes
(:class:`fesens.opt.buckling_design.BucklingProblem`).

:class:`ElasticBuckling` is the analysis; :func:`linear_buckling`, the function it was,
stays for one release and warns.
"""

from __future__ import annotations

import warnings

from fesens.fem.analysis.buckling import Buckling, BucklingAnalysis
from fesens.physics.elasticity import Elasticity


def elastic_prestress(stress_scale=None):
    """``solution ↦ σ`` ``(n_cells, dim, dim)``: the cell-mean stress with ``stress_scale``
    ``(n_cells,)`` (None: the solve's stiffness scale); traced in the solution."""
    return lambda solution: solution.stress(stress_scale)


class ElasticBuckling(BucklingAnalysis):
    """The ``k`` lowest buckling load factors of an elastic model under its loads.

    Parameters
    ----------
    model : Elasticity
        With supports and the reference load (2D plane stress/strain or 3D).
    k : int
        Number of load factors, ``1 <= k <=`` the number of free dofs.
    solver, solver_options
        A direct backend, as :class:`~fesens.fem.analysis.buckling.BucklingAnalysis`.

    Raises
    ------
    TypeError
        ``model`` is not elastic.

    Examples
    --------
    >>> from fesens.mesh import rectangle
    >>> model = Elasticity(rectangle(80, 4, 20.0, 1.0), E=1e3, nu=0.3, plane="stress")
    >>> model.fix("left").traction("right", (-1.0, 0.0))
    'surface0'
    >>> result = ElasticBuckling(model, 2).run()
    >>> round(float(result.load_factors[0]), 1)   # Euler: π² E I / (4 L²) ≈ 0.51
    0.5
    """

    def __init__(self, model: Elasticity, k: int, *, solver=None,
                 solver_options: dict | None = None):
        if not isinstance(model, Elasticity):
            raise TypeError(f"ElasticBuckling needs an Elasticity model, got "
                            f"{type(model).__name__}")
        super().__init__(model, k, elastic_prestress(), solver=solver,
                         solver_options=solver_options)

    def run(self, *, stress_scale=None, loads: dict | None = None, points=None,
            **parameters) -> Buckling:
        """The load factors for these inputs (traced when one is).

        Parameters
        ----------
        stress_scale : float or array_like, optional
            The stress interpolation ``s_σ`` ``(n_cells,)`` (default: ``scale``); traced.
        loads, points, **parameters
            As :meth:`fesens.fem.analysis.buckling.BucklingAnalysis.run` (``scale``, ``E``,
            ``nu``, ...).

        Returns
        -------
        Buckling
            ``load_factors`` ``(k,)``: the load that buckles is ``load_factors[0]`` times
            the reference load; ``vectors`` the modes; ``solution`` the static solution.

        Raises
        ------
        NoBucklingError
            Fewer than ``k`` positive load factors (no compressive prestress: pure tension).
        ModeCountError, NonFiniteError
            ``k`` outside ``[1, n_free]``; NaN in the matrices.
        """
        return self._run(elastic_prestress(stress_scale), loads, points, parameters)


def linear_buckling(model: Elasticity, k: int, *, stress_scale=None, loads: dict | None = None,
                    solver=None, solver_options: dict | None = None, points=None,
                    **parameters) -> Buckling:
    """Deprecated: ``ElasticBuckling(model, k, solver=...).run(stress_scale=..., loads=...,
    points=..., **parameters)`` (:class:`ElasticBuckling`)."""
    warnings.warn("linear_buckling(model, k, ...) is deprecated: use fesens.physics."
                  "ElasticBuckling(model, k, solver=).run(stress_scale=, loads=, points=, "
                  "**parameters)", DeprecationWarning, stacklevel=2)
    return ElasticBuckling(model, k, solver=solver, solver_options=solver_options).run(
        stress_scale=stress_scale, loads=loads, points=points, **parameters)

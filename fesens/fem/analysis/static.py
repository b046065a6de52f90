"""The static solve of a model in the shape of every analysis (:mod:`fesens.fem.analysis.base`).

``K(θ, X) u = f`` of a :class:`~fesens.fem.model.linear.LinearModel`, or ``R(u, θ) = 0`` of
a :class:`~fesens.fem.model.nonlinear.NonlinearModel` by load-stepped Newton: the model's own
``solve`` (the one solve path, see :mod:`fesens.fem.model.linear`), its settings given once.
"""

from __future__ import annotations

from fesens.fem.analysis.base import Analysis


class StaticAnalysis(Analysis):
    """The static solution of a linear or nonlinear model.

    Parameters
    ----------
    model : LinearModel or NonlinearModel
        With its supports and loads.
    solver : str, (str, dict) or LinearSolver, optional
        Backend (default: the model's; see :meth:`~fesens.fem.model.base.Model.solver`).
    solver_options : dict, optional
        Backend options.
    **options
        The model's other solve settings: a nonlinear model's ``newton``, ``steps``,
        ``warm_start`` (see :meth:`fesens.fem.model.nonlinear.NonlinearModel.solve`).

    Examples
    --------
    >>> from fesens.mesh import rectangle
    >>> from fesens.physics import Elasticity
    >>> model = Elasticity(rectangle(8, 2, 4.0, 1.0), E=1.0, nu=0.3, plane="stress")
    >>> model.fix("left").traction("right", (0.0, -1.0))
    'surface0'
    >>> solution = StaticAnalysis(model, solver="superlu").run(E=2.0)
    """

    def __init__(self, model, *, solver=None, solver_options: dict | None = None,
                 **options):
        super().__init__(model)
        self.solver = solver
        self.solver_options = solver_options
        self.options = options

    def run(self, **inputs):
        """The solution for ``inputs`` (traced when one is): ``loads`` or ``load_cases``,
        ``dirichlet``, ``points`` and the physics' parameters, as the model's ``solve``.

        Returns
        -------
        Solution
            Of the physics' ``solution_class`` (a nonlinear model's: a
            :class:`~fesens.fem.model.nonlinear_solution.NonlinearSolution`).
        """
        return self.model.solve(solver=self.solver, solver_options=self.solver_options,
                                **self.options, **inputs)
